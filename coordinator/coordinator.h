// The coordinator's logic: jobs, units, leases, workers, progress. Plain absl::Status in and
// out, no sockets: the gRPC services (service.h) translate, tests call it directly.
//
// Invariants:
//  - nothing a worker sends is counted before the job's kind checked it and, as the job's
//    verification wants, enough other workers sent the same: a unit is settled once, with the
//    result that `wanted` (1, or 2 when verified) different workers agree on; disagreements ask
//    further workers until two agree, and workers outvoted by two are quarantined;
//  - a unit's settled result is counted once; later results are compared with it and never
//    added again; a settled result whose only vote came from a worker quarantined since is taken
//    back and computed again;
//  - only a worker that holds or held a copy of a unit may complete, renew or fail it; a
//    worker's identity is its caller's (credentials), never a request field;
//  - a completion is reported ACCEPTED only after the store committed it (with its self-play
//    games, whose table key (job, sp, game index) refuses a second copy of any game);
//  - lease expiry is set by this server's clock, never by a worker;
//  - all state changes happen under one mutex, in memory and in the store together; what takes
//    long (planning and storing a big job, checking a result, replaying self-play games) runs
//    before the mutex is taken, and the state it relied on is checked again under it.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "cluster/auth.h"
#include "cluster/config.h"
#include "coordinator/clock.h"
#include "coordinator/job_kind.h"
#include "coordinator/store.h"

namespace c960::cluster {

struct CoordinatorOptions {
  int64_t lease_ms = kDefaultLeaseSeconds * 1000;
  int trust_after = kDefaultTrustAfter;
  double spot_check_rate = kDefaultSpotCheckRate;
  int max_active_jobs = kDefaultMaxActiveJobs;
  int64_t max_planned_units = kDefaultMaxPlannedUnits;
  int max_watches_per_caller = kDefaultMaxWatchesPerCaller;
  int max_watches = kDefaultMaxWatches;
  uint64_t seed = 0;  // of spot-check draws and session ids' salt; 0: from the system
};

// Counters of events since this process started (monitoring: coordinator/metrics.h).
struct CoordinatorCounters {
  std::map<v1::CompletionOutcome, int64_t> completions;  // CompleteUnit calls answered, by outcome
  int64_t jobs_submitted = 0;
  int64_t lease_expiries = 0;
  int64_t requeues = 0;  // leases given back without a result (expired, released, superseded, quarantined)
  int64_t unit_failures = 0;
  int64_t disagreements = 0;
  int64_t mismatches = 0;
  int64_t quarantines = 0;
  int64_t replicated = 0;              // units settled on two or more workers' agreeing results
  std::map<std::string, double> work;  // settled work by job kind: perft leaf nodes, self-play games
};

// A snapshot for monitoring: counts taken under the coordinator's lock, and its counters.
struct CoordinatorMetrics {
  std::map<std::pair<std::string, v1::JobState>, int64_t> jobs;  // by (kind, state)
  // The units of running jobs, each in one state: settled (done); with a result that waits for
  // another worker's (verifying); leased, without a result yet (leased); the rest (pending).
  int64_t units_pending = 0, units_leased = 0, units_verifying = 0, units_done = 0;
  // Of the verifying units, those whose workers sent different results.
  int64_t units_disagreeing = 0;
  std::map<std::pair<v1::TrustState, bool>, int64_t> workers;  // by (trust, alive)
  int64_t watches = 0;                                         // open WatchJob streams
  CoordinatorCounters counters;
};

class Coordinator {
 public:
  // store and clock must outlive the coordinator.
  Coordinator(Store* store, const Clock* clock, CoordinatorOptions options = {});
  ~Coordinator();

  // Loads jobs and workers from the store: unfinished jobs resume, with every unit that has no
  // settled result queued again as far as it still wants results.
  absl::Status load();

  // Users. The submit role sees only its own jobs (others' are NOT_FOUND).
  absl::StatusOr<v1::Job> submit(const Caller& caller, const v1::SubmitJobRequest& req);
  absl::StatusOr<v1::Job> get_job(const Caller& caller, const std::string& job_id);
  absl::StatusOr<v1::ListJobsResponse> list_jobs(const Caller& caller, const v1::ListJobsRequest& req);
  absl::StatusOr<v1::Job> cancel(const Caller& caller, const std::string& job_id);
  absl::StatusOr<std::vector<v1::ResultChunk>> results(const Caller& caller, const std::string& job_id, bool divide,
                                                       bool omit_games = false);
  // Waits up to wait_ms for a change after *version, then returns the job and the new version.
  absl::StatusOr<v1::Job> watch(const Caller& caller, const std::string& job_id, uint64_t* version, int64_t wait_ms);
  absl::StatusOr<v1::ListWorkersResponse> list_workers(const Caller& caller, const v1::ListWorkersRequest& req);

  // An open watch stream, counted against the caller's and the coordinator's caps while it lives.
  class WatchSlot {
   public:
    WatchSlot(Coordinator* c, std::string identity) : c_(c), identity_(std::move(identity)) {}
    ~WatchSlot();
    WatchSlot(const WatchSlot&) = delete;
    WatchSlot& operator=(const WatchSlot&) = delete;

   private:
    Coordinator* c_;
    std::string identity_;
  };
  // RESOURCE_EXHAUSTED naming the cap when the caller, or everyone, has too many open.
  absl::StatusOr<std::unique_ptr<WatchSlot>> open_watch(const Caller& caller);

  // Workers. Every call but hello names the session hello returned.
  absl::StatusOr<v1::HelloResponse> hello(const Caller& caller, const v1::HelloRequest& req);
  absl::StatusOr<v1::AcquireWorkResponse> acquire(const Caller& caller, const v1::AcquireWorkRequest& req);
  absl::StatusOr<v1::RenewLeasesResponse> renew(const Caller& caller, const v1::RenewLeasesRequest& req);
  absl::StatusOr<v1::CompleteUnitResponse> complete(const Caller& caller, const v1::CompleteUnitRequest& req);
  absl::Status release(const Caller& caller, const v1::ReleaseUnitsRequest& req);

  // Returns expired leases to the queue and marks silent workers lost. Call periodically.
  void sweep();
  // Wakes every watcher so that streams can end (server shutdown).
  void shutdown();
  bool shutting_down() const;

  // Cheap: counts over the jobs and workers in memory.
  CoordinatorMetrics metrics() const;

  static bool is_final(v1::JobState s) { return s != v1::JOB_STATE_RUNNING; }

 private:
  // One copy of a unit: a worker was given it, and may have sent a result for it.
  struct Copy {
    std::string worker;   // the worker's key
    int32_t attempt = 0;  // the unit's attempt that leased it last
    uint64_t zobrist_seed = 0;
    std::string session;  // the session holding a lease on it now; empty when none
    int64_t expire_ms = 0;
    std::optional<std::string> result;  // canonical serialized result
    bool discarded = false;             // its worker was quarantined, or it failed the unit
    bool leased() const { return !session.empty(); }
  };
  struct Unit {
    v1::UnitSpec spec;
    v1::store::UnitMeta meta;
    int32_t attempt = 0;  // leases so far
    int32_t wanted = 0;   // results wanted from different workers; 0 until its first lease
    std::vector<Copy> copies;
    std::optional<v1::UnitResult> result;  // the settled result
    std::string settled;                   // ... serialized
    int32_t votes = 0;                     // copies that sent it
    bool queued = false;                   // in the job's fresh or replicas queue

    int leases() const;
    int results() const;  // valid results sent (not discarded)
    // Wants another copy leased: unsettled, and its leases and results do not reach `wanted`.
    bool needs_copy() const;
    Copy* copy_of(const std::string& worker);
  };
  struct Sample {
    int64_t ms;
    int64_t units;
    NodeCount work;
  };
  struct Job {
    std::string id;
    int64_t seq = 0;
    std::string request_id;
    std::string owner;
    v1::JobSpec spec;
    v1::VerifyMode verify = v1::VERIFY_MODE_ADAPTIVE;
    v1::store::JobPlan plan;
    v1::JobState state = v1::JOB_STATE_RUNNING;
    int64_t created_ms = 0;
    int64_t finished_ms = 0;
    int64_t mismatches = 0;
    std::string mismatch_detail;
    int64_t disagreements = 0;
    // Unit failure reports and who sent them. The reason of a FAILED job is stored; the counts
    // of a running job are not (they start again after a restart).
    int64_t unit_failures = 0;
    std::set<std::string> failing_workers;
    std::string failure_detail;
    const JobKind* kind = nullptr;
    std::vector<Unit> units;
    // Units that want a copy: never leased yet (fresh), or wanting one more (replicas). Entries
    // may be stale: a popped unit is used only if it still needs a copy.
    std::deque<int64_t> fresh, replicas;
    std::set<int64_t> active;     // units with a lease out
    std::set<int64_t> verifying;  // unsettled units with a result that waits for another
    bool damaged = false;         // its stored units disagree with its record: FAILED, no results
    int64_t done = 0;             // settled units
    NodeCount work_done = 0;      // in the kind's unit of work (JobKind::work)
    std::deque<Sample> samples;   // recent progress, for rates
  };
  // A worker process's registration; a worker's new Hello ends its previous session.
  struct Session {
    std::string id;
    std::string key;  // the worker's key
    std::set<std::string> capabilities, engines;
    int64_t last_seen_ms = 0;
    bool lost = false;
  };
  struct WorkerState {
    StoredWorker rec;
    std::deque<std::pair<int64_t, int64_t>> samples;  // (ms, units_done), for its rate
  };

  const JobKind* kind_for(v1::JobSpec::KindCase c) const;
  Job* find_job(const std::string& id);
  // The job if the caller may see it (the submit role: its own only), NOT_FOUND otherwise.
  absl::StatusOr<Job*> job_for(const Caller& caller, const std::string& id);
  absl::StatusOr<Session*> session_for(const Caller& caller, const std::string& id);
  void touch(Session* s);
  void add_sample(Job* j);
  v1::Job snapshot(const Job& j) const;
  std::string notice(const Job& j) const;
  void changed();
  // Builds a job's units in memory and in the store; no lock held (big plans take seconds).
  absl::StatusOr<std::unique_ptr<Job>> store_new_job(const Caller& caller, const v1::SubmitJobRequest& req,
                                                     const JobKind* kind, KindPlan plan);
  absl::Status check_caps(const Caller& caller, int64_t new_units) const;
  // Fails a job whose stored units disagree with its record (a damaged store).
  void refuse_damaged(Job* j, const std::string& why);
  void fail_job(Job* j, const std::string& why);

  // Queues and leases.
  void enqueue(Job* j, int64_t i, bool front = false);
  // Leases unit i to the session (a new copy, or again its worker's earlier copy).
  void lease(Job* j, int64_t i, Session& s, int64_t now, std::vector<Store::Lease>* rows);
  void end_lease(Job* j, int64_t i, Copy& c, bool front);
  int32_t wanted_for(const Job& j, const WorkerState& w);

  // Verification.
  v1::CompletionOutcome on_result(Job* j, int64_t i, size_t copy);
  absl::Status settle(Job* j, int64_t i, const std::string& result, int32_t votes);
  absl::Status unsettle(Job* j, int64_t i, int32_t wanted);
  void credit(const std::string& worker);
  void quarantine(const std::string& worker, const std::string& why);
  void record_mismatch(Job* j, const std::string& detail);
  absl::StatusOr<v1::CompleteUnitResponse> record_failure(const Caller& caller, const v1::CompleteUnitRequest& req,
                                                          Job* j, int64_t index, Copy& c);
  void save_worker(const WorkerState& w);
  absl::StatusOr<v1::CompleteUnitResponse> complete_unit(const Caller& caller, const v1::CompleteUnitRequest& req);
  static std::string canonical_text(const Copy& c);  // for logs

  Store* store_;
  const Clock* clock_;
  CoordinatorOptions options_;
  std::vector<std::unique_ptr<JobKind>> kinds_;

  std::mutex submit_mu_;  // one submit stores its job at a time (request ids stay unique)
  mutable std::mutex mu_;
  std::condition_variable cv_;
  uint64_t version_ = 0;
  bool shutting_down_ = false;
  std::map<std::string, std::unique_ptr<Job>> jobs_;
  std::vector<Job*> by_seq_;  // creation order: the queue serves older jobs first
  std::map<std::string, Job*> by_request_id_;
  std::map<std::string, WorkerState> workers_;     // by key
  std::map<std::string, Session> sessions_;        // by session id
  std::map<std::string, std::string> session_of_;  // worker key -> its current session
  std::map<std::string, int> watches_;             // open watch streams by caller identity
  int watches_total_ = 0;
  std::mt19937_64 rng_;  // spot checks
  int64_t next_job_seq_ = 1;
  CoordinatorCounters counters_;
};

}  // namespace c960::cluster
