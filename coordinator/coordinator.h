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
//  - a group of settled units (a lazy perft plan's root) is folded into its totals once, in
//    memory and in the store together; anything sent later for a folded unit changes nothing,
//    and a folded group whose results stand on a worker quarantined since is computed again;
//  - a completion is reported ACCEPTED only after the store committed it (with its self-play
//    games, whose table key (job, sp, game index) refuses a second copy of any game);
//  - lease expiry is set by this server's clock, never by a worker;
//  - all state changes happen under one mutex, in memory and in the store together; what takes
//    long (planning and storing a big job, checking a result, replaying self-play games) runs
//    before the mutex is taken, and the state it relied on is checked again under it.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "cluster/auth.h"
#include "cluster/config.h"
#include "coordinator/clock.h"
#include "coordinator/job.h"
#include "coordinator/job_kind.h"
#include "coordinator/job_table.h"
#include "coordinator/lease_deadlines.h"
#include "coordinator/long_polls.h"
#include "coordinator/store.h"
#include "coordinator/verification.h"
#include "coordinator/worker_registry.h"

namespace c960::cluster {

struct CoordinatorOptions {
  int64_t lease_ms = kDefaultLeaseSeconds * 1000;
  int trust_after = kDefaultTrustAfter;
  double spot_check_rate = kDefaultSpotCheckRate;
  // Owners the operator trusts (--trust-roots): their results decide disagreements and audits,
  // and trust grows outward from them. Without authentication every worker is a trust root.
  std::set<std::string> trust_roots = {};
  // A job's audit rate when its spec sets none and trust roots are named (--audit-rate).
  double audit_rate = kDefaultAuditRate;
  // A copy placed with an owner that does not lease it within this long, or whose workers are
  // gone, is placed again.
  int64_t placement_ms = kDefaultPlacementSeconds * 1000;
  int max_active_jobs = kDefaultMaxActiveJobs;
  int64_t max_planned_units = kDefaultMaxPlannedUnits;
  // Each caller's planning budget (cluster/config.h).
  int64_t plan_budget_ms = kDefaultPlanBudgetMs;
  int64_t plan_budget_window_ms = kDefaultPlanBudgetWindowMs;
  int max_watches_per_caller = kDefaultMaxWatchesPerCaller;
  int max_watches = kDefaultMaxWatches;
  uint64_t seed = 0;  // of spot-check draws and session ids' salt; 0: from the system
  // Lazy perft planning (cluster/config.h): plans walking more positions than this are lazy,
  // with windows of this many units, refilled below the low-water mark.
  uint64_t lazy_plan_walk = kMaxPlanWalk;
  int64_t lazy_window_units = kLazyWindowUnits;
  int64_t lazy_low_water_units = kLazyLowWaterUnits;
  // Folds groups of settled units (JobKind::fold_group); false keeps every unit, as before
  // folding (the baseline of bench/lazy_fold.cpp).
  bool fold = true;
  // Leases one owner may hold at once, over all its workers (hoarding): at most this, and at
  // most what its connected workers' threads compute in a lease period (verification.h).
  int64_t max_leases_per_credential = kDefaultMaxLeasesPerCredential;
  // A lost session is forgotten this long after it was last seen (its worker's record stays
  // until forget_workers_ms).
  int64_t forget_lost_ms = kDefaultForgetLostSeconds * 1000;
  // Worker names remembered per credential and per owner (authenticated callers only), and how
  // long a worker without a session stays remembered (cluster/config.h says which are kept longer).
  int max_workers_per_credential = kDefaultMaxWorkersPerCredential;
  int max_workers_per_owner = kDefaultMaxWorkersPerOwner;
  int64_t forget_workers_ms = kDefaultForgetWorkersSeconds * 1000;
  // The thread that answers long polls and expands lazy plans; off only for a coordinator that
  // nobody long-polls (the simulation's, and its read-back copies: thread starts cost there).
  bool waiter_thread = true;
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
  std::map<std::string, double> work;  // settled work by job kind (JobKind::work)
  // The store: commits that failed (probes included), probes of a degraded store, and full
  // reloads of memory from the store after start-up (load() called again; a failed commit
  // reloads nothing, so this stays 0 in a running daemon).
  int64_t store_commit_failures = 0;
  int64_t store_probes = 0;
  int64_t store_reloads = 0;
};

// A snapshot for monitoring: counts taken under the coordinator's lock, and its counters.
struct CoordinatorMetrics {
  // The registered job kinds (JobKind::capability): every scrape reports each, zeros included.
  std::vector<std::string> kinds;
  std::vector<KindDescriptor> descriptors;                       // theirs, in the same order (each kind's work counter)
  std::map<std::pair<std::string, v1::JobState>, int64_t> jobs;  // by (kind, state)
  // The units of running jobs, each in one state: settled (done); with a result that waits for
  // another worker's (verifying); leased, without a result yet (leased); the rest (pending).
  int64_t units_pending = 0, units_leased = 0, units_verifying = 0, units_done = 0;
  // Of the verifying units, those whose workers sent different results.
  int64_t units_disagreeing = 0;
  std::map<std::pair<v1::TrustState, bool>, int64_t> workers;  // by (trust, alive)
  int64_t watches = 0;                                         // open WatchJob streams
  bool store_degraded = false;                                 // writes refused (degraded mode)
  CoordinatorCounters counters;
};

class Coordinator {
 public:
  // store and clock must outlive the coordinator.
  Coordinator(Store* store, const Clock* clock, CoordinatorOptions options = {});
  ~Coordinator();

  // Loads jobs and workers from the store: unfinished jobs resume, with every unit that has no
  // settled result queued again as far as it still wants results. Called again, it replaces
  // memory with what the store holds (counted in store_reloads).
  absl::Status load();

  // Users. The submit role sees only its own jobs (others' are NOT_FOUND).
  // Planning stops (CANCELLED) when `cancelled` says so (the caller's deadline passed or it
  // went away) or the coordinator shuts down. One plan at a time per authenticated caller
  // (RESOURCE_EXHAUSTED), and a submit whose request id is being planned is told so
  // (UNAVAILABLE: ask again) instead of planning it twice.
  absl::StatusOr<v1::Job> submit(const Caller& caller, const v1::SubmitJobRequest& req,
                                 const PlanCancelled& cancelled = {});
  absl::StatusOr<v1::Job> get_job(const Caller& caller, const std::string& job_id);
  absl::StatusOr<v1::ListJobsResponse> list_jobs(const Caller& caller, const v1::ListJobsRequest& req);
  absl::StatusOr<v1::Job> cancel(const Caller& caller, const std::string& job_id);
  // Streams a job's results to sink, in constant memory for kinds that keep them in the store
  // (self-play); stops early when sink returns false.
  absl::Status results(const Caller& caller, const std::string& job_id, bool divide, bool omit_games,
                       const ResultSink& sink);
  // All of them at once (tests, small jobs).
  absl::StatusOr<std::vector<v1::ResultChunk>> results(const Caller& caller, const std::string& job_id, bool divide,
                                                       bool omit_games = false);
  // Waits up to wait_ms for a change after *version, then returns the job and the new version;
  // without its spec unless with_spec, and then without its lists of positions (a watch sends
  // it once: it never changes; the lists may be megabytes, and each watcher would hold a copy).
  absl::StatusOr<v1::Job> watch(const Caller& caller, const std::string& job_id, uint64_t* version, int64_t wait_ms,
                                bool with_spec = true);
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

  // Enrollment: a join token (role enroll) traded for a worker credential of its own, at most
  // `caller.uses` times in all. The credential is stored (its hash) before it is given out, and
  // the token table (set_token_table, before load) accepts it from then on.
  absl::StatusOr<v1::EnrollResponse> enroll(const Caller& caller, const v1::EnrollRequest& req);
  void set_token_table(TokenTable* tokens) { tokens_ = tokens; }

  // Workers. Every call but hello names the session hello returned.
  absl::StatusOr<v1::HelloResponse> hello(const Caller& caller, const v1::HelloRequest& req);
  // Leases units; with req.wait_seconds, waits for them (blocking the calling thread: tests and
  // in-process workers; the gRPC service uses acquire_async).
  absl::StatusOr<v1::AcquireWorkResponse> acquire(const Caller& caller, const v1::AcquireWorkRequest& req);
  // The long poll without a thread per waiting worker: `done` is called exactly once, never
  // under the coordinator's lock, at once (leases, an error, or empty when wait_seconds is 0),
  // or later from the coordinator's waiter thread: when units can be leased, at the end of the
  // wait, when the session calls again or is replaced, on cancel_acquire or on shutdown (then
  // empty). `ticket` comes from new_ticket(), taken before the call so that a cancellation
  // racing with it finds it.
  // `authorized` (when given) says whether the caller's credential still authenticates: a wait
  // whose credential was revoked ends UNAUTHENTICATED, and is never given a lease, once the
  // waiter thread looks (before any lease; at once after credentials_changed()). It is called
  // under the coordinator's lock, only before `done`.
  using AcquireDone = coord::LongPolls::Done;
  using StillAuthorized = coord::LongPolls::StillAuthorized;
  uint64_t new_ticket();
  void acquire_async(const Caller& caller, const v1::AcquireWorkRequest& req, uint64_t ticket, AcquireDone done,
                     StillAuthorized authorized = {});
  // Credentials were revoked or removed (the tokens file reloaded): waiting acquires whose
  // credential no longer authenticates end now (UNAUTHENTICATED).
  void credentials_changed();
  // The caller of a waiting acquire went away: its wait ends now (answered empty).
  void cancel_acquire(uint64_t ticket);
  absl::StatusOr<v1::RenewLeasesResponse> renew(const Caller& caller, const v1::RenewLeasesRequest& req);
  absl::StatusOr<v1::CompleteUnitResponse> complete(const Caller& caller, const v1::CompleteUnitRequest& req);
  // Several completions in one call and one store transaction; each gets the status and outcome
  // complete() would give it.
  absl::StatusOr<v1::CompleteUnitsResponse> complete_units(const Caller& caller, const v1::CompleteUnitsRequest& req);
  absl::Status release(const Caller& caller, const v1::ReleaseUnitsRequest& req);

  // Returns expired leases to the queue and marks silent workers lost. Call periodically.
  void sweep();
  // Wakes every watcher so that streams can end, and answers every waiting acquire (server
  // shutdown).
  void shutdown();
  // Waiting acquires (for tests and metrics).
  size_t waiting_acquires() const;
  bool shutting_down() const;

  // Cheap: counts over the jobs and workers in memory.
  CoordinatorMetrics metrics() const;
  // Degraded mode: empty while the store takes writes; else why writes are refused now (a
  // commit failed and no probe has succeeded since). /readyz reports it.
  std::string store_degraded() const;

  static bool is_final(v1::JobState s) { return s != v1::JOB_STATE_RUNNING; }
  // How a worker's quarantine reason starts when it was for a fault found under verify hosts
  // (the worker alone is barred, not its owner).
  static constexpr const char* kFaultPrefix = "fault: ";

  // The durable part of the state in memory, in one canonical text: jobs, units, their copies
  // and results, folded groups, workers and their trust. A coordinator loaded from the store
  // gives the same text as the one that wrote it: accepted means durable (the simulation test
  // checks it after every step).
  std::string durable_state() const;
  // Sessions held now (tests: lost ones are forgotten).
  size_t sessions() const;
  // Worker records remembered now (tests: lost ones are forgotten).
  size_t workers() const;
  // Empty when the per-credential lease counts equal the leases out (the simulation checks it),
  // else what differs.
  std::string check_lease_counts() const;
  // Empty when the parts' own invariants hold (JobTable::check, WorkerRegistry::check), else
  // what is wrong (tests).
  std::string check_parts() const;

 private:
  // The job model (coordinator/job.h).
  using Copy = coord::Copy;
  using Unit = coord::Unit;
  using Units = coord::Units;
  using Group = coord::Group;
  using Folded = coord::Folded;
  using Sample = coord::Sample;
  using Job = coord::Job;
  // The worker registry's records and sessions (coordinator/worker_registry.h).
  using Session = coord::Session;
  using WorkerState = coord::WorkerState;

  const JobKind* kind_for(v1::JobSpec::KindCase c) const;
  // Jobs and workers as the store holds them, replacing those in memory (sessions, waiters
  // and watches stay): load().
  absl::Status load_locked();
  // Degraded mode. store_failed: a commit failed (memory unchanged): writes are
  // refused from now until a probe succeeds. writable: OK when writes may be tried; probes the
  // store first when a probe is due; else the refusal (UNAVAILABLE, the cause, when to retry).
  void store_failed(const absl::Status& failed);
  absl::Status writable(int64_t now);
  absl::Status refusal(int64_t now) const;
  void probe_store(int64_t now);
  // The owner behind a worker key (its credential's owner; the key without authentication), and
  // whether it is quarantined.
  std::string voter_of(const std::string& key) const;
  // Who votes for a copy in job j: the owner, or under verify hosts the worker itself.
  std::string voter_in(const Job& j, const std::string& key) const;
  // An owner's rank (verification.h): root, trusted (earned), untrusted.
  int rank_of(const std::string& owner) const;
  int rank_in(const Job& j, const std::string& voter) const;
  // The unit's votes as the policy reads them.
  UnitVotes votes_of(const Job& j, int64_t i) const;
  // Whether unit u of job j wants another copy leased: unsettled, and its leases and the voters
  // of its valid results do not reach `wanted` (two results of one voter, e.g. of two workers of
  // one owner, are one: counted as two, the unit would never ask another voter).
  bool needs_copy(const Job& j, const Unit& u) const;
  // Whether the coordinator places the job's copies (verify all and adaptive).
  static bool places(const Job& j) { return j.verify == v1::VERIFY_MODE_ALL || j.verify == v1::VERIFY_MODE_ADAPTIVE; }
  // The owners that could compute a job's copies now (connected, running it, not quarantined),
  // sorted, with their ranks: found once per AcquireWork and job, not once per unit.
  std::vector<std::pair<std::string, int>> placement_candidates(const Job& j) const;
  // The owner that computes unit i's next copy, drawn among the candidates eligible for it
  // ("": none).
  std::string place_copy(const Job& j, int64_t i, const std::vector<std::pair<std::string, int>>& candidates);
  // Leases the owner may hold now (its live workers' threads, the ceiling).
  int64_t owner_cap(const std::string& owner) const;
  // Placements whose owner went away or did not lease them in time go back to the queues.
  void replace_stale(int64_t now);
  bool barred(const std::string& key) const { return registry_.barred(key); }
  // A copy's lease, counted per credential (max_leases_per_credential).
  void take_lease(Copy& c, const Session& s);
  void drop_lease(Copy& c);
  void drop_leases(Job* j);
  // The copy's lease expires at c.expire_ms (given or renewed): on the deadline heap.
  void note_deadline(Job* j, int64_t i, const Copy& c);
  // A deadline entry is the current expiry of a lease still out.
  bool deadline_live(const LeaseDeadlines<Job>::Entry& e) const;
  Job* find_job(const std::string& id);
  // The job if the caller may see it (the submit role: its own only), NOT_FOUND otherwise.
  absl::StatusOr<Job*> job_for(const Caller& caller, const std::string& id);
  absl::StatusOr<Session*> session_for(const Caller& caller, const std::string& id);
  void touch(Session* s);
  // Whether the session's worker offers the job's engine and allows its options; *why when not.
  bool runs(const Session& s, const JobKind& kind, const v1::JobSpec& spec, std::string* why = nullptr) const;
  // At submit: FAILED_PRECONDITION when workers offering the job's engine are connected and
  // none of them allows its options (none connected: the job waits for one).
  absl::Status check_offers(const JobKind& kind, const v1::JobSpec& spec) const;
  // Whether the session offers every engine the job needs (their options aside).
  bool offers_all(const Session& s, const JobKind& kind, const v1::JobSpec& spec) const;
  void add_sample(Job* j);
  // With the spec: whole (GetJob), or its summary (a watch's first message), or none.
  enum class SpecPart { kNone, kSummary, kFull };
  v1::Job snapshot(const Job& j, SpecPart spec = SpecPart::kFull) const;
  std::string notice(const Job& j) const;
  double audit_rate(const Job& j) const { return j.plan.audit_rate(); }
  void changed();
  // Builds a job's units in memory and in the store; no lock held (big plans take seconds).
  absl::StatusOr<std::unique_ptr<Job>> store_new_job(const Caller& caller, const v1::SubmitJobRequest& req,
                                                     const JobKind* kind, KindPlan plan);
  absl::Status check_caps(const Caller& caller, int64_t new_units) const;
  // Fails a job whose stored units disagree with its record (a damaged store).
  void refuse_damaged(Job* j, const std::string& why);
  // Fails a job: its FAILED state is written first (in the caller's transaction when one is
  // open, else on its own), then set in memory; when the write fails memory is left as it was
  // (RUNNING) and the error returned.
  absl::Status fail_job(Job* j, const std::string& why);
  // The in-memory part of fail_job, once the store holds it.
  void apply_failed(Job* j, const std::string& why, int64_t finished_ms);

  // Queues and leases. Queues unit i (in the fresh lane while it has no copy, else in the
  // replicas lane; at the front for a copy given back) if it wants a copy, its job runs, and it
  // is not queued or placed already.
  void enqueue(Job* j, int64_t i, bool front = false);
  // Lazy planning: the waiter thread expands the next roots of jobs below their low-water mark
  // without the lock (refill_jobs), then stores the units with the moved cursor and queues them
  // (add_planned) unless the job changed meanwhile.
  void refill_jobs(std::unique_lock<std::mutex>& lock);
  absl::Status add_planned(Job* j, v1::store::JobPlan plan,
                           std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> units);
  void finish_job(Job* j, int64_t now);
  // Folding: groups of units i .. end - 1 (new units, or loaded ones) are tracked; a settled or
  // unsettled unit moves its group's count; fold_ready folds the groups all settled, each in
  // one store transaction (a failed one stays in memory and is tried again on load).
  void track_groups(Job* j, int64_t first, int64_t end);
  void group_settled(Job* j, int64_t i, int delta);
  void fold_ready(Job* j);
  // The settled groups of final jobs that fold only then (JobKind::folds_while_running), a
  // lease period after they finished: late copies of their units were compared until then.
  void fold_finished(int64_t now);
  // A folded group whose results stand on a quarantined worker's lone vote is planned again
  // (new indexes; its totals taken back).
  absl::Status reopen(Job* j, int64_t group);
  // Leases up to max_units of the queued units the session can compute into *resp.
  absl::Status lease_units(Session& s, int max_units, v1::AcquireWorkResponse* resp);
  // A waiting acquire (long poll).
  using Waiter = coord::LongPolls::Waiter;
  using Answer = coord::LongPolls::Answer;
  // Answers the waiters that can be answered now (work, deadline, shutdown); under the lock.
  void serve_waiters(std::vector<Answer>* out);
  void waiter_loop();
  void work_arrived();
  // One completion's checks under the lock before its result is checked (phase 1 of complete).
  struct Pending;
  absl::Status apply_result(Pending& p, v1::CompleteUnitResponse* resp);
  // The completions of a batch and the workers' records they change, in one transaction; a
  // failed commit leaves memory exactly as it was. Plan, commit, apply: plan_result writes each
  // completion's rows and plans its memory changes from memory as it is (trust earned included:
  // the owners it makes trusted rank so for the rest of the batch), apply_planned installs them
  // once the commit succeeded. A batch with a completion whose effects reach beyond its unit
  // and worker (plan_result false: a quarantine cascade, a reopened or overturned unit, a job
  // failed by tied votes, a settle with an earlier copy's result, a unit twice in the batch) is
  // staged instead: apply_result runs in the transaction, in the batch's order, with an Undo
  // that keeps each part it changes as it was (keep()) and holds its log events; a failed commit
  // swaps the kept parts back in (the jobs' addresses stay) and drops the events.
  struct PlannedResult;
  struct BatchPlan;
  struct Undo;
  absl::Status commit_results(const std::string& worker, const std::vector<Pending*>& todo);
  absl::Status commit_staged(const std::string& worker, const std::vector<Pending*>& todo);
  bool plan_result(Pending& p, BatchPlan* plan);
  void apply_planned(PlannedResult& r, const BatchPlan& plan);
  // The completions of one call: the call's own error, or one answer per completion.
  absl::StatusOr<std::vector<absl::StatusOr<v1::CompleteUnitResponse>>> complete_many(
      const Caller& caller, const std::string& worker_id, const std::vector<const v1::CompleteUnitRequest*>& reqs);
  // A lease transition plans, commits, then applies: plan_lease adds the row that leases unit i
  // to the session (a new copy, or again its worker's earlier copy) without changing anything
  // durable; apply_lease installs a committed row in memory (copy, attempt, lease count,
  // deadline).
  void plan_lease(const Job& j, int64_t i, const Session& s, std::vector<Store::Lease>* rows);
  void apply_lease(Job* j, const Store::Lease& row, Session& s, int64_t now);
  void end_lease(Job* j, int64_t i, Copy& c, bool front);
  int32_t wanted_for(const Job& j, const WorkerState& w);

  // Verification.
  // form: what the unit keeps if the result just sent settles it (it is moved from then).
  v1::CompletionOutcome on_result(Job* j, int64_t i, size_t copy, SettledForm* form);
  absl::Status settle(Job* j, int64_t i, const std::string& kept, int32_t votes, SettledForm* form);
  // settle's memory part, once the store holds the settled unit.
  void apply_settle(Job* j, int64_t i, const std::string& kept, int32_t votes, SettledForm* form, bool finishes,
                    int64_t now);
  absl::Status unsettle(Job* j, int64_t i, int32_t wanted);
  void credit(const std::string& worker);
  // Every worker of the credential is quarantined, with all that follows for each.
  void quarantine_voter(const std::string& voter, const std::string& why);
  void quarantine(const std::string& worker, const std::string& why);
  void record_mismatch(Job* j, const std::string& detail);
  absl::StatusOr<v1::CompleteUnitResponse> record_failure(const Caller& caller, const v1::CompleteUnitRequest& req,
                                                          Job* j, int64_t index, Copy& c);
  void save_worker(const WorkerState& w);
  // Forgets the workers silent for forget_workers_ms that nothing needs (cluster/config.h):
  // their rows deleted, then their records. Whether any was.
  bool forget_workers(int64_t now);
  static std::string canonical_text(const Job& j, const Copy& c);  // for logs

  Store* store_;
  const Clock* clock_;
  TokenTable* tokens_ = nullptr;  // where issued credentials are accepted (none: tests)
  CoordinatorOptions options_;
  std::vector<std::unique_ptr<JobKind>> kinds_;

  std::mutex submit_mu_;   // one submit stores its job at a time (request ids stay unique)
  mutable std::mutex mu_;  // guards everything below but the atomics
  std::condition_variable cv_;
  uint64_t version_ = 0;
  bool shutting_down_ = false;

  // The jobs (coordinator/job_table.h): by id, in creation order, the running ones apart.
  coord::JobTable table_;

  // The worker registry (coordinator/worker_registry.h): records, sessions, trust, lease and
  // worker counts. A record changes there only once the store holds the change: hello and the
  // sweep write it first; a completion batch plans the records it changes and installs them
  // after its commit (a staged batch changes them in its transaction and, if the commit fails,
  // puts back what it kept: WorkerRegistry::keep and restore); a lost session is forgotten after
  // forget_lost_ms, its worker's record after forget_workers_ms without a session if nothing
  // needs it (forget_workers).
  coord::WorkerRegistry registry_;

  // Plans being made now (outside mu_): the authenticated callers making one, and the
  // (owner, request id) of each that has an id.
  std::set<std::string> planning_;
  std::set<std::pair<std::string, std::string>> planning_ids_;
  // Planning budgets by caller identity: the bucket's level in ms (may go below 0 after a long
  // plan: the debt is paid before the next), as of steady time `at`. Full buckets are forgotten.
  struct PlanBudget {
    double level_ms = 0;
    std::chrono::steady_clock::time_point at;
  };
  std::map<std::string, PlanBudget> plan_budgets_;
  // The caller's bucket brought up to now (creating a full one). Under mu_.
  PlanBudget& plan_budget(const std::string& identity, std::chrono::steady_clock::time_point now);

  // Open watch streams by caller identity, and in all.
  std::map<std::string, int> watches_;
  int watches_total_ = 0;

  // The long polls (coordinator/long_polls.h): waiting acquires, one per session, and the
  // events that wake the waiter thread (waiter_loop), which answers them outside mu_.
  coord::LongPolls polls_;
  std::atomic<uint64_t> next_ticket_{1};

  // While a completion batch applies its results: the workers whose rows it writes at its end
  // (save_worker adds to it instead of writing); null otherwise.
  std::set<std::string>* batch_saves_ = nullptr;
  // While a staged completion batch runs (commit_staged): what it changed, as it was. keep(j)
  // before a job is changed (the first time: a copy of it); null otherwise.
  Undo* undo_ = nullptr;
  void keep(Job* j);
  // While a completion batch is planned: the owners it makes trusted (rank_of ranks them so).
  const std::set<std::string>* planned_trusted_ = nullptr;
  bool loaded_ = false;  // load() ran once (a second one is a reload)

  std::mt19937_64 rng_;          // spot checks
  std::mt19937_64 session_ids_;  // with options_.seed: session ids (else the system's randomness)
  // When the leases out expire (sweep() pops those due, never walks them all).
  LeaseDeadlines<Job> deadlines_;
  CoordinatorCounters counters_;

  // The store's health. Invariants: `degraded` from a failed commit until a probe (one small
  // write in a transaction) succeeds; while degraded no transition writes or changes durable
  // state in memory (each refuses up front with refusal()), so memory equals the store without
  // a reload per retry; `next_probe_ms` is when the store may be tried again, `backoff_ms` the
  // wait after a failed probe (kStoreProbeFirstMs doubling to kStoreProbeMaxMs, 0 before one).
  struct StoreHealth {
    bool degraded = false;
    std::string cause;     // the failed commit's (or probe's) error
    int64_t since_ms = 0;  // when the episode began
    int64_t next_probe_ms = 0;
    int64_t backoff_ms = 0;
  };
  StoreHealth health_;
};

}  // namespace c960::cluster
