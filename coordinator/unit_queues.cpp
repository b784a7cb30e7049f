#include "coordinator/unit_queues.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "coordinator/job.h"

namespace c960::cluster::coord {

bool UnitQueues::holds(const Units& units, int64_t i) const {
  return units.live(i) && units[i].queue.in_ != QueueMark::In::kNone;
}

bool UnitQueues::push(Units& units, int64_t i, Lane l, bool front) {
  if (!units.live(i) || holds(units, i)) return false;
  std::deque<int64_t>& q = lane(l);
  if (front)
    q.push_front(i);
  else
    q.push_back(i);
  units[i].queue.in_ = l == Lane::kFresh ? QueueMark::In::kFresh : QueueMark::In::kReplicas;
  return true;
}

std::optional<int64_t> UnitQueues::pop(Units& units, Lane l) {
  std::deque<int64_t>& q = lane(l);
  if (q.empty()) return std::nullopt;
  const int64_t i = q.front();
  q.pop_front();
  if (units.live(i)) unmark(units, i);
  return i;
}

bool UnitQueues::place(Units& units, int64_t i, const std::string& owner, int64_t now) {
  if (!units.live(i) || holds(units, i)) return false;
  placed_[owner].push_back(i);
  QueueMark& m = units[i].queue;
  m.in_ = QueueMark::In::kPlaced;
  m.owner_ = owner;
  m.placed_ms_ = now;
  return true;
}

std::optional<int64_t> UnitQueues::pop_placed(Units& units, const std::string& owner) {
  auto it = placed_.find(owner);
  if (it == placed_.end()) return std::nullopt;
  std::deque<int64_t>& q = it->second;
  std::optional<int64_t> found;
  while (!found && !q.empty()) {
    const int64_t i = q.front();
    q.pop_front();
    if (!placed_here(units, i, owner)) continue;  // folded since it was placed
    unmark(units, i);
    found = i;
  }
  if (q.empty()) placed_.erase(it);
  return found;
}

std::vector<int64_t> UnitQueues::unplace_all(Units& units, const std::string& owner) {
  std::vector<int64_t> out;
  auto it = placed_.find(owner);
  if (it == placed_.end()) return out;
  for (int64_t i : it->second)
    if (placed_here(units, i, owner)) {
      unmark(units, i);
      out.push_back(i);
    }
  placed_.erase(it);
  return out;
}

std::vector<int64_t> UnitQueues::unplace_expired(Units& units, int64_t now, int64_t max_age_ms,
                                                 const std::function<bool(const std::string& owner)>& gone) {
  std::vector<int64_t> out;
  for (auto it = placed_.begin(); it != placed_.end();) {
    std::deque<int64_t>& q = it->second;
    const bool all = gone(it->first);
    while (!q.empty()) {
      const int64_t i = q.front();
      const bool here = placed_here(units, i, it->first);
      if (here && !all && now - units[i].queue.placed_ms_ <= max_age_ms) break;
      q.pop_front();
      if (!here) continue;  // folded since it was placed
      unmark(units, i);
      out.push_back(i);
    }
    it = q.empty() ? placed_.erase(it) : std::next(it);
  }
  return out;
}

size_t UnitQueues::placed_size() const {
  size_t n = 0;
  for (const auto& [owner, q] : placed_) n += q.size();
  return n;
}

void UnitQueues::clear(Units& units) {
  for (const std::deque<int64_t>* q : {&fresh_, &replicas_})
    for (int64_t i : *q)
      if (units.live(i)) unmark(units, i);
  for (const auto& [owner, q] : placed_)
    for (int64_t i : q)
      if (units.live(i)) unmark(units, i);
  fresh_.clear();
  replicas_.clear();
  placed_.clear();
}

bool UnitQueues::placed_here(const Units& units, int64_t i, const std::string& owner) {
  if (!units.live(i)) return false;
  const QueueMark& m = units[i].queue;
  return m.in_ == QueueMark::In::kPlaced && m.owner_ == owner;
}

void UnitQueues::unmark(Units& units, int64_t i) { units[i].queue = QueueMark(); }

std::string UnitQueues::check(const Units& units) const {
  std::set<int64_t> seen;  // live units met in a queue
  const auto look = [&](const std::deque<int64_t>& q, QueueMark::In in, const std::string& owner,
                        const std::string& name) -> std::string {
    for (int64_t i : q) {
      if (!units.live(i)) continue;  // folded since: a stale entry
      const QueueMark& m = units[i].queue;
      if (m.in_ != in || (in == QueueMark::In::kPlaced && m.owner_ != owner))
        return absl::StrCat(name, " holds unit ", i, ", whose mark names another place");
      if (!seen.insert(i).second) return absl::StrCat(name, " holds unit ", i, " twice");
    }
    return "";
  };
  if (std::string e = look(fresh_, QueueMark::In::kFresh, "", "the fresh lane"); !e.empty()) return e;
  if (std::string e = look(replicas_, QueueMark::In::kReplicas, "", "the replicas lane"); !e.empty()) return e;
  for (const auto& [owner, q] : placed_) {
    if (q.empty()) return absl::StrCat("owner ", owner, "'s queue is empty");
    if (std::string e = look(q, QueueMark::In::kPlaced, owner, absl::StrCat("owner ", owner, "'s queue")); !e.empty())
      return e;
  }
  for (int64_t i = units.first(); i < int64_t(units.size()); ++i)
    if (units.live(i) && units[i].queue.in_ != QueueMark::In::kNone && !seen.count(i))
      return absl::StrCat("unit ", i, " is marked as queued or placed but is in no queue");
  return "";
}

}  // namespace c960::cluster::coord
