// The coordinator's leases: AcquireWork (planned, committed, then applied), lazy refills, the
// long polls and their waiter thread, renewals, releases, and the sweep that returns expired
// leases and marks silent workers lost.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "coordinator/coordinator.h"
#include "coordinator/coordinator_workers_internal.h"
#include "coordinator/validation.h"
#include "coordinator/verification.h"
#include "core/version.h"
#include "selfplay/spec.h"

namespace c960::cluster {

using workers_internal::check_names;
using workers_internal::kWorkerRateWindowMs;
using workers_internal::new_session_id;
using workers_internal::quarantined;
using workers_internal::stored_units;
using workers_internal::unknown_worker;

// ---------------------------------------------------------------------------------------------
// Leases

absl::Status Coordinator::lease_units(Session& s, int max_units, v1::AcquireWorkResponse* resp) {
  const int64_t now = clock_->now_ms();
  // Leases are stored before they go out: none while the store refuses writes.
  if (absl::Status st = writable(now); !st.ok()) return st;
  // One owner holds at most what its connected workers compute in a lease period, over all its
  // credentials and workers.
  const int64_t held = registry_.leases_held(s.voter);
  max_units = int(std::min<int64_t>(max_units, std::max<int64_t>(0, owner_cap(s.voter) - held)));
  if (max_units <= 0) return absl::OkStatus();
  // Whether unit u may have a copy computed by this session's worker: no other worker of its
  // voter has a result for it or a lease on it (one vote per owner; per worker under verify
  // hosts), and the worker's own earlier copy only if it has no result, was not given up and is
  // not leased already. A copy another worker of the voter left without a result (its lease
  // ended: the worker died or went away) holds no vote, and does not stop the voter's other
  // workers: the unit would wait for that worker for ever. Should its result still come, it is
  // the same voter's: no second vote (verification.h).
  auto may_compute = [&](const Job& j, const Unit& u) {
    const std::string me = voter_in(j, s.key);
    for (const Copy& c : u.copies) {
      if (voter_in(j, c.worker) != me) continue;
      if (c.worker == s.key ? (c.result || c.discarded || c.leased() || c.overheld) : (c.result || c.leased()))
        return false;
    }
    return true;
  };
  // Plan: the leases, found from memory as it is (the queues' entries popped on the way are
  // soft state, put back if the commit fails); nothing durable changes before the commit.
  std::vector<std::pair<Job*, std::vector<Store::Lease>>> plan;
  int planned = 0;
  for (Job* j : table_.running()) {
    if (planned >= max_units) break;
    if (!s.capabilities.count(j->kind->capability())) continue;
    if (int64_t(j->queues.size(coord::Lane::kFresh)) < options_.lazy_low_water_units && !j->refilling &&
        !j->kind->fully_planned(j->plan)) {
      j->refilling = true;
      polls_.refill_wanted();
    }
    if (j->queues.empty_for(s.voter)) continue;
    if (!runs(s, *j->kind, j->spec)) continue;
    std::vector<Store::Lease> rows;
    std::set<int64_t> mine_now;  // units planned for this worker: it holds one copy of each at most
    auto room = [&] { return planned + int(rows.size()) < max_units; };
    auto lease = [&](int64_t i) {
      mine_now.insert(i);
      plan_lease(*j, i, s, &rows);
    };
    // First the copies the coordinator placed with this owner.
    while (room()) {
      const std::optional<int64_t> next = j->queues.pop_placed(j->units, s.voter);
      if (!next) break;
      const int64_t i = *next;
      const Unit& u = j->units[i];
      if (!needs_copy(*j, u) || mine_now.count(i)) continue;
      if (!may_compute(*j, u)) {  // another worker of this owner took it meanwhile: placed again
        enqueue(j, i, true);
        continue;
      }
      lease(i);
    }
    // Then the queues: units that wait for another voter's result, then fresh ones. Under verify
    // all and adaptive the coordinator places each copy with an owner drawn at random among the
    // eligible ones, whoever asks: a copy placed with another owner waits for it.
    bool placed_elsewhere = false;
    int64_t stalled = 0;
    // A trust root computes what it asks for (its speed is no threat: its word is trusted, and
    // without authentication every worker is one); anyone else gets what placement gives it.
    const bool root = rank_of(s.voter) == kRankRoot;
    std::vector<int64_t> skipped;
    std::optional<std::vector<std::pair<std::string, int>>> candidates;  // found at the first placement
    auto take = [&](coord::Lane lane, int limit) {
      const bool replicas = lane == coord::Lane::kReplicas;
      for (int looked = 0; room() && looked < limit; ++looked) {
        const std::optional<int64_t> next = j->queues.pop(j->units, lane);
        if (!next) break;
        const int64_t i = *next;
        if (!j->units.live(i)) continue;  // folded since it was queued
        const Unit& u = j->units[i];
        if (!needs_copy(*j, u) || mine_now.count(i)) continue;  // stale entry
        if (!places(*j) || (root && may_compute(*j, u))) {
          if (replicas && !may_compute(*j, u)) {
            skipped.push_back(i);
            continue;
          }
          lease(i);
          continue;
        }
        if (!candidates) candidates = placement_candidates(*j);
        const std::string owner = place_copy(*j, i, *candidates);
        if (owner.empty()) {  // no eligible owner connected: it waits (the notice says so)
          ++stalled;
          skipped.push_back(i);
          continue;
        }
        if (owner == s.voter && may_compute(*j, u)) {
          lease(i);
          continue;
        }
        j->queues.place(j->units, i, owner, now);
        placed_elsewhere = true;
      }
    };
    take(coord::Lane::kReplicas, kMaxReplicaScan);
    take(coord::Lane::kFresh, kMaxPlacementScan);
    for (int64_t i : skipped) j->queues.push(j->units, i, coord::Lane::kReplicas);
    j->stalled = stalled;
    if (placed_elsewhere) work_arrived();
    if (!rows.empty()) {
      planned += int(rows.size());
      plan.emplace_back(j, std::move(rows));
    }
  }
  if (plan.empty()) return absl::OkStatus();
  // Commit: every job's leases in one transaction. Copies are what lets a worker complete a unit
  // after a restart: stored before they go out.
  absl::Status st;
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    st = txn->status();
    for (const auto& [j, rows] : plan)
      if (st.ok()) st = store_->record_leases(j->id, rows);
    if (st.ok()) st = txn->commit();
  }
  if (!st.ok()) {
    // Nothing of it was kept, and nothing durable in memory changed: the units popped go back
    // to their queues, the store is degraded, and the caller is refused.
    for (const auto& [j, rows] : plan)
      for (const Store::Lease& r : rows) enqueue(j, r.unit, true);
    store_failed(st);
    return refusal(now);
  }
  // Apply.
  for (const auto& [j, rows] : plan)
    for (const Store::Lease& r : rows) {
      apply_lease(j, r, s, now);
      const Unit& u = j->units[r.unit];
      v1::Lease* l = resp->add_leases();
      l->set_unit_id(absl::StrCat(j->id, "/", r.unit));
      l->set_attempt(r.attempt);
      *l->mutable_spec() = j->kind->work_spec(j->shared, u.spec, r.copy.zobrist_seed);
      l->set_expire_unix_ms(u.copies[size_t(r.copy.copy)].expire_ms);
    }
  changed();
  return absl::OkStatus();
}

void Coordinator::refill_jobs(std::unique_lock<std::mutex>& lock) {
  polls_.clear_refill();
  struct Work {
    std::string job;
    const JobKind* kind;
    std::string before;  // the plan as it was: a job that changed meanwhile is left alone
    v1::store::JobPlan plan;
    v1::JobSpec spec;  // the job's shared part, for looks at results (no positions: copied under the lock)
    int64_t done = 0;  // units settled when the looks read the store
    std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> units;
    absl::Status error;
  };
  std::vector<Work> work;
  for (Job* j : table_.running())
    if (j->refilling)
      work.push_back({j->id,
                      j->kind,
                      j->plan.SerializeAsString(),
                      j->plan,
                      j->kind->plans_from_results(j->plan) ? j->shared : v1::JobSpec(),
                      j->done,
                      {},
                      {}});
  // Expanding roots takes tens of milliseconds each, looks read the store: without the lock.
  lock.unlock();
  for (Work& w : work) {
    if (!w.kind->plans_from_results(w.plan)) {
      w.units = w.kind->expand(&w.plan, options_.lazy_window_units);
      continue;
    }
    absl::StatusOr<std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>> units =
        w.kind->expand_from_results(store_, w.job, w.spec, &w.plan);
    if (units.ok()) {
      w.units = *std::move(units);
    } else {
      w.error = units.status();
    }
  }
  lock.lock();
  for (Work& w : work) {
    Job* j = find_job(w.job);
    if (!j) continue;
    j->refilling = false;
    // Units that settled while the looks read the store are looked at again.
    if (j->state == v1::JOB_STATE_RUNNING && j->kind->plans_from_results(j->plan) && j->done != w.done) {
      j->refilling = true;
      polls_.refill_wanted();
    }
    if (j->state != v1::JOB_STATE_RUNNING || j->plan.SerializeAsString() != w.before) continue;
    if (!w.error.ok()) {
      log_error(absl::StrCat("job ", j->id, ": planning its next units: ", w.error.message()));
      continue;
    }
    if (w.units.empty() && w.plan.SerializeAsString() == w.before) continue;  // nothing new
    if (!writable(clock_->now_ms()).ok()) continue;  // degraded: tried again at an acquire after it
    if (absl::Status s = add_planned(j, std::move(w.plan), std::move(w.units)); !s.ok()) {
      // Tried again at the next acquire.
      log_error(absl::StrCat("job ", j->id, ": planning its next units: ", s.message()));
      store_failed(s);
    }
  }
  changed();
}

absl::Status Coordinator::add_planned(Job* j, v1::store::JobPlan plan,
                                      std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> units) {
  const int64_t first = int64_t(j->units.size());
  const std::vector<StoredUnit> rows = stored_units(first, units);
  if (absl::Status s = store_->extend_job_plan(j->id, plan.SerializeAsString(), rows, first + int64_t(units.size()));
      !s.ok())
    return s;
  j->plan = std::move(plan);
  j->units.resize(size_t(first) + units.size());
  for (size_t k = 0; k < units.size(); ++k) {
    Unit& u = j->units[first + int64_t(k)];
    u.spec = std::move(units[k].first);
    u.meta = std::move(units[k].second);
    enqueue(j, first + int64_t(k));
  }
  track_groups(j, first, first + int64_t(units.size()));
  // Roots without units (no moves down to the split ply) may end the job here.
  if (j->done == j->total() && j->kind->fully_planned(j->plan)) {
    const int64_t now = clock_->now_ms();
    if (absl::Status s = store_->update_job(j->id, v1::JOB_STATE_SUCCEEDED, now, j->mismatches, j->mismatch_detail);
        !s.ok())
      return s;
    finish_job(j, now);
  }
  return absl::OkStatus();
}

absl::StatusOr<v1::AcquireWorkResponse> Coordinator::acquire(const Caller& caller, const v1::AcquireWorkRequest& req) {
  std::mutex m;
  std::condition_variable cv;
  std::optional<absl::StatusOr<v1::AcquireWorkResponse>> out;
  acquire_async(caller, req, new_ticket(), [&](absl::StatusOr<v1::AcquireWorkResponse> r) {
    std::lock_guard lock(m);
    out = std::move(r);
    cv.notify_all();
  });
  std::unique_lock lock(m);
  cv.wait(lock, [&] { return out.has_value(); });
  return std::move(*out);
}

uint64_t Coordinator::new_ticket() { return next_ticket_++; }

void Coordinator::acquire_async(const Caller& caller, const v1::AcquireWorkRequest& req, uint64_t ticket,
                                AcquireDone done, StillAuthorized authorized) {
  if (req.max_units() < 1 || req.max_units() > kMaxAcquire)
    return done(
        absl::InvalidArgumentError(absl::StrCat("max_units: ", req.max_units(), " is not in 1..", kMaxAcquire)));
  if (req.wait_seconds() < 0)
    return done(absl::InvalidArgumentError(absl::StrCat("wait_seconds: ", req.wait_seconds(), " is negative")));
  std::optional<Answer> superseded;
  absl::StatusOr<v1::AcquireWorkResponse> now_answer = v1::AcquireWorkResponse();
  bool parked = false;
  {
    std::lock_guard lock(mu_);
    absl::StatusOr<Session*> found = session_for(caller, req.worker_id());
    if (!found.ok()) {
      now_answer = found.status();
    } else {
      Session& s = **found;
      touch(&s);
      // A newer call of the session ends the older one's wait: its caller gave up on it.
      if (std::optional<Waiter> old = polls_.take_session(s.id))
        superseded.emplace(std::move(old->done), v1::AcquireWorkResponse());
      if (barred(s.key)) {
        now_answer = quarantined(s.key, registry_.at(s.key).rec.trust_reason);
      } else if (absl::Status st = lease_units(s, req.max_units(), &*now_answer); !st.ok()) {
        now_answer = st;
      } else if (now_answer->leases_size() == 0 && req.wait_seconds() > 0 && !shutting_down_) {
        const int64_t wait_ms = int64_t(std::min(req.wait_seconds(), kMaxAcquireWaitSeconds)) * 1000;
        polls_.park(ticket, Waiter{caller, s.id, req.max_units(), clock_->now_ms() + wait_ms, std::move(done),
                                   std::move(authorized)});
        parked = true;
      }
    }
  }
  if (superseded) superseded->first(std::move(superseded->second));
  if (!parked) done(std::move(now_answer));
}

void Coordinator::cancel_acquire(uint64_t ticket) {
  AcquireDone done;
  {
    std::lock_guard lock(mu_);
    std::optional<Waiter> w = polls_.take(ticket);
    if (!w) return;
    done = std::move(w->done);
  }
  done(v1::AcquireWorkResponse());
}

size_t Coordinator::waiting_acquires() const {
  std::lock_guard lock(mu_);
  return polls_.size();
}

void Coordinator::credentials_changed() {
  std::lock_guard lock(mu_);
  polls_.credentials_changed();
}

void Coordinator::work_arrived() { polls_.work_arrived(); }

void Coordinator::serve_waiters(std::vector<Answer>* out) {
  const int64_t now = clock_->now_ms();
  const coord::LongPolls::Events events = polls_.take_served();
  const bool work = events.work, revoked = events.auth;
  polls_.serve(
      [&](Waiter& w) -> std::optional<absl::StatusOr<v1::AcquireWorkResponse>> {
        absl::StatusOr<v1::AcquireWorkResponse> answer = v1::AcquireWorkResponse();
        bool answered = shutting_down_ || now >= w.deadline_ms;
        // A credential revoked while it waited gets no lease: looked at before any, and on a reload.
        if (!answered && (work || revoked) && w.authorized && !w.authorized()) {
          answer = absl::UnauthenticatedError("token: revoked while the AcquireWork call waited");
          answered = true;
        } else if (!answered && work) {
          Session* session = registry_.session(w.session);
          if (!session) {
            answer = unknown_worker(w.session);  // replaced by a new Hello
            answered = true;
          } else if (barred(session->key)) {
            answer = quarantined(session->key, registry_.at(session->key).rec.trust_reason);
            answered = true;
          } else if (absl::Status st = lease_units(*session, w.max_units, &*answer); !st.ok()) {
            answer = st;
            answered = true;
          } else {
            answered = answer->leases_size() > 0;
          }
        }
        if (!answered) return std::nullopt;
        return answer;
      },
      out);
}

void Coordinator::waiter_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    polls_.cv().wait_for(lock, std::chrono::milliseconds(kLongPollTickMs), [&] {
      const coord::LongPolls::Events& e = polls_.events();
      return e.work || e.refill || e.auth || polls_.stopping() || (shutting_down_ && !polls_.empty());
    });
    if (polls_.events().refill) {
      if (shutting_down_)
        polls_.clear_refill();
      else
        refill_jobs(lock);
    }
    std::vector<Answer> answers;
    serve_waiters(&answers);
    const bool stop = polls_.stopping();
    lock.unlock();
    for (Answer& a : answers) a.first(std::move(a.second));
    if (stop) return;
    lock.lock();
  }
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
  const bool barred = this->barred(s.key);
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
    if (!j->units.live(index)) {  // folded: settled, nothing left to compute
      r->set_status(v1::LEASE_STATUS_COMPLETED);
      continue;
    }
    Unit& u = j->units[index];
    Copy* c = u.copy_of(s.key);
    if (!c) continue;  // never this worker's
    if (u.result || c->result) {
      r->set_status(v1::LEASE_STATUS_COMPLETED);
      continue;
    }
    if (j->state != v1::JOB_STATE_RUNNING || c->discarded || barred) continue;
    // Held past what the unit's size explains: another worker gets it (hoarding). (After a
    // restart the time counts from the first renewal.)
    if (c->held_since_ms == 0) c->held_since_ms = now;
    if (const int64_t limit = j->kind->max_hold_ms(u.spec, u.meta); c->overheld || now - c->held_since_ms > limit) {
      c->overheld = true;
      if (c->leased()) {
        end_lease(j, index, *c, true);
        log_event(LogLevel::kWarning, "lease_held_too_long",
                  absl::StrCat("unit ", id, ": worker ", s.key, " held it ", (now - c->held_since_ms) / 1000,
                               " s, past the ", limit / 1000, " s its size explains; it goes to another worker"),
                  {{"unit", id}, {"worker", s.key}});
      }
      continue;
    }
    // Its own copy, whether its lease is still out or went back to the queue (an expiry, a
    // coordinator restart): it is still being computed here, so it stays here.
    take_lease(*c, s);
    c->expire_ms = now + options_.lease_ms;
    note_deadline(j, index, *c);
    j->active.insert(index);
    r->set_status(v1::LEASE_STATUS_ACTIVE);
    r->set_expire_unix_ms(c->expire_ms);
  }
  return resp;
}

absl::Status Coordinator::release(const Caller& caller, const v1::ReleaseUnitsRequest& req) {
  if (req.unit_ids_size() > kMaxUnitIdsPerCall)
    return absl::InvalidArgumentError(absl::StrCat("unit_ids: more than ", kMaxUnitIdsPerCall));
  if (req.keep_unit_ids_size() > kMaxUnitIdsPerCall)
    return absl::InvalidArgumentError(absl::StrCat("keep_unit_ids: more than ", kMaxUnitIdsPerCall));
  if (req.keep_unit_ids_size() > 0 && !req.release_all_others())
    return absl::InvalidArgumentError("keep_unit_ids: only with release_all_others");
  for (const std::string& id : req.unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    if (absl::Status s = parse_unit_id(id, "unit_ids", &job_id, &index); !s.ok()) return s;
  }
  std::set<std::pair<std::string, int64_t>> keep;
  for (const std::string& id : req.keep_unit_ids()) {
    std::string job_id;
    int64_t index = 0;
    if (absl::Status s = parse_unit_id(id, "keep_unit_ids", &job_id, &index); !s.ok()) return s;
    keep.emplace(std::move(job_id), index);
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
    if (!j || !j->units.live(index) || j->state != v1::JOB_STATE_RUNNING) continue;
    Copy* c = j->units[index].copy_of(s.key);
    if (c && c->session == s.id) end_lease(j, index, *c, true);
  }
  if (req.release_all_others())
    for (Job* j : table_.running()) {
      for (auto it = j->active.begin(); it != j->active.end();) {
        const int64_t i = *it++;
        if (keep.count({j->id, i})) continue;
        for (Copy& c : j->units[i].copies)
          if (c.session == s.id) end_lease(j, i, c, true);
      }
    }
  changed();
  return absl::OkStatus();
}

void Coordinator::sweep() {
  std::lock_guard lock(mu_);
  const int64_t now = clock_->now_ms();
  // Degraded: the sweep probes the store (with backoff) and changes nothing until it takes
  // writes again (leases do not expire meanwhile: nothing can be completed either).
  if (!writable(now).ok()) return;
  bool any = false;
  // The leases due, from the deadline heap: an entry whose lease was renewed, completed or
  // given back since is stale and dropped.
  deadlines_.pop_due(now, [&](const LeaseDeadlines<Job>::Entry& e) {
    if (!deadline_live(e)) return;
    Job* j = e.job;
    const int64_t i = e.unit;
    Copy& c = j->units[i].copies[size_t(e.copy)];
    log_event(LogLevel::kInfo, "lease_expired",
              absl::StrCat("lease of ", j->id, "/", i, " (worker ", c.worker, ", attempt ", c.attempt,
                           ") expired; back in the queue"),
              {{"job", j->id}, {"unit", i}, {"worker", c.worker}, {"attempt", c.attempt}});
    ++counters_.lease_expiries;
    end_lease(j, i, c, true);
    any = true;
  });
  fold_finished(now);
  replace_stale(now);
  // Sessions lost long ago are forgotten (a restarted worker comes back under its stable name,
  // as the same worker: its record stays).
  std::vector<std::string> forgotten, silent;
  for (const auto& [id, s] : registry_.sessions()) {
    if (s.lost && s.last_seen_ms + options_.forget_lost_ms <= now && !polls_.waiting(s.id))
      forgotten.push_back(id);
    else if (!s.lost && s.last_seen_ms + options_.lease_ms <= now)
      silent.push_back(id);
  }
  for (const std::string& id : forgotten) registry_.forget_session(id);
  any |= !forgotten.empty();
  for (const std::string& id : silent) {
    Session& s = *registry_.session(id);
    // Plan, commit, apply: the worker's record with its last sighting is written first; when the
    // write fails nothing changes (the store is degraded; the next sweep after a probe tries again).
    StoredWorker rec = registry_.at(s.key).rec;
    rec.last_seen_ms = s.last_seen_ms;
    if (absl::Status st = store_->upsert_worker(rec); !st.ok()) {
      store_failed(st);
      break;
    }
    registry_.install(std::move(rec));
    s.lost = true;
    any = true;
    log_event(LogLevel::kWarning, "worker_lost",
              absl::StrCat("worker ", s.key, " lost: silent for ", (now - s.last_seen_ms) / 1000, " s"),
              {{"worker", s.key}, {"silent_s", (now - s.last_seen_ms) / 1000}});
  }
  if (registry_.forget_due(now, kForgetWorkersIntervalMs)) any |= forget_workers(now);
  if (any) changed();
}

}  // namespace c960::cluster
