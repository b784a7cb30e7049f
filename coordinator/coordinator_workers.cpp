// What the coordinator's worker-facing files share: whether a unit wants a copy, queueing it
// (enqueue: the queues themselves are the job's UnitQueues), voters and ranks, placement (who
// computes a unit's next copy), and the leases of copies (planned, then applied). The job model
// is in job.h, the parts that own state in job_table.h, unit_queues.h, worker_registry.h and
// long_polls.h. The calls for workers are split by concept:
// coordinator_registry.cpp (sessions, the worker registry), coordinator_leases.cpp (leases, long
// polls, renewals, the sweep), coordinator_results.cpp (completions, verification, folding,
// quarantine, failure reports).
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
// Units and their copies

bool Coordinator::needs_copy(const Job& j, const Unit& u) const {
  if (u.result) return false;
  if (u.wanted == 0) return true;
  std::set<std::string> voters;
  for (const Copy& c : u.copies)
    if (c.result && !c.discarded) voters.insert(voter_in(j, c.worker));
  return u.leases() + int(voters.size()) < u.wanted;
}

// ---------------------------------------------------------------------------------------------
// Queues

void Coordinator::enqueue(Job* j, int64_t i, bool front) {
  if (!j->units.live(i) || j->queues.holds(j->units, i)) return;
  const Unit& u = j->units[i];
  if (!needs_copy(*j, u) || j->state != v1::JOB_STATE_RUNNING) return;
  j->queues.push(j->units, i, u.copies.empty() ? coord::Lane::kFresh : coord::Lane::kReplicas, front);
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

std::string Coordinator::voter_of(const std::string& key) const { return registry_.voter_of(key); }

std::string Coordinator::voter_in(const Job& j, const std::string& key) const {
  return j.verify == v1::VERIFY_MODE_HOSTS ? key : voter_of(key);
}

int Coordinator::rank_of(const std::string& owner) const {
  if (options_.trust_roots.count(owner)) return kRankRoot;
  // Without authentication every worker is the operator's own (a key with no identity).
  if (const WorkerState* w = registry_.find(owner); w && w->rec.identity.empty()) return kRankRoot;
  const bool trusted = registry_.trusted(owner) || (planned_trusted_ && planned_trusted_->count(owner));
  return trusted ? kRankTrusted : kRankUntrusted;
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
    if (registry_.quarantined(voter_of(c.worker)) || registry_.quarantined(v)) votes.quarantined.insert(v);
    votes.rank[v] = rank_in(j, v);
  }
  if (u.result) votes.settled = u.settled;
  votes.wanted = u.wanted;
  votes.needs_root = audited(j.plan.audit_salt(), i, j.plan.audit_rate());
  return votes;
}

int64_t Coordinator::owner_cap(const std::string& owner) const {
  int64_t threads = 0;
  for (const auto& [id, s] : registry_.sessions())
    if (!s.lost && s.voter == owner) threads += s.threads;
  return lease_cap(threads, kPrefetchPerThread, options_.max_leases_per_credential);
}

std::vector<std::pair<std::string, int>> Coordinator::placement_candidates(const Job& j) const {
  std::map<std::string, int> owners;  // sorted: the draw depends on the seed, not on map order
  for (const auto& [id, s] : registry_.sessions())
    if (!s.lost && !registry_.quarantined(s.voter) && s.capabilities.count(j.kind->capability()) &&
        runs(s, *j.kind, j.spec))
      owners.emplace(s.voter, rank_of(s.voter));
  return {owners.begin(), owners.end()};
}

std::string Coordinator::place_copy(const Job& j, int64_t i,
                                    const std::vector<std::pair<std::string, int>>& candidates) {
  const Unit& u = j.units[i];
  const int want_rank = next_rank(votes_of(j, i));
  // Owners that hold a copy (leased, sent, given up or held too long) are involved: never twice.
  std::set<std::string> involved;
  for (const Copy& c : u.copies)
    if (c.result || c.discarded || c.leased() || c.overheld) involved.insert(voter_of(c.worker));
  std::vector<std::string> eligible;
  for (const auto& [owner, rank] : candidates)
    if (rank >= want_rank && !involved.count(owner)) eligible.push_back(owner);
  const std::optional<std::string> owner = place(eligible, rng_);
  return owner ? *owner : "";
}

void Coordinator::replace_stale(int64_t now) {
  std::set<std::string> live;
  for (const auto& [id, s] : registry_.sessions())
    if (!s.lost) live.insert(s.voter);
  const auto gone = [&](const std::string& owner) { return !live.count(owner) || registry_.quarantined(owner); };
  for (Job* j : table_.running())
    for (int64_t i : j->queues.unplace_expired(j->units, now, options_.placement_ms, gone)) enqueue(j, i, true);
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
  for (const auto& [id, s] : registry_.sessions()) {
    if (s.lost || !offers_all(s, kind, spec)) continue;
    if (runs(s, kind, spec, why.empty() ? &why : nullptr)) return absl::OkStatus();
  }
  if (why.empty()) return absl::OkStatus();  // nobody offers them now
  return absl::FailedPreconditionError(
      absl::StrCat("options: no connected worker offering ", engines_named(needs), " allows them: ", why));
}

void Coordinator::take_lease(Copy& c, const Session& s) {
  if (c.session.empty()) registry_.take_lease(s.voter);
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
  registry_.drop_lease(voter);
  c.session.clear();
  c.expire_ms = 0;
}

void Coordinator::drop_leases(Job* j) {
  for (int64_t i : j->active)
    if (j->units.live(i))
      for (Copy& c : j->units[i].copies) drop_lease(c);
  j->active.clear();
}

void Coordinator::plan_lease(const Job& j, int64_t i, const Session& s, std::vector<Store::Lease>* rows) {
  const Unit& u = j.units[i];
  const int32_t wanted = u.wanted != 0 ? u.wanted : wanted_for(j, registry_.at(s.key));
  // Its worker's earlier copy, else a new one at the end. Each copy has its own seed
  // (JobKind::work_spec gives it to the kind: perft counts with its own Zobrist key set), so that
  // a hash collision cannot make two copies agree on a wrong count.
  size_t copy = u.copies.size();
  for (size_t k = 0; k < u.copies.size(); ++k)
    if (u.copies[k].worker == s.key) copy = k;
  const uint64_t seed = copy < u.copies.size() ? u.copies[copy].zobrist_seed : uint64_t(copy);
  rows->push_back({i, u.attempt + 1, wanted, StoredCopy{i, int32_t(copy), s.key, u.attempt + 1, seed, {}, false}});
}

void Coordinator::apply_lease(Job* j, const Store::Lease& r, Session& s, int64_t now) {
  Unit& u = j->units[r.unit];
  u.wanted = r.wanted;
  if (size_t(r.copy.copy) == u.copies.size()) {
    Copy fresh;
    fresh.worker = s.key;
    fresh.zobrist_seed = r.copy.zobrist_seed;
    u.copies.push_back(std::move(fresh));
  }
  Copy& c = u.copies[size_t(r.copy.copy)];
  take_lease(c, s);
  c.expire_ms = now + options_.lease_ms;
  c.held_since_ms = now;
  note_deadline(j, r.unit, c);
  c.attempt = u.attempt = r.attempt;
  j->active.insert(r.unit);
  enqueue(j, r.unit);  // it may want a further copy from another worker
}

void Coordinator::end_lease(Job* j, int64_t i, Copy& c, bool front) {
  if (front) ++counters_.requeues;  // given back without a result: expired, released, superseded
  drop_lease(c);
  Unit& u = j->units[i];
  if (u.leases() == 0) j->active.erase(i);
  enqueue(j, i, front);
}

}  // namespace c960::cluster
