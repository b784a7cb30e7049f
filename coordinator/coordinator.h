// The coordinator's logic: jobs, units, leases, workers, progress. Plain absl::Status in and
// out, no sockets: the gRPC services (service.h) translate, tests call it directly.
//
// Invariants:
//  - a unit's result is counted once: the first accepted completion is stored, later ones are
//    compared with it (duplicate or mismatch) and never added again;
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
};

class Coordinator {
 public:
  // store and clock must outlive the coordinator.
  Coordinator(Store* store, const Clock* clock, CoordinatorOptions options = {});
  ~Coordinator();

  // Loads jobs and workers from the store: unfinished jobs resume, with every unit that has no
  // stored result pending again.
  absl::Status load();

  // Users.
  absl::StatusOr<v1::Job> submit(const Caller& caller, const v1::SubmitJobRequest& req);
  absl::StatusOr<v1::Job> get_job(const Caller& caller, const std::string& job_id);
  absl::StatusOr<std::vector<v1::Job>> list_jobs(const Caller& caller, int page_size);
  absl::StatusOr<v1::Job> cancel(const Caller& caller, const std::string& job_id);
  absl::StatusOr<std::vector<v1::ResultChunk>> results(const Caller& caller, const std::string& job_id, bool divide,
                                                       bool omit_games = false);
  // Waits up to wait_ms for a change after *version, then returns the job and the new version.
  absl::StatusOr<v1::Job> watch(const Caller& caller, const std::string& job_id, uint64_t* version, int64_t wait_ms);

  // Workers.
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

  static bool is_final(v1::JobState s) { return s != v1::JOB_STATE_RUNNING; }

 private:
  enum class UnitState { kPending, kLeased, kDone };
  struct Unit {
    v1::UnitSpec spec;
    v1::store::UnitMeta meta;
    UnitState state = UnitState::kPending;
    int32_t attempt = 0;
    std::string worker;
    int64_t expire_ms = 0;
    std::optional<v1::UnitResult> result;
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
    v1::JobSpec spec;
    v1::store::JobPlan plan;
    v1::JobState state = v1::JOB_STATE_RUNNING;
    int64_t created_ms = 0;
    int64_t finished_ms = 0;
    int64_t mismatches = 0;
    std::string mismatch_detail;
    // Unit failure reports. The reason of a FAILED job is stored; the count of a running job
    // is not (it starts again after a restart).
    int64_t unit_failures = 0;
    std::string failure_detail;
    const JobKind* kind = nullptr;
    std::vector<Unit> units;
    std::deque<int64_t> pending;  // may hold stale entries: a popped unit is used only if pending
    std::set<int64_t> leased;
    bool damaged = false;  // its stored units disagree with its record: FAILED, no results
    int64_t done = 0;
    NodeCount work_done = 0;     // in the kind's unit of work (JobKind::work)
    std::deque<Sample> samples;  // recent progress, for rates
  };
  struct Worker {
    StoredWorker rec;
    std::set<std::string> capabilities;
  };

  const JobKind* kind_for(v1::JobSpec::KindCase c) const;
  Job* find_job(const std::string& id);
  absl::StatusOr<Job*> job_or_error(const std::string& id);
  absl::StatusOr<Worker*> worker_or_error(const std::string& id);
  void touch(Worker* w);
  void return_to_queue(Job* j, int64_t index, bool front);
  void add_sample(Job* j);
  v1::Job snapshot(const Job& j) const;
  absl::StatusOr<v1::CompleteUnitResponse> record_failure(const v1::CompleteUnitRequest& req, Job* j, int64_t index);
  void changed();
  // Builds a job's units in memory and in the store; no lock held (big plans take seconds).
  absl::StatusOr<std::unique_ptr<Job>> store_new_job(const v1::SubmitJobRequest& req, const JobKind* kind,
                                                     KindPlan plan);
  // Fails a job whose stored units disagree with its record (a damaged store).
  void refuse_damaged(Job* j, const std::string& why);

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
  std::map<std::string, Worker> workers_;
  int64_t next_job_seq_ = 1;
  int64_t next_worker_seq_ = 1;
};

}  // namespace c960::cluster
