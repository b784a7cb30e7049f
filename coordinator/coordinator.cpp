// The coordinator's calls for users (submit, jobs, results, watches, the worker list) and its
// start from the store. The calls for workers are in coordinator_workers.cpp.
#include "coordinator/coordinator.h"

#include <algorithm>
#include <random>
#include <set>
#include <string_view>
#include <sys/random.h>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "cluster/u128.h"
#include "coordinator/kinds.h"
#include "coordinator/validation.h"

namespace c960::cluster {
namespace {

constexpr int64_t kRateWindowMs = 10'000;

// The spec without what grows with the job (KindDescriptor::trim_for_watch), for watches: what
// c960 watch shows is the rest.
v1::JobSpec spec_summary(const JobKind& kind, const v1::JobSpec& spec) {
  v1::JobSpec out = spec;
  if (kind.descriptor().trim_for_watch) kind.descriptor().trim_for_watch(&out);
  return out;
}

}  // namespace

Coordinator::Coordinator(Store* store, const Clock* clock, CoordinatorOptions options)
    : store_(store),
      clock_(clock),
      options_(options),
      rng_(options.seed ? options.seed : std::random_device{}()),
      session_ids_(options.seed ^ 0x5e55'10e1d5ULL) {
  kinds_ = make_kinds(options_);
  if (options_.waiter_thread) polls_.start([this] { waiter_loop(); });
}

Coordinator::~Coordinator() {
  {
    std::lock_guard lock(mu_);
    polls_.stop();
    shutting_down_ = true;
  }
  polls_.join();
}

const JobKind* Coordinator::kind_for(v1::JobSpec::KindCase c) const {
  for (const auto& k : kinds_)
    if (k->spec_case() == c) return k.get();
  return nullptr;
}

void Coordinator::changed() {
  ++version_;
  cv_.notify_all();
}

absl::Status Coordinator::load() {
  std::lock_guard lock(mu_);
  // Called again, it replaces memory with the store's (tests; no failure path reloads).
  if (loaded_) ++counters_.store_reloads;
  loaded_ = true;
  return load_locked();
}

void Coordinator::store_failed(const absl::Status& failed) {
  ++counters_.store_commit_failures;
  health_.cause = std::string(failed.message());
  if (health_.degraded) return;
  const int64_t now = clock_->now_ms();
  health_.degraded = true;
  health_.since_ms = now;
  health_.backoff_ms = 0;
  health_.next_probe_ms = now;  // a passing fault costs one probe at the next write
  log_event(LogLevel::kError, "store_degraded",
            absl::StrCat("a commit of the store failed (", health_.cause,
                         "): writes are refused until a probe of the store succeeds; reads are served"),
            {{"reason", health_.cause}});
  changed();
}

absl::Status Coordinator::refusal(int64_t now) const {
  const int64_t retry_ms = std::max<int64_t>(health_.next_probe_ms - now, kStoreProbeFirstMs);
  // The delay travels typed too (ErrorInfo.retry_delay_ms): workers wait at least that long.
  return with_retry_delay(
      absl::UnavailableError(absl::StrCat("the coordinator cannot write its store (", health_.cause, ", for ",
                                          (now - health_.since_ms) / 1000,
                                          " s): nothing of this call was kept; retry in ", retry_ms, " ms")),
      retry_ms);
}

absl::Status Coordinator::writable(int64_t now) {
  if (!health_.degraded) return absl::OkStatus();
  if (now >= health_.next_probe_ms) probe_store(now);
  return health_.degraded ? refusal(now) : absl::OkStatus();
}

void Coordinator::probe_store(int64_t now) {
  ++counters_.store_probes;
  // One small write in a transaction that changes nothing in the end: a worker's record (else
  // a job's row) changed, then written back as memory holds it, which equals the store's. The
  // change is needed: SQLite leaves a page clean when a row is overwritten with the same bytes,
  // and a commit with no dirty page writes nothing, so it would pass on a full disk. A store
  // with neither has nothing a write could spoil: the next transition is the probe.
  absl::Status s;
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    s = txn->status();
    if (s.ok() && !registry_.workers().empty()) {
      const StoredWorker& rec = registry_.workers().begin()->second.rec;
      StoredWorker changed = rec;
      ++changed.last_seen_ms;
      s = store_->upsert_worker(changed);
      if (s.ok()) s = store_->upsert_worker(rec);
    } else if (s.ok() && table_.size() > 0) {
      const Job* j = table_.all().front();
      s = store_->update_job(j->id, j->state, j->finished_ms + 1, j->mismatches, j->mismatch_detail);
      if (s.ok())
        s = j->state == v1::JOB_STATE_FAILED
                ? store_->fail_job(j->id, j->state, j->finished_ms, j->failure_detail)
                : store_->update_job(j->id, j->state, j->finished_ms, j->mismatches, j->mismatch_detail);
    }
    if (s.ok()) s = txn->commit();
  }
  if (!s.ok()) {
    ++counters_.store_commit_failures;
    health_.cause = std::string(s.message());
    health_.backoff_ms = std::clamp(health_.backoff_ms * 2, kStoreProbeFirstMs, kStoreProbeMaxMs);
    health_.next_probe_ms = now + health_.backoff_ms;
    return;
  }
  log_event(LogLevel::kInfo, "store_writable",
            absl::StrCat("the store takes writes again after ", (now - health_.since_ms) / 1000, " s (", health_.cause,
                         "); writes are served"),
            {{"degraded_s", (now - health_.since_ms) / 1000}});
  health_ = StoreHealth{};
  changed();
  work_arrived();  // waiting acquires may be served now
}

std::string Coordinator::store_degraded() const {
  std::lock_guard lock(mu_);
  return health_.degraded ? health_.cause : "";
}

absl::Status Coordinator::load_locked() {
  absl::StatusOr<std::vector<StoredJob>> jobs = store_->load_jobs();
  if (!jobs.ok()) return jobs.status();
  absl::StatusOr<std::vector<StoredWorker>> workers = store_->load_workers();
  if (!workers.ok()) return workers.status();
  absl::StatusOr<std::vector<StoredCredential>> credentials = store_->load_credentials();
  if (!credentials.ok()) return credentials.status();
  registry_.clear_enrolled();
  for (const StoredCredential& c : *credentials) {
    registry_.enrolled_one(c.join_name);
    if (tokens_) tokens_->add_issued(c.hash, c.name, c.owner);
  }
  table_.clear();
  deadlines_.clear();  // its entries point into the jobs replaced here
  // The records, their counts and trust (the lease counts start again with the jobs' leases);
  // sessions of workers the store does not know (their Hello was not kept) end.
  registry_.load(*std::move(workers), kFaultPrefix);
  for (StoredJob& s : *jobs) {
    if (!s.planned) {
      // A submit cut off while storing its plan never answered its client, which retries with
      // the same request id: drop the part that was stored.
      log_event(LogLevel::kWarning, "job_dropped",
                absl::StrCat("dropping ", s.id, ": its plan was not completely stored (interrupted submit)"),
                {{"job", s.id}});
      if (absl::Status st = store_->delete_job(s.id); !st.ok()) return st;
      table_.saw_seq(s.seq);
      continue;
    }
    auto j = std::make_unique<Job>();
    j->id = s.id;
    j->seq = s.seq;
    j->request_id = s.request_id;
    j->owner = s.owner;
    if (!j->spec.ParseFromString(s.spec) || !j->plan.ParseFromString(s.plan))
      return absl::DataLossError(absl::StrCat("store: job ", s.id, " does not parse"));
    j->kind = kind_for(j->spec.kind_case());
    if (!j->kind) return absl::DataLossError(absl::StrCat("store: job ", s.id, " has an unknown kind"));
    j->verify = j->kind->verify_mode(j->spec);
    j->shared = j->kind->shared(j->spec);
    j->summary = spec_summary(*j->kind, j->spec);
    j->state = v1::JobState(s.state);
    j->created_ms = s.created_ms;
    j->finished_ms = s.finished_ms;
    j->mismatches = s.mismatches;
    j->mismatch_detail = s.mismatch_detail;
    j->failure_detail = s.failure_detail;
    std::string damage;
    // Unit rows and folded groups tile the indexes 0 .. unit_count - 1, each index once.
    int64_t held = int64_t(s.units.size());
    for (const StoredFold& f : s.folds) held += std::max<int64_t>(0, f.end - f.first);
    if (s.unit_count < 0 || held != s.unit_count)
      damage = absl::StrCat("the store holds ", held, " of its ", s.unit_count, " units");
    size_t k = 0, next_fold = 0;
    for (int64_t index = 0; damage.empty() && index < s.unit_count;) {
      if (next_fold < s.folds.size() && s.folds[next_fold].first == index) {
        const StoredFold& f = s.folds[next_fold++];
        Folded fd{f.first, f.end, {}};
        if (f.end <= f.first || !f.intact || !fd.record.ParseFromString(f.record)) {
          damage = absl::StrCat("folded units ", f.first, "..", f.end - 1,
                                f.intact ? " do not parse" : ": their record is not bound to them (moved, or damaged)");
          break;
        }
        j->units.append_folded(f.end - f.first);
        if (fd.record.retired()) {
          j->retired += f.end - f.first;
        } else {
          j->done += f.end - f.first;
          j->work_done += (NodeCount(fd.record.work_hi()) << 64) | fd.record.work_lo();
          j->folded[f.group] = std::move(fd);
        }
        index = f.end;
        continue;
      }
      if (k >= s.units.size() || s.units[k].index != index) {
        damage = absl::StrCat("unit ", index, " is missing from the store");
        break;
      }
      StoredUnit& su = s.units[k++];
      j->units.resize(size_t(index) + 1);
      Unit& u = j->units[index];
      if (!u.spec.ParseFromString(su.spec) || !u.meta.ParseFromString(su.meta))
        return absl::DataLossError(absl::StrCat("store: unit ", s.id, "/", su.index, " does not parse"));
      u.attempt = su.attempt;
      u.wanted = su.wanted;
      // A result that is not the one written for this unit (swapped with another row's, or
      // damaged) would count silently: the job is refused as damaged instead.
      if (!su.intact) {
        damage = absl::StrCat("unit ", index, "'s result is not bound to it (moved from another row, or damaged)");
        break;
      }
      for (StoredCopy& sc : su.copies) {
        if (sc.copy != int32_t(u.copies.size())) {
          damage = absl::StrCat("unit ", index, " has a gap in its copies");
          break;
        }
        if (!sc.intact) {
          damage = absl::StrCat("unit ", index, " copy ", sc.copy,
                                ": its result is not bound to it (moved from another row, or damaged)");
          break;
        }
        Copy c;
        c.worker = std::move(sc.worker);
        c.attempt = sc.attempt;
        c.zobrist_seed = sc.zobrist_seed;
        c.result = std::move(sc.result);
        // A quarantined voter's copies count for nothing, also when the write that discarded one
        // failed before a restart (the workers were loaded first).
        c.discarded = sc.discarded || (c.result && j->state == v1::JOB_STATE_RUNNING && barred(c.worker));
        u.copies.push_back(std::move(c));
      }
      if (su.result) {
        v1::UnitResult r;
        if (absl::Status st = j->kind->load_settled(u.spec, u.meta, *su.result, &u.settled, &r); !st.ok())
          return absl::DataLossError(absl::StrCat("store: result of ", s.id, "/", su.index, ": ", st.message()));
        j->work_done += j->kind->work(u.spec, u.meta, r);
        u.result = std::move(r);
        u.votes = su.votes;
        ++j->done;
      } else if (u.results() > 0) {
        j->verifying.insert(index);
      }
      ++index;
    }
    if (damage.empty() && (k != s.units.size() || next_fold != s.folds.size()))
      damage = absl::StrCat("unit rows or folded groups overlap among its ", s.unit_count, " units");
    if (damage.empty() && j->state == v1::JOB_STATE_SUCCEEDED && j->done != j->total())
      damage = absl::StrCat("it SUCCEEDED but ", j->total() - j->done, " units have no result");
    if (!damage.empty()) {
      j->units.clear();
      j->folded.clear();
    } else {
      track_groups(j.get(), j->units.first(), int64_t(j->units.size()));
    }
    Job* raw = table_.add(std::move(j));
    if (!damage.empty()) {
      refuse_damaged(raw, damage);
    } else {
      // Groups settled but not folded yet (a fold that failed, a store from before folding).
      fold_ready(raw);
      if (raw->state == v1::JOB_STATE_RUNNING) {
        for (int64_t i = raw->units.first(); i < int64_t(raw->units.size()); ++i) {
          if (!raw->units.live(i)) continue;
          // How many results an unsettled unit wants follows from its copies (the policy's
          // decision on its newest result): a write of it lost before the restart loses nothing.
          Unit& u = raw->units[i];
          if (!u.result)
            for (size_t k = u.copies.size(); k-- > 0;)
              if (u.copies[k].result && !u.copies[k].discarded) {
                const Decision d = decide(votes_of(*raw, i), k, kMaxCopies);
                if (d.verdict == Verdict::kPending && d.wanted > u.wanted) u.wanted = d.wanted;
                break;
              }
          enqueue(raw, i);
        }
        // A look due when the last start stopped (its settlement was stored, its look not yet).
        if (raw->kind->plans_from_results(raw->plan)) {
          raw->refilling = true;
          polls_.refill_wanted();
        }
        log_event(LogLevel::kInfo, "job_resumed",
                  absl::StrCat("resuming ", raw->id, ": ", raw->done, "/", raw->total(), " units done"),
                  {{"job", raw->id},
                   {"kind", raw->kind->capability()},
                   {"units_done", raw->done},
                   {"units", raw->total()},
                   {"units_in_memory", int64_t(raw->units.size()) - raw->units.first()}});
      }
    }
  }
  changed();
  return absl::OkStatus();
}

void Coordinator::refuse_damaged(Job* j, const std::string& why) {
  // Serving it would report wrong or empty results as if they were right: fail it, loudly.
  j->damaged = true;
  drop_leases(j);
  j->queues.clear(j->units);
  j->units.clear();
  j->groups.clear();
  j->folded.clear();
  j->ready.clear();
  j->active.clear();
  j->verifying.clear();
  j->done = 0;
  j->work_done = 0;
  const std::string reason = absl::StrCat("the coordinator's store is damaged: ", why);
  // Served as FAILED even when that cannot be written: its units are gone from memory, and a
  // restart reaches the same verdict from the same damaged rows.
  if (absl::Status s = fail_job(j, reason); !s.ok()) {
    log_error(absl::StrCat("job ", j->id, ": ", s.message()));
    apply_failed(j, reason, clock_->now_ms());
  }
}

absl::Status Coordinator::fail_job(Job* j, const std::string& why) {
  const int64_t finished_ms = j->state == v1::JOB_STATE_FAILED ? j->finished_ms : clock_->now_ms();
  // Decide, commit, apply: the store holds FAILED before memory says so.
  if (absl::Status s = store_->fail_job(j->id, v1::JOB_STATE_FAILED, finished_ms, why); !s.ok())
    return absl::UnavailableError(absl::StrCat("job ", j->id, " was not failed (", why, "): ", s.message()));
  apply_failed(j, why, finished_ms);
  return absl::OkStatus();
}

void Coordinator::apply_failed(Job* j, const std::string& why, int64_t finished_ms) {
  j->failure_detail = why;
  log_event(LogLevel::kError, "job_failed", absl::StrCat("job ", j->id, " FAILED: ", why),
            {{"job", j->id}, {"kind", j->kind->capability()}, {"reason", why}});
  j->state = v1::JOB_STATE_FAILED;
  j->finished_ms = finished_ms;
  j->queues.clear(j->units);
  drop_leases(j);
  table_.finished(j);
  changed();
}

Coordinator::Job* Coordinator::find_job(const std::string& id) { return table_.find(id); }

absl::StatusOr<Coordinator::Job*> Coordinator::job_for(const Caller& caller, const std::string& id) {
  if (absl::Status s = check_id(id, "job_id"); !s.ok()) return s;
  Job* j = find_job(id);
  // The submit role does not learn whether others' jobs exist.
  if (!j || (caller.role == Role::kSubmit && j->owner != caller.identity))
    return absl::NotFoundError(absl::StrCat("job_id: no job '", id, "'"));
  return j;
}

std::string Coordinator::notice(const Job& j) const {
  if (j.state != v1::JOB_STATE_RUNNING) return "";
  const std::vector<JobKind::EngineNeed> needs = j.kind->required_engines(j.spec);
  // One pass over the sessions: is anyone there, computing this kind, offering the engines, and
  // how many (not quarantined) could run the job.
  bool alive = false, capable = false, offered = needs.empty(), allowed = needs.empty();
  std::string refusal;          // why an offering worker does not allow the job's options
  std::set<std::string> able;   // owners: verification needs two, whatever their credentials and names
  std::set<std::string> hosts;  // workers (verify hosts)
  bool trusted = false;         // one of them is trusted (adaptive verification takes its word)
  for (const auto& [id, s] : registry_.sessions()) {
    if (s.lost) continue;
    alive = true;
    const bool computes = s.capabilities.count(j.kind->capability()) > 0;
    const bool has_engine = offers_all(s, *j.kind, j.spec);
    const bool runs_it = has_engine && runs(s, *j.kind, j.spec, refusal.empty() ? &refusal : nullptr);
    capable |= computes;
    offered |= has_engine;
    allowed |= runs_it;
    if (computes && runs_it && !registry_.quarantined(s.voter)) {
      able.insert(s.voter);
      hosts.insert(s.key);
      trusted |= rank_of(s.voter) >= kRankTrusted;
    }
  }
  if (!alive) return "waiting: no worker is connected";
  if (!capable) return absl::StrCat("waiting: no connected worker computes ", j.kind->capability(), " units");
  if (!offered) {
    std::string flags;
    for (const JobKind::EngineNeed& n : needs)
      if (n.engine != "builtin") absl::StrAppend(&flags, flags.empty() ? "" : " ", "--engine ", n.engine, "=PATH");
    return absl::StrCat("waiting: no connected worker offers ", engines_named(needs), " (c960-worker ", flags, ")");
  }
  if (!allowed)
    return absl::StrCat("waiting: no connected worker offering ", engines_named(needs),
                        " allows the job's options: ", refusal);
  // Waiting for a second credential now, or bound to at submit: every unit of a job verified
  // twice, or of workers not trusted yet, needs one.
  const bool needs_second =
      !j.verifying.empty() || j.queues.size(coord::Lane::kReplicas) > 0 ||
      (j.done == 0 && (j.verify == v1::VERIFY_MODE_ALL || j.verify == v1::VERIFY_MODE_HOSTS || !trusted));
  if (j.verify == v1::VERIFY_MODE_HOSTS) {
    if (needs_second && hosts.size() < 2)
      return "waiting: results are checked on a second worker (verify hosts) and 1 worker can compute this job";
  } else if (j.verify != v1::VERIFY_MODE_OFF && needs_second && able.size() < 2) {
    return absl::StrCat("waiting: results are checked by a second owner (verify ",
                        enum_word(v1::VerifyMode_Name(j.verify), "VERIFY_MODE_"), ") and ", able.size(),
                        " owner can compute this job; start a worker of another owner (its own token, or a join "
                        "token of another owner), or submit with --verify hosts (copies on distinct machines of one "
                        "owner: faults, not lies) or --verify off");
  }
  if (j.stalled > 0)
    return absl::StrCat("waiting: ", j.stalled, " unit", j.stalled == 1 ? "" : "s",
                        " wait for an owner that may decide them (copies that disagree need a trusted owner not "
                        "involved, audits a trust root: --trust-roots), and none is connected");
  if (j.unit_failures > 0)
    return absl::StrCat("a worker could not compute a unit (", j.failure_detail,
                        "); waiting for another owner (untrusted owners alone cannot fail a job)");
  return "";
}

v1::Job Coordinator::snapshot(const Job& j, SpecPart spec) const {
  v1::Job out;
  out.set_id(j.id);
  if (spec == SpecPart::kFull) *out.mutable_spec() = j.spec;
  if (spec == SpecPart::kSummary) *out.mutable_spec() = j.summary;
  const bool with_spec = spec != SpecPart::kNone;
  out.set_state(j.state);
  out.set_request_id(j.request_id);
  out.set_owner(j.owner);
  out.set_created_unix_ms(j.created_ms);
  out.set_finished_unix_ms(j.finished_ms);
  out.set_result_mismatches(j.mismatches);
  out.set_mismatch_detail(j.mismatch_detail);
  out.set_unit_failures(j.unit_failures);
  out.set_failure_detail(j.failure_detail);
  out.set_notice(notice(j));
  if (with_spec) {
    // The workers whose results the job accepted, by what they said of themselves.
    std::set<std::string> keys, lines;
    for (int64_t i = j.units.first(); i < int64_t(j.units.size()); ++i)
      if (j.units.live(i))
        for (const Copy& c : j.units[i].copies)
          if (c.result && !c.discarded) keys.insert(c.worker);
    for (const std::string& k : keys)
      if (const WorkerState* w = registry_.find(k); w && !w->rec.provenance.empty())
        lines.insert(absl::StrCat(k, ": ", w->rec.provenance));
    for (const std::string& l : lines) out.add_provenance(l);
  }
  j.kind->fill_job(j.plan, &out);
  v1::Progress* p = out.mutable_progress();
  p->set_units_total(j.total());
  p->set_units_done(j.done);
  p->set_units_leased(int64_t(j.active.size()));
  p->set_units_verifying(int64_t(j.verifying.size()));
  p->set_audit_rate(j.plan.audit_rate());
  p->set_units_audited(j.audited);
  p->set_disagreements(j.disagreements);
  std::set<std::string> holders;
  for (int64_t i : j.active)
    for (const Copy& c : j.units[i].copies)
      if (c.leased()) holders.insert(c.worker);
  p->set_workers(int32_t(holders.size()));
  int alive = 0;
  for (const auto& [id, s] : registry_.sessions()) alive += !s.lost;
  p->set_workers_alive(alive);
  double rate = 0, unit_rate = 0;
  if (j.state == v1::JOB_STATE_RUNNING) {
    if (j.samples.size() >= 2) {
      const Sample& a = j.samples.front();
      const Sample& b = j.samples.back();
      const double secs = double(std::max<int64_t>(clock_->now_ms(), b.ms) - a.ms) / 1000.0;
      if (secs > 0) {
        rate = double(b.work - a.work) / secs;
        unit_rate = double(b.units - a.units) / secs;
      }
    }
  } else if (j.finished_ms > j.created_ms) {
    rate = double(j.work_done) / (double(j.finished_ms - j.created_ms) / 1000.0);
  }
  j.kind->fill_progress(j.plan, j.work_done, rate, p);
  const int64_t left = j.total() - j.done;
  p->set_eta_seconds(j.state != v1::JOB_STATE_RUNNING ? 0 : unit_rate > 0 ? double(left) / unit_rate : -1);
  return out;
}

void Coordinator::add_sample(Job* j) {
  const int64_t now = clock_->now_ms();
  j->samples.push_back({now, j->done, j->work_done});
  // Keep one sample older than the window so that the rate spans all of it.
  while (j->samples.size() > 2 && j->samples[1].ms < now - kRateWindowMs) j->samples.pop_front();
}

absl::Status Coordinator::check_caps(const Caller& caller, int64_t new_units) const {
  int active = 0;
  int64_t units = 0;
  for (const Job* j : table_.running())
    if (j->owner == caller.identity) {
      ++active;
      units += j->total() - j->done;
    }
  const std::string who = caller.identity.empty() ? "anonymous callers" : absl::StrCat("'", caller.identity, "'");
  if (active >= options_.max_active_jobs)
    return absl::ResourceExhaustedError(
        absl::StrCat("max-active-jobs: ", who, " already has ", active, " running jobs, the cap (cancel one or wait)"));
  if (units + new_units > options_.max_planned_units)
    return absl::ResourceExhaustedError(absl::StrCat("max-planned-units: ", who, " would have ", units + new_units,
                                                     " units planned, over the cap of ", options_.max_planned_units));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Coordinator::Job>> Coordinator::store_new_job(const Caller& caller,
                                                                             const v1::SubmitJobRequest& req,
                                                                             const JobKind* kind, KindPlan plan) {
  auto j = std::make_unique<Job>();
  {
    std::lock_guard lock(mu_);
    j->seq = table_.take_seq();
  }
  j->id = absl::StrCat("job-", j->seq);
  j->request_id = req.request_id();
  j->owner = caller.identity;
  j->spec = req.spec();
  j->verify = kind->verify_mode(j->spec);
  j->shared = kind->shared(j->spec);
  j->summary = spec_summary(*kind, j->spec);
  j->plan = std::move(plan.plan);
  // Audits: the spec's rate, else the coordinator's where trust roots can audit; the sample's
  // salt is secret (only the store keeps it).
  j->plan.set_audit_rate(j->spec.has_audit_rate() ? j->spec.audit_rate()
                         : options_.trust_roots.empty() || j->verify == v1::VERIFY_MODE_OFF ||
                                 j->verify == v1::VERIFY_MODE_HOSTS
                             ? 0.0
                             : options_.audit_rate);
  {
    // From the system, unless the coordinator was given a seed (tests, the simulation: a seed
    // replays the same samples).
    uint64_t salt = 0;
    if (options_.seed)
      salt = std::mt19937_64(options_.seed ^ (uint64_t(j->seq) * 0x9e3779b97f4a7c15ULL))();
    else if (getrandom(&salt, sizeof salt, 0) != sizeof salt)
      salt = std::random_device{}();
    j->plan.set_audit_salt(salt);
  }
  j->kind = kind;
  j->created_ms = clock_->now_ms();
  StoredJob s;
  s.id = j->id;
  s.seq = j->seq;
  s.request_id = j->request_id;
  s.owner = j->owner;
  s.spec = j->spec.SerializeAsString();
  s.plan = j->plan.SerializeAsString();
  s.created_ms = j->created_ms;
  // A job with nothing to compute (e.g. roots without moves at split ply) is done at once.
  j->state = plan.units.empty() ? v1::JOB_STATE_SUCCEEDED : v1::JOB_STATE_RUNNING;
  if (plan.units.empty()) j->finished_ms = j->created_ms;
  s.state = j->state;
  s.finished_ms = j->finished_ms;
  s.units.reserve(plan.units.size());
  j->units.resize(plan.units.size());
  for (size_t i = 0; i < plan.units.size(); ++i) {
    StoredUnit su;
    su.index = int64_t(i);
    su.spec = plan.units[i].first.SerializeAsString();
    su.meta = plan.units[i].second.SerializeAsString();
    s.units.push_back(std::move(su));
    j->units[i].spec = std::move(plan.units[i].first);
    j->units[i].meta = std::move(plan.units[i].second);
    j->queues.push(j->units, int64_t(i), coord::Lane::kFresh);
  }
  track_groups(j.get(), 0, int64_t(j->units.size()));
  if (s.units.size() <= kUnitsPerStoreBatch) {
    if (absl::Status st = store_->insert_job(s); !st.ok()) return st;
    return j;
  }
  // A big plan goes in batches, each a short transaction, so that completions and leases are
  // stored between them; the job counts only once it is marked planned (a crash before that
  // drops it on the next start, and the client's retry plans it again).
  if (absl::Status st = store_->begin_job(s); !st.ok()) return st;
  for (size_t b = 0; b < s.units.size(); b += kUnitsPerStoreBatch)
    if (absl::Status st = store_->add_units(s.id, s.units, b, std::min(s.units.size(), b + kUnitsPerStoreBatch));
        !st.ok())
      return st;
  if (absl::Status st = store_->finish_job_plan(s.id, int64_t(s.units.size())); !st.ok()) return st;
  return j;
}

Coordinator::PlanBudget& Coordinator::plan_budget(const std::string& identity,
                                                  std::chrono::steady_clock::time_point now) {
  const double full = double(options_.plan_budget_ms);
  const double rate = full / double(std::max<int64_t>(1, options_.plan_budget_window_ms));
  for (auto it = plan_budgets_.begin(); it != plan_budgets_.end();) {  // a few callers plan at once
    const double level =
        it->second.level_ms + rate * std::chrono::duration<double, std::milli>(now - it->second.at).count();
    if (level >= full && it->first != identity) {
      it = plan_budgets_.erase(it);
      continue;
    }
    it->second.level_ms = std::min(full, level);
    it->second.at = now;
    ++it;
  }
  auto [it, fresh] = plan_budgets_.try_emplace(identity);
  if (fresh) it->second = {full, now};
  return it->second;
}

absl::StatusOr<v1::Job> Coordinator::submit(const Caller& caller, const v1::SubmitJobRequest& req,
                                            const PlanCancelled& cancelled) {
  if (absl::Status s = check_text(req.request_id(), "request_id", kMaxRequestIdLength, false); !s.ok()) return s;
  const JobKind* kind = kind_for(req.spec().kind_case());
  if (!kind) return absl::InvalidArgumentError("spec: no job kind given");
  // The spec is kept once per job, but every GetJob, ListJobs page and watch carries it.
  if (const size_t bytes = req.spec().ByteSizeLong(); bytes > kMaxJobSpecBytes)
    return absl::InvalidArgumentError(
        absl::StrCat("spec: ", bytes, " bytes is more than the ", kMaxJobSpecBytes, " a job's spec may take"));
  if (!v1::VerifyMode_IsValid(req.spec().verify()))
    return absl::InvalidArgumentError(absl::StrCat("verify: ", int(req.spec().verify()), " is not a mode"));
  if (req.spec().has_audit_rate() && !(req.spec().audit_rate() >= 0 && req.spec().audit_rate() <= 1))
    return absl::InvalidArgumentError(absl::StrCat("audit_rate: ", req.spec().audit_rate(), " is not in 0..1"));
  // The job with this request id, if there is one; ALREADY_EXISTS for another spec. Request ids
  // are per caller: another caller's ids are not seen, nor taken (each caller has its own).
  auto existing = [&]() -> std::optional<absl::StatusOr<v1::Job>> {
    if (req.request_id().empty()) return std::nullopt;
    std::lock_guard lock(mu_);
    const Job* found = table_.find_by_request(caller.identity, req.request_id());
    if (!found) return std::nullopt;
    if (found->spec.SerializeAsString() != req.spec().SerializeAsString())
      return absl::AlreadyExistsError(
          absl::StrCat("request_id: already used for job ", found->id, " with another spec"));
    return snapshot(*found);
  };
  if (auto e = existing()) return *e;
  const std::pair<std::string, std::string> id_key{caller.identity, req.request_id()};
  {
    std::lock_guard lock(mu_);
    if (absl::Status s = writable(clock_->now_ms()); !s.ok()) return s;
    if (absl::Status s = check_caps(caller, 0); !s.ok()) return s;
    if (absl::Status s = check_offers(*kind, req.spec()); !s.ok()) return s;
    if (!req.request_id().empty() && planning_ids_.count(id_key))
      return absl::UnavailableError("request_id: this job is still being planned; ask again for it by its request id");
    // A caller that used its planning budget waits for it to refill (a plan costs 1 ms at least).
    if (const PlanBudget& b = plan_budget(caller.identity, std::chrono::steady_clock::now()); b.level_ms < 1) {
      const double rate = double(options_.plan_budget_ms) / double(options_.plan_budget_window_ms);
      return absl::ResourceExhaustedError(absl::StrCat("submit: your plans took their budget of ",
                                                       options_.plan_budget_ms / 1000, " s of planning per ",
                                                       options_.plan_budget_window_ms / 1000, " s; try again in ",
                                                       int64_t((1 - b.level_ms) / rate / 1000) + 1, " s"));
    }
    // One plan at a time per authenticated caller (anonymous callers are everyone at once).
    if (!caller.identity.empty() && !planning_.insert(caller.identity).second)
      return absl::ResourceExhaustedError(
          "submit: a job of yours is still being planned; one plan at a time per caller");
    if (!req.request_id().empty()) planning_ids_.insert(id_key);
  }
  struct Planning {
    Coordinator* c;
    std::pair<std::string, std::string> key;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    ~Planning() {
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(c->mu_);
      c->planning_.erase(key.first);  // "" (anonymous) was never inserted
      c->planning_ids_.erase(key);
      // Charged whatever came of it: a refused or cancelled plan cost as much.
      c->plan_budget(key.first, now).level_ms -=
          std::max(1.0, std::chrono::duration<double, std::milli>(now - start).count());
    }
  } planning{this, id_key};
  // Planning and storing take seconds for big jobs: without the lock, so workers and watchers
  // are served meanwhile. The plan stops when its caller goes or the coordinator shuts down.
  const int64_t submitted_ms = clock_->now_ms();
  const PlanCancelled stop = [&] { return shutting_down() || (cancelled && cancelled()); };
  absl::StatusOr<KindPlan> plan = kind->plan(req.spec(), stop);
  if (!plan.ok()) return plan.status();
  std::lock_guard submit_lock(submit_mu_);
  if (auto e = existing()) return *e;  // a concurrent submit with the same id won
  {
    std::lock_guard lock(mu_);
    if (absl::Status s = check_caps(caller, int64_t(plan->units.size())); !s.ok()) return s;
  }
  absl::StatusOr<std::unique_ptr<Job>> stored = store_new_job(caller, req, kind, std::move(*plan));
  if (!stored.ok()) {
    // Nothing of it is in memory: no reload, but the store is degraded until a probe succeeds.
    std::lock_guard lock(mu_);
    store_failed(stored.status());
    return refusal(clock_->now_ms());
  }
  std::lock_guard lock(mu_);
  // A failed commit of another call read the store back while this job was stored: it is in
  // memory already.
  if (Job* loaded = find_job((*stored)->id)) return snapshot(*loaded);
  Job* raw = stored->get();
  add_sample(raw);
  const std::string owner = raw->owner.empty() ? "anonymous" : raw->owner;
  log_event(LogLevel::kInfo, "job_submitted",
            absl::StrCat("job ", raw->id, " submitted by ", owner, " (", kind->capability(), ", verify ",
                         enum_word(v1::VerifyMode_Name(raw->verify), "VERIFY_MODE_"), ")"),
            {{"job", raw->id},
             {"kind", kind->capability()},
             {"owner", owner},
             {"verify", enum_word(v1::VerifyMode_Name(raw->verify), "VERIFY_MODE_")},
             {"request_id", raw->request_id}});
  log_event(LogLevel::kInfo, "job_planned",
            absl::StrCat("job ", raw->id, " planned in ", clock_->now_ms() - submitted_ms,
                         " ms: ", kind->describe_plan(raw->plan, size_t(raw->total()))),
            {{"job", raw->id},
             {"kind", kind->capability()},
             {"units", raw->total()},
             {"plan_ms", clock_->now_ms() - submitted_ms}});
  ++counters_.jobs_submitted;
  table_.add(std::move(*stored));
  if (raw->queues.size(coord::Lane::kFresh) > 0) work_arrived();
  changed();
  return snapshot(*raw);
}

absl::StatusOr<v1::Job> Coordinator::get_job(const Caller& caller, const std::string& job_id) {
  std::lock_guard lock(mu_);
  absl::StatusOr<Job*> j = job_for(caller, job_id);
  if (!j.ok()) return j.status();
  return snapshot(**j);
}

absl::StatusOr<v1::ListJobsResponse> Coordinator::list_jobs(const Caller& caller, const v1::ListJobsRequest& req) {
  if (req.page_size() < 0 || req.page_size() > kMaxPageSize)
    return absl::InvalidArgumentError(absl::StrCat("page_size: ", req.page_size(), " is not in 0..", kMaxPageSize));
  const int page_size = req.page_size() == 0 ? kDefaultPageSize : req.page_size();
  // The token is the sequence number of the last job sent: the page goes on with older ones.
  int64_t before = INT64_MAX;
  if (!req.page_token().empty() && (!absl::SimpleAtoi(req.page_token(), &before) || before < 1))
    return absl::InvalidArgumentError("page_token: not one this coordinator gave");
  std::lock_guard lock(mu_);
  v1::ListJobsResponse out;
  size_t bytes = 0;
  int64_t last_seq = 0;
  // Final jobs included: the whole table, newest first.
  for (auto it = table_.all().rbegin(); it != table_.all().rend(); ++it) {
    const Job& j = **it;
    if (j.seq >= before || (caller.role == Role::kSubmit && j.owner != caller.identity)) continue;
    v1::Job snap = snapshot(j);
    bytes += snap.ByteSizeLong();
    if (out.jobs_size() >= page_size || (out.jobs_size() > 0 && bytes > kMaxListBytes)) {
      out.set_next_page_token(absl::StrCat(last_seq));
      break;
    }
    *out.add_jobs() = std::move(snap);
    last_seq = j.seq;
  }
  return out;
}

absl::StatusOr<v1::Job> Coordinator::cancel(const Caller& caller, const std::string& job_id) {
  std::lock_guard lock(mu_);
  absl::StatusOr<Job*> found = job_for(caller, job_id);
  if (!found.ok()) return found.status();
  Job* j = *found;
  if (caller.role == Role::kRead) return absl::PermissionDeniedError("cancel: the read role may not cancel jobs");
  if (j->state == v1::JOB_STATE_RUNNING) {
    const int64_t now = clock_->now_ms();
    if (absl::Status s = writable(now); !s.ok()) return s;
    if (absl::Status s = store_->update_job(j->id, v1::JOB_STATE_CANCELLED, now, j->mismatches, j->mismatch_detail);
        !s.ok()) {
      store_failed(s);
      return refusal(now);
    }
    j->state = v1::JOB_STATE_CANCELLED;
    j->finished_ms = now;
    j->queues.clear(j->units);
    drop_leases(j);
    table_.finished(j);
    const std::string by = caller.identity.empty() ? "anonymous" : caller.identity;
    log_event(LogLevel::kInfo, "job_cancelled", absl::StrCat("job ", j->id, " cancelled by ", by),
              {{"job", j->id}, {"kind", j->kind->capability()}, {"by", by}});
    changed();
  }
  return snapshot(*j);
}

absl::Status Coordinator::results(const Caller& caller, const std::string& job_id, bool divide, bool omit_games,
                                  const ResultSink& sink) {
  v1::JobSpec spec;
  v1::store::JobPlan plan;
  const JobKind* kind = nullptr;
  std::vector<v1::ResultChunk> chunks;
  {
    std::unique_lock lock(mu_);
    absl::StatusOr<Job*> found = job_for(caller, job_id);
    if (!found.ok()) return found.status();
    const Job& j = **found;
    if (j.damaged) return absl::DataLossError(absl::StrCat("job ", j.id, ": ", j.failure_detail));
    if (!j.kind->results_from_store()) {
      std::vector<UnitView> views;
      views.reserve(j.units.size() - size_t(j.units.first()));
      for (int64_t i = j.units.first(); i < int64_t(j.units.size()); ++i)
        if (j.units.live(i)) {
          const Unit& u = j.units[i];
          views.push_back({&u.spec, &u.meta, u.result ? &*u.result : nullptr});
        }
      std::map<int64_t, std::string> folded;
      for (const auto& [g, f] : j.folded) folded[g] = f.record.totals();
      // Made under the lock (a row per root: small), sent without it: a reader that stops
      // reading holds up no one.
      chunks = j.kind->folded_results(j.plan, views, folded, divide, omit_games);
    }
    if (!j.kind->results_from_store()) {
      lock.unlock();
      for (const v1::ResultChunk& c : chunks)
        if (!sink(c)) break;
      return absl::OkStatus();
    }
    spec = j.spec;
    plan = j.plan;
    kind = j.kind;
  }
  // Read from the store page by page without the lock: a slow reader holds up no one.
  return kind->stream_results(store_, job_id, spec, plan, omit_games, sink);
}

absl::StatusOr<std::vector<v1::ResultChunk>> Coordinator::results(const Caller& caller, const std::string& job_id,
                                                                  bool divide, bool omit_games) {
  std::vector<v1::ResultChunk> out;
  if (absl::Status s = results(caller, job_id, divide, omit_games,
                               [&](const v1::ResultChunk& c) {
                                 out.push_back(c);
                                 return true;
                               });
      !s.ok())
    return s;
  return out;
}

absl::StatusOr<v1::Job> Coordinator::watch(const Caller& caller, const std::string& job_id, uint64_t* version,
                                           int64_t wait_ms, bool with_spec) {
  std::unique_lock lock(mu_);
  if (absl::Status s = check_id(job_id, "job_id"); !s.ok()) return s;
  cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return version_ != *version || shutting_down_; });
  *version = version_;
  absl::StatusOr<Job*> j = job_for(caller, job_id);
  if (!j.ok()) return j.status();
  return snapshot(**j, with_spec ? SpecPart::kSummary : SpecPart::kNone);
}

absl::StatusOr<std::unique_ptr<Coordinator::WatchSlot>> Coordinator::open_watch(const Caller& caller) {
  std::lock_guard lock(mu_);
  if (watches_total_ >= options_.max_watches)
    return absl::ResourceExhaustedError(
        absl::StrCat("max-watches: ", watches_total_, " watch streams are open, the coordinator's cap"));
  int& mine = watches_[caller.identity];
  if (mine >= options_.max_watches_per_caller)
    return absl::ResourceExhaustedError(absl::StrCat("max-watches-per-caller: ", mine, " watch streams are open for ",
                                                     caller.identity.empty() ? "anonymous callers" : caller.identity,
                                                     ", the cap"));
  ++mine;
  ++watches_total_;
  return std::make_unique<WatchSlot>(this, caller.identity);
}

Coordinator::WatchSlot::~WatchSlot() {
  std::lock_guard lock(c_->mu_);
  if (--c_->watches_[identity_] == 0) c_->watches_.erase(identity_);
  --c_->watches_total_;
}

absl::StatusOr<v1::ListWorkersResponse> Coordinator::list_workers(const Caller&, const v1::ListWorkersRequest& req) {
  if (req.page_size() < 0 || req.page_size() > kMaxPageSize)
    return absl::InvalidArgumentError(absl::StrCat("page_size: ", req.page_size(), " is not in 0..", kMaxPageSize));
  // The token is the name of the last worker sent: the page goes on after it.
  if (absl::Status s = check_text(req.page_token(), "page_token", kMaxNameLength * 2 + 1, false); !s.ok()) return s;
  const int page_size = req.page_size() == 0 ? kDefaultPageSize : req.page_size();
  std::lock_guard lock(mu_);
  const int64_t now = clock_->now_ms();
  v1::ListWorkersResponse out;
  size_t bytes = 0;
  for (auto wit = req.page_token().empty() ? registry_.workers().begin()
                                           : registry_.workers().upper_bound(req.page_token());
       wit != registry_.workers().end(); ++wit) {
    const auto& [key, w] = *wit;
    if (out.workers_size() >= page_size || (out.workers_size() > 0 && bytes > kMaxListBytes)) {
      out.set_next_page_token(out.workers(out.workers_size() - 1).name());
      break;
    }
    const Session* session = nullptr;
    if (const std::string* id = registry_.session_of(key)) session = registry_.session(*id);
    const bool alive = session && !session->lost;
    if (!alive && !req.include_lost()) continue;
    v1::WorkerInfo* info = out.add_workers();
    info->set_name(key);
    info->set_identity(w.rec.identity);
    info->set_host(w.rec.host);
    info->set_version(w.rec.version);
    for (absl::string_view e : absl::StrSplit(w.rec.engines, ',', absl::SkipEmpty())) info->add_engines(std::string(e));
    info->set_threads(w.rec.threads);
    info->set_units_done(w.rec.units_done);
    if (w.samples.size() >= 2) {
      const double secs = double(now - w.samples.front().first) / 1000.0;
      if (secs > 0) info->set_units_per_second(double(w.samples.back().second - w.samples.front().second) / secs);
    }
    info->set_last_seen_unix_ms(alive ? session->last_seen_ms : w.rec.last_seen_ms);
    info->set_alive(alive);
    info->set_trust(v1::TrustState(w.rec.trust));
    info->set_trust_reason(w.rec.trust_reason);
    info->set_agreeing_results(w.rec.agreeing);
    info->set_owner(voter_of(key));
    info->set_trust_root(rank_of(voter_of(key)) == kRankRoot);
    bytes += info->ByteSizeLong();
  }
  return out;
}

void Coordinator::shutdown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
  polls_.cv().notify_all();
}

bool Coordinator::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

CoordinatorMetrics Coordinator::metrics() const {
  std::lock_guard lock(mu_);
  CoordinatorMetrics m;
  for (const auto& k : kinds_) {
    m.kinds.push_back(k->capability());
    m.descriptors.push_back(k->descriptor());
  }
  for (const Job* j : table_.all()) {  // final jobs included: they are counted by state
    ++m.jobs[{j->kind->capability(), j->state}];
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    // A verifying unit may also be leased (to the worker that checks it): count it once.
    int64_t both = 0;
    for (int64_t i : j->verifying) both += j->active.count(i);
    const int64_t leased = int64_t(j->active.size()) - both, verifying = int64_t(j->verifying.size());
    m.units_done += j->done;
    m.units_verifying += verifying;
    m.units_leased += leased;
    m.units_pending += j->total() - j->done - verifying - leased;
    for (int64_t i : j->verifying) {
      std::set<std::string_view> results;
      for (const Copy& c : j->units[i].copies)
        if (c.result && !c.discarded) results.insert(*c.result);
      m.units_disagreeing += results.size() > 1;
    }
  }
  for (const auto& [key, w] : registry_.workers()) {
    bool alive = false;
    if (const std::string* id = registry_.session_of(key))
      if (const Session* s = registry_.session(*id)) alive = !s->lost;
    ++m.workers[{v1::TrustState(w.rec.trust), alive}];
  }
  m.watches = watches_total_;
  m.store_degraded = health_.degraded;
  m.counters = counters_;
  return m;
}

absl::StatusOr<v1::EnrollResponse> Coordinator::enroll(const Caller& caller, const v1::EnrollRequest& req) {
  if (absl::Status s = check_text(req.name(), "name", kMaxNameLength, false); !s.ok()) return s;
  if (caller.role != Role::kEnroll || caller.identity.empty())
    return absl::PermissionDeniedError("enroll: only a join token (role enroll) is traded for a worker credential");
  absl::StatusOr<std::string> token = new_token();
  if (!token.ok()) return token.status();
  std::lock_guard lock(mu_);
  if (absl::Status s = writable(clock_->now_ms()); !s.ok()) return s;
  const int32_t issued = registry_.enrolled(caller.identity);
  if (issued >= caller.uses)
    return absl::ResourceExhaustedError(absl::StrCat("enroll: join token '", caller.identity, "' was traded for ",
                                                     issued, " worker credentials, all its uses=", caller.uses,
                                                     " (make a new one: c960 token new --role enroll --uses N)"));
  // ':' is in no tokens file name: an issued credential never shares a name (a voter) with one.
  // It inherits the join token's owner: every credential traded for one join token is one voter.
  StoredCredential c{absl::StrCat(caller.identity, ":", issued + 1),
                     token_hash(*token),
                     caller.identity,
                     req.name(),
                     clock_->now_ms(),
                     caller.owner_or_identity()};
  if (absl::Status s = store_->add_credential(c); !s.ok()) {
    store_failed(s);
    return absl::UnavailableError(absl::StrCat(s.message(), "; no credential was issued: retry"));
  }
  registry_.enrolled_one(caller.identity);
  if (tokens_) tokens_->add_issued(c.hash, c.name, c.owner);
  log_event(LogLevel::kInfo, "worker_enrolled",
            absl::StrCat("worker '", req.name(), "' enrolled with join token '", caller.identity, "' as ", c.name, " (",
                         issued + 1, " of ", caller.uses, " uses)"),
            {{"identity", c.name}, {"join", caller.identity}, {"name", req.name()}, {"uses", caller.uses}});
  v1::EnrollResponse resp;
  resp.set_token(*token);
  resp.set_identity(c.name);
  return resp;
}

std::string Coordinator::durable_state() const {
  std::lock_guard lock(mu_);
  std::string out;
  for (const Job* j : table_.all()) {
    absl::StrAppend(&out, "job ", j->id, " state ", int(j->state), " done ", j->done, "/", j->total(), " work ",
                    to_string(j->work_done), " mismatches ", j->mismatches, " damaged ", j->damaged, " plan ",
                    j->plan.ByteSizeLong(), "\n");
    for (int64_t i = j->units.first(); i < int64_t(j->units.size()); ++i) {
      if (!j->units.live(i)) continue;
      const Unit& u = j->units[i];
      absl::StrAppend(&out, " unit ", i, " attempt ", u.attempt, " wanted ", u.wanted, " votes ", u.votes, " settled ",
                      u.result ? absl::CEscape(u.settled) : "-", "\n");
      for (const Copy& c : u.copies)
        absl::StrAppend(&out, "  copy ", c.worker, " attempt ", c.attempt, " seed ", c.zobrist_seed, " result ",
                        c.result ? absl::CEscape(*c.result) : "-", " discarded ", c.discarded, "\n");
    }
    for (const auto& [g, f] : j->folded)
      absl::StrAppend(&out, " folded ", g, " ", f.first, "..", f.end, " ", absl::CEscape(f.record.SerializeAsString()),
                      "\n");
  }
  for (const auto& [key, w] : registry_.workers())
    absl::StrAppend(&out, "worker ", key, " trust ", w.rec.trust, " (", w.rec.trust_reason, ") agreeing ",
                    w.rec.agreeing, " done ", w.rec.units_done, "\n");
  return out;
}

std::string Coordinator::check_parts() const {
  std::lock_guard lock(mu_);
  if (std::string t = table_.check(); !t.empty()) return absl::StrCat("jobs: ", t);
  if (std::string r = registry_.check(); !r.empty()) return absl::StrCat("workers: ", r);
  for (const Job* j : table_.all()) {
    if (std::string q = j->queues.check(j->units); !q.empty()) return absl::StrCat("job ", j->id, "'s queues: ", q);
    if (j->state != v1::JOB_STATE_RUNNING && !j->queues.empty())
      return absl::StrCat("job ", j->id, " is not running but queues units");
  }
  return "";
}

std::string Coordinator::check_lease_counts() const {
  std::lock_guard lock(mu_);
  std::map<std::string, int64_t> counted;
  for (const Job* j : table_.all())  // final jobs' copies hold no lease: counted all the same
    for (int64_t i = j->units.first(); i < int64_t(j->units.size()); ++i)
      if (j->units.live(i))
        for (const Copy& c : j->units[i].copies)
          if (c.leased()) ++counted[voter_of(c.worker)];
  if (counted == registry_.leases_held()) return "";
  std::string out = "leases out by credential:";
  for (const auto& [v, n] : counted) absl::StrAppend(&out, " ", v, "=", n);
  absl::StrAppend(&out, "; counted:");
  for (const auto& [v, n] : registry_.leases_held()) absl::StrAppend(&out, " ", v, "=", n);
  return out;
}

size_t Coordinator::sessions() const {
  std::lock_guard lock(mu_);
  return registry_.sessions().size();
}

size_t Coordinator::workers() const {
  std::lock_guard lock(mu_);
  return registry_.workers().size();
}

}  // namespace c960::cluster
