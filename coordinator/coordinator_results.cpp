// The coordinator's results: completions (a batch planned, committed, then applied; or, for
// cascades, staged: applied in the transaction with what it changes kept, and put back if the
// commit fails), their verification, settling, folding and reopening groups, trust, quarantine,
// and failure reports.
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
// Results and their verification

namespace {

// The fields of one completion, checked before anything is looked up.
absl::Status check_completion(const v1::CompleteUnitRequest& req, std::string* job_id, int64_t* index) {
  if (absl::Status s = parse_unit_id(req.unit_id(), "unit_id", job_id, index); !s.ok()) return s;
  if (req.attempt() < 1) return absl::InvalidArgumentError(absl::StrCat("attempt: ", req.attempt(), " is not >= 1"));
  if (!req.failure().empty()) {
    if (absl::Status s = check_text(req.failure(), "failure", kMaxFailureLength, false); !s.ok()) return s;
    if (req.has_result()) return absl::InvalidArgumentError("failure: given together with a result");
  } else if (!req.has_result()) {
    return absl::InvalidArgumentError("result: missing (give a result or a failure)");
  }
  return absl::OkStatus();
}

}  // namespace

// One completion on its way through complete_many.
struct Coordinator::Pending {
  const v1::CompleteUnitRequest* req = nullptr;
  std::string worker;
  std::string job_id;
  int64_t index = 0;
  const JobKind* kind = nullptr;
  v1::UnitSpec spec;
  v1::store::UnitMeta meta;
  std::optional<absl::StatusOr<v1::CompleteUnitResponse>> answer;  // set once it is answered
  absl::StatusOr<v1::UnitResult> canonical = absl::UnknownError("not checked");
  std::optional<SettledForm> form;  // with a valid canonical result
  std::string serialized;           // what copies are compared by (JobKind::kept)
};

absl::StatusOr<v1::CompleteUnitResponse> Coordinator::complete(const Caller& caller,
                                                               const v1::CompleteUnitRequest& req) {
  std::string job_id;
  int64_t index = 0;
  if (absl::Status s = check_completion(req, &job_id, &index); !s.ok()) return s;
  absl::StatusOr<std::vector<absl::StatusOr<v1::CompleteUnitResponse>>> out =
      complete_many(caller, req.worker_id(), {&req});
  if (!out.ok()) return out.status();
  return std::move(out->front());
}

absl::StatusOr<v1::CompleteUnitsResponse> Coordinator::complete_units(const Caller& caller,
                                                                      const v1::CompleteUnitsRequest& req) {
  if (req.completions_size() < 1 || req.completions_size() > kMaxCompletionsPerCall)
    return absl::InvalidArgumentError(
        absl::StrCat("completions: ", req.completions_size(), " is not in 1..", kMaxCompletionsPerCall));
  std::vector<const v1::CompleteUnitRequest*> reqs;
  for (const v1::CompleteUnitRequest& c : req.completions()) reqs.push_back(&c);
  absl::StatusOr<std::vector<absl::StatusOr<v1::CompleteUnitResponse>>> out =
      complete_many(caller, req.worker_id(), reqs);
  if (!out.ok()) return out.status();
  v1::CompleteUnitsResponse resp;
  for (size_t k = 0; k < reqs.size(); ++k) {
    v1::CompletionStatus* st = resp.add_statuses();
    st->set_unit_id(reqs[k]->unit_id().substr(0, kMaxIdLength * 2));
    const absl::StatusOr<v1::CompleteUnitResponse>& a = (*out)[k];
    if (a.ok()) {
      st->set_outcome(a->outcome());
    } else {
      st->set_code(int32_t(a.status().code()));
      st->set_message(std::string(a.status().message()));
      st->set_reason(reason_of(a.status()));
    }
  }
  return resp;
}

absl::StatusOr<std::vector<absl::StatusOr<v1::CompleteUnitResponse>>> Coordinator::complete_many(
    const Caller& caller, const std::string& worker_id, const std::vector<const v1::CompleteUnitRequest*>& reqs) {
  std::vector<Pending> ps(reqs.size());
  for (size_t k = 0; k < reqs.size(); ++k) {
    ps[k].req = reqs[k];
    if (absl::Status s = check_completion(*reqs[k], &ps[k].job_id, &ps[k].index); !s.ok()) ps[k].answer = s;
  }
  // First under the lock: who calls, which units, whether they were given to the caller, their
  // specs. Failure reports are recorded here.
  std::string worker;
  {
    std::lock_guard lock(mu_);
    absl::StatusOr<Session*> found = session_for(caller, worker_id);
    if (!found.ok()) return found.status();
    touch(*found);
    worker = (*found)->key;
    if (barred(worker)) return quarantined(worker, registry_.at(worker).rec.trust_reason);
    if (absl::Status s = writable(clock_->now_ms()); !s.ok()) return s;
    for (Pending& p : ps) {
      p.worker = worker;
      if (p.answer) continue;
      Job* j = find_job(p.job_id);
      if (!j) {
        p.answer = absl::NotFoundError(absl::StrCat("unit_id: no job '", p.job_id, "'"));
        continue;
      }
      if (size_t(p.index) >= j->units.size()) {
        p.answer = absl::NotFoundError(absl::StrCat("unit_id: job ", p.job_id, " has no unit ", p.index));
        continue;
      }
      if (!j->units.live(p.index)) {
        // Folded: settled with its group, whose totals are final. A late result or failure
        // report (a slow worker, a spot check still out) changes nothing; who held it and what
        // it sent are no longer kept, so it is acknowledged as a settled unit's copy would be.
        v1::CompleteUnitResponse resp;
        resp.set_outcome(p.req->failure().empty() ? v1::COMPLETION_OUTCOME_DUPLICATE
                                                  : v1::COMPLETION_OUTCOME_DISCARDED);
        p.answer = resp;
        continue;
      }
      Copy* c = j->units[p.index].copy_of(worker);
      if (!c) {
        p.answer = with_reason(
            absl::PermissionDeniedError(absl::StrCat("unit_id: ", p.req->unit_id(), " was never leased to ", worker)),
            v1::ErrorInfo::REASON_NOT_LEASED);
        continue;
      }
      if (!p.req->failure().empty()) {
        // After a report whose commit failed in this very call, the store is degraded: the rest
        // are refused as any write is then, not tried against it one by one.
        if (absl::Status s = writable(clock_->now_ms()); !s.ok())
          p.answer = s;
        else
          p.answer = record_failure(caller, *p.req, j, p.index, *c);
        continue;
      }
      p.kind = j->kind;
      p.spec = j->kind->work_spec(j->shared, j->units[p.index].spec, c->zobrist_seed);
      p.meta = j->units[p.index].meta;
    }
  }
  // Then, without it, what takes time: checking the results (self-play games are replayed and
  // their endings verified) and making their canonical form. Units and kinds never change, so
  // the checks hold when the lock is taken again.
  bool any = false;
  for (Pending& p : ps) {
    if (p.answer) continue;
    p.canonical = p.kind->check_result(p.spec, p.req->result());
    if (p.canonical.ok()) {
      // What the unit keeps if this result settles it (self-play: the games' compact forms),
      // and what copies are compared by (the result, or a digest of it): made here too.
      absl::StatusOr<SettledForm> form = p.kind->settle_form(p.spec, p.meta, *p.canonical);
      if (!form.ok()) {
        p.answer = form.status();
        continue;
      }
      p.form = std::move(*form);
      p.serialized = p.kind->kept(*p.canonical);
    }
    any = true;
  }
  std::vector<absl::StatusOr<v1::CompleteUnitResponse>> out;
  out.reserve(ps.size());
  // Taken once more, also to count the outcomes: under load every taking of the lock is a wait
  // among the handler threads.
  std::lock_guard lock(mu_);
  // Failure reports were committed in the first pass, each on its own: when the rest of the call
  // is refused, they are answered as they were (a report kept but answered "nothing kept" would
  // be sent again, and its copy is then discarded: the worker would be told wrong). A call with
  // nothing answered yet is refused whole.
  const auto kept_some = [&ps] {
    return std::any_of(ps.begin(), ps.end(), [](const Pending& p) { return p.answer && p.answer->ok(); });
  };
  if (any) {
    const int64_t now = clock_->now_ms();
    std::vector<Pending*> todo;
    for (Pending& p : ps)
      if (!p.answer) todo.push_back(&p);
    if (absl::Status s = writable(now); !s.ok()) {
      if (!kept_some()) return s;
      for (Pending* p : todo) p->answer = s;
      todo.clear();
    }
    // Every result of the call in one transaction (one commit, not one per unit).
    absl::Status failed;
    if (!todo.empty()) failed = commit_results(worker, todo);
    if (!failed.ok()) {
      // Nothing of it was kept, and memory is as it was (no reload); the store is degraded from
      // here. Then judged: a store that refuses a small write refuses everything (the worker
      // sends the batch again: UNAVAILABLE); one that takes it refused something in this batch,
      // which is found by committing each completion on its own, in order: one that fails alone,
      // twice, with the store taking writes around it, is refused for itself
      // (FAILED_PRECONDITION naming the store's reason); those before it are answered, those
      // after it UNAVAILABLE (sent again, they proceed).
      for (Pending* p : todo) p->answer.reset();
      store_failed(failed);
      probe_store(now);
      if (health_.degraded) {
        const absl::Status refused = refusal(now);
        if (!kept_some()) return refused;
        for (Pending* p : todo) p->answer = refused;
        todo.clear();
      }
      for (Pending* p : todo) {
        absl::Status why;
        for (int tries = 0; tries < kCompletionTriesAlone; ++tries) {
          p->answer.reset();
          if (p->canonical.ok()) {  // its settled form was moved from: made again
            absl::StatusOr<SettledForm> form = p->kind->settle_form(p->spec, p->meta, *p->canonical);
            if (!form.ok()) {
              p->answer = form.status();
              break;
            }
            p->form = std::move(*form);
          }
          why = commit_results(worker, {p});
          if (why.ok()) break;
          if (p->answer && !p->answer->ok() && p->answer->status().code() == absl::StatusCode::kInternal)
            why = p->answer->status();  // the statement the store refused, not "the transaction failed"
          p->answer.reset();
          store_failed(why);
          probe_store(now);
          if (health_.degraded) break;
        }
        if (p->answer) continue;
        if (health_.degraded) {
          for (Pending* q : todo)
            if (!q->answer) q->answer = refusal(now);
          break;
        }
        const absl::StatusCode code = why.code() == absl::StatusCode::kDataLoss ||
                                              why.code() == absl::StatusCode::kInvalidArgument ||
                                              why.code() == absl::StatusCode::kFailedPrecondition
                                          ? why.code()
                                          : absl::StatusCode::kFailedPrecondition;
        p->answer =
            absl::Status(code, absl::StrCat("unit_id: ", p->req->unit_id(), ": the store refuses this result (",
                                            why.message(), "); it was not kept, and sending it again changes nothing"));
        log_event(LogLevel::kError, "completion_refused",
                  absl::StrCat("unit ", p->req->unit_id(), " from worker ", worker,
                               ": the store refuses its result: ", why.message()),
                  {{"unit", p->req->unit_id()}, {"worker", worker}, {"reason", std::string(why.message())}});
        // The completions after it are not tried in this call: each was sent after the refused
        // one, whose effects (a quarantine of this worker, say) they would have seen had it been
        // kept, and a refusal could still be a passing fault met twice. Sent again, they proceed.
        for (Pending* q : todo)
          if (!q->answer)
            q->answer = absl::UnavailableError(absl::StrCat("unit_id: ", q->req->unit_id(), ": not tried after ",
                                                            p->req->unit_id(), " was refused: send it again"));
        break;
      }
    }
    changed();
  }
  for (Pending& p : ps) {
    if (p.answer->ok()) ++counters_.completions[(*p.answer)->outcome()];
    out.push_back(std::move(*p.answer));
  }
  return out;
}

// A completion batch's plan: the rows are written while it is made, inside the batch's
// transaction; memory changes only once that transaction committed (apply_planned).
struct Coordinator::PlannedResult {
  Pending* p = nullptr;
  Job* j = nullptr;
  int64_t i = 0;
  size_t ci = 0;
  std::vector<size_t> discard;  // other copies whose voters are quarantined: discarded now
  Decision d;
  bool audited = false;   // kSettle: the unit was audited (a root's vote behind it)
  bool finishes = false;  // kSettle: the job's last unit
};
struct Coordinator::BatchPlan {
  std::vector<PlannedResult> results;
  std::set<std::pair<const Job*, int64_t>> units;  // units with a result planned
  std::map<const Job*, int64_t> settles;           // units each job settles in the batch
  std::set<const Job*> finished;                   // jobs the batch finishes
  std::map<std::string, StoredWorker> workers;     // the records of the workers it changes, as it leaves them
  std::set<std::string> trusted;                   // owners it makes trusted (rank_of sees them while planning)
  std::vector<std::string> trusted_workers;        // the workers that earned it, in order
  int64_t now = 0;
};

// What a staged batch changes, as it was before it (commit_staged): the jobs it changes (each
// copied by keep() before its first change), the registry's records, quarantines, trust and lease
// counts, the counters, and the long polls' events.
struct Coordinator::Undo {
  std::map<Job*, Job> jobs;
  coord::JobTable::Order order;          // which jobs run (a job the batch finishes leaves them)
  coord::WorkerRegistry::Kept registry;  // records, trust and lease counts
  CoordinatorCounters counters;
  coord::LongPolls::Events events;
};

void Coordinator::keep(Job* j) {
  if (undo_ && !undo_->jobs.count(j)) undo_->jobs.emplace(j, *j);
}

absl::Status Coordinator::commit_results(const std::string& worker, const std::vector<Pending*>& todo) {
  // Plan and commit.
  BatchPlan plan;
  plan.now = clock_->now_ms();
  plan.workers[worker] = registry_.at(worker).rec;
  bool local = true;
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    if (!txn->status().ok()) return txn->status();
    planned_trusted_ = &plan.trusted;
    for (Pending* p : todo)
      if (!(local = plan_result(*p, &plan))) break;
    planned_trusted_ = nullptr;
    if (local) {
      // The workers' records (counts and trust) in the same commit as the results that moved
      // them, each written once.
      for (const auto& [key, rec] : plan.workers)
        if (absl::Status s = store_->upsert_worker(rec); !s.ok()) return s;
      if (absl::Status s = txn->commit(); !s.ok()) return s;
    }
  }  // (a plan abandoned for the staged path is rolled back here)
  if (!local) {
    for (Pending* p : todo) p->answer.reset();
    return commit_staged(worker, todo);
  }
  // Apply.
  std::vector<Job*> jobs;  // in the batch's order
  for (PlannedResult& r : plan.results) {
    apply_planned(r, plan);
    if (std::find(jobs.begin(), jobs.end(), r.j) == jobs.end()) jobs.push_back(r.j);
  }
  for (auto& [key, rec] : plan.workers) registry_.install(std::move(rec));
  for (const std::string& owner : plan.trusted) registry_.trust(owner);
  for (const std::string& key : plan.trusted_workers) {
    const std::string& why = registry_.at(key).rec.trust_reason;
    log_event(LogLevel::kInfo, "worker_trusted", absl::StrCat("worker ", key, " trusted: ", why),
              {{"worker", key}, {"reason", why}});
  }
  // Groups all settled now are folded, each in a commit of its own (one that fails stays as it
  // is, and is tried again on load), after every result of the batch is in.
  for (Job* j : jobs) fold_ready(j);
  return absl::OkStatus();
}

absl::Status Coordinator::commit_staged(const std::string& worker, const std::vector<Pending*>& todo) {
  // A completion whose effects reach beyond its own unit and worker (a quarantine and what it
  // takes back, a unit reopened or overturned, a job failed, a unit sent twice in one batch) is
  // not planned: the batch is applied in its transaction, completion by completion in the
  // batch's order (a unit's second completion sees its first), by the same code as always
  // (apply_result). What it changes is kept as it was first (Undo; keep() copies a job before
  // its first change), and its log events are held: a failed commit swaps the kept state back
  // in, contents only (jobs keep their addresses: by_seq, the deadline heap and the placements
  // point at them), and drops the events, so memory is exactly as it was without a reload.
  Undo undo{{}, table_.order(), registry_.keep(), counters_, polls_.events()};
  LogHold events;
  absl::Status s;
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    s = txn->status();
    if (s.ok()) {
      undo_ = &undo;
      std::set<std::string> saves{worker};
      batch_saves_ = &saves;
      for (Pending* p : todo) {
        v1::CompleteUnitResponse resp;
        absl::Status applied = apply_result(*p, &resp);
        if (applied.ok())
          p->answer = resp;
        else
          p->answer = applied;
      }
      batch_saves_ = nullptr;
      undo_ = nullptr;
      for (const std::string& key : saves)
        if (s.ok()) s = store_->upsert_worker(registry_.at(key).rec);
      if (s.ok()) s = txn->commit();
    }
  }
  if (s.ok()) {
    events.release();
    return s;
  }
  for (auto& [j, old] : undo.jobs) *j = std::move(old);
  table_.restore(std::move(undo.order));
  registry_.restore(std::move(undo.registry));
  counters_ = std::move(undo.counters);
  polls_.restore(undo.events);
  return s;
}

bool Coordinator::plan_result(Pending& p, BatchPlan* plan) {
  const std::string& worker = p.worker;
  auto answer = [&](v1::CompletionOutcome o) {
    v1::CompleteUnitResponse resp;
    resp.set_outcome(o);
    p.answer = resp;
    return true;
  };
  // The same checks as apply_result's, in its order, reading memory only.
  if (barred(worker)) {
    p.answer = quarantined(worker, registry_.at(worker).rec.trust_reason);
    return true;
  }
  Job* j = find_job(p.job_id);
  const int64_t i = p.index;
  if (!j) {
    p.answer = absl::UnavailableError(absl::StrCat("unit_id: job ", p.job_id, " is being read back; retry"));
    return true;
  }
  if (!j->units.live(i)) return answer(v1::COMPLETION_OUTCOME_DUPLICATE);
  if (!plan->units.insert({j, i}).second) return false;  // a unit twice in one batch
  const Unit& u = j->units[i];
  size_t ci = u.copies.size();
  for (size_t k = 0; k < u.copies.size(); ++k)
    if (u.copies[k].worker == worker) ci = k;
  if (ci == u.copies.size()) {
    p.answer = absl::UnavailableError(absl::StrCat("unit_id: ", p.req->unit_id(), " is being read back; retry"));
    return true;
  }
  if (!p.canonical.ok()) return false;  // its voter is quarantined
  const Copy& c = u.copies[ci];
  const std::string& serialized = p.serialized;
  if (c.discarded) return answer(v1::COMPLETION_OUTCOME_DISCARDED);
  if (c.result) {
    if (*c.result != serialized) return false;  // two different results: quarantined
    return answer(u.result && u.settled == serialized ? v1::COMPLETION_OUTCOME_DUPLICATE
                                                      : v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  }
  const bool running = j->state == v1::JOB_STATE_RUNNING && !plan->finished.count(j);
  if (!running && !u.result) return answer(v1::COMPLETION_OUTCOME_DISCARDED);
  // The copy's rows, in a part of the batch's transaction: a write that fails fails its commit.
  std::unique_ptr<Store::Transaction> txn = store_->transaction();
  auto refused = [&](const absl::Status& s) {
    p.answer = s;  // the statement the store refused (the batch's commit fails with it)
    return true;
  };
  if (absl::Status s = store_->put_copy_result(j->id, i, int32_t(ci), serialized); !s.ok()) return refused(s);
  PlannedResult r;
  r.p = &p;
  r.j = j;
  r.i = i;
  r.ci = ci;
  // The votes as they will be: this copy's result counted, quarantined voters' copies discarded.
  UnitVotes votes = votes_of(*j, i);
  for (size_t k = 0; k < u.copies.size(); ++k) {
    const Copy& o = u.copies[k];
    if (k == ci || !o.result || o.discarded || !barred(o.worker)) continue;
    if (absl::Status s = store_->discard_copy(j->id, i, int32_t(k)); !s.ok()) return refused(s);
    r.discard.push_back(k);
    votes.copies[k].discarded = true;
  }
  votes.copies[ci].result = serialized;
  votes.newest_may_settle_alone = j->verify == v1::VERIFY_MODE_OFF ||
                                  (j->verify == v1::VERIFY_MODE_ADAPTIVE && rank_of(voter_of(worker)) >= kRankTrusted);
  r.d = decide(votes, ci, kMaxCopies);
  const Decision& d = r.d;
  if (!d.quarantine.empty()) return false;
  ++plan->workers.at(worker).units_done;
  // Credits: the worker that computed each credited voter's copy (this one's included). Trust
  // earned: the owner ranks as trusted for the rest of the batch (planned_trusted_), and in
  // memory once the batch committed.
  auto credit_all = [&] {
    std::vector<std::string> keys;
    for (const std::string& v : d.credit) {
      std::string key = v;
      for (size_t k = 0; k < u.copies.size(); ++k)
        if (voter_in(*j, u.copies[k].worker) == v && (k == ci || u.copies[k].result)) {
          key = u.copies[k].worker;
          break;
        }
      keys.push_back(std::move(key));
    }
    for (const std::string& key : keys) {
      const WorkerState* found = registry_.find(key);
      if (!found) continue;
      auto [it, added] = plan->workers.try_emplace(key, found->rec);
      StoredWorker& rec = it->second;
      ++rec.agreeing;
      if (rec.trust != v1::TRUST_STATE_NEW) continue;
      if (earns_trust(rec.agreeing, options_.trust_after)) {
        rec.trust = v1::TRUST_STATE_TRUSTED;
        rec.trust_reason = absl::StrCat(rec.agreeing, " results confirmed by trusted owners");
        plan->trusted.insert(voter_of(key));
        plan->trusted_workers.push_back(key);
      } else {
        rec.trust_reason = absl::StrCat(rec.agreeing, " of ", options_.trust_after, " results confirmed");
      }
    }
  };
  v1::CompletionOutcome outcome = v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
  switch (d.verdict) {
    case Verdict::kDiscard: outcome = v1::COMPLETION_OUTCOME_DISCARDED; break;
    case Verdict::kDuplicate:
      outcome = u.result && u.settled == serialized ? v1::COMPLETION_OUTCOME_DUPLICATE
                                                    : v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
      break;
    case Verdict::kConfirm:
      if (absl::Status s = store_->set_votes(j->id, i, d.votes); !s.ok()) return refused(s);
      credit_all();
      outcome = v1::COMPLETION_OUTCOME_DUPLICATE;
      break;
    case Verdict::kSettle: {
      if (d.result != serialized) return false;  // settled with an earlier copy's result
      int64_t& settles = plan->settles[j];
      r.finishes = j->done + settles + 1 == j->total() && j->kind->fully_planned(j->plan);
      SettledForm* form = &*p.form;
      if (absl::Status s = store_->settle_unit(
              j->id, i, form->stored, d.votes,
              r.finishes ? std::optional<int32_t>(v1::JOB_STATE_SUCCEEDED) : std::nullopt, plan->now);
          !s.ok())
        return refused(s);
      if (form->write)
        if (absl::Status s = form->write(store_, j->id); !s.ok()) return refused(s);
      ++settles;
      if (r.finishes) plan->finished.insert(j);
      r.audited = votes.needs_root;
      credit_all();
      outcome = v1::COMPLETION_OUTCOME_ACCEPTED;
      break;
    }
    case Verdict::kPending:
      if (d.wanted != u.wanted)
        if (absl::Status s = store_->set_wanted(j->id, i, d.wanted); !s.ok()) return refused(s);
      break;
    case Verdict::kMismatch:
    case Verdict::kReopen:
    case Verdict::kOverturn:
    case Verdict::kFail: return false;
  }
  if (absl::Status s = txn->commit(); !s.ok()) return refused(s);
  plan->results.push_back(std::move(r));
  return answer(outcome);
}

void Coordinator::apply_planned(PlannedResult& r, const BatchPlan& plan) {
  Job* j = r.j;
  const int64_t i = r.i;
  const Decision& d = r.d;
  Unit& u = j->units[i];
  Copy& c = u.copies[r.ci];
  c.result = r.p->serialized;
  if (c.leased()) end_lease(j, i, c, false);
  WorkerState& w = registry_.at(r.p->worker);
  w.samples.emplace_back(plan.now, plan.workers.at(r.p->worker).units_done);
  while (w.samples.size() > 2 && w.samples[1].first < plan.now - kWorkerRateWindowMs) w.samples.pop_front();
  for (size_t k : r.discard) u.copies[k].discarded = true;
  switch (d.verdict) {
    case Verdict::kConfirm: u.votes = d.votes; break;
    case Verdict::kSettle:
      apply_settle(j, i, d.result, d.votes, &*r.p->form, r.finishes, plan.now);
      if (r.audited) ++j->audited;
      break;
    case Verdict::kPending:
      j->verifying.insert(i);
      if (d.disagreement) {
        ++j->disagreements;
        ++counters_.disagreements;
        log_event(LogLevel::kWarning, "unit_disagreement",
                  absl::StrCat("unit ", j->id, "/", i, ": copies disagree; a ",
                               d.want_rank >= kRankRoot ? "trust root" : "trusted owner", " not involved decides"),
                  {{"job", j->id}, {"unit", i}});
      }
      u.wanted = d.wanted;
      enqueue(j, i, true);
      break;
    default: break;
  }
  add_sample(j);
}

absl::Status Coordinator::apply_result(Pending& p, v1::CompleteUnitResponse* resp) {
  const std::string& worker = p.worker;
  // A copy of a credential quarantined meanwhile (by an earlier completion of this very call,
  // or another call) counts for nothing.
  if (barred(worker)) return quarantined(worker, registry_.at(worker).rec.trust_reason);
  Job* j = find_job(p.job_id);
  const int64_t index = p.index;
  if (!j) return absl::UnavailableError(absl::StrCat("unit_id: job ", p.job_id, " is being read back; retry"));
  keep(j);                      // staged: what follows may change it
  if (!j->units.live(index)) {  // folded while its result was checked: as for a folded unit
    resp->set_outcome(v1::COMPLETION_OUTCOME_DUPLICATE);
    return absl::OkStatus();
  }
  Unit& u = j->units[index];
  const Copy* mine = u.copy_of(worker);
  if (!mine)  // read back from the store meanwhile, without this lease
    return absl::UnavailableError(absl::StrCat("unit_id: ", p.req->unit_id(), " is being read back; retry"));
  const size_t ci = size_t(mine - u.copies.data());
  if (!p.canonical.ok()) {
    // An honest worker never sends a result that cannot be right.
    quarantine_voter(voter_of(worker), absl::StrCat("sent an impossible result for ", p.req->unit_id(), ": ",
                                                    p.canonical.status().message()));
    return p.canonical.status();
  }
  Copy& c = u.copies[ci];
  const std::string& serialized = p.serialized;
  if (c.discarded) {
    resp->set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return absl::OkStatus();
  }
  if (c.result) {  // the same copy again: a retry after a lost reply, or a second, different answer
    if (*c.result == serialized) {
      resp->set_outcome(u.result && u.settled == serialized ? v1::COMPLETION_OUTCOME_DUPLICATE
                                                            : v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
      return absl::OkStatus();
    }
    record_mismatch(j, absl::StrCat("unit ", p.req->unit_id(), ": worker ", worker, " sent two different results"));
    quarantine_voter(voter_of(worker), absl::StrCat("sent two different results for ", p.req->unit_id()));
    resp->set_outcome(v1::COMPLETION_OUTCOME_MISMATCH);
    return absl::OkStatus();
  }
  // A result for a unit that is not settled yet counts only while the job runs; one for a
  // settled unit is compared with it whatever the job's state.
  if (j->state != v1::JOB_STATE_RUNNING && !u.result) {
    resp->set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return absl::OkStatus();
  }
  // The copy's result and everything it settles, in one transaction (inside the call's).
  std::unique_ptr<Store::Transaction> txn = store_->transaction();
  if (absl::Status s = store_->put_copy_result(j->id, index, int32_t(ci), serialized); !s.ok()) return s;
  c.result = serialized;
  if (c.leased()) end_lease(j, index, c, false);
  WorkerState& w = registry_.at(worker);
  ++w.rec.units_done;
  w.samples.emplace_back(clock_->now_ms(), w.rec.units_done);
  while (w.samples.size() > 2 && w.samples[1].first < clock_->now_ms() - kWorkerRateWindowMs) w.samples.pop_front();
  resp->set_outcome(on_result(j, index, ci, &*p.form));
  fold_ready(j);  // the unit's group may be all settled now (u and c are gone then)
  if (absl::Status s = txn->commit(); !s.ok()) {
    log_error(s.message());
    return s;
  }
  add_sample(j);
  return absl::OkStatus();
}

v1::CompletionOutcome Coordinator::on_result(Job* j, int64_t i, size_t ci, SettledForm* form) {
  Unit& u = j->units[i];
  // A quarantined voter's copies count for nothing: any not discarded yet (its quarantine's write
  // failed before a restart) are discarded now, so that they do not stand for results the unit
  // still needs.
  for (size_t k = 0; k < u.copies.size(); ++k) {
    Copy& c = u.copies[k];
    if (k == ci || !c.result || c.discarded || !barred(c.worker)) continue;
    if (absl::Status s = store_->discard_copy(j->id, i, int32_t(k)); !s.ok()) {
      log_error(s.message());
      continue;
    }
    c.discarded = true;
  }
  // The decision is the pure function's (coordinator/verification.h); what follows applies it.
  UnitVotes votes = votes_of(*j, i);
  votes.newest_may_settle_alone =
      j->verify == v1::VERIFY_MODE_OFF ||
      (j->verify == v1::VERIFY_MODE_ADAPTIVE && rank_of(voter_of(u.copies[ci].worker)) >= kRankTrusted);
  const Decision d = decide(votes, ci, kMaxCopies);
  const std::string worker = u.copies[ci].worker;
  // The worker key of a voter's copy of this unit (credit goes to the worker that computed it).
  auto key_of = [&](const std::string& voter) {
    for (const Copy& c : u.copies)
      if (voter_in(*j, c.worker) == voter && c.result) return c.worker;
    return voter;
  };
  auto quarantine_all = [&](const std::string& how) {
    for (const std::string& v : d.quarantine) {
      record_mismatch(j, absl::StrCat("unit ", j->id, "/", i, ": ",
                                      j->verify == v1::VERIFY_MODE_HOSTS ? "worker " : "owner ", v, " ", how));
      if (j->verify == v1::VERIFY_MODE_HOSTS)
        quarantine(v, absl::StrCat(kFaultPrefix, how, " on ", j->id, "/", i));
      else
        quarantine_voter(v, absl::StrCat(how, " on ", j->id, "/", i));
    }
  };
  auto disagree = [&] {
    ++j->disagreements;
    ++counters_.disagreements;
    log_event(LogLevel::kWarning, "unit_disagreement",
              absl::StrCat("unit ", j->id, "/", i, ": copies disagree; a ",
                           d.want_rank >= kRankRoot ? "trust root" : "trusted owner", " not involved decides"),
              {{"job", j->id}, {"unit", i}});
  };
  auto credit_all = [&] {
    std::vector<std::string> credited;
    for (const std::string& v : d.credit) credited.push_back(key_of(v));
    for (const std::string& k : credited) credit(k);
  };
  // Trust decided for an earlier copy's result, not the one just sent: what the unit keeps is
  // rebuilt from that result where the kind keeps it whole (perft); where it keeps a digest only
  // (self-play games), the outvoted owners are quarantined and one more trusted copy is asked for,
  // whose own result then settles the unit.
  std::optional<SettledForm> other_form;
  if ((d.verdict == Verdict::kSettle || d.verdict == Verdict::kOverturn) && d.result != *u.copies[ci].result) {
    v1::UnitResult parsed;
    if (parsed.ParseFromString(d.result) && j->kind->kept(parsed) == d.result)
      if (absl::StatusOr<SettledForm> f = j->kind->settle_form(j->kind->work_spec(j->shared, u.spec), u.meta, parsed);
          f.ok())
        other_form = std::move(*f);
    if (!other_form) {
      quarantine_all("outvoted by a trusted owner");
      if (u.result) {
        if (absl::Status s = unsettle(j, i, std::max<int32_t>(u.wanted, d.votes + 1)); !s.ok()) log_error(s.message());
      } else if (const int32_t w = std::max<int32_t>(u.wanted, d.votes + 1); w != u.wanted) {
        if (absl::Status s = store_->set_wanted(j->id, i, w); !s.ok()) log_error(s.message());
        u.wanted = w;
      }
      j->verifying.insert(i);
      enqueue(j, i, true);
      return v1::COMPLETION_OUTCOME_MISMATCH;
    }
    form = &*other_form;
  }
  switch (d.verdict) {
    case Verdict::kDiscard:
      if (!d.quarantine.empty()) {
        quarantine_all("sent two different results");
        return v1::COMPLETION_OUTCOME_MISMATCH;
      }
      return v1::COMPLETION_OUTCOME_DISCARDED;
    case Verdict::kDuplicate:
      return u.result && u.settled == *u.copies[ci].result ? v1::COMPLETION_OUTCOME_DUPLICATE
                                                           : v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
    case Verdict::kConfirm: {
      // A further voter agrees (a spot check, a late lease): it confirms the result.
      if (absl::Status s = store_->set_votes(j->id, i, d.votes); !s.ok()) log_error(s.message());
      u.votes = d.votes;
      credit_all();
      return v1::COMPLETION_OUTCOME_DUPLICATE;
    }
    case Verdict::kMismatch: {
      const std::string detail =
          absl::StrCat("unit ", j->id, "/", i, ": worker ", worker, " sent ", canonical_text(*j, u.copies[ci]),
                       " but the settled result is ", j->kind->describe_kept(u.settled), " (", u.votes, " votes)");
      record_mismatch(j, detail);
      quarantine_all(absl::StrCat("outvoted by a trusted owner"));
      return v1::COMPLETION_OUTCOME_MISMATCH;
    }
    case Verdict::kReopen:
    case Verdict::kOverturn: {
      record_mismatch(
          j, absl::StrCat("unit ", j->id, "/", i, ": worker ", worker, " sent ", canonical_text(*j, u.copies[ci]),
                          " but the settled result is ", j->kind->describe_kept(u.settled), " (", u.votes, " votes)"));
      // A finished job's results are final (the store says so): the disagreement stays on
      // record (result_mismatches), and nothing is taken back.
      if (j->state != v1::JOB_STATE_RUNNING) return v1::COMPLETION_OUTCOME_DISCARDED;
      if (d.verdict == Verdict::kOverturn) {
        // A trusted owner decides against the settled result: the result it sent replaces it,
        // and the owners behind the old one are quarantined.
        if (absl::Status s = unsettle(j, i, d.wanted); !s.ok()) {
          log_error(s.message());
          return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
        }
        if (absl::Status s = settle(j, i, d.result, d.votes, form); !s.ok()) {
          log_error(s.message());
          return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
        }
        credit_all();
        quarantine_all("outvoted by a trusted owner");
        return v1::COMPLETION_OUTCOME_ACCEPTED;
      }
      // Untrusted owners disagree with the settled result: take it back; a trusted owner not
      // involved decides.
      if (absl::Status s = unsettle(j, i, d.wanted); !s.ok()) log_error(s.message());
      disagree();
      j->verifying.insert(i);
      enqueue(j, i, true);
      return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
    }
    case Verdict::kSettle: {
      if (absl::Status s = settle(j, i, d.result, d.votes, form); !s.ok()) {
        log_error(s.message());  // the call's commit fails with it
        return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
      }
      if (votes.needs_root) ++j->audited;
      credit_all();
      quarantine_all("outvoted by a trusted owner");
      return v1::COMPLETION_OUTCOME_ACCEPTED;
    }
    case Verdict::kFail:
      // In the call's transaction: a failed write fails its commit (memory is then restored).
      if (absl::Status s = fail_job(j, absl::StrCat("unit ", j->id, "/", i, ": ", kMaxCopies, " owners sent results, ",
                                                    "and the trusted ones among them are tied"));
          !s.ok())
        log_error(s.message());
      return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
    case Verdict::kPending: break;
  }
  j->verifying.insert(i);
  if (d.disagreement) disagree();
  if (d.wanted != u.wanted) {  // one more voter decides, or an untrusted one's result needs another
    if (absl::Status s = store_->set_wanted(j->id, i, d.wanted); !s.ok()) log_error(s.message());
    u.wanted = d.wanted;
  }
  enqueue(j, i, true);
  return v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
}

std::string Coordinator::canonical_text(const Job& j, const Copy& c) {
  return c.result ? j.kind->describe_kept(*c.result) : "?";
}

absl::Status Coordinator::settle(Job* j, int64_t i, const std::string& kept, int32_t votes, SettledForm* form) {
  const bool finishes = j->done + 1 == j->total() && j->kind->fully_planned(j->plan);
  const int64_t now = clock_->now_ms();
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    if (absl::Status s =
            store_->settle_unit(j->id, i, form->stored, votes,
                                finishes ? std::optional<int32_t>(v1::JOB_STATE_SUCCEEDED) : std::nullopt, now);
        !s.ok())
      return s;
    if (form->write)
      if (absl::Status s = form->write(store_, j->id); !s.ok()) return s;
    if (absl::Status s = txn->commit(); !s.ok()) return s;
  }
  apply_settle(j, i, kept, votes, form, finishes, now);
  return absl::OkStatus();
}

void Coordinator::apply_settle(Job* j, int64_t i, const std::string& kept, int32_t votes, SettledForm* form,
                               bool finishes, int64_t now) {
  Unit& u = j->units[i];
  const NodeCount work = j->kind->work(u.spec, u.meta, form->held);
  j->work_done += work;
  counters_.work[j->kind->capability()] += double(work);
  if (votes >= 2) ++counters_.replicated;
  u.result = std::move(form->held);
  u.settled = kept;
  u.votes = votes;
  ++j->done;
  j->verifying.erase(i);
  group_settled(j, i, -1);
  // Leases still out on it (spot checks) may finish: their results are compared, not counted.
  if (finishes) finish_job(j, now);
  // A plan that waits for results looks at them now (on the refill thread, without the lock).
  if (!finishes && j->kind->plans_from_results(j->plan) && !j->refilling) {
    j->refilling = true;
    polls_.refill_wanted();
  }
}

void Coordinator::track_groups(Job* j, int64_t first, int64_t end) {
  if (!options_.fold) return;
  std::set<int64_t> touched;
  for (int64_t i = first; i < end; ++i) {
    if (!j->units.live(i)) continue;
    const Unit& u = j->units[i];
    const int64_t g = j->kind->fold_group(j->plan, u.meta);
    if (g < 0) continue;
    auto [it, added] = j->groups.try_emplace(g, Group{i, i + 1, 0});
    it->second.first = std::min(it->second.first, i);
    it->second.end = std::max(it->second.end, i + 1);
    if (!u.result) ++it->second.unsettled;
    touched.insert(g);
  }
  if (!j->kind->folds_while_running(j->plan)) return;  // sweep() folds them once the job is final
  for (int64_t g : touched)
    if (j->groups.at(g).unsettled == 0) j->ready.push_back(g);
}

void Coordinator::group_settled(Job* j, int64_t i, int delta) {
  if (j->groups.empty()) return;
  auto it = j->groups.find(j->kind->fold_group(j->plan, j->units[i].meta));
  if (it == j->groups.end()) return;
  it->second.unsettled += delta;
  if (it->second.unsettled == 0 && j->kind->folds_while_running(j->plan)) j->ready.push_back(it->first);
}

void Coordinator::fold_finished(int64_t now) {
  // The final jobs with groups left (JobTable::finishing), not every job: a copy, since a job
  // with none left leaves the list.
  const std::vector<Job*> finishing = table_.finishing();
  for (Job* j : finishing) {
    if (j->groups.empty() || j->damaged) {
      table_.done_folding(j);
      continue;
    }
    if (j->finished_ms + options_.lease_ms > now) continue;
    for (auto it = j->groups.begin(); it != j->groups.end();) {
      // A final job's unsettled units never settle (late results are discarded): their groups
      // never fold, and are not walked again at every sweep.
      if (it->second.unsettled > 0) {
        it = j->groups.erase(it);
        continue;
      }
      j->ready.push_back(it->first);
      ++it;
    }
    fold_ready(j);  // a fold that fails stays as it is, and the next sweep tries again
    if (j->groups.empty()) table_.done_folding(j);
  }
}

void Coordinator::fold_ready(Job* j) {
  std::vector<int64_t> ready;
  ready.swap(j->ready);
  for (int64_t g : ready) {
    auto it = j->groups.find(g);
    if (it == j->groups.end() || it->second.unsettled != 0) continue;  // folded already, or taken back
    const Group gr = it->second;
    std::vector<UnitView> views;
    std::set<std::string> sole;
    NodeCount work = 0;
    std::string wrong;
    for (int64_t i = gr.first; i < gr.end && wrong.empty(); ++i) {
      if (!j->units.live(i)) {
        wrong = absl::StrCat("unit ", i, " is folded already");
        break;
      }
      const Unit& u = j->units[i];
      if (!u.result || j->kind->fold_group(j->plan, u.meta) != g) {
        wrong = absl::StrCat("unit ", i, " is unsettled or of another group");
        break;
      }
      views.push_back({&u.spec, &u.meta, &*u.result});
      work += j->kind->work(u.spec, u.meta, *u.result);
      // A result that stands on one worker's word, or on untrusted owners' alone, is taken back
      // if one of them is quarantined: the group keeps who they are.
      std::vector<std::string> behind;
      bool trusted = false;
      for (const Copy& c : u.copies)
        if (c.result && !c.discarded && *c.result == u.settled) {
          behind.push_back(c.worker);
          trusted |= rank_of(voter_of(c.worker)) >= kRankTrusted;
        }
      if (u.votes < 2 || !trusted) sole.insert(behind.begin(), behind.end());
    }
    if (!wrong.empty()) {
      log_error(absl::StrCat("job ", j->id, ": group ", g, " not folded: ", wrong));
      continue;
    }
    Folded f{gr.first, gr.end, {}};
    f.record.set_work_hi(uint64_t(work >> 64));
    f.record.set_work_lo(uint64_t(work));
    f.record.set_totals(j->kind->fold(j->plan, g, views));
    for (const std::string& w : sole) f.record.add_sole_voters(w);
    if (absl::Status s = store_->fold_units(j->id, StoredFold{g, gr.first, gr.end, f.record.SerializeAsString()});
        !s.ok()) {
      // Its units stay as they are; the next start tries again.
      log_error(absl::StrCat("job ", j->id, ": folding group ", g, ": ", s.message()));
      continue;
    }
    for (int64_t i = gr.first; i < gr.end; ++i) {
      // Leases still out on it (spot checks) end here: their results are no longer compared.
      for (Copy& c : j->units[i].copies) drop_lease(c);
      j->active.erase(i);
      j->verifying.erase(i);
    }
    j->units.fold(gr.first, gr.end);
    j->folded[g] = std::move(f);
    j->groups.erase(it);
  }
}

absl::Status Coordinator::reopen(Job* j, int64_t group) {
  auto it = j->folded.find(group);
  if (it == j->folded.end()) return absl::OkStatus();
  std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> units = j->kind->replan_group(j->plan, group);
  if (units.empty()) return absl::InternalError(absl::StrCat("group ", group, " has no units to plan again"));
  const Folded& f = it->second;
  v1::store::FoldedGroup retired = f.record;
  retired.set_retired(true);
  retired.clear_totals();
  retired.clear_sole_voters();
  const int64_t first = int64_t(j->units.size());
  const std::vector<StoredUnit> rows = stored_units(first, units);
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    if (absl::Status s = store_->retire_fold(j->id, group, retired.SerializeAsString()); !s.ok()) return s;
    if (absl::Status s =
            store_->extend_job_plan(j->id, j->plan.SerializeAsString(), rows, first + int64_t(units.size()));
        !s.ok())
      return s;
    if (absl::Status s = txn->commit(); !s.ok()) return s;
  }
  j->done -= f.end - f.first;
  j->retired += f.end - f.first;
  j->work_done -= (NodeCount(f.record.work_hi()) << 64) | f.record.work_lo();
  j->folded.erase(it);
  j->units.resize(size_t(first) + units.size());
  for (size_t k = 0; k < units.size(); ++k) {
    Unit& u = j->units[first + int64_t(k)];
    u.spec = std::move(units[k].first);
    u.meta = std::move(units[k].second);
    enqueue(j, first + int64_t(k), true);
  }
  track_groups(j, first, first + int64_t(units.size()));
  return absl::OkStatus();
}

void Coordinator::finish_job(Job* j, int64_t now) {
  j->state = v1::JOB_STATE_SUCCEEDED;
  j->finished_ms = now;
  j->queues.clear(j->units);
  // Leases still out (spot checks) no longer count against their credentials' caps: the sweep
  // does not walk finished jobs. Their results are still compared when they come.
  drop_leases(j);
  table_.finished(j);
  log_event(LogLevel::kInfo, "job_succeeded",
            absl::StrCat("job ", j->id, " succeeded: ", j->total(), " units, ", j->kind->describe_work(j->work_done),
                         ", ", j->disagreements, " disagreements, ", j->mismatches, " mismatches"),
            {{"job", j->id},
             {"kind", j->kind->capability()},
             {"units", j->total()},
             {"work", to_string(j->work_done)},
             {"seconds", double(now - j->created_ms) / 1000.0},
             {"disagreements", j->disagreements},
             {"mismatches", j->mismatches}});
}

absl::Status Coordinator::unsettle(Job* j, int64_t i, int32_t wanted) {
  Unit& u = j->units[i];
  absl::StatusOr<std::optional<std::string>> stored = store_->unit_result(j->id, i);
  if (!stored.ok()) return stored.status();
  if (!*stored) return absl::InternalError(absl::StrCat("store: unit ", j->id, "/", i, " has no result to take back"));
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    if (absl::Status s = store_->unsettle_unit(j->id, i, wanted); !s.ok()) return s;
    if (absl::Status s = j->kind->write_unsettled(store_, j->id, u.spec, u.meta, **stored); !s.ok()) return s;
    if (absl::Status s = txn->commit(); !s.ok()) return s;
  }
  j->work_done -= j->kind->work(u.spec, u.meta, *u.result);
  --j->done;
  group_settled(j, i, 1);
  u.result.reset();
  u.settled.clear();
  u.votes = 0;
  u.wanted = wanted;
  return absl::OkStatus();
}

void Coordinator::credit(const std::string& worker) {
  WorkerState* found = registry_.find(worker);
  if (!found) return;
  WorkerState& w = *found;
  ++w.rec.agreeing;
  if (w.rec.trust == v1::TRUST_STATE_NEW) {
    if (earns_trust(w.rec.agreeing, options_.trust_after)) {
      w.rec.trust = v1::TRUST_STATE_TRUSTED;
      registry_.trust(voter_of(worker));
      w.rec.trust_reason = absl::StrCat(w.rec.agreeing, " results confirmed by trusted owners");
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

void Coordinator::quarantine_voter(const std::string& voter, const std::string& why) {
  registry_.quarantine_voter(voter);  // no longer a trusted owner
  // Copies placed with it are placed again (running jobs only: a final job places nothing).
  for (Job* j : table_.running()) {
    if (!j->queues.has_placed(voter)) continue;
    keep(j);
    for (int64_t i : j->queues.unplace_all(j->units, voter)) enqueue(j, i, true);
  }
  std::vector<std::string> keys;
  for (const auto& [key, w] : registry_.workers())
    if (voter_of(key) == voter) keys.push_back(key);
  for (const std::string& key : keys) quarantine(key, why);
}

void Coordinator::quarantine(const std::string& worker, const std::string& why) {
  WorkerState& w = registry_.at(worker);
  if (w.rec.trust == v1::TRUST_STATE_QUARANTINED) return;
  registry_.quarantine_worker(worker);  // (verify hosts quarantines one worker alone)
  w.rec.trust = v1::TRUST_STATE_QUARANTINED;
  w.rec.trust_reason = why;
  ++counters_.quarantines;
  save_worker(w);
  log_event(LogLevel::kWarning, "worker_quarantined", absl::StrCat("worker ", worker, " QUARANTINED: ", why),
            {{"worker", worker}, {"reason", why}});
  // Its leases go back, its waiting results lose their vote, and a running job's result that
  // stands on its word alone is taken back and computed again.
  int64_t revoked = 0;
  // A copy of the running jobs: taking back a result may fail a job, or settle and finish one,
  // which takes it out of running().
  const std::vector<Job*> running = table_.running();
  for (Job* j : running) {
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    // Folded groups with a unit settled on its word alone: planned again, computed again.
    std::vector<int64_t> reopened;
    for (const auto& [g, f] : j->folded)
      for (const std::string& v : f.record.sole_voters())
        if (v == worker) {
          reopened.push_back(g);
          break;
        }
    if (!reopened.empty()) keep(j);
    for (int64_t g : reopened) {
      if (absl::Status s = reopen(j, g); !s.ok()) {
        log_error(absl::StrCat("job ", j->id, ": planning folded group ", g, " again: ", s.message()));
        if (absl::Status f =
                fail_job(j, absl::StrCat("results of quarantined worker ", worker, " could not be taken back"));
            !f.ok())
          log_error(f.message());  // in the transition's transaction: its commit fails with it
        break;
      }
      ++revoked;
    }
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    for (int64_t i = j->units.first(); i < int64_t(j->units.size()); ++i) {
      if (!j->units.live(i)) continue;
      Unit& u = j->units[i];
      Copy* c = u.copy_of(worker);
      if (!c) continue;
      keep(j);
      if (c->leased()) end_lease(j, int64_t(i), *c, true);
      if (!c->result || c->discarded) continue;
      c->discarded = true;
      if (absl::Status s = store_->discard_copy(j->id, int64_t(i), int32_t(c - u.copies.data())); !s.ok())
        log_error(s.message());
      // A settled result it stood behind is taken back unless a trusted owner stands behind it
      // too (two untrusted votes of which one is a proven liar's are no evidence).
      if (u.result && *c->result == u.settled) {
        bool backed = false;
        int32_t standing = 0;  // other results that still count: one more copy beyond them decides
        for (const Copy& o : u.copies)
          if (&o != c && o.result && !o.discarded && !barred(o.worker)) {
            ++standing;
            if (*o.result == u.settled && rank_of(voter_of(o.worker)) >= kRankTrusted) backed = true;
          }
        if (!backed) {
          if (absl::Status s = unsettle(j, int64_t(i), std::max({u.wanted, int32_t(2), standing + 1})); !s.ok())
            log_error(s.message());
          ++revoked;
        }
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
  // Only a unit that runs an engine can fail on a worker (a missing or crashing engine):
  // anything else a worker cannot compute is its own fault, and must not fail others' jobs.
  if (j->kind->required_engines(j->spec).empty())
    return absl::InvalidArgumentError(
        absl::StrCat("failure: ", j->kind->capability(), " units run no engine and cannot fail; send the result"));
  if (u.result || c.result || c.discarded || j->state != v1::JOB_STATE_RUNNING) {
    resp.set_outcome(v1::COMPLETION_OUTCOME_DISCARDED);
    return resp;
  }
  // Decide: the failure counted, and whether it fails the job. Untrusted owners cannot fail a
  // job (they may lie): a trusted owner's report, or kMinFailingOwners owners', can. Counted
  // per owner: one owner's credentials and workers, whatever their names, are one reporter.
  const int64_t failures = j->unit_failures + 1;
  std::set<std::pair<std::string, std::string>> failing = j->failing_workers;
  failing.insert({voter_of(c.worker), c.worker});
  const std::string detail = absl::StrCat("unit ", req.unit_id(), " on worker ", c.worker, ": ", req.failure());
  std::map<std::string, int> ranks;
  std::set<std::string> reporters;
  for (const auto& [o, w] : failing) {
    ranks[o] = rank_of(o);
    reporters.insert(w);
  }
  const bool fails = failures_fail_job(failures, failing, ranks, kMaxUnitFailures, kMinFailingOwners);
  const std::string why = absl::StrCat(detail, " (reported by ", absl::StrJoin(reporters, ", "), ")");
  const int64_t now = clock_->now_ms();
  // Commit: the copy given up and, when it fails the job, the job's FAILED state, together.
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    absl::Status s = txn->status();
    if (s.ok()) s = store_->discard_copy(j->id, index, int32_t(&c - u.copies.data()));
    if (s.ok() && fails) s = store_->fail_job(j->id, v1::JOB_STATE_FAILED, now, why);
    if (s.ok()) s = txn->commit();
    if (!s.ok()) {
      // Nothing in memory changed: no reload; writes are refused until the store takes them.
      store_failed(s);
      return absl::UnavailableError(absl::StrCat(s.message(), "; the failure was not recorded: retry"));
    }
  }
  // Apply.
  j->unit_failures = failures;
  j->failing_workers = std::move(failing);
  j->failure_detail = detail;
  log_event(LogLevel::kWarning, "unit_failure",
            absl::StrCat("unit failure ", j->unit_failures, " (", j->failing_workers.size(),
                         " workers): ", j->failure_detail),
            {{"job", j->id}, {"unit", req.unit_id()}, {"worker", c.worker}, {"reason", req.failure()}});
  ++counters_.unit_failures;
  // Back to the queue, for another worker: this one cannot compute it.
  c.discarded = true;
  if (c.leased()) end_lease(j, index, c, false);
  enqueue(j, index);
  if (fails) apply_failed(j, why, now);
  changed();
  resp.set_outcome(v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
  return resp;
}

}  // namespace c960::cluster
