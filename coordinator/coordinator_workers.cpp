// The coordinator's calls for workers: sessions, leases, completions and their verification,
// failures, and the sweep that returns expired leases and marks silent workers lost.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "coordinator/coordinator.h"
#include "coordinator/validation.h"
#include "core/version.h"

namespace c960::cluster {
namespace {

// Rates of workers for `c960 workers`: over this window.
constexpr int64_t kWorkerRateWindowMs = 120'000;

std::string new_session_id() {
  std::random_device rd;
  return absl::StrFormat("s-%08x%08x%08x%08x", rd(), rd(), rd(), rd());
}

absl::Status unknown_worker(const std::string& id) {
  return with_reason(absl::NotFoundError(absl::StrCat("worker_id: no session '", id.substr(0, 64), "'; call Hello")),
                     v1::ErrorInfo::REASON_UNKNOWN_WORKER);
}

absl::Status quarantined(const std::string& key, const std::string& why) {
  return with_reason(absl::PermissionDeniedError(absl::StrCat("worker ", key, " is quarantined: ", why)),
                     v1::ErrorInfo::REASON_QUARANTINED);
}

absl::Status check_names(const google::protobuf::RepeatedPtrField<std::string>& names, const char* field, int max) {
  if (names.size() > max) return absl::InvalidArgumentError(absl::StrCat(field, ": more than ", max));
  for (const std::string& n : names)
    if (absl::Status s = check_id(n, field); !s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Units and their copies

int Coordinator::Unit::leases() const {
  return int(std::count_if(copies.begin(), copies.end(), [](const Copy& c) { return c.leased(); }));
}

int Coordinator::Unit::results() const {
  return int(std::count_if(copies.begin(), copies.end(), [](const Copy& c) { return c.result && !c.discarded; }));
}

bool Coordinator::Unit::needs_copy() const { return !result && (wanted == 0 || leases() + results() < wanted); }

Coordinator::Copy* Coordinator::Unit::copy_of(const std::string& worker) {
  for (Copy& c : copies)
    if (c.worker == worker) return &c;
  return nullptr;
}

void Coordinator::enqueue(Job* j, int64_t i, bool front) {
  Unit& u = j->units[i];
  if (u.queued || !u.needs_copy() || j->state != v1::JOB_STATE_RUNNING) return;
  std::deque<int64_t>& q = u.copies.empty() ? j->fresh : j->replicas;
  if (front)
    q.push_front(i);
  else
    q.push_back(i);
  u.queued = true;
}

int32_t Coordinator::wanted_for(const Job& j, const WorkerState& w) {
  switch (j.verify) {
    case v1::VERIFY_MODE_OFF: return 1;
    case v1::VERIFY_MODE_ALL: return 2;
    default: break;
  }
  // Adaptive: a new worker's units are all checked; a trusted one's at the spot-check rate.
  if (w.rec.trust != v1::TRUST_STATE_TRUSTED) return 2;
  return std::uniform_real_distribution<double>(0, 1)(rng_) < options_.spot_check_rate ? 2 : 1;
}

void Coordinator::lease(Job* j, int64_t i, Session& s, int64_t now, std::vector<Store::Lease>* rows) {
  Unit& u = j->units[i];
  if (u.wanted == 0) u.wanted = wanted_for(*j, workers_.at(s.key));
  Copy* c = u.copy_of(s.key);
  if (!c) {
    Copy fresh;
    fresh.worker = s.key;
    // Each copy of a perft unit counts with its own Zobrist key set, so that a hash collision
    // cannot make two copies agree on a wrong count.
    fresh.zobrist_seed = uint64_t(u.copies.size());
    u.copies.push_back(std::move(fresh));
    c = &u.copies.back();
  }
  c->session = s.id;
  c->expire_ms = now + options_.lease_ms;
  c->attempt = ++u.attempt;
  j->active.insert(i);
  rows->push_back({i, u.attempt, u.wanted,
                   StoredCopy{i, int32_t(c - u.copies.data()), c->worker, c->attempt, c->zobrist_seed, {}, false}});
  enqueue(j, i);  // it may want a further copy from another worker
}

void Coordinator::end_lease(Job* j, int64_t i, Copy& c, bool front) {
  if (front) ++counters_.requeues;  // given back without a result: expired, released, superseded
  c.session.clear();
  c.expire_ms = 0;
  Unit& u = j->units[i];
  if (u.leases() == 0) j->active.erase(i);
  enqueue(j, i, front);
}

// ---------------------------------------------------------------------------------------------
// Sessions

absl::StatusOr<v1::HelloResponse> Coordinator::hello(const Caller& caller, const v1::HelloRequest& req) {
  if (req.protocol_version() < kMinProtocolVersion || req.protocol_version() > kProtocolVersion)
    return with_reason(
        absl::FailedPreconditionError(absl::StrCat(
            "protocol_version: the worker speaks ", req.protocol_version(), " (version '", req.version().substr(0, 64),
            "'), this coordinator ", kMinProtocolVersion, "..", kProtocolVersion, " (version ",
            std::string(c960::version()), "): run the same c960 version on both")),
        v1::ErrorInfo::REASON_INCOMPATIBLE_VERSION);
  if (absl::Status s = check_text(req.name(), "name", kMaxNameLength, false); !s.ok()) return s;
  if (absl::Status s = check_text(req.version(), "version", kMaxVersionLength, false); !s.ok()) return s;
  if (req.threads() < 1 || req.threads() > kMaxThreads)
    return absl::InvalidArgumentError(absl::StrCat("threads: ", req.threads(), " is not in 1..", kMaxThreads));
  if (absl::Status s = check_names(req.capabilities(), "capabilities", kMaxCapabilities); !s.ok()) return s;
  if (absl::Status s = check_names(req.engines(), "engines", kMaxEngines); !s.ok()) return s;
  for (const std::string& e : req.engines())
    if (e.size() > size_t(kMaxEngineNameLength))
      return absl::InvalidArgumentError(absl::StrCat("engines: '", e.substr(0, 64), "...' is too long"));
  // The worker is who its credentials say; the name only tells its processes apart.
  const std::string host = req.name().empty() ? "worker" : req.name();
  const std::string key = caller.identity.empty() ? host : absl::StrCat(caller.identity, "/", host);

  std::lock_guard lock(mu_);
  WorkerState& w = workers_[key];
  if (w.rec.trust == v1::TRUST_STATE_QUARANTINED) return quarantined(key, w.rec.trust_reason);
  // A new session supersedes the worker's previous one: its leases go back to the queue.
  if (auto old = session_of_.find(key); old != session_of_.end()) {
    for (Job* j : by_seq_)
      for (auto it = j->active.begin(); it != j->active.end();) {
        const int64_t i = *it++;
        for (Copy& c : j->units[i].copies)
          if (c.session == old->second) end_lease(j, i, c, true);
      }
    sessions_.erase(old->second);
  }
  Session s;
  s.id = new_session_id();
  s.key = key;
  s.capabilities = {req.capabilities().begin(), req.capabilities().end()};
  s.engines = {req.engines().begin(), req.engines().end()};
  s.engines.insert("builtin");
  s.last_seen_ms = clock_->now_ms();
  if (w.rec.key.empty()) {
    w.rec.key = key;
    w.rec.trust = v1::TRUST_STATE_NEW;
    w.rec.trust_reason = "no results confirmed yet";
  }
  w.rec.identity = caller.identity;
  w.rec.host = host;
  w.rec.version = req.version();
  w.rec.threads = req.threads();
  w.rec.capabilities = absl::StrJoin(req.capabilities(), ",");
  w.rec.engines = absl::StrJoin(s.engines, ",");
  w.rec.last_seen_ms = s.last_seen_ms;
  if (absl::Status st = store_->upsert_worker(w.rec); !st.ok()) return st;
  log_event(LogLevel::kInfo, "worker_joined",
            absl::StrCat("worker ", key, " joined: ", w.rec.threads, " threads, version ", w.rec.version, ", engines ",
                         w.rec.engines, ", ", v1::TrustState_Name(v1::TrustState(w.rec.trust))),
            {{"worker", key},
             {"identity", w.rec.identity},
             {"threads", w.rec.threads},
             {"version", w.rec.version},
             {"engines", w.rec.engines},
             {"trust", v1::TrustState_Name(v1::TrustState(w.rec.trust))}});
  v1::HelloResponse resp;
  resp.set_worker_id(s.id);
  resp.set_lease_seconds(options_.lease_ms / 1000);
  resp.set_worker_name(key);
  session_of_[key] = s.id;
  sessions_[s.id] = std::move(s);
  changed();
  return resp;
}

absl::StatusOr<Coordinator::Session*> Coordinator::session_for(const Caller& caller, const std::string& id) {
  if (absl::Status s = check_text(id, "worker_id", kMaxIdLength, true); !s.ok()) return s;
  auto it = sessions_.find(id);
  // A session of another identity is as unknown as a made-up one.
  if (it == sessions_.end() || workers_.at(it->second.key).rec.identity != caller.identity) return unknown_worker(id);
  return &it->second;
}

void Coordinator::touch(Session* s) {
  s->last_seen_ms = clock_->now_ms();
  if (s->lost) {
    s->lost = false;
    log_event(LogLevel::kInfo, "worker_back", absl::StrCat("worker ", s->key, " is back"), {{"worker", s->key}});
  }
}

void Coordinator::save_worker(const WorkerState& w) {
  if (absl::Status s = store_->upsert_worker(w.rec); !s.ok()) log_error(s.message());
}

// ---------------------------------------------------------------------------------------------
// Leases

absl::StatusOr<v1::AcquireWorkResponse> Coordinator::acquire(const Caller& caller, const v1::AcquireWorkRequest& req) {
  if (req.max_units() < 1 || req.max_units() > kMaxAcquire)
    return absl::InvalidArgumentError(absl::StrCat("max_units: ", req.max_units(), " is not in 1..", kMaxAcquire));
  std::lock_guard lock(mu_);
  absl::StatusOr<Session*> found = session_for(caller, req.worker_id());
  if (!found.ok()) return found.status();
  Session& s = **found;
  touch(&s);
  const WorkerState& w = workers_.at(s.key);
  if (w.rec.trust == v1::TRUST_STATE_QUARANTINED) return quarantined(s.key, w.rec.trust_reason);
  v1::AcquireWorkResponse resp;
  const int64_t now = clock_->now_ms();
  for (Job* j : by_seq_) {
    if (resp.leases_size() >= req.max_units()) break;
    if (j->state != v1::JOB_STATE_RUNNING || !s.capabilities.count(j->kind->capability())) continue;
    if (const std::string e = j->kind->required_engine(j->spec); !e.empty() && !s.engines.count(e)) continue;
    std::vector<Store::Lease> rows;
    // First the units that wait for another worker's result, as long as this worker did not
    // compute them itself (those stay queued for others; a few looks at most), then fresh ones.
    std::vector<int64_t> skipped;
    for (int looked = 0;
         resp.leases_size() + int(rows.size()) < req.max_units() && !j->replicas.empty() && looked < kMaxReplicaScan;
         ++looked) {
      const int64_t i = j->replicas.front();
      j->replicas.pop_front();
      Unit& u = j->units[i];
      u.queued = false;
      if (!u.needs_copy()) continue;  // stale entry
      if (const Copy* c = u.copy_of(s.key); c && (c->result || c->discarded || c->leased())) {
        skipped.push_back(i);
        continue;
      }
      lease(j, i, s, now, &rows);
    }
    for (auto it = skipped.rbegin(); it != skipped.rend(); ++it) {
      j->replicas.push_front(*it);
      j->units[*it].queued = true;
    }
    while (resp.leases_size() + int(rows.size()) < req.max_units() && !j->fresh.empty()) {
      const int64_t i = j->fresh.front();
      j->fresh.pop_front();
      j->units[i].queued = false;
      if (j->units[i].needs_copy()) lease(j, i, s, now, &rows);
    }
    for (const Store::Lease& r : rows) {
      const Unit& u = j->units[r.unit];
      v1::Lease* l = resp.add_leases();
      l->set_unit_id(absl::StrCat(j->id, "/", r.unit));
      l->set_attempt(r.attempt);
      *l->mutable_spec() = u.spec;
      if (l->spec().has_perft()) l->mutable_spec()->mutable_perft()->set_zobrist_seed(r.copy.zobrist_seed);
      l->set_expire_unix_ms(u.copies[size_t(r.copy.copy)].expire_ms);
    }
    // Copies are what lets a worker complete a unit after a restart: stored before they go out.
    if (absl::Status st = store_->record_leases(j->id, rows); !st.ok()) return st;
  }
  if (resp.leases_size() > 0) changed();
  return resp;
}

absl::StatusOr<v1::RenewLeasesResponse> Coordinator::renew(const Caller& caller, const v1::RenewLeasesRequest& req) {
  if (req.unit_ids_size() > kMaxUnitIdsPerCall)
    return absl::InvalidArgumentError(absl::StrCat("unit_ids: more than ", kMaxUnitIdsPerCall));
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index;
    if (absl::Status s = parse_unit_id(id, "unit_ids", &job_id, &index); !s.ok()) return s;
  }
  std::lock_guard lock(mu_);
  absl::StatusOr<Session*> found = session_for(caller, req.worker_id());
  if (!found.ok()) return found.status();
  Session& s = **found;
  touch(&s);
  const bool barred = workers_.at(s.key).rec.trust == v1::TRUST_STATE_QUARANTINED;
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
    Copy* c = u.copy_of(s.key);
    if (!c) continue;  // never this worker's
    if (u.result || c->result) {
      r->set_status(v1::LEASE_STATUS_COMPLETED);
      continue;
    }
    if (j->state != v1::JOB_STATE_RUNNING || c->discarded || barred) continue;
    // Its own copy, whether its lease is still out or went back to the queue (an expiry, a
    // coordinator restart): it is still being computed here, so it stays here.
    c->session = s.id;
    c->expire_ms = now + options_.lease_ms;
    j->active.insert(index);
    r->set_status(v1::LEASE_STATUS_ACTIVE);
    r->set_expire_unix_ms(c->expire_ms);
  }
  return resp;
}

absl::Status Coordinator::release(const Caller& caller, const v1::ReleaseUnitsRequest& req) {
  if (req.unit_ids_size() > kMaxUnitIdsPerCall)
    return absl::InvalidArgumentError(absl::StrCat("unit_ids: more than ", kMaxUnitIdsPerCall));
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    if (absl::Status s = parse_unit_id(id, "unit_ids", &job_id, &index); !s.ok()) return s;
  }
  std::lock_guard lock(mu_);
  absl::StatusOr<Session*> found = session_for(caller, req.worker_id());
  if (!found.ok()) return found.status();
  Session& s = **found;
  touch(&s);
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    parse_unit_id(id, "unit_ids", &job_id, &index).IgnoreError();
    Job* j = find_job(job_id);
    if (!j || size_t(index) >= j->units.size() || j->state != v1::JOB_STATE_RUNNING) continue;
    Copy* c = j->units[index].copy_of(s.key);
    if (c && c->session == s.id) end_lease(j, index, *c, true);
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
    for (auto it = j->active.begin(); it != j->active.end();) {
      const int64_t i = *it++;
      for (Copy& c : j->units[i].copies)
        if (c.leased() && c.expire_ms <= now) {
          log_event(LogLevel::kInfo, "lease_expired",
                    absl::StrCat("lease of ", j->id, "/", i, " (worker ", c.worker, ", attempt ", c.attempt,
                                 ") expired; back in the queue"),
                    {{"job", j->id}, {"unit", i}, {"worker", c.worker}, {"attempt", c.attempt}});
          ++counters_.lease_expiries;
          end_lease(j, i, c, true);
          any = true;
        }
    }
  }
  for (auto& [id, s] : sessions_) {
    if (s.lost || s.last_seen_ms + options_.lease_ms > now) continue;
    s.lost = true;
    any = true;
    log_event(LogLevel::kWarning, "worker_lost",
              absl::StrCat("worker ", s.key, " lost: silent for ", (now - s.last_seen_ms) / 1000, " s"),
              {{"worker", s.key}, {"silent_s", (now - s.last_seen_ms) / 1000}});
    WorkerState& w = workers_.at(s.key);
    w.rec.last_seen_ms = s.last_seen_ms;
    save_worker(w);
  }
  if (any) changed();
}

// ---------------------------------------------------------------------------------------------
// Results and their verification

absl::StatusOr<v1::CompleteUnitResponse> Coordinator::complete(const Caller& caller,
                                                               const v1::CompleteUnitRequest& req) {
  absl::StatusOr<v1::CompleteUnitResponse> resp = complete_unit(caller, req);
  if (resp.ok()) {
    std::lock_guard lock(mu_);
    ++counters_.completions[resp->outcome()];
  }
  return resp;
}

absl::StatusOr<v1::CompleteUnitResponse> Coordinator::complete_unit(const Caller& caller,
                                                                    const v1::CompleteUnitRequest& req) {
  std::string job_id;
  int64_t index = 0;
  if (absl::Status s = parse_unit_id(req.unit_id(), "unit_id", &job_id, &index); !s.ok()) return s;
  if (req.attempt() < 1) return absl::InvalidArgumentError(absl::StrCat("attempt: ", req.attempt(), " is not >= 1"));
  if (!req.failure().empty()) {
    if (absl::Status s = check_text(req.failure(), "failure", kMaxFailureLength, false); !s.ok()) return s;
    if (req.has_result()) return absl::InvalidArgumentError("failure: given together with a result");
  } else if (!req.has_result()) {
    return absl::InvalidArgumentError("result: missing (give a result or a failure)");
  }
  // First under the lock: who calls, which unit, whether it was given to the caller, its spec.
  const JobKind* kind = nullptr;
  v1::UnitSpec spec;
  std::string worker;
  {
    std::lock_guard lock(mu_);
    absl::StatusOr<Session*> found = session_for(caller, req.worker_id());
    if (!found.ok()) return found.status();
    touch(*found);
    worker = (*found)->key;
    const WorkerState& w = workers_.at(worker);
    if (w.rec.trust == v1::TRUST_STATE_QUARANTINED) return quarantined(worker, w.rec.trust_reason);
    Job* j = find_job(job_id);
    if (!j) return absl::NotFoundError(absl::StrCat("unit_id: no job '", job_id, "'"));
    if (size_t(index) >= j->units.size())
      return absl::NotFoundError(absl::StrCat("unit_id: job ", job_id, " has no unit ", index));
    Copy* c = j->units[index].copy_of(worker);
    if (!c)
      return with_reason(
          absl::PermissionDeniedError(absl::StrCat("unit_id: ", req.unit_id(), " was never leased to ", worker)),
          v1::ErrorInfo::REASON_NOT_LEASED);
    if (!req.failure().empty()) return record_failure(caller, req, j, index, *c);
    kind = j->kind;
    spec = j->units[index].spec;
    if (spec.has_perft()) spec.mutable_perft()->set_zobrist_seed(c->zobrist_seed);
  }
  // Then, without it, what takes time: checking the result (self-play games are replayed and
  // their endings verified) and making its canonical form. Units and kinds never change, so the
  // check holds when the lock is taken again.
  absl::StatusOr<v1::UnitResult> canonical = kind->check_result(spec, req.result());
  std::lock_guard lock(mu_);
  Job* j = find_job(job_id);
  Unit& u = j->units[index];
  const size_t ci = size_t(u.copy_of(worker) - u.copies.data());
  if (!canonical.ok()) {
    // An honest worker never sends a result that cannot be right.
    quarantine(worker,
               absl::StrCat("sent an impossible result for ", req.unit_id(), ": ", canonical.status().message()));
    changed();
    return canonical.status();
  }
  v1::CompleteUnitResponse resp;
  Copy& c = u.copies[ci];
  const std::string serialized = canonical->SerializeAsString();
  if (c.discarded) {
    resp.set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return resp;
  }
  if (c.result) {  // the same copy again: a retry after a lost reply, or a second, different answer
    if (*c.result == serialized) {
      resp.set_outcome(u.result && u.settled == serialized ? v1::COMPLETION_OUTCOME_DUPLICATE
                                                           : v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
      return resp;
    }
    record_mismatch(j, absl::StrCat("unit ", req.unit_id(), ": worker ", worker, " sent two different results"));
    quarantine(worker, absl::StrCat("sent two different results for ", req.unit_id()));
    changed();
    resp.set_outcome(v1::COMPLETION_OUTCOME_MISMATCH);
    return resp;
  }
  // A result for a unit that is not settled yet counts only while the job runs; one for a
  // settled unit is compared with it whatever the job's state.
  if (j->state != v1::JOB_STATE_RUNNING && !u.result) {
    resp.set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return resp;
  }
  // The copy's result and everything it settles, in one transaction.
  std::unique_ptr<Store::Transaction> txn = store_->transaction();
  if (absl::Status s = store_->put_copy_result(j->id, index, int32_t(ci), serialized); !s.ok()) return s;
  c.result = serialized;
  if (c.leased()) end_lease(j, index, c, false);
  WorkerState& w = workers_.at(worker);
  ++w.rec.units_done;
  w.samples.emplace_back(clock_->now_ms(), w.rec.units_done);
  while (w.samples.size() > 2 && w.samples[1].first < clock_->now_ms() - kWorkerRateWindowMs) w.samples.pop_front();
  resp.set_outcome(on_result(j, index, ci));
  if (absl::Status s = txn->commit(); !s.ok()) {
    // Nothing was stored: forget it here too, so that memory and store agree (the worker sends
    // it again after its backoff).
    log_error(s.message());
    return s;
  }
  save_worker(w);
  add_sample(j);
  changed();
  return resp;
}

v1::CompletionOutcome Coordinator::on_result(Job* j, int64_t i, size_t ci) {
  Unit& u = j->units[i];
  const std::string& mine = *u.copies[ci].result;
  const std::string& worker = u.copies[ci].worker;
  if (u.result) {
    if (mine == u.settled) {
      // A further agreeing copy (a spot check, a late lease): it confirms the result.
      if (++u.votes == 2)
        for (const Copy& c : u.copies)
          if (c.result && !c.discarded && *c.result == u.settled) credit(c.worker);
      if (u.votes > 2) credit(worker);
      if (absl::Status s = store_->set_votes(j->id, i, u.votes); !s.ok()) log_error(s.message());
      return v1::COMPLETION_OUTCOME_DUPLICATE;
    }
    const std::string detail =
        absl::StrCat("unit ", j->id, "/", i, ": worker ", worker, " sent ", canonical_text(u.copies[ci]),
                     " but the settled result is ", u.result->ShortDebugString(), " (", u.votes, " votes)");
    record_mismatch(j, detail);
    if (u.votes >= 2) {
      quarantine(worker, absl::StrCat("outvoted on ", j->id, "/", i));
      return v1::COMPLETION_OUTCOME_MISMATCH;
    }
    // One vote against one: take the settled result back and ask another worker to decide.
    if (absl::Status s = unsettle(j, i, std::max(u.wanted, int32_t(u.results()) + 1)); !s.ok()) log_error(s.message());
    ++j->disagreements;
    ++counters_.disagreements;
    j->verifying.insert(i);
    enqueue(j, i, true);
    return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
  }
  // Unsettled: count the votes of the valid results (one per worker: each copy is another one's).
  std::map<std::string, std::vector<size_t>> tally;
  for (size_t k = 0; k < u.copies.size(); ++k)
    if (u.copies[k].result && !u.copies[k].discarded) tally[*u.copies[k].result].push_back(k);
  const auto best = std::max_element(tally.begin(), tally.end(),
                                     [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  const int32_t need = u.wanted >= 2 ? 2 : 1;
  if (int32_t(best->second.size()) >= need && (need >= 2 || tally.size() == 1)) {
    const std::string winner = best->first;
    const int32_t votes = int32_t(best->second.size());
    if (absl::Status s = settle(j, i, winner, votes); !s.ok()) {
      log_error(s.message());
      return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
    }
    if (votes >= 2) {
      for (size_t k : best->second) credit(u.copies[k].worker);
      for (const auto& [result, copies] : tally)
        if (result != winner)
          for (size_t k : copies) {
            record_mismatch(j, absl::StrCat("unit ", j->id, "/", i, ": worker ", u.copies[k].worker, " outvoted by ",
                                            votes, " workers"));
            quarantine(u.copies[k].worker, absl::StrCat("outvoted on ", j->id, "/", i));
          }
    }
    return mine == winner ? v1::COMPLETION_OUTCOME_ACCEPTED : v1::COMPLETION_OUTCOME_MISMATCH;
  }
  j->verifying.insert(i);
  if (tally.size() > 1) {
    // Disagreement without a majority: one more worker decides.
    ++j->disagreements;
    ++counters_.disagreements;
    const int32_t results = u.results();
    if (results >= kMaxCopies) {
      fail_job(j, absl::StrCat("unit ", j->id, "/", i, ": ", results, " workers sent ", tally.size(),
                               " different results, and no two agree"));
      return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
    }
    u.wanted = std::max(u.wanted, results + 1);
    if (absl::Status s = store_->set_wanted(j->id, i, u.wanted); !s.ok()) log_error(s.message());
    log_event(LogLevel::kWarning, "unit_disagreement",
              absl::StrCat("unit ", j->id, "/", i, ": workers disagree; asking another to decide"),
              {{"job", j->id}, {"unit", i}});
  }
  enqueue(j, i, true);
  return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
}

std::string Coordinator::canonical_text(const Copy& c) {
  v1::UnitResult r;
  if (!c.result || !r.ParseFromString(*c.result)) return "?";
  std::string s = r.ShortDebugString();
  return s.size() > 400 ? s.substr(0, 400) + "..." : s;
}

absl::Status Coordinator::settle(Job* j, int64_t i, const std::string& result, int32_t votes) {
  Unit& u = j->units[i];
  v1::UnitResult r;
  if (!r.ParseFromString(result)) return absl::InternalError("settle: canonical result does not parse");
  const bool finishes = j->done + 1 == int64_t(j->units.size());
  const int64_t now = clock_->now_ms();
  if (absl::Status s = store_->settle_unit(j->id, i, result, votes,
                                           finishes ? std::optional<int32_t>(v1::JOB_STATE_SUCCEEDED) : std::nullopt,
                                           now, j->kind->games(u.spec, r));
      !s.ok())
    return s;
  const NodeCount work = j->kind->work(u.meta, r);
  j->work_done += work;
  counters_.work[j->kind->capability()] += double(work);
  if (votes >= 2) ++counters_.replicated;
  u.result = std::move(r);
  u.settled = result;
  u.votes = votes;
  ++j->done;
  j->verifying.erase(i);
  // Leases still out on it (spot checks) may finish: their results are compared, not counted.
  if (finishes) {
    j->state = v1::JOB_STATE_SUCCEEDED;
    j->finished_ms = now;
    j->fresh.clear();
    j->replicas.clear();
    log_event(
        LogLevel::kInfo, "job_succeeded",
        absl::StrCat("job ", j->id, " succeeded: ", j->units.size(), " units, ", j->kind->describe_work(j->work_done),
                     ", ", j->disagreements, " disagreements, ", j->mismatches, " mismatches"),
        {{"job", j->id},
         {"kind", j->kind->capability()},
         {"units", int64_t(j->units.size())},
         {"work", to_string(j->work_done)},
         {"seconds", double(now - j->created_ms) / 1000.0},
         {"disagreements", j->disagreements},
         {"mismatches", j->mismatches}});
  }
  return absl::OkStatus();
}

absl::Status Coordinator::unsettle(Job* j, int64_t i, int32_t wanted) {
  Unit& u = j->units[i];
  if (absl::Status s = store_->unsettle_unit(j->id, i, wanted); !s.ok()) return s;
  j->work_done -= j->kind->work(u.meta, *u.result);
  --j->done;
  u.result.reset();
  u.settled.clear();
  u.votes = 0;
  u.wanted = wanted;
  return absl::OkStatus();
}

void Coordinator::credit(const std::string& worker) {
  WorkerState& w = workers_.at(worker);
  ++w.rec.agreeing;
  if (w.rec.trust == v1::TRUST_STATE_NEW) {
    if (w.rec.agreeing >= options_.trust_after) {
      w.rec.trust = v1::TRUST_STATE_TRUSTED;
      w.rec.trust_reason = absl::StrCat(w.rec.agreeing, " results confirmed by other workers");
      log_event(LogLevel::kInfo, "worker_trusted", absl::StrCat("worker ", worker, " trusted: ", w.rec.trust_reason),
                {{"worker", worker}, {"reason", w.rec.trust_reason}});
    } else {
      w.rec.trust_reason = absl::StrCat(w.rec.agreeing, " of ", options_.trust_after, " results confirmed");
    }
  }
  save_worker(w);
}

void Coordinator::record_mismatch(Job* j, const std::string& detail) {
  ++j->mismatches;
  std::string d = detail.size() > kMaxMismatchDetail ? detail.substr(0, kMaxMismatchDetail) + " ..." : detail;
  log_event(LogLevel::kWarning, "result_mismatch", absl::StrCat("RESULT MISMATCH ", d),
            {{"job", j->id}, {"detail", d}});
  ++counters_.mismatches;
  if (j->mismatch_detail.empty()) j->mismatch_detail = d;
  if (absl::Status s = store_->update_job(j->id, j->state, j->finished_ms, j->mismatches, j->mismatch_detail); !s.ok())
    log_error(s.message());
}

void Coordinator::quarantine(const std::string& worker, const std::string& why) {
  WorkerState& w = workers_.at(worker);
  if (w.rec.trust == v1::TRUST_STATE_QUARANTINED) return;
  w.rec.trust = v1::TRUST_STATE_QUARANTINED;
  w.rec.trust_reason = why;
  ++counters_.quarantines;
  save_worker(w);
  log_event(LogLevel::kWarning, "worker_quarantined", absl::StrCat("worker ", worker, " QUARANTINED: ", why),
            {{"worker", worker}, {"reason", why}});
  // Its leases go back, its waiting results lose their vote, and a running job's result that
  // stands on its word alone is taken back and computed again.
  int64_t revoked = 0;
  for (Job* j : by_seq_) {
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    for (size_t i = 0; i < j->units.size(); ++i) {
      Unit& u = j->units[i];
      Copy* c = u.copy_of(worker);
      if (!c) continue;
      if (c->leased()) end_lease(j, int64_t(i), *c, true);
      if (!c->result || c->discarded) continue;
      c->discarded = true;
      if (absl::Status s = store_->discard_copy(j->id, int64_t(i), int32_t(c - u.copies.data())); !s.ok())
        log_error(s.message());
      if (u.result && u.votes == 1 && *c->result == u.settled) {
        if (absl::Status s = unsettle(j, int64_t(i), std::max(u.wanted, int32_t(2))); !s.ok()) log_error(s.message());
        ++revoked;
      }
      if (!u.result && u.results() == 0) j->verifying.erase(int64_t(i));
      enqueue(j, int64_t(i), true);
    }
  }
  if (revoked)
    log_event(LogLevel::kWarning, "worker_results_revoked",
              absl::StrCat("worker ", worker, ": ", revoked, " of its unconfirmed results taken back"),
              {{"worker", worker}, {"results", revoked}});
}

absl::StatusOr<v1::CompleteUnitResponse> Coordinator::record_failure(const Caller&, const v1::CompleteUnitRequest& req,
                                                                     Job* j, int64_t index, Copy& c) {
  v1::CompleteUnitResponse resp;
  Unit& u = j->units[index];
  if (u.result || c.result || c.discarded || j->state != v1::JOB_STATE_RUNNING) {
    resp.set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return resp;
  }
  ++j->unit_failures;
  j->failing_workers.insert(c.worker);
  j->failure_detail = absl::StrCat("unit ", req.unit_id(), " on worker ", c.worker, ": ", req.failure());
  log_event(LogLevel::kWarning, "unit_failure",
            absl::StrCat("unit failure ", j->unit_failures, " (", j->failing_workers.size(),
                         " workers): ", j->failure_detail),
            {{"job", j->id}, {"unit", req.unit_id()}, {"worker", c.worker}, {"reason", req.failure()}});
  ++counters_.unit_failures;
  // Back to the queue, for another worker: this one cannot compute it.
  c.discarded = true;
  if (absl::Status s = store_->discard_copy(j->id, index, int32_t(&c - u.copies.data())); !s.ok())
    log_error(s.message());
  if (c.leased()) end_lease(j, index, c, false);
  enqueue(j, index);
  // One worker alone (broken, or lying) cannot fail a job.
  if (j->unit_failures >= kMaxUnitFailures && int(j->failing_workers.size()) >= kMinFailingWorkers)
    fail_job(j, j->failure_detail);
  changed();
  resp.set_outcome(v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
  return resp;
}

}  // namespace c960::cluster
