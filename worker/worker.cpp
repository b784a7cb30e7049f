#include "worker/worker.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "selfplay/spec.h"
#include "worker/compute.h"

namespace c960::cluster {

Worker::Worker(std::unique_ptr<CoordinatorConnection> coordinator, WorkerOptions options)
    : coordinator_(std::move(coordinator)), options_(std::move(options)), backoff_(options_.retry) {
  if (options_.hash_mb > 0) hash_ = std::make_unique<PerftHash>(size_t(options_.hash_mb));
}

Worker::~Worker() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_)
    if (t.joinable()) t.join();
}

int64_t Worker::now_ms() const {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Worker::log(const std::string& msg, LogLevel level) const {
  cluster::log(level, absl::StrCat(worker_id_.empty() ? "-" : worker_id_, ": ", msg));
}

namespace {

// A refused call in words that name the problem, not its status code.
std::string describe(const grpc::Status& s) {
  std::string what;
  switch (s.error_code()) {
    case grpc::StatusCode::UNAUTHENTICATED:
      what = "unauthenticated: the coordinator refused the token or certificate (check --token-file or C960_TOKEN)";
      break;
    case grpc::StatusCode::PERMISSION_DENIED:
      what =
          "permission denied: the coordinator does not let these credentials do this (a worker needs a token "
          "of role worker)";
      break;
    case grpc::StatusCode::FAILED_PRECONDITION:
      what = "incompatible: the coordinator cannot work with this worker";
      break;
    case grpc::StatusCode::INVALID_ARGUMENT: what = "invalid request: the coordinator calls a field wrong"; break;
    case grpc::StatusCode::NOT_FOUND: what = "not found: the coordinator does not know what the call names"; break;
    case grpc::StatusCode::INTERNAL: what = "coordinator error"; break;
    case grpc::StatusCode::RESOURCE_EXHAUSTED: what = "coordinator busy: over a limit"; break;
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED: what = "coordinator unreachable"; break;
    default: what = absl::StrCat("unexpected status ", int(s.error_code())); break;
  }
  return s.error_message().empty() ? what : absl::StrCat(what, " (", s.error_message(), ")");
}

}  // namespace

Worker::Rpc Worker::classify(const grpc::Status& s, const char* what) {
  if (s.ok()) {
    if (backoff_.failures() > 0 && !stop_requested_)
      log(absl::StrCat(what, ": the coordinator answers again after ", backoff_.failures(), " waits"));
    backoff_.reset();
    return Rpc::kOk;
  }
  // Every worker call is safe to repeat (completion is idempotent, a lost acquire's leases just
  // expire), so a timeout is retried like an unreachable coordinator, and so is a coordinator
  // that cannot store (its disk is full: it may be freed).
  switch (s.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
    case grpc::StatusCode::DEADLINE_EXCEEDED:
    case grpc::StatusCode::INTERNAL:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
    case grpc::StatusCode::ABORTED:
      // Moved on to a coordinator not tried since the last success (a standby named the leader,
      // or one did not answer): at once, and the move was logged where it was made.
      if (coordinator_->retry_at_once()) {
        retry_at_ms_ = now_ms();
        return Rpc::kRetry;
      }
      {
        // Every coordinator failed (or the only one): wait, at least as long as it asked. One
        // line per wait, naming the coordinators and the last error.
        const int64_t wait = backoff_.next_ms(retry_delay_ms_of(s));
        retry_at_ms_ = now_ms() + wait;
        const std::string where = coordinator_->where();
        // A stopping worker does not retry for long: it says so, not "retrying".
        if (stop_requested_)
          log(absl::StrCat(what, ": ", describe(s), " (stopping)"));
        else
          log(absl::StrCat(what, ": ", describe(s), where.empty() ? "" : absl::StrCat(" [coordinators ", where, "]"),
                           "; retrying in ", wait, " ms (wait ", backoff_.failures(), ")"),
              LogLevel::kWarning);
      }
      return Rpc::kRetry;
    default: break;
  }
  switch (reason_of(s)) {
    case v1::ErrorInfo::REASON_UNKNOWN_WORKER: return Rpc::kUnknownWorker;
    case v1::ErrorInfo::REASON_QUARANTINED:
      log(absl::StrCat(what, ": ", s.error_message(), "; stopping"), LogLevel::kError);
      fatal_code_ = 1;
      request_stop();
      return Rpc::kFatal;
    default: break;
  }
  if (s.error_code() == grpc::StatusCode::UNAUTHENTICATED || s.error_code() == grpc::StatusCode::PERMISSION_DENIED ||
      s.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
    // Credentials or versions that do not fit: retrying cannot help, the operator must act.
    log(absl::StrCat(what, " refused: ", describe(s), "; stopping"), LogLevel::kError);
    fatal_code_ = 2;
    request_stop();
    return Rpc::kFatal;
  }
  log(absl::StrCat(what, " failed: ", describe(s)), LogLevel::kWarning);
  return Rpc::kFailed;
}

bool Worker::hello() {
  for (;;) {
    if (stop_requested_) return false;
    if (now_ms() >= retry_at_ms_) {
      v1::HelloRequest req;
      req.set_name(options_.name);
      req.set_version(options_.version);
      req.set_threads(options_.threads);
      req.add_capabilities("perft");
      req.add_capabilities("selfplay");
      req.add_capabilities("evaluation");
      req.set_protocol_version(kProtocolVersion);
      req.set_cpu(options_.cpu);
      for (const auto& [name, offer] : options_.engines) {
        // builtin is everyone's: its offer only says what a job may ask of it.
        if (name != selfplay::kBuiltinEngine) req.add_engines(name);
        v1::EngineOffer* o = req.add_engine_offers();
        o->set_engine(name);
        o->set_sha256(offer.sha256);
        o->set_id_name(offer.id_name);
        for (const selfplay::OptionPolicy::Allowed& a : offer.policy.allowed) {
          v1::AllowedOption* ao = o->add_options();
          ao->set_name(a.name);
          ao->set_bounded(a.bounded);
          ao->set_min(a.min);
          ao->set_max(a.max);
        }
      }
      v1::HelloResponse resp;
      Rpc r = classify(coordinator_->hello(req, &resp, kRpcDeadlineMs), "hello");
      if (r == Rpc::kOk) {
        worker_id_ = resp.worker_id();
        lease_ms_ = std::max<int64_t>(1000, resp.lease_seconds() * 1000);
        log(absl::StrCat("registered as ", resp.worker_name(), ", ", options_.threads, " threads, leases ",
                         resp.lease_seconds(), " s"));
        return true;
      }
      if (r != Rpc::kRetry) {
        if (r == Rpc::kFailed && !fatal_code_) fatal_code_ = 2;  // a request the coordinator calls invalid
        return false;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

bool Worker::delivered(const v1::CompleteUnitRequest& req, const grpc::Status& s, v1::CompletionOutcome outcome) {
  switch (classify(s, "complete")) {
    case Rpc::kRetry: return false;            // keep the result; try again after the backoff
    case Rpc::kUnknownWorker: return hello();  // kept; sent again with the new session
    case Rpc::kFailed: log(absl::StrCat("dropping the result of ", req.unit_id())); break;
    case Rpc::kFatal: {
      // Stopping for good: nothing it holds will be accepted.
      std::lock_guard lock(mu_);
      results_.clear();
      return false;
    }
    case Rpc::kOk:
      if (outcome == v1::COMPLETION_OUTCOME_FAILURE_RECORDED)
        next_acquire_ms_ = now_ms() + kFailurePauseMs;  // do not take the same unit straight back
      if (outcome == v1::COMPLETION_OUTCOME_MISMATCH) log(absl::StrCat("RESULT MISMATCH reported for ", req.unit_id()));
      break;
  }
  std::lock_guard lock(mu_);
  // The front is this result: only this thread removes results.
  if (!results_.empty() && results_.front().unit_id() == req.unit_id()) results_.pop_front();
  return true;
}

void Worker::deliver() {
  for (;;) {
    // Results that piled up go in one call (one store transaction on the coordinator).
    v1::CompleteUnitsRequest batch;
    {
      std::lock_guard lock(mu_);
      if (results_.empty()) return;
      const size_t n = batch_completions_ ? std::min(results_.size(), size_t(kMaxCompletionsPerCall)) : 1;
      for (size_t k = 0; k < n; ++k) *batch.add_completions() = results_[k];
    }
    if (batch_completions_) {
      batch.set_worker_id(worker_id_);
      v1::CompleteUnitsResponse resp;
      grpc::Status s = coordinator_->complete_units(batch, &resp, kRpcDeadlineMs);
      if (s.error_code() == grpc::StatusCode::UNIMPLEMENTED) {
        batch_completions_ = false;  // an older coordinator: one by one
        continue;
      }
      if (s.ok() && resp.statuses_size() != batch.completions_size())
        s = grpc::Status(grpc::StatusCode::INTERNAL, "CompleteUnits: not one status per completion");
      if (!s.ok()) {
        // The call failed as a whole: every result stays for the next try.
        switch (classify(s, "complete")) {
          case Rpc::kRetry: return;
          case Rpc::kUnknownWorker:
            if (!hello()) return;
            continue;
          case Rpc::kFatal: {
            std::lock_guard lock(mu_);
            results_.clear();
            return;
          }
          default: batch_completions_ = false; continue;  // refused: one by one, each answered on its own
        }
      }
      for (int k = 0; k < resp.statuses_size(); ++k) {
        const v1::CompletionStatus& st = resp.statuses(k);
        const grpc::Status gs =
            st.code() == 0 ? grpc::Status::OK
                           : to_grpc(with_reason(absl::Status(absl::StatusCode(st.code()), st.message()), st.reason()));
        if (!delivered(batch.completions(k), gs, st.outcome())) return;
      }
      continue;
    }
    v1::CompleteUnitRequest req = batch.completions(0);
    req.set_worker_id(worker_id_);
    v1::CompleteUnitResponse resp;
    if (!delivered(req, coordinator_->complete(req, &resp, kRpcDeadlineMs), resp.outcome())) return;
  }
}

void Worker::acquire() {
  int want;
  bool idle;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    want = options_.threads * (1 + kPrefetchPerThread) - int(queue_.size() + running_.size());
    idle = queue_.empty() && running_.empty() && results_.empty();
  }
  if (want <= 0 || now_ms() < next_acquire_ms_ || (!idle && now_ms() < busy_poll_at_ms_)) return;
  v1::AcquireWorkRequest req;
  req.set_worker_id(worker_id_);
  req.set_max_units(std::min(want, kMaxAcquire));
  // Idle: wait at the coordinator for work (long poll) instead of asking again and again. A
  // busy worker must not wait there: its results and renewals go through this same thread.
  int64_t deadline_ms = kRpcDeadlineMs;
  if (idle) {
    req.set_wait_seconds(kWorkerAcquireWaitSeconds);
    deadline_ms += int64_t(kWorkerAcquireWaitSeconds) * 1000;
  }
  v1::AcquireWorkResponse resp;
  const grpc::Status s = coordinator_->acquire(req, &resp, deadline_ms);
  if (stop_requested_ && s.error_code() == grpc::StatusCode::CANCELLED) return;  // cancel_waits
  Rpc r = classify(s, "acquire");
  if (r == Rpc::kUnknownWorker) {
    hello();
    return;
  }
  if (r == Rpc::kFailed) next_acquire_ms_ = now_ms() + kBackoffMaxMs;  // refused: do not hammer
  if (r != Rpc::kOk) return;
  if (resp.leases_size() == 0) {
    // After a long poll the coordinator had nothing for a while: ask again soon (an older
    // coordinator answers at once: gently). A busy worker asks again later or once a unit ends.
    next_acquire_ms_ = now_ms() + 200;
    if (!idle) busy_poll_at_ms_ = now_ms() + kBusyAcquirePollMs;
    return;
  }
  {
    std::lock_guard lock(mu_);
    for (v1::Lease& l : *resp.mutable_leases()) queue_.push_back(std::move(l));
  }
  work_cv_.notify_all();
}

void Worker::renew() {
  v1::RenewLeasesRequest req;
  req.set_worker_id(worker_id_);
  {
    std::lock_guard lock(mu_);
    for (const v1::Lease& l : queue_) req.add_unit_ids(l.unit_id());
    for (const auto& [id, l] : running_) req.add_unit_ids(id);
  }
  next_renew_ms_ = now_ms() + lease_ms_ / 3;
  if (req.unit_ids_size() == 0) return;
  v1::RenewLeasesResponse resp;
  Rpc r = classify(coordinator_->renew(req, &resp, kRpcDeadlineMs), "renew");
  if (r == Rpc::kUnknownWorker) {
    hello();
    next_renew_ms_ = 0;
    return;
  }
  if (r != Rpc::kOk) {
    if (r == Rpc::kRetry) next_renew_ms_ = 0;
    return;
  }
  // Queued units that someone else holds now or that are complete are dropped unstarted;
  // running ones finish anyway, as the coordinator accepts a result from anyone once.
  std::lock_guard lock(mu_);
  for (const v1::LeaseRenewal& r : resp.renewals()) {
    if (r.status() == v1::LEASE_STATUS_ACTIVE) continue;
    for (auto it = queue_.begin(); it != queue_.end(); ++it)
      if (it->unit_id() == r.unit_id()) {
        queue_.erase(it);
        break;
      }
  }
}

void Worker::release_queued() {
  v1::ReleaseUnitsRequest req;
  req.set_worker_id(worker_id_);
  // Everything else it holds too, but what it is still finishing or delivering: the acquire that
  // the stop cancelled may have been granted units this worker never heard of.
  req.set_release_all_others(true);
  {
    std::lock_guard lock(mu_);
    for (const v1::Lease& l : queue_) req.add_unit_ids(l.unit_id());
    queue_.clear();
    for (const auto& [id, l] : running_) req.add_keep_unit_ids(id);
    for (const v1::CompleteUnitRequest& r : results_) req.add_keep_unit_ids(r.unit_id());
  }
  if (req.keep_unit_ids_size() > kMaxUnitIdsPerCall) {  // too many to name: the listed ones only
    req.set_release_all_others(false);
    req.clear_keep_unit_ids();
  }
  v1::ReleaseUnitsResponse resp;
  // One try: should it fail, the leases expire and the units return all the same.
  if (classify(coordinator_->release(req, &resp, kReleaseDeadlineMs), "release") == Rpc::kOk && req.unit_ids_size() > 0)
    log(absl::StrCat("released ", req.unit_ids_size(), " queued units"));
}

void Worker::release_running() {
  v1::ReleaseUnitsRequest req;
  req.set_worker_id(worker_id_);
  req.set_release_all_others(true);  // and whatever else it still holds (see release_queued)
  {
    std::lock_guard lock(mu_);
    for (const auto& [id, l] : running_) req.add_unit_ids(id);
  }
  v1::ReleaseUnitsResponse resp;
  if (classify(coordinator_->release(req, &resp, kReleaseDeadlineMs), "release") == Rpc::kOk && req.unit_ids_size() > 0)
    log(absl::StrCat("released ", req.unit_ids_size(), " unfinished units"));
}

void Worker::compute_loop() {
  for (;;) {
    v1::Lease lease;
    {
      std::unique_lock lock(mu_);
      work_cv_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;  // queued units are released by the control loop
      lease = std::move(queue_.front());
      queue_.pop_front();
      running_[lease.unit_id()] = lease;
    }
    absl::StatusOr<v1::UnitResult> result = compute_unit(lease.spec(), hash_.get(), options_.engines);
    {
      std::lock_guard lock(mu_);
      running_.erase(lease.unit_id());
      if (result.ok()) {
        v1::CompleteUnitRequest req;
        req.set_unit_id(lease.unit_id());
        req.set_attempt(lease.attempt());
        *req.mutable_result() = std::move(*result);
        results_.push_back(std::move(req));
        ++results_added_;
      } else if (result.status().code() == absl::StatusCode::kFailedPrecondition) {
        // This machine cannot (e.g. no such engine here): tell the coordinator why.
        log(absl::StrCat("unit ", lease.unit_id(), " failed: ", result.status().message()));
        v1::CompleteUnitRequest req;
        req.set_unit_id(lease.unit_id());
        req.set_attempt(lease.attempt());
        std::string why(result.status().message().substr(0, kMaxFailureLength));
        for (char& c : why)
          if (c < 0x20 || c >= 0x7f) c = ' ';  // the coordinator takes printable ASCII only
        req.set_failure(why);
        results_.push_back(std::move(req));
        ++results_added_;
      } else {
        // Left to expire: another worker (another version) may be able to compute it.
        log(absl::StrCat("cannot compute ", lease.unit_id(), ": ", result.status().message()));
      }
    }
    control_cv_.notify_one();
  }
}

int Worker::run() {
  if (!hello()) return fatal_code_ ? fatal_code_ : stop_requested_ ? 0 : 2;
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this] { compute_loop(); });
  int64_t grace_deadline = 0;
  uint64_t results_seen = 0;
  for (;;) {
    if (stop_requested_ && grace_deadline == 0) {
      {
        std::lock_guard lock(mu_);
        stopping_ = true;
      }
      work_cv_.notify_all();
      grace_deadline = now_ms() + options_.grace_ms;
      retry_at_ms_ = 0;  // a wait to try again ends: held results and units go back now
      log(absl::StrCat("stopping: no new work; finishing held units within ", options_.grace_ms / 1000, " s"));
      release_queued();
    }
    if (now_ms() >= retry_at_ms_) deliver();
    if (now_ms() >= retry_at_ms_) acquire();
    if (now_ms() >= retry_at_ms_ && now_ms() >= next_renew_ms_) renew();
    {
      std::unique_lock lock(mu_);
      if (stopping_ && running_.empty() && results_.empty()) break;
      if (stopping_ && now_ms() >= grace_deadline) {
        lock.unlock();
        release_running();
        log("grace period over; exiting with unfinished units released");
        // Compute threads cannot be interrupted mid-perft: end the process without joining.
        std::fflush(nullptr);
        std::_Exit(fatal_code_);
      }
      control_cv_.wait_for(lock, std::chrono::milliseconds(50), [&] { return results_added_ != results_seen; });
      if (results_added_ != results_seen) busy_poll_at_ms_ = 0;  // a thread is free: it may get work
      results_seen = results_added_;
    }
  }
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  log("stopped");
  return fatal_code_;
}

}  // namespace c960::cluster
