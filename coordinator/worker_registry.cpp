#include "coordinator/worker_registry.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "c960/v1/cluster.pb.h"

namespace c960::cluster::coord {

WorkerState* WorkerRegistry::find(const std::string& key) {
  auto it = workers_.find(key);
  return it == workers_.end() ? nullptr : &it->second;
}

const WorkerState* WorkerRegistry::find(const std::string& key) const {
  auto it = workers_.find(key);
  return it == workers_.end() ? nullptr : &it->second;
}

WorkerState& WorkerRegistry::install(StoredWorker rec) {
  auto [it, added] = workers_.try_emplace(rec.key);
  if (!added) count(it->second.rec, -1);  // its owner may have changed
  count(rec, 1);
  it->second.rec = std::move(rec);
  return it->second;
}

void WorkerRegistry::erase_worker(const std::string& key) {
  auto it = workers_.find(key);
  if (it == workers_.end()) return;
  count(it->second.rec, -1);
  workers_.erase(it);
}

void WorkerRegistry::load(std::vector<StoredWorker> records, const std::string& fault_prefix) {
  std::map<std::string, WorkerState> before;
  before.swap(workers_);
  quarantined_voters_.clear();
  trusted_owners_.clear();
  leases_held_.clear();
  per_identity_.clear();
  per_owner_.clear();
  for (StoredWorker& w : records) {
    WorkerState& ws = workers_[w.key];
    ws.rec = std::move(w);
    if (auto it = before.find(ws.rec.key); it != before.end()) ws.samples = std::move(it->second.samples);
  }
  for (const auto& [key, w] : workers_) {
    count(w.rec, 1);
    // A fault found under verify hosts bars the worker alone; anything else its whole owner.
    if (w.rec.trust == v1::TRUST_STATE_QUARANTINED)
      quarantined_voters_.insert(absl::StartsWith(w.rec.trust_reason, fault_prefix) ? key : voter_of(key));
    if (w.rec.trust == v1::TRUST_STATE_TRUSTED) trusted_owners_.insert(voter_of(key));
  }
  // Sessions of workers the store does not know (their Hello was not kept) end.
  for (auto it = sessions_.begin(); it != sessions_.end();) {
    if (workers_.count(it->second.key)) {
      ++it;
      continue;
    }
    session_of_.erase(it->second.key);
    it = sessions_.erase(it);
  }
}

std::string WorkerRegistry::voter_of(const std::string& key) const {
  auto it = workers_.find(key);
  if (it == workers_.end() || it->second.rec.identity.empty()) return key;
  return it->second.rec.owner.empty() ? it->second.rec.identity : it->second.rec.owner;
}

int WorkerRegistry::per_identity(const std::string& identity) const {
  auto it = per_identity_.find(identity);
  return it == per_identity_.end() ? 0 : it->second;
}

int WorkerRegistry::per_owner(const std::string& owner) const {
  auto it = per_owner_.find(owner);
  return it == per_owner_.end() ? 0 : it->second;
}

Session* WorkerRegistry::session(const std::string& id) {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

const Session* WorkerRegistry::session(const std::string& id) const {
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : &it->second;
}

const std::string* WorkerRegistry::session_of(const std::string& key) const {
  auto it = session_of_.find(key);
  return it == session_of_.end() ? nullptr : &it->second;
}

Session& WorkerRegistry::add_session(Session s) {
  session_of_[s.key] = s.id;
  const std::string id = s.id;
  return sessions_[id] = std::move(s);
}

void WorkerRegistry::forget_session(const std::string& id) {
  auto it = sessions_.find(id);
  if (it == sessions_.end()) return;
  if (auto o = session_of_.find(it->second.key); o != session_of_.end() && o->second == id) session_of_.erase(o);
  sessions_.erase(it);
}

void WorkerRegistry::quarantine_voter(const std::string& voter) {
  quarantined_voters_.insert(voter);
  trusted_owners_.erase(voter);
}

int64_t WorkerRegistry::leases_held(const std::string& voter) const {
  auto it = leases_held_.find(voter);
  return it == leases_held_.end() ? 0 : it->second;
}

void WorkerRegistry::drop_lease(const std::string& voter) {
  if (auto it = leases_held_.find(voter); it != leases_held_.end() && --it->second <= 0) leases_held_.erase(it);
}

int32_t WorkerRegistry::enrolled(const std::string& join) const {
  auto it = enrolled_.find(join);
  return it == enrolled_.end() ? 0 : it->second;
}

bool WorkerRegistry::forget_due(int64_t now, int64_t interval_ms) {
  if (now < next_forget_ms_) return false;
  next_forget_ms_ = now + interval_ms;
  return true;
}

void WorkerRegistry::restore(Kept kept) {
  workers_ = std::move(kept.workers);
  quarantined_voters_ = std::move(kept.quarantined_voters);
  trusted_owners_ = std::move(kept.trusted_owners);
  leases_held_ = std::move(kept.leases_held);
}

void WorkerRegistry::count(const StoredWorker& rec, int delta) {
  if (rec.identity.empty()) return;  // nobody authenticated: no caps
  for (auto [m, k] : {std::pair{&per_identity_, &rec.identity},
                      std::pair{&per_owner_, rec.owner.empty() ? &rec.identity : &rec.owner}})
    if (((*m)[*k] += delta) <= 0) m->erase(*k);
}

std::string WorkerRegistry::check() const {
  std::map<std::string, int> identity, owner;
  for (const auto& [key, w] : workers_) {
    if (w.rec.key != key) return absl::StrCat("record ", key, " holds key ", w.rec.key);
    if (w.rec.identity.empty()) continue;
    ++identity[w.rec.identity];
    ++owner[w.rec.owner.empty() ? w.rec.identity : w.rec.owner];
  }
  if (identity != per_identity_) return "the counts per credential differ from the records";
  if (owner != per_owner_) return "the counts per owner differ from the records";
  for (const auto& [id, s] : sessions_) {
    if (s.id != id) return absl::StrCat("session ", id, " holds id ", s.id);
    if (!workers_.count(s.key)) return absl::StrCat("session ", id, " names worker ", s.key, ", which has no record");
  }
  for (const auto& [key, id] : session_of_) {
    auto it = sessions_.find(id);
    if (it == sessions_.end() || it->second.key != key)
      return absl::StrCat("worker ", key, "'s newest session ", id, " is not its session");
  }
  for (const auto& [voter, n] : leases_held_)
    if (n <= 0) return absl::StrCat("credential ", voter, " holds ", n, " leases");
  return "";
}

}  // namespace c960::cluster::coord
