// The coordinator's calls for workers: sessions, leases, completions and their verification,
// failures, and the sweep that returns expired leases and marks silent workers lost.
#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "coordinator/coordinator.h"
#include "coordinator/validation.h"
#include "coordinator/verification.h"
#include "core/version.h"
#include "selfplay/spec.h"

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

void Coordinator::Units::append_folded(int64_t n) {
  if (live_.empty()) {
    base_ += n;
    return;
  }
  for (int64_t k = 0; k < n; ++k) live_.emplace_back().folded = true;
}

void Coordinator::Units::fold(int64_t first, int64_t end) {
  for (int64_t i = std::max(first, base_); i < end; ++i) {
    Unit& u = live_[size_t(i - base_)];
    u = Unit();
    u.folded = true;
  }
  while (!live_.empty() && live_.front().folded) {
    live_.pop_front();
    ++base_;
  }
}

void Coordinator::enqueue(Job* j, int64_t i, bool front) {
  if (!j->units.live(i)) return;
  Unit& u = j->units[i];
  if (u.queued || !u.placed.empty() || !u.needs_copy() || j->state != v1::JOB_STATE_RUNNING) return;
  std::deque<int64_t>& q = u.copies.empty() ? j->fresh : j->replicas;
  if (front)
    q.push_front(i);
  else
    q.push_back(i);
  u.queued = true;
  work_arrived();
}

int32_t Coordinator::wanted_for(const Job& j, const WorkerState& w) {
  switch (j.verify) {
    case v1::VERIFY_MODE_OFF: return 1;
    case v1::VERIFY_MODE_ALL: return 2;
    default: break;
  }
  if (j.verify == v1::VERIFY_MODE_HOSTS) return 2;
  // Adaptive: an untrusted owner's units are all checked; a trusted one's at the spot-check rate;
  // a trust root's never (no other owner's copy could overrule it: --verify hosts checks the
  // operator's machines against each other).
  const int rank = rank_of(voter_of(w.rec.key));
  if (rank == kRankRoot) return 1;
  if (rank < kRankTrusted) return 2;
  return std::uniform_real_distribution<double>(0, 1)(rng_) < options_.spot_check_rate ? 2 : 1;
}

std::string Coordinator::voter_of(const std::string& key) const {
  auto it = registry_.workers.find(key);
  if (it == registry_.workers.end() || it->second.rec.identity.empty()) return key;
  return it->second.rec.owner.empty() ? it->second.rec.identity : it->second.rec.owner;
}

std::string Coordinator::voter_in(const Job& j, const std::string& key) const {
  return j.verify == v1::VERIFY_MODE_HOSTS ? key : voter_of(key);
}

int Coordinator::rank_of(const std::string& owner) const {
  if (options_.trust_roots.count(owner)) return kRankRoot;
  // Without authentication every worker is the operator's own (a key with no identity).
  if (auto it = registry_.workers.find(owner); it != registry_.workers.end() && it->second.rec.identity.empty())
    return kRankRoot;
  return registry_.trusted_owners.count(owner) ? kRankTrusted : kRankUntrusted;
}

int Coordinator::rank_in(const Job& j, const std::string& voter) const {
  return rank_of(j.verify == v1::VERIFY_MODE_HOSTS ? voter_of(voter) : voter);
}

UnitVotes Coordinator::votes_of(const Job& j, int64_t i) const {
  const Unit& u = j.units[i];
  UnitVotes votes;
  for (const Copy& c : u.copies) {
    votes.copies.push_back({voter_in(j, c.worker), c.result, c.discarded});
    const std::string& v = votes.copies.back().voter;
    if (registry_.quarantined_voters.count(voter_of(c.worker)) || registry_.quarantined_voters.count(v))
      votes.quarantined.insert(v);
    votes.rank[v] = rank_in(j, v);
  }
  if (u.result) votes.settled = u.settled;
  votes.wanted = u.wanted;
  votes.needs_root = audited(j.plan.audit_salt(), i, j.plan.audit_rate());
  return votes;
}

int64_t Coordinator::owner_cap(const std::string& owner) const {
  int64_t threads = 0;
  for (const auto& [id, s] : registry_.sessions)
    if (!s.lost && s.voter == owner) threads += s.threads;
  return lease_cap(threads, kPrefetchPerThread, options_.max_leases_per_credential);
}

std::vector<std::pair<std::string, int>> Coordinator::placement_candidates(const Job& j) const {
  std::map<std::string, int> owners;  // sorted: the draw depends on the seed, not on map order
  for (const auto& [id, s] : registry_.sessions)
    if (!s.lost && !registry_.quarantined_voters.count(s.voter) && s.capabilities.count(j.kind->capability()) &&
        runs(s, *j.kind, j.spec))
      owners.emplace(s.voter, rank_of(s.voter));
  return {owners.begin(), owners.end()};
}

std::string Coordinator::place_copy(Job* j, int64_t i, int64_t now,
                                    const std::vector<std::pair<std::string, int>>& candidates) {
  Unit& u = j->units[i];
  const int want_rank = next_rank(votes_of(*j, i));
  // Owners that hold a copy (leased, sent, given up or held too long) are involved: never twice.
  std::set<std::string> involved;
  for (const Copy& c : u.copies)
    if (c.result || c.discarded || c.leased() || c.overheld) involved.insert(voter_of(c.worker));
  std::vector<std::string> eligible;
  for (const auto& [owner, rank] : candidates)
    if (rank >= want_rank && !involved.count(owner)) eligible.push_back(owner);
  const std::optional<std::string> owner = place(eligible, rng_);
  if (!owner) return "";
  u.placed = *owner;
  u.placed_ms = now;
  return *owner;
}

void Coordinator::replace_stale(int64_t now) {
  std::set<std::string> live;
  for (const auto& [id, s] : registry_.sessions)
    if (!s.lost) live.insert(s.voter);
  for (Job* j : table_.by_seq) {
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    for (auto it = j->placed.begin(); it != j->placed.end();) {
      std::deque<int64_t>& q = it->second;
      const bool gone = !live.count(it->first) || registry_.quarantined_voters.count(it->first);
      while (!q.empty()) {
        const int64_t i = q.front();
        if (j->units.live(i) && j->units[i].placed == it->first && !gone &&
            now - j->units[i].placed_ms <= options_.placement_ms)
          break;  // in placement order: the rest are newer
        q.pop_front();
        if (!j->units.live(i) || j->units[i].placed != it->first) continue;
        j->units[i].placed.clear();
        enqueue(j, i, true);
      }
      it = q.empty() ? j->placed.erase(it) : std::next(it);
    }
  }
}

bool Coordinator::runs(const Session& s, const JobKind& kind, const v1::JobSpec& spec, std::string* why) const {
  for (const JobKind::EngineNeed& need : kind.required_engines(spec)) {
    if (!s.engines.count(need.engine)) {
      if (why) *why = absl::StrCat("engine '", need.engine, "' is not offered");
      return false;
    }
    auto p = s.policies.find(need.engine);
    if (p == s.policies.end()) continue;  // the worker checks alone
    absl::Status allowed = p->second.check(need.options);
    if (!allowed.ok()) {
      if (why) *why = std::string(allowed.message());
      return false;
    }
  }
  return true;
}

bool Coordinator::offers_all(const Session& s, const JobKind& kind, const v1::JobSpec& spec) const {
  for (const JobKind::EngineNeed& need : kind.required_engines(spec))
    if (!s.engines.count(need.engine)) return false;
  return true;
}

absl::Status Coordinator::check_offers(const JobKind& kind, const v1::JobSpec& spec) const {
  const std::vector<JobKind::EngineNeed> needs = kind.required_engines(spec);
  if (needs.empty()) return absl::OkStatus();
  std::string why;
  for (const auto& [id, s] : registry_.sessions) {
    if (s.lost || !offers_all(s, kind, spec)) continue;
    if (runs(s, kind, spec, why.empty() ? &why : nullptr)) return absl::OkStatus();
  }
  if (why.empty()) return absl::OkStatus();  // nobody offers them now
  return absl::FailedPreconditionError(
      absl::StrCat("options: no connected worker offering ", engines_named(needs), " allows them: ", why));
}

void Coordinator::take_lease(Copy& c, const Session& s) {
  if (c.session.empty()) ++registry_.leases_held[s.voter];
  c.session = s.id;
}

void Coordinator::note_deadline(Job* j, int64_t i, const Copy& c) {
  const int32_t copy = int32_t(&c - j->units[i].copies.data());
  deadlines_.push({c.expire_ms, j, i, copy}, [this](const auto& e) { return deadline_live(e); });
}

bool Coordinator::deadline_live(const LeaseDeadlines<Job>::Entry& e) const {
  if (e.job->state != v1::JOB_STATE_RUNNING || !e.job->units.live(e.unit)) return false;
  const Unit& u = e.job->units[e.unit];
  if (size_t(e.copy) >= u.copies.size()) return false;
  const Copy& c = u.copies[size_t(e.copy)];
  return c.leased() && c.expire_ms == e.expire_ms;
}

void Coordinator::drop_lease(Copy& c) {
  if (c.session.empty()) return;
  const std::string voter = voter_of(c.worker);
  if (auto it = registry_.leases_held.find(voter); it != registry_.leases_held.end() && --it->second <= 0)
    registry_.leases_held.erase(it);
  c.session.clear();
  c.expire_ms = 0;
}

void Coordinator::drop_leases(Job* j) {
  for (int64_t i : j->active)
    if (j->units.live(i))
      for (Copy& c : j->units[i].copies) drop_lease(c);
  j->active.clear();
}

void Coordinator::lease(Job* j, int64_t i, Session& s, int64_t now, std::vector<Store::Lease>* rows) {
  Unit& u = j->units[i];
  if (u.wanted == 0) u.wanted = wanted_for(*j, registry_.workers.at(s.key));
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
  take_lease(*c, s);
  c->expire_ms = now + options_.lease_ms;
  c->held_since_ms = now;
  note_deadline(j, i, *c);
  c->attempt = ++u.attempt;
  j->active.insert(i);
  rows->push_back({i, u.attempt, u.wanted,
                   StoredCopy{i, int32_t(c - u.copies.data()), c->worker, c->attempt, c->zobrist_seed, {}, false}});
  enqueue(j, i);  // it may want a further copy from another worker
}

void Coordinator::end_lease(Job* j, int64_t i, Copy& c, bool front) {
  if (front) ++counters_.requeues;  // given back without a result: expired, released, superseded
  drop_lease(c);
  Unit& u = j->units[i];
  if (u.leases() == 0) j->active.erase(i);
  enqueue(j, i, front);
}

// ---------------------------------------------------------------------------------------------
// Sessions

namespace {

// What a worker said of itself at Hello, as one line for the jobs it computes (checked first).
std::string worker_provenance(const v1::HelloRequest& req) {
  std::string out = absl::StrCat("c960 ", req.version().empty() ? "?" : req.version(), "; CPU ",
                                 req.cpu().empty() ? "unknown" : req.cpu());
  for (const v1::EngineOffer& o : req.engine_offers())
    absl::StrAppend(&out, "; ", o.engine(), " '", o.id_name().empty() ? "?" : o.id_name(), "' sha256 ",
                    o.sha256().empty() ? "unknown" : o.sha256());
  return out;
}

}  // namespace

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
  std::map<std::string, selfplay::OptionPolicy> policies;
  if (req.engine_offers_size() > kMaxEngines)
    return absl::InvalidArgumentError(absl::StrCat("engine_offers: more than ", kMaxEngines));
  for (const v1::EngineOffer& o : req.engine_offers()) {
    // builtin is offered by every worker; its offer bounds what a job may ask of it (hash_mb).
    if (o.engine() != selfplay::kBuiltinEngine &&
        std::find(req.engines().begin(), req.engines().end(), o.engine()) == req.engines().end())
      return absl::InvalidArgumentError(
          absl::StrCat("engine_offers.engine: '", o.engine().substr(0, 64), "' is not one of engines"));
    if (o.options_size() > kMaxEngines)
      return absl::InvalidArgumentError(absl::StrCat("engine_offers.options: more than ", kMaxEngines));
    selfplay::OptionPolicy p;
    for (const v1::AllowedOption& a : o.options()) {
      if (absl::Status s = check_text(a.name(), "engine_offers.options.name", 64, true); !s.ok()) return s;
      if (a.bounded() && a.min() > a.max())
        return absl::InvalidArgumentError(
            absl::StrCat("engine_offers.options: ", a.name(), ": min ", a.min(), " is above max ", a.max()));
      p.allowed.push_back({a.name(), a.bounded(), a.min(), a.max()});
    }
    if (!policies.emplace(o.engine(), std::move(p)).second)
      return absl::InvalidArgumentError(absl::StrCat("engine_offers.engine: '", o.engine(), "' given twice"));
    if (!o.sha256().empty() && (o.sha256().size() != 64 ||
                                !std::all_of(o.sha256().begin(), o.sha256().end(),
                                             [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); })))
      return absl::InvalidArgumentError(
          absl::StrCat("engine_offers.sha256: '", o.sha256().substr(0, 80), "' is not 64 lower-case hex digits"));
    if (absl::Status s = check_text(o.id_name(), "engine_offers.id_name", kMaxProvenanceText, false); !s.ok()) return s;
  }
  if (absl::Status s = check_text(req.cpu(), "cpu", kMaxProvenanceText, false); !s.ok()) return s;
  // The worker is who its credentials say; the name only tells its processes apart.
  const std::string host = req.name().empty() ? "worker" : req.name();
  const std::string key = caller.identity.empty() ? host : absl::StrCat(caller.identity, "/", host);

  // The voter is the credential's owner: all credentials and names of one owner vote once.
  const std::string voter = caller.identity.empty() ? key : caller.owner_or_identity();

  std::lock_guard lock(mu_);
  if (absl::Status s = writable(clock_->now_ms()); !s.ok()) return s;
  // An owner is quarantined whole: none of its credentials or names may join again.
  if (registry_.quarantined_voters.count(voter) || registry_.quarantined_voters.count(key)) {
    auto it = registry_.workers.find(key);
    return quarantined(key, it != registry_.workers.end() && it->second.rec.trust == v1::TRUST_STATE_QUARANTINED
                                ? it->second.rec.trust_reason
                                : absl::StrCat("its owner '", voter, "' is quarantined"));
  }
  // Decide, commit, then apply: the record as it will be, stored before anything in memory
  // changes (a failed write leaves the old session and the old record as they were).
  auto known = registry_.workers.find(key);
  // A new name counts against its credential's and its owner's caps (a known one, a restart,
  // never does): refused before anything is stored.
  if (known == registry_.workers.end() && !caller.identity.empty()) {
    const auto held = [](const std::map<std::string, int>& m, const std::string& k) {
      auto it = m.find(k);
      return it == m.end() ? 0 : it->second;
    };
    const auto refuse = [&](const char* flag, const std::string& whose, int n, int cap) {
      return absl::ResourceExhaustedError(absl::StrCat(
          flag, ": ", whose, " already has ", n, " worker names, the cap (", cap, "); worker '", host,
          "' was not registered. Start workers under names the coordinator knows (c960-worker --name), or wait "
          "until names unused for ",
          options_.forget_workers_ms / 1000, " s are forgotten (--forget-workers-after-days)"));
    };
    if (int n = held(registry_.per_identity, caller.identity); n >= options_.max_workers_per_credential)
      return refuse("max-workers-per-credential", absl::StrCat("credential '", caller.identity, "'"), n,
                    options_.max_workers_per_credential);
    if (int n = held(registry_.per_owner, voter); n >= options_.max_workers_per_owner)
      return refuse("max-workers-per-owner", absl::StrCat("owner '", voter, "'"), n, options_.max_workers_per_owner);
  }
  StoredWorker rec = known != registry_.workers.end() ? known->second.rec : StoredWorker{};
  const int64_t now = clock_->now_ms();
  if (rec.key.empty()) {
    rec.key = key;
    rec.trust = v1::TRUST_STATE_NEW;
    rec.trust_reason = "no results confirmed yet";
  }
  std::set<std::string> engines = {req.engines().begin(), req.engines().end()};
  engines.insert("builtin");
  rec.identity = caller.identity;
  rec.owner = caller.identity.empty() ? "" : caller.owner_or_identity();
  rec.host = host;
  rec.version = req.version();
  rec.threads = req.threads();
  rec.capabilities = absl::StrJoin(req.capabilities(), ",");
  rec.engines = absl::StrJoin(engines, ",");
  rec.provenance = worker_provenance(req);
  rec.last_seen_ms = now;
  if (absl::Status st = store_->upsert_worker(rec); !st.ok()) {
    store_failed(st);
    return absl::UnavailableError(absl::StrCat(st.message(), "; the worker was not registered: retry"));
  }
  // A new session supersedes the worker's previous one: its leases go back to the queue.
  if (auto old = registry_.session_of.find(key); old != registry_.session_of.end()) {
    for (Job* j : table_.by_seq)
      for (auto it = j->active.begin(); it != j->active.end();) {
        const int64_t i = *it++;
        for (Copy& c : j->units[i].copies)
          if (c.session == old->second) end_lease(j, i, c, true);
      }
    registry_.sessions.erase(old->second);
  }
  if (known != registry_.workers.end()) count_worker(known->second.rec, -1);  // its owner may have changed
  count_worker(rec, 1);
  WorkerState& w = registry_.workers[key];
  w.rec = std::move(rec);
  Session s;
  s.id = new_session_id();
  s.key = key;
  s.voter = voter;
  s.threads = w.rec.threads;
  s.capabilities = {req.capabilities().begin(), req.capabilities().end()};
  s.engines = std::move(engines);
  s.policies = std::move(policies);
  s.last_seen_ms = now;
  log_event(LogLevel::kInfo, "worker_joined",
            absl::StrCat("worker ", key, " joined: ", w.rec.threads, " threads, version ", w.rec.version, ", engines ",
                         w.rec.engines, ", trust ",
                         enum_word(v1::TrustState_Name(v1::TrustState(w.rec.trust)), "TRUST_STATE_")),
            {{"worker", key},
             {"identity", w.rec.identity},
             {"threads", w.rec.threads},
             {"version", w.rec.version},
             {"engines", w.rec.engines},
             {"trust", enum_word(v1::TrustState_Name(v1::TrustState(w.rec.trust)), "TRUST_STATE_")}});
  v1::HelloResponse resp;
  resp.set_worker_id(s.id);
  resp.set_lease_seconds(options_.lease_ms / 1000);
  resp.set_worker_name(key);
  registry_.session_of[key] = s.id;
  registry_.sessions[s.id] = std::move(s);
  // An owner that may decide waiting units may have joined: the next look says.
  for (Job* j : table_.by_seq) j->stalled = 0;
  changed();
  return resp;
}

absl::StatusOr<Coordinator::Session*> Coordinator::session_for(const Caller& caller, const std::string& id) {
  if (absl::Status s = check_text(id, "worker_id", kMaxIdLength, true); !s.ok()) return s;
  auto it = registry_.sessions.find(id);
  // A session of another identity is as unknown as a made-up one.
  if (it == registry_.sessions.end()) return unknown_worker(id);
  auto w = registry_.workers.find(it->second.key);
  if (w == registry_.workers.end() || w->second.rec.identity != caller.identity) return unknown_worker(id);
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
  if (absl::Status s = store_->upsert_worker(w.rec); !s.ok()) {
    log_error(s.message());  // inside a transaction: its commit fails with it
    store_failed(s);
  }
}

void Coordinator::count_worker(const StoredWorker& rec, int delta) {
  if (rec.identity.empty()) return;  // nobody authenticated: no caps
  for (auto [m, k] : {std::pair{&registry_.per_identity, &rec.identity},
                      std::pair{&registry_.per_owner, rec.owner.empty() ? &rec.identity : &rec.owner}})
    if (((*m)[*k] += delta) <= 0) m->erase(*k);
}

bool Coordinator::forget_workers(int64_t now) {
  // Candidates: silent long enough, no session, not quarantined (the quarantine lives in the
  // records), and not the last TRUSTED worker of its owner (the owner's earned trust does).
  std::map<std::string, int> trusted;  // TRUSTED workers by owner
  for (const auto& [key, w] : registry_.workers)
    if (w.rec.trust == v1::TRUST_STATE_TRUSTED) ++trusted[voter_of(key)];
  std::set<std::string> gone;
  for (const auto& [key, w] : registry_.workers) {
    if (registry_.session_of.count(key) || w.rec.last_seen_ms + options_.forget_workers_ms > now ||
        w.rec.trust == v1::TRUST_STATE_QUARANTINED)
      continue;
    if (w.rec.trust == v1::TRUST_STATE_TRUSTED) {
      int& n = trusted[voter_of(key)];
      if (n <= 1) continue;
      --n;
    }
    gone.insert(key);
  }
  // Workers that jobs in memory still name stay: a lease or a copy's vote (a later quarantine of
  // its owner finds its votes through its record), a folded group's sole voter, and the workers a
  // job lists as its provenance.
  for (const Job* j : table_.by_seq) {
    if (gone.empty()) return false;
    for (int64_t i = j->units.first(); i < int64_t(j->units.size()); ++i)
      if (j->units.live(i))
        for (const Copy& c : j->units[i].copies) gone.erase(c.worker);
    for (const auto& [g, f] : j->folded)
      for (const std::string& v : f.record.sole_voters()) gone.erase(v);
  }
  if (gone.empty()) return false;
  const std::vector<std::string> keys(gone.begin(), gone.end());
  if (absl::Status s = store_->delete_workers(keys); !s.ok()) {
    log_error(absl::StrCat("forgetting ", keys.size(), " workers: ", s.message()));
    return false;
  }
  for (const std::string& key : keys) {
    auto it = registry_.workers.find(key);
    count_worker(it->second.rec, -1);
    log_event(LogLevel::kInfo, "worker_forgotten",
              absl::StrCat("worker ", key, " forgotten: silent for ", (now - it->second.rec.last_seen_ms) / 1000,
                           " s, nothing needs its record"),
              {{"worker", key}, {"silent_s", (now - it->second.rec.last_seen_ms) / 1000}});
    registry_.workers.erase(it);
  }
  return true;
}

// ---------------------------------------------------------------------------------------------
// Leases

absl::Status Coordinator::lease_units(Session& s, int max_units, v1::AcquireWorkResponse* resp) {
  const int64_t now = clock_->now_ms();
  // Leases are stored before they go out: none while the store refuses writes.
  if (absl::Status st = writable(now); !st.ok()) return st;
  // One owner holds at most what its connected workers compute in a lease period, over all its
  // credentials and workers.
  const auto held_it = registry_.leases_held.find(s.voter);
  const int64_t held = held_it == registry_.leases_held.end() ? 0 : held_it->second;
  max_units = int(std::min<int64_t>(max_units, std::max<int64_t>(0, owner_cap(s.voter) - held)));
  if (max_units <= 0) return absl::OkStatus();
  // Whether unit u may have a copy computed by this session's worker: no other worker of its
  // voter holds a copy (one vote per owner; per worker under verify hosts); the worker's own
  // earlier copy only if it has no result, was not given up and is not leased already.
  auto may_compute = [&](const Job& j, const Unit& u) {
    const std::string me = voter_in(j, s.key);
    for (const Copy& c : u.copies)
      if (voter_in(j, c.worker) == me && (c.worker != s.key || c.result || c.discarded || c.leased() || c.overheld))
        return false;
    return true;
  };
  std::unique_ptr<Store::Transaction> txn;  // every job's leases in one commit
  for (Job* j : table_.by_seq) {
    if (resp->leases_size() >= max_units) break;
    if (j->state != v1::JOB_STATE_RUNNING || !s.capabilities.count(j->kind->capability())) continue;
    if (int64_t(j->fresh.size()) < options_.lazy_low_water_units && !j->refilling && !j->kind->fully_planned(j->plan)) {
      j->refilling = true;
      polls_.refill_event = true;
      polls_.cv.notify_one();
    }
    auto mine = j->placed.find(s.voter);
    if (j->fresh.empty() && j->replicas.empty() && (mine == j->placed.end() || mine->second.empty())) continue;
    if (!runs(s, *j->kind, j->spec)) continue;
    std::vector<Store::Lease> rows;
    auto room = [&] { return resp->leases_size() + int(rows.size()) < max_units; };
    // First the copies the coordinator placed with this owner.
    if (mine != j->placed.end()) {
      std::deque<int64_t>& q = mine->second;
      while (room() && !q.empty()) {
        const int64_t i = q.front();
        q.pop_front();
        if (!j->units.live(i) || j->units[i].placed != s.voter) continue;  // stale entry
        Unit& u = j->units[i];
        u.placed.clear();
        if (!u.needs_copy()) continue;
        if (!may_compute(*j, u)) {  // another worker of this owner took it meanwhile: placed again
          enqueue(j, i, true);
          continue;
        }
        lease(j, i, s, now, &rows);
      }
      if (q.empty()) j->placed.erase(mine);
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
    auto take = [&](std::deque<int64_t>& q, int limit, bool replicas) {
      for (int looked = 0; room() && !q.empty() && looked < limit; ++looked) {
        const int64_t i = q.front();
        q.pop_front();
        if (!j->units.live(i)) continue;  // folded since it was queued
        Unit& u = j->units[i];
        u.queued = false;
        if (!u.needs_copy()) continue;  // stale entry
        if (!places(*j) || (root && may_compute(*j, u))) {
          if (replicas && !may_compute(*j, u)) {
            skipped.push_back(i);
            continue;
          }
          lease(j, i, s, now, &rows);
          continue;
        }
        if (!candidates) candidates = placement_candidates(*j);
        const std::string owner = place_copy(j, i, now, *candidates);
        if (owner.empty()) {  // no eligible owner connected: it waits (the notice says so)
          ++stalled;
          skipped.push_back(i);
          continue;
        }
        if (owner == s.voter && may_compute(*j, u)) {
          u.placed.clear();
          lease(j, i, s, now, &rows);
          continue;
        }
        j->placed[owner].push_back(i);
        placed_elsewhere = true;
      }
    };
    take(j->replicas, kMaxReplicaScan, true);
    take(j->fresh, kMaxPlacementScan, false);
    for (int64_t i : skipped) {
      j->replicas.push_back(i);
      j->units[i].queued = true;
    }
    j->stalled = stalled;
    if (placed_elsewhere) work_arrived();
    for (const Store::Lease& r : rows) {
      const Unit& u = j->units[r.unit];
      v1::Lease* l = resp->add_leases();
      l->set_unit_id(absl::StrCat(j->id, "/", r.unit));
      l->set_attempt(r.attempt);
      *l->mutable_spec() = j->kind->work_spec(j->shared, u.spec);
      if (l->spec().has_perft()) l->mutable_spec()->mutable_perft()->set_zobrist_seed(r.copy.zobrist_seed);
      l->set_expire_unix_ms(u.copies[size_t(r.copy.copy)].expire_ms);
    }
    // Copies are what lets a worker complete a unit after a restart: stored before they go out.
    if (!rows.empty()) {
      if (!txn) txn = store_->transaction();
      if (absl::Status st = store_->record_leases(j->id, rows); !st.ok()) {
        txn.reset();
        resp->clear_leases();
        return restore_after(st);
      }
    }
  }
  if (txn)
    if (absl::Status st = txn->commit(); !st.ok()) {
      txn.reset();
      resp->clear_leases();
      return restore_after(st);
    }
  if (resp->leases_size() > 0) changed();
  return absl::OkStatus();
}

void Coordinator::refill_jobs(std::unique_lock<std::mutex>& lock) {
  polls_.refill_event = false;
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
  for (Job* j : table_.by_seq)
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
      polls_.refill_event = true;
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

namespace {

// Planned units as the store keeps them, indexed from `first`.
std::vector<StoredUnit> stored_units(int64_t first,
                                     const std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>& units) {
  std::vector<StoredUnit> rows(units.size());
  for (size_t k = 0; k < units.size(); ++k) {
    rows[k].index = first + int64_t(k);
    rows[k].spec = units[k].first.SerializeAsString();
    rows[k].meta = units[k].second.SerializeAsString();
  }
  return rows;
}

}  // namespace

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
      if (auto old = polls_.waiting_session.find(s.id); old != polls_.waiting_session.end()) {
        auto it = polls_.waiters.find(old->second);
        superseded.emplace(std::move(it->second.done), v1::AcquireWorkResponse());
        polls_.waiters.erase(it);
        polls_.waiting_session.erase(old);
      }
      if (barred(s.key)) {
        now_answer = quarantined(s.key, registry_.workers.at(s.key).rec.trust_reason);
      } else if (absl::Status st = lease_units(s, req.max_units(), &*now_answer); !st.ok()) {
        now_answer = st;
      } else if (now_answer->leases_size() == 0 && req.wait_seconds() > 0 && !shutting_down_) {
        const int64_t wait_ms = int64_t(std::min(req.wait_seconds(), kMaxAcquireWaitSeconds)) * 1000;
        polls_.waiters[ticket] =
            Waiter{caller, s.id, req.max_units(), clock_->now_ms() + wait_ms, std::move(done), std::move(authorized)};
        polls_.waiting_session[s.id] = ticket;
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
    auto it = polls_.waiters.find(ticket);
    if (it == polls_.waiters.end()) return;
    done = std::move(it->second.done);
    polls_.waiting_session.erase(it->second.session);
    polls_.waiters.erase(it);
  }
  done(v1::AcquireWorkResponse());
}

size_t Coordinator::waiting_acquires() const {
  std::lock_guard lock(mu_);
  return polls_.waiters.size();
}

void Coordinator::credentials_changed() {
  std::lock_guard lock(mu_);
  if (polls_.waiters.empty()) return;
  polls_.auth_event = true;
  polls_.cv.notify_one();
}

void Coordinator::work_arrived() {
  if (polls_.waiters.empty()) return;
  polls_.work_event = true;
  polls_.cv.notify_one();
}

void Coordinator::serve_waiters(std::vector<Answer>* out) {
  const int64_t now = clock_->now_ms();
  const bool work = polls_.work_event, revoked = polls_.auth_event;
  polls_.work_event = polls_.auth_event = false;
  for (auto it = polls_.waiters.begin(); it != polls_.waiters.end();) {
    Waiter& w = it->second;
    absl::StatusOr<v1::AcquireWorkResponse> answer = v1::AcquireWorkResponse();
    bool answered = shutting_down_ || now >= w.deadline_ms;
    // A credential revoked while it waited gets no lease: looked at before any, and on a reload.
    if (!answered && (work || revoked) && w.authorized && !w.authorized()) {
      answer = absl::UnauthenticatedError("token: revoked while the AcquireWork call waited");
      answered = true;
    } else if (!answered && work) {
      auto sit = registry_.sessions.find(w.session);
      if (sit == registry_.sessions.end()) {
        answer = unknown_worker(w.session);  // replaced by a new Hello
        answered = true;
      } else if (barred(sit->second.key)) {
        answer = quarantined(sit->second.key, registry_.workers.at(sit->second.key).rec.trust_reason);
        answered = true;
      } else if (absl::Status st = lease_units(sit->second, w.max_units, &*answer); !st.ok()) {
        answer = st;
        answered = true;
      } else {
        answered = answer->leases_size() > 0;
      }
    }
    if (!answered) {
      ++it;
      continue;
    }
    out->emplace_back(std::move(w.done), std::move(answer));
    polls_.waiting_session.erase(w.session);
    it = polls_.waiters.erase(it);
  }
}

void Coordinator::waiter_loop() {
  std::unique_lock lock(mu_);
  for (;;) {
    polls_.cv.wait_for(lock, std::chrono::milliseconds(kLongPollTickMs), [&] {
      return polls_.work_event || polls_.refill_event || polls_.auth_event || polls_.stop ||
             (shutting_down_ && !polls_.waiters.empty());
    });
    if (polls_.refill_event) {
      if (shutting_down_)
        polls_.refill_event = false;
      else
        refill_jobs(lock);
    }
    std::vector<Answer> answers;
    serve_waiters(&answers);
    const bool stop = polls_.stop;
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
    for (Job* j : table_.by_seq) {
      if (j->state != v1::JOB_STATE_RUNNING) continue;
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
  for (auto it = registry_.sessions.begin(); it != registry_.sessions.end();) {
    const Session& s = it->second;
    if (!s.lost || s.last_seen_ms + options_.forget_lost_ms > now || polls_.waiting_session.count(s.id)) {
      ++it;
      continue;
    }
    if (auto o = registry_.session_of.find(s.key); o != registry_.session_of.end() && o->second == s.id)
      registry_.session_of.erase(o);
    it = registry_.sessions.erase(it);
    any = true;
  }
  for (auto& [id, s] : registry_.sessions) {
    if (s.lost || s.last_seen_ms + options_.lease_ms > now) continue;
    s.lost = true;
    any = true;
    log_event(LogLevel::kWarning, "worker_lost",
              absl::StrCat("worker ", s.key, " lost: silent for ", (now - s.last_seen_ms) / 1000, " s"),
              {{"worker", s.key}, {"silent_s", (now - s.last_seen_ms) / 1000}});
    WorkerState& w = registry_.workers.at(s.key);
    w.rec.last_seen_ms = s.last_seen_ms;
    save_worker(w);
  }
  if (now >= registry_.next_forget_ms) {
    registry_.next_forget_ms = now + kForgetWorkersIntervalMs;
    any |= forget_workers(now);
  }
  if (any) changed();
}

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
    if (barred(worker)) return quarantined(worker, registry_.workers.at(worker).rec.trust_reason);
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
        p.answer = record_failure(caller, *p.req, j, p.index, *c);
        continue;
      }
      p.kind = j->kind;
      p.spec = j->kind->work_spec(j->shared, j->units[p.index].spec);
      p.meta = j->units[p.index].meta;
      if (p.spec.has_perft()) p.spec.mutable_perft()->set_zobrist_seed(c->zobrist_seed);
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
  if (any) {
    const int64_t now = clock_->now_ms();
    if (absl::Status s = writable(now); !s.ok()) return s;
    std::vector<Pending*> todo;
    for (Pending& p : ps)
      if (!p.answer) todo.push_back(&p);
    // Every result of the call in one transaction (one commit, not one per unit).
    if (absl::Status failed = commit_results(worker, todo); !failed.ok()) {
      // Nothing of it was kept, and memory goes back to what the store holds (the one reload
      // of this failure; the store is degraded from here). Then judged: a store that refuses a
      // small write refuses everything (the worker sends the batch again: UNAVAILABLE); one
      // that takes it refused something in this batch, which is found by committing each
      // completion on its own, in order: one that fails alone, twice, with the store taking
      // writes around it, is refused for itself (FAILED_PRECONDITION naming the store's reason);
      // those before it are answered, those after it UNAVAILABLE (sent again, they proceed).
      for (Pending* p : todo) p->answer.reset();
      restore_after(failed).IgnoreError();
      probe_store(now);
      if (health_.degraded) return refusal(now);
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
          restore_after(why).IgnoreError();
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

absl::Status Coordinator::commit_results(const std::string& worker, const std::vector<Pending*>& todo) {
  std::unique_ptr<Store::Transaction> txn = store_->transaction();
  if (!txn->status().ok()) return txn->status();
  for (Pending* p : todo) {
    v1::CompleteUnitResponse resp;
    absl::Status s = apply_result(*p, &resp);
    if (s.ok())
      p->answer = resp;
    else
      p->answer = s;
  }
  // The worker's record (its counts and trust) in the same commit as the results it moved.
  save_worker(registry_.workers.at(worker));
  return txn->commit();
}

absl::Status Coordinator::apply_result(Pending& p, v1::CompleteUnitResponse* resp) {
  const std::string& worker = p.worker;
  // A copy of a credential quarantined meanwhile (by an earlier completion of this very call,
  // or another call) counts for nothing.
  if (barred(worker)) return quarantined(worker, registry_.workers.at(worker).rec.trust_reason);
  Job* j = find_job(p.job_id);
  const int64_t index = p.index;
  if (!j) return absl::UnavailableError(absl::StrCat("unit_id: job ", p.job_id, " is being read back; retry"));
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
  WorkerState& w = registry_.workers.at(worker);
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
  Unit& u = j->units[i];
  const bool finishes = j->done + 1 == j->total() && j->kind->fully_planned(j->plan);
  const int64_t now = clock_->now_ms();
  {
    std::unique_ptr<Store::Transaction> txn = store_->transaction();
    if (absl::Status s =
            store_->settle_unit(j->id, i, form->stored, votes,
                                finishes ? std::optional<int32_t>(v1::JOB_STATE_SUCCEEDED) : std::nullopt, now);
        !s.ok())
      return s;
    if (absl::Status s = j->kind->write_settled(store_, j->id, *form); !s.ok()) return s;
    if (absl::Status s = txn->commit(); !s.ok()) return s;
  }
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
    polls_.refill_event = true;
    polls_.cv.notify_one();
  }
  return absl::OkStatus();
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
  for (Job* j : table_.by_seq) {
    if (j->groups.empty() || !is_final(j->state) || j->damaged || j->finished_ms + options_.lease_ms > now) continue;
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
  j->fresh.clear();
  j->replicas.clear();
  // Leases still out (spot checks) no longer count against their credentials' caps: the sweep
  // does not walk finished jobs. Their results are still compared when they come.
  drop_leases(j);
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
  auto found = registry_.workers.find(worker);
  if (found == registry_.workers.end()) return;
  WorkerState& w = found->second;
  ++w.rec.agreeing;
  if (w.rec.trust == v1::TRUST_STATE_NEW) {
    if (earns_trust(w.rec.agreeing, options_.trust_after)) {
      w.rec.trust = v1::TRUST_STATE_TRUSTED;
      registry_.trusted_owners.insert(voter_of(worker));
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
  registry_.quarantined_voters.insert(voter);
  registry_.trusted_owners.erase(voter);
  // Copies placed with it are placed again.
  for (Job* j : table_.by_seq) {
    auto it = j->placed.find(voter);
    if (it == j->placed.end()) continue;
    std::deque<int64_t> q = std::move(it->second);
    j->placed.erase(it);
    for (int64_t i : q)
      if (j->units.live(i) && j->units[i].placed == voter) {
        j->units[i].placed.clear();
        enqueue(j, i, true);
      }
  }
  std::vector<std::string> keys;
  for (const auto& [key, w] : registry_.workers)
    if (voter_of(key) == voter) keys.push_back(key);
  for (const std::string& key : keys) quarantine(key, why);
}

void Coordinator::quarantine(const std::string& worker, const std::string& why) {
  WorkerState& w = registry_.workers.at(worker);
  if (w.rec.trust == v1::TRUST_STATE_QUARANTINED) return;
  registry_.quarantined_voters.insert(worker);  // (verify hosts quarantines one worker alone)
  w.rec.trust = v1::TRUST_STATE_QUARANTINED;
  w.rec.trust_reason = why;
  ++counters_.quarantines;
  save_worker(w);
  log_event(LogLevel::kWarning, "worker_quarantined", absl::StrCat("worker ", worker, " QUARANTINED: ", why),
            {{"worker", worker}, {"reason", why}});
  // Its leases go back, its waiting results lose their vote, and a running job's result that
  // stands on its word alone is taken back and computed again.
  int64_t revoked = 0;
  for (Job* j : table_.by_seq) {
    if (j->state != v1::JOB_STATE_RUNNING) continue;
    // Folded groups with a unit settled on its word alone: planned again, computed again.
    std::vector<int64_t> reopened;
    for (const auto& [g, f] : j->folded)
      for (const std::string& v : f.record.sole_voters())
        if (v == worker) {
          reopened.push_back(g);
          break;
        }
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
