// The coordinator's calls for workers: sessions, leases, completions, failures, and the sweep
// that returns expired leases and marks silent workers lost.
#include <algorithm>
#include <cstdio>
#include <ctime>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "cluster/u128.h"
#include "coordinator/coordinator.h"
#include "coordinator/validation.h"

namespace c960::cluster {

absl::StatusOr<v1::HelloResponse> Coordinator::hello(const Caller& caller, const v1::HelloRequest& req) {
  static_cast<void>(caller);  // issue 9 wiring
  if (absl::Status s = check_text(req.name(), "name", kMaxNameLength, false); !s.ok()) return s;
  if (absl::Status s = check_text(req.version(), "version", kMaxVersionLength, false); !s.ok()) return s;
  if (req.threads() < 1 || req.threads() > kMaxThreads)
    return absl::InvalidArgumentError(absl::StrCat("threads: ", req.threads(), " is not in 1..", kMaxThreads));
  if (req.capabilities_size() > kMaxCapabilities)
    return absl::InvalidArgumentError(absl::StrCat("capabilities: more than ", kMaxCapabilities));
  for (const std::string& c : req.capabilities())
    if (absl::Status s = check_id(c, "capabilities"); !s.ok()) return s;

  std::lock_guard lock(mu_);
  Worker w;
  w.rec.seq = next_worker_seq_++;
  w.rec.id = absl::StrCat("w-", w.rec.seq);
  w.rec.name = req.name();
  w.rec.version = req.version();
  w.rec.threads = req.threads();
  w.rec.capabilities = absl::StrJoin(req.capabilities(), ",");
  w.rec.last_seen_ms = clock_->now_ms();
  w.rec.lost = false;
  w.capabilities = std::set<std::string>(req.capabilities().begin(), req.capabilities().end());
  if (absl::Status s = store_->upsert_worker(w.rec); !s.ok()) return s;
  log_info(absl::StrCat("worker ", w.rec.id, " hello: ", w.rec.name, ", ", w.rec.threads, " threads, version ",
                        w.rec.version));
  v1::HelloResponse resp;
  resp.set_worker_id(w.rec.id);
  resp.set_lease_seconds(options_.lease_ms / 1000);
  workers_[w.rec.id] = std::move(w);
  changed();
  return resp;
}

absl::StatusOr<v1::AcquireWorkResponse> Coordinator::acquire(const Caller& caller, const v1::AcquireWorkRequest& req) {
  static_cast<void>(caller);  // issue 9 wiring
  if (req.max_units() < 1 || req.max_units() > kMaxAcquire)
    return absl::InvalidArgumentError(absl::StrCat("max_units: ", req.max_units(), " is not in 1..", kMaxAcquire));
  std::lock_guard lock(mu_);
  absl::StatusOr<Worker*> w = worker_or_error(req.worker_id());
  if (!w.ok()) return w.status();
  touch(*w);
  v1::AcquireWorkResponse resp;
  const int64_t now = clock_->now_ms();
  for (Job* j : by_seq_) {
    if (resp.leases_size() >= req.max_units()) break;
    if (j->state != v1::JOB_STATE_RUNNING || !(*w)->capabilities.count(j->kind->capability())) continue;
    std::vector<std::pair<int64_t, int32_t>> attempts;
    while (resp.leases_size() < req.max_units() && !j->pending.empty()) {
      const int64_t i = j->pending.front();
      j->pending.pop_front();
      Unit& u = j->units[i];
      if (u.state != UnitState::kPending) continue;  // stale entry
      u.state = UnitState::kLeased;
      u.worker = req.worker_id();
      u.expire_ms = now + options_.lease_ms;
      ++u.attempt;
      j->leased.insert(i);
      attempts.emplace_back(i, u.attempt);
      v1::Lease* l = resp.add_leases();
      l->set_unit_id(absl::StrCat(j->id, "/", i));
      l->set_attempt(u.attempt);
      *l->mutable_spec() = u.spec;
      l->set_expire_unix_ms(u.expire_ms);
    }
    // Attempt counters are bookkeeping, not results: a failed write is logged, not fatal.
    if (absl::Status s = store_->update_attempts(j->id, attempts); !s.ok()) log_info(std::string(s.message()));
  }
  if (resp.leases_size() > 0) changed();
  return resp;
}

absl::StatusOr<v1::RenewLeasesResponse> Coordinator::renew(const Caller& caller, const v1::RenewLeasesRequest& req) {
  static_cast<void>(caller);  // issue 9 wiring
  if (req.unit_ids_size() > kMaxUnitIdsPerCall)
    return absl::InvalidArgumentError(absl::StrCat("unit_ids: more than ", kMaxUnitIdsPerCall));
  std::lock_guard lock(mu_);
  absl::StatusOr<Worker*> w = worker_or_error(req.worker_id());
  if (!w.ok()) return w.status();
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index;
    if (absl::Status s = parse_unit_id(id, "unit_ids", &job_id, &index); !s.ok()) return s;
  }
  touch(*w);
  const int64_t now = clock_->now_ms();
  v1::RenewLeasesResponse resp;
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    parse_unit_id(id, "unit_ids", &job_id, &index).IgnoreError();  // checked above
    v1::LeaseRenewal* r = resp.add_renewals();
    r->set_unit_id(id);
    r->set_status(v1::LEASE_STATUS_LOST);
    Job* j = find_job(job_id);
    if (!j || size_t(index) >= j->units.size()) continue;
    Unit& u = j->units[index];
    if (u.state == UnitState::kDone) {
      r->set_status(v1::LEASE_STATUS_COMPLETED);
      continue;
    }
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    if (u.state == UnitState::kLeased && u.worker != req.worker_id()) continue;
    if (u.state == UnitState::kPending) {
      // Back in the queue (the lease expired, or the coordinator restarted) but still being
      // computed by this worker: lease it to it again rather than compute it twice.
      u.state = UnitState::kLeased;
      u.worker = req.worker_id();
      j->leased.insert(index);
    }
    u.expire_ms = now + options_.lease_ms;
    r->set_status(v1::LEASE_STATUS_ACTIVE);
    r->set_expire_unix_ms(u.expire_ms);
  }
  return resp;
}

absl::StatusOr<v1::CompleteUnitResponse> Coordinator::complete(const Caller& caller,
                                                               const v1::CompleteUnitRequest& req) {
  static_cast<void>(caller);  // issue 9 wiring
  std::string job_id;
  int64_t index = 0;
  if (absl::Status s = parse_unit_id(req.unit_id(), "unit_id", &job_id, &index); !s.ok()) return s;
  if (req.attempt() < 1) return absl::InvalidArgumentError(absl::StrCat("attempt: ", req.attempt(), " is not >= 1"));
  if (!req.failure().empty()) {
    if (absl::Status s = check_text(req.failure(), "failure", kMaxFailureLength, false); !s.ok()) return s;
    if (req.has_result()) return absl::InvalidArgumentError("failure: given together with a result");
  }
  // First under the lock: who calls, which unit, and its spec.
  const JobKind* kind = nullptr;
  v1::UnitSpec spec;
  {
    std::lock_guard lock(mu_);
    absl::StatusOr<Worker*> w = worker_or_error(req.worker_id());
    if (!w.ok()) return w.status();
    touch(*w);
    Job* j = find_job(job_id);
    if (!j) return absl::NotFoundError(absl::StrCat("unit_id: no job '", job_id, "'"));
    if (size_t(index) >= j->units.size())
      return absl::NotFoundError(absl::StrCat("unit_id: job ", job_id, " has no unit ", index));
    if (!req.failure().empty()) return record_failure(req, j, index);
    kind = j->kind;
    spec = j->units[index].spec;
  }
  // Then, without it, what takes time: checking the result (self-play games are replayed move
  // by move) and preparing the rows to store. Units and kinds never change, so the check holds.
  if (absl::Status s = kind->check_result(spec, req.result()); !s.ok()) return s;
  const std::string serialized = req.result().SerializeAsString();
  const std::vector<StoredGame> games = kind->games(spec, req.result());

  std::lock_guard lock(mu_);
  Job* j = find_job(job_id);
  Unit& u = j->units[index];
  v1::CompleteUnitResponse resp;
  if (u.state == UnitState::kDone) {
    if (u.result->SerializeAsString() == serialized) {
      resp.set_outcome(v1::COMPLETION_OUTCOME_DUPLICATE);
      return resp;
    }
    std::string detail = absl::StrCat("unit ", req.unit_id(), " (", u.spec.ShortDebugString(), "): stored ",
                                      u.result->ShortDebugString(), ", worker ", req.worker_id(), " attempt ",
                                      req.attempt(), " sent ", req.result().ShortDebugString());
    // Self-play results carry whole games: keep the log line and the job record readable.
    if (detail.size() > kMaxMismatchDetail) detail = absl::StrCat(detail.substr(0, kMaxMismatchDetail), " ...");
    log_info(absl::StrCat("RESULT MISMATCH ", detail));
    ++j->mismatches;
    if (j->mismatch_detail.empty()) j->mismatch_detail = detail;
    if (absl::Status s = store_->update_job(j->id, j->state, j->finished_ms, j->mismatches, j->mismatch_detail);
        !s.ok())
      log_info(std::string(s.message()));
    changed();
    resp.set_outcome(v1::COMPLETION_OUTCOME_MISMATCH);
    return resp;
  }
  if (j->state != v1::JOB_STATE_RUNNING) {
    resp.set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return resp;
  }
  const bool finishes = j->done + 1 == int64_t(j->units.size());
  const int64_t now = clock_->now_ms();
  if (absl::Status s =
          store_->complete_unit(j->id, index, serialized,
                                finishes ? std::optional<int32_t>(v1::JOB_STATE_SUCCEEDED) : std::nullopt, now, games);
      !s.ok())
    return s;
  u.state = UnitState::kDone;
  u.result = req.result();
  j->leased.erase(index);
  ++j->done;
  j->work_done += j->kind->work(u.meta, u.result.value());
  if (finishes) {
    j->state = v1::JOB_STATE_SUCCEEDED;
    j->finished_ms = now;
    log_info(absl::StrCat("job ", j->id, " succeeded: ", j->units.size(), " units, ",
                          j->kind->describe_work(j->work_done), ", ", j->mismatches, " mismatches"));
  }
  add_sample(j);
  changed();
  resp.set_outcome(v1::COMPLETION_OUTCOME_ACCEPTED);
  return resp;
}

absl::StatusOr<v1::CompleteUnitResponse> Coordinator::record_failure(const v1::CompleteUnitRequest& req, Job* j,
                                                                     int64_t index) {
  v1::CompleteUnitResponse resp;
  Unit& u = j->units[index];
  if (u.state == UnitState::kDone || j->state != v1::JOB_STATE_RUNNING) {
    resp.set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return resp;
  }
  ++j->unit_failures;
  j->failure_detail = absl::StrCat("unit ", req.unit_id(), " on worker ", req.worker_id(), ": ", req.failure());
  log_info(absl::StrCat("unit failure ", j->unit_failures, "/", kMaxUnitFailures, ": ", j->failure_detail));
  // Back to the queue: another worker may have the engine this one lacks.
  if (u.state == UnitState::kLeased && u.worker == req.worker_id()) return_to_queue(j, index, false);
  if (j->unit_failures >= kMaxUnitFailures) {
    const int64_t now = clock_->now_ms();
    if (absl::Status s = store_->fail_job(j->id, v1::JOB_STATE_FAILED, now, j->failure_detail); !s.ok()) return s;
    j->state = v1::JOB_STATE_FAILED;
    j->finished_ms = now;
    j->pending.clear();
    for (int64_t i : j->leased) j->units[i].state = UnitState::kPending;
    j->leased.clear();
    log_info(absl::StrCat("job ", j->id, " FAILED: ", j->failure_detail));
  }
  changed();
  resp.set_outcome(v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
  return resp;
}

void Coordinator::return_to_queue(Job* j, int64_t index, bool front) {
  Unit& u = j->units[index];
  u.state = UnitState::kPending;
  u.worker.clear();
  j->leased.erase(index);
  if (front)
    j->pending.push_front(index);
  else
    j->pending.push_back(index);
}

absl::Status Coordinator::release(const Caller& caller, const v1::ReleaseUnitsRequest& req) {
  static_cast<void>(caller);  // issue 9 wiring
  if (req.unit_ids_size() > kMaxUnitIdsPerCall)
    return absl::InvalidArgumentError(absl::StrCat("unit_ids: more than ", kMaxUnitIdsPerCall));
  std::lock_guard lock(mu_);
  absl::StatusOr<Worker*> w = worker_or_error(req.worker_id());
  if (!w.ok()) return w.status();
  touch(*w);
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    if (absl::Status s = parse_unit_id(id, "unit_ids", &job_id, &index); !s.ok()) return s;
  }
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    parse_unit_id(id, "unit_ids", &job_id, &index).IgnoreError();
    Job* j = find_job(job_id);
    if (!j || size_t(index) >= j->units.size() || j->state != v1::JOB_STATE_RUNNING) continue;
    Unit& u = j->units[index];
    if (u.state == UnitState::kLeased && u.worker == req.worker_id()) return_to_queue(j, index, true);
  }
  changed();
  return absl::OkStatus();
}

void Coordinator::sweep() {
  std::lock_guard lock(mu_);
  const int64_t now = clock_->now_ms();
  bool any = false;
  for (Job* j : by_seq_) {
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    std::vector<int64_t> expired;
    for (int64_t i : j->leased)
      if (j->units[i].expire_ms <= now) expired.push_back(i);
    for (int64_t i : expired) {
      log_info(absl::StrCat("lease of ", j->id, "/", i, " (worker ", j->units[i].worker, ", attempt ",
                            j->units[i].attempt, ") expired; back in the queue"));
      return_to_queue(j, i, true);
      any = true;
    }
  }
  for (auto& [id, w] : workers_) {
    if (w.rec.lost || w.rec.last_seen_ms + options_.lease_ms > now) continue;
    w.rec.lost = true;
    any = true;
    log_info(
        absl::StrCat("worker ", id, " (", w.rec.name, ") lost: silent for ", (now - w.rec.last_seen_ms) / 1000, " s"));
    if (absl::Status s = store_->set_worker_lost(id, true, w.rec.last_seen_ms); !s.ok())
      log_info(std::string(s.message()));
  }
  if (any) changed();
}

}  // namespace c960::cluster
