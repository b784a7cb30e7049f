#include "coordinator/coordinator.h"

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
#include "coordinator/validation.h"

namespace c960::cluster {
namespace {

constexpr int64_t kRateWindowMs = 10'000;

}  // namespace

Coordinator::Coordinator(Store* store, const Clock* clock, CoordinatorOptions options)
    : store_(store), clock_(clock), options_(options) {
  kinds_.push_back(make_perft_kind());
  kinds_.push_back(make_selfplay_kind());
}

Coordinator::~Coordinator() = default;

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
  absl::StatusOr<std::vector<StoredJob>> jobs = store_->load_jobs();
  if (!jobs.ok()) return jobs.status();
  absl::StatusOr<std::vector<StoredWorker>> workers = store_->load_workers();
  if (!workers.ok()) return workers.status();
  std::lock_guard lock(mu_);
  for (StoredJob& s : *jobs) {
    if (!s.planned) {
      // A submit cut off while storing its plan never answered its client, which retries with
      // the same request id: drop the part that was stored.
      log_info(absl::StrCat("dropping ", s.id, ": its plan was not completely stored (interrupted submit)"));
      if (absl::Status st = store_->delete_job(s.id); !st.ok()) return st;
      next_job_seq_ = std::max(next_job_seq_, s.seq + 1);
      continue;
    }
    auto j = std::make_unique<Job>();
    j->id = s.id;
    j->seq = s.seq;
    j->request_id = s.request_id;
    if (!j->spec.ParseFromString(s.spec) || !j->plan.ParseFromString(s.plan))
      return absl::DataLossError(absl::StrCat("store: job ", s.id, " does not parse"));
    j->kind = kind_for(j->spec.kind_case());
    if (!j->kind) return absl::DataLossError(absl::StrCat("store: job ", s.id, " has an unknown kind"));
    j->state = v1::JobState(s.state);
    j->created_ms = s.created_ms;
    j->finished_ms = s.finished_ms;
    j->mismatches = s.mismatches;
    j->mismatch_detail = s.mismatch_detail;
    j->failure_detail = s.failure_detail;
    std::string damage;
    if (s.unit_count < 0 || s.units.size() != size_t(s.unit_count))
      damage = absl::StrCat("the store holds ", s.units.size(), " of its ", s.unit_count, " units");
    j->units.resize(damage.empty() ? s.units.size() : 0);
    for (size_t k = 0; k < s.units.size() && damage.empty(); ++k) {
      StoredUnit& su = s.units[k];
      if (su.index != int64_t(k)) {
        damage = absl::StrCat("unit ", k, " is missing from the store");
        break;
      }
      Unit& u = j->units[k];
      if (!u.spec.ParseFromString(su.spec) || !u.meta.ParseFromString(su.meta))
        return absl::DataLossError(absl::StrCat("store: unit ", s.id, "/", su.index, " does not parse"));
      u.attempt = su.attempt;
      if (su.result) {
        v1::UnitResult r;
        if (!r.ParseFromString(*su.result))
          return absl::DataLossError(absl::StrCat("store: result of ", s.id, "/", su.index, " does not parse"));
        u.state = UnitState::kDone;
        j->work_done += j->kind->work(u.meta, r);
        u.result = std::move(r);
        ++j->done;
      }
    }
    if (damage.empty() && j->state == v1::JOB_STATE_SUCCEEDED && j->done != int64_t(j->units.size()))
      damage = absl::StrCat("it SUCCEEDED but ", int64_t(j->units.size()) - j->done, " units have no result");
    if (j->state == v1::JOB_STATE_RUNNING)
      for (size_t i = 0; i < j->units.size(); ++i)
        if (j->units[i].state == UnitState::kPending) j->pending.push_back(int64_t(i));
    next_job_seq_ = std::max(next_job_seq_, j->seq + 1);
    if (!j->request_id.empty()) by_request_id_[j->request_id] = j.get();
    by_seq_.push_back(j.get());
    Job* raw = j.get();
    jobs_[j->id] = std::move(j);
    if (!damage.empty()) {
      refuse_damaged(raw, damage);
    } else if (raw->state == v1::JOB_STATE_RUNNING) {
      log_info(absl::StrCat("resuming ", raw->id, ": ", raw->done, "/", raw->units.size(), " units done"));
    }
  }
  for (StoredWorker& w : *workers) {
    next_worker_seq_ = std::max(next_worker_seq_, w.seq + 1);
    Worker rec;
    // Not alive until it calls again (a live worker does so within a second); its id stays valid.
    w.lost = true;
    for (absl::string_view c : absl::StrSplit(w.capabilities, ',', absl::SkipEmpty())) rec.capabilities.emplace(c);
    rec.rec = w;
    workers_[w.id] = std::move(rec);
  }
  changed();
  return absl::OkStatus();
}

void Coordinator::refuse_damaged(Job* j, const std::string& why) {
  // Serving it would report wrong or empty results as if they were right: fail it, loudly.
  j->damaged = true;
  j->failure_detail = absl::StrCat("the coordinator's store is damaged: ", why);
  log_info(absl::StrCat("ERROR: job ", j->id, ": ", j->failure_detail, "; the job is FAILED"));
  j->pending.clear();
  j->units.clear();
  j->done = 0;
  j->work_done = 0;
  if (j->state != v1::JOB_STATE_FAILED) {
    j->state = v1::JOB_STATE_FAILED;
    j->finished_ms = clock_->now_ms();
  }
  if (absl::Status s = store_->fail_job(j->id, v1::JOB_STATE_FAILED, j->finished_ms, j->failure_detail); !s.ok())
    log_info(std::string(s.message()));
}

Coordinator::Job* Coordinator::find_job(const std::string& id) {
  auto it = jobs_.find(id);
  return it == jobs_.end() ? nullptr : it->second.get();
}

absl::StatusOr<Coordinator::Job*> Coordinator::job_or_error(const std::string& id) {
  if (absl::Status s = check_id(id, "job_id"); !s.ok()) return s;
  Job* j = find_job(id);
  if (!j) return absl::NotFoundError(absl::StrCat("job_id: no job '", id, "'"));
  return j;
}

absl::StatusOr<Coordinator::Worker*> Coordinator::worker_or_error(const std::string& id) {
  if (absl::Status s = check_id(id, "worker_id"); !s.ok()) return s;
  auto it = workers_.find(id);
  if (it == workers_.end())
    return with_reason(absl::NotFoundError(absl::StrCat("worker_id: no worker '", id, "'; call Hello")),
                       v1::ErrorInfo::REASON_UNKNOWN_WORKER);
  return &it->second;
}

void Coordinator::touch(Worker* w) {
  w->rec.last_seen_ms = clock_->now_ms();
  if (w->rec.lost) {
    w->rec.lost = false;
    log_info(absl::StrCat("worker ", w->rec.id, " (", w->rec.name, ") is back"));
    if (absl::Status s = store_->set_worker_lost(w->rec.id, false, w->rec.last_seen_ms); !s.ok())
      log_info(std::string(s.message()));
  }
}

v1::Job Coordinator::snapshot(const Job& j) const {
  v1::Job out;
  out.set_id(j.id);
  *out.mutable_spec() = j.spec;
  out.set_state(j.state);
  out.set_request_id(j.request_id);
  out.set_created_unix_ms(j.created_ms);
  out.set_finished_unix_ms(j.finished_ms);
  out.set_result_mismatches(j.mismatches);
  out.set_mismatch_detail(j.mismatch_detail);
  out.set_unit_failures(j.unit_failures);
  out.set_failure_detail(j.failure_detail);
  j.kind->fill_job(j.plan, &out);
  v1::Progress* p = out.mutable_progress();
  p->set_units_total(int64_t(j.units.size()));
  p->set_units_done(j.done);
  p->set_units_leased(int64_t(j.leased.size()));
  std::set<std::string> holders;
  for (int64_t i : j.leased) holders.insert(j.units[i].worker);
  p->set_workers(int32_t(holders.size()));
  int alive = 0;
  for (const auto& [id, w] : workers_) alive += !w.rec.lost;
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
  const int64_t left = int64_t(j.units.size()) - j.done;
  p->set_eta_seconds(j.state != v1::JOB_STATE_RUNNING ? 0 : unit_rate > 0 ? double(left) / unit_rate : -1);
  return out;
}

void Coordinator::add_sample(Job* j) {
  const int64_t now = clock_->now_ms();
  j->samples.push_back({now, j->done, j->work_done});
  // Keep one sample older than the window so that the rate spans all of it.
  while (j->samples.size() > 2 && j->samples[1].ms < now - kRateWindowMs) j->samples.pop_front();
}

absl::StatusOr<std::unique_ptr<Coordinator::Job>> Coordinator::store_new_job(const v1::SubmitJobRequest& req,
                                                                             const JobKind* kind, KindPlan plan) {
  auto j = std::make_unique<Job>();
  {
    std::lock_guard lock(mu_);
    j->seq = next_job_seq_++;
  }
  j->id = absl::StrCat("job-", j->seq);
  j->request_id = req.request_id();
  j->spec = req.spec();
  j->plan = std::move(plan.plan);
  j->kind = kind;
  j->created_ms = clock_->now_ms();
  StoredJob s;
  s.id = j->id;
  s.seq = j->seq;
  s.request_id = j->request_id;
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
    j->pending.push_back(int64_t(i));
  }
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

absl::StatusOr<v1::Job> Coordinator::submit(const Caller& caller, const v1::SubmitJobRequest& req) {
  static_cast<void>(caller);  // issue 9 wiring
  if (absl::Status s = check_text(req.request_id(), "request_id", kMaxRequestIdLength, false); !s.ok()) return s;
  const JobKind* kind = kind_for(req.spec().kind_case());
  if (!kind) return absl::InvalidArgumentError("spec: no job kind given");
  // The job with this request id, if there is one; ALREADY_EXISTS for another spec.
  auto existing = [&]() -> std::optional<absl::StatusOr<v1::Job>> {
    if (req.request_id().empty()) return std::nullopt;
    std::lock_guard lock(mu_);
    auto it = by_request_id_.find(req.request_id());
    if (it == by_request_id_.end()) return std::nullopt;
    if (it->second->spec.SerializeAsString() != req.spec().SerializeAsString())
      return absl::AlreadyExistsError(
          absl::StrCat("request_id: already used for job ", it->second->id, " with another spec"));
    return snapshot(*it->second);
  };
  if (auto e = existing()) return *e;
  // Planning and storing take seconds for big jobs: without the lock, so workers and watchers
  // are served meanwhile.
  absl::StatusOr<KindPlan> plan = kind->plan(req.spec());
  if (!plan.ok()) return plan.status();
  std::lock_guard submit_lock(submit_mu_);
  if (auto e = existing()) return *e;  // a concurrent submit with the same id won
  absl::StatusOr<std::unique_ptr<Job>> stored = store_new_job(req, kind, std::move(*plan));
  if (!stored.ok()) return stored.status();
  std::lock_guard lock(mu_);
  Job* raw = stored->get();
  add_sample(raw);
  log_info(absl::StrCat("job ", raw->id, " (", kind->capability(),
                        "): ", kind->describe_plan(raw->plan, raw->units.size())));
  if (!raw->request_id.empty()) by_request_id_[raw->request_id] = raw;
  by_seq_.push_back(raw);
  jobs_[raw->id] = std::move(*stored);
  changed();
  return snapshot(*raw);
}

absl::StatusOr<v1::Job> Coordinator::get_job(const Caller& caller, const std::string& job_id) {
  static_cast<void>(caller);  // issue 9 wiring
  std::lock_guard lock(mu_);
  absl::StatusOr<Job*> j = job_or_error(job_id);
  if (!j.ok()) return j.status();
  return snapshot(**j);
}

absl::StatusOr<std::vector<v1::Job>> Coordinator::list_jobs(const Caller& caller, int page_size) {
  static_cast<void>(caller);  // issue 9 wiring
  if (page_size < 0 || page_size > kMaxPageSize)
    return absl::InvalidArgumentError(absl::StrCat("page_size: ", page_size, " is not in 0..", kMaxPageSize));
  if (page_size == 0) page_size = kDefaultPageSize;
  std::lock_guard lock(mu_);
  std::vector<v1::Job> out;
  for (auto it = by_seq_.rbegin(); it != by_seq_.rend() && int(out.size()) < page_size; ++it)
    out.push_back(snapshot(**it));
  return out;
}

absl::StatusOr<v1::Job> Coordinator::cancel(const Caller& caller, const std::string& job_id) {
  static_cast<void>(caller);  // issue 9 wiring
  std::lock_guard lock(mu_);
  absl::StatusOr<Job*> found = job_or_error(job_id);
  if (!found.ok()) return found.status();
  Job* j = *found;
  if (j->state == v1::JOB_STATE_RUNNING) {
    const int64_t now = clock_->now_ms();
    if (absl::Status s = store_->update_job(j->id, v1::JOB_STATE_CANCELLED, now, j->mismatches, j->mismatch_detail);
        !s.ok())
      return s;
    j->state = v1::JOB_STATE_CANCELLED;
    j->finished_ms = now;
    j->pending.clear();
    for (int64_t i : j->leased) j->units[i].state = UnitState::kPending;
    j->leased.clear();
    log_info(absl::StrCat("job ", j->id, " cancelled"));
    changed();
  }
  return snapshot(*j);
}

absl::StatusOr<std::vector<v1::ResultChunk>> Coordinator::results(const Caller& caller, const std::string& job_id,
                                                                  bool divide, bool omit_games) {
  static_cast<void>(caller);  // issue 9 wiring
  std::lock_guard lock(mu_);
  absl::StatusOr<Job*> found = job_or_error(job_id);
  if (!found.ok()) return found.status();
  const Job& j = **found;
  if (j.damaged) return absl::DataLossError(absl::StrCat("job ", j.id, ": ", j.failure_detail));
  std::vector<UnitView> views;
  views.reserve(j.units.size());
  for (const Unit& u : j.units) views.push_back({&u.spec, &u.meta, u.result ? &*u.result : nullptr});
  return j.kind->results(j.plan, views, divide, omit_games);
}

absl::StatusOr<v1::Job> Coordinator::watch(const Caller& caller, const std::string& job_id, uint64_t* version,
                                           int64_t wait_ms) {
  static_cast<void>(caller);  // issue 9 wiring
  std::unique_lock lock(mu_);
  if (absl::Status s = check_id(job_id, "job_id"); !s.ok()) return s;
  cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] { return version_ != *version || shutting_down_; });
  *version = version_;
  absl::StatusOr<Job*> j = job_or_error(job_id);
  if (!j.ok()) return j.status();
  return snapshot(**j);
}

void Coordinator::shutdown() {
  std::lock_guard lock(mu_);
  shutting_down_ = true;
  cv_.notify_all();
}

bool Coordinator::shutting_down() const {
  std::lock_guard lock(mu_);
  return shutting_down_;
}

}  // namespace c960::cluster
