// The lease queues of one job (Job::queues): the units that want a copy, in two lanes (fresh:
// never leased; replicas: wanting one more), and the units whose next copy the coordinator
// placed with an owner, a queue per owner (only that owner's workers lease them). Soft state:
// never stored (a load queues again). Guarded by the coordinator's lock; no store access.
//
// A unit's place is its mark (Unit::queue, a QueueMark that only this class reads and writes):
// in a lane, placed with an owner since a time, or neither. The class keeps entries and marks
// in step; the only entries it leaves behind are those of units folded since (Units::fold drops
// a unit's state, its mark with it): pop() returns them, so that a caller's scan counts them,
// and the caller skips a unit that is not live; the owners' operations skip them. Whether a
// unit still wants a copy is the coordinator's to say (Coordinator::needs_copy): a unit that
// settled while queued stays queued until popped.
//
// Invariants (check()):
//  - every live unit marked in a lane is in that lane exactly once, and in no other queue;
//  - every live unit placed with an owner is in that owner's queue exactly once, and in no
//    other queue;
//  - every entry of a live unit is in the queue its mark names (the queues hold no stale entry
//    of a live unit), and no owner's queue is empty.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace c960::cluster::coord {

class Units;

enum class Lane : uint8_t { kFresh, kReplicas };

// A unit's place in its job's queues. Only UnitQueues reads and writes it.
class QueueMark {
 private:
  friend class UnitQueues;
  enum class In : uint8_t { kNone, kFresh, kReplicas, kPlaced } in_ = In::kNone;
  std::string owner_;      // kPlaced: the owner whose queue holds it
  int64_t placed_ms_ = 0;  // kPlaced: since when
};

class UnitQueues {
 public:
  // Whether live unit i waits in a lane or is placed (false for a unit that is not live).
  bool holds(const Units& units, int64_t i) const;

  // Queues live unit i in `lane`, at its back (or front). False, and nothing changes, when the
  // unit is not live or is held already.
  bool push(Units& units, int64_t i, Lane lane, bool front = false);
  // Takes the front entry of `lane` out and returns its unit (a live unit is no longer held); a
  // folded unit's entry is returned too, for the caller to skip. None when the lane is empty.
  std::optional<int64_t> pop(Units& units, Lane lane);

  // Places live unit i with `owner` at `now`: at the back of the owner's queue. False, and
  // nothing changes, when the unit is not live or is held already.
  bool place(Units& units, int64_t i, const std::string& owner, int64_t now);
  // Takes the next unit placed with `owner` out with its placement (folded units' entries on
  // the way are dropped). None when the owner has none.
  std::optional<int64_t> pop_placed(Units& units, const std::string& owner);
  // Takes every unit placed with `owner` out, in placement order.
  std::vector<int64_t> unplace_all(Units& units, const std::string& owner);
  // Takes out, owner by owner (in the owners' order), the placements at the front of each
  // owner's queue that are older than `max_age_ms` at `now`, or all of the owner's when
  // `gone(owner)`; returns their units in that order. A queue is looked at only up to its first
  // placement that stays (placement order: the rest are newer).
  std::vector<int64_t> unplace_expired(Units& units, int64_t now, int64_t max_age_ms,
                                       const std::function<bool(const std::string& owner)>& gone);

  // Entries in a lane (folded units' included).
  size_t size(Lane lane) const { return (lane == Lane::kFresh ? fresh_ : replicas_).size(); }
  // Whether `owner` has a queue of placements (folded units' entries included).
  bool has_placed(const std::string& owner) const { return placed_.count(owner) > 0; }
  // Entries placed with any owner (folded units' included).
  size_t placed_size() const;
  // Whether a worker of `owner` could find anything here: both lanes and its queue are empty.
  bool empty_for(const std::string& owner) const { return fresh_.empty() && replicas_.empty() && !has_placed(owner); }
  bool empty() const { return fresh_.empty() && replicas_.empty() && placed_.empty(); }
  // Empties every queue; no unit is held after it (a job that leaves RUNNING queues nothing).
  void clear(Units& units);

  // Empty when the invariants hold over `units`, else what is wrong (tests, check_parts).
  std::string check(const Units& units) const;

 private:
  std::deque<int64_t>& lane(Lane l) { return l == Lane::kFresh ? fresh_ : replicas_; }
  // Whether an entry of unit i in `owner`'s queue is the unit's placement (else a folded unit's).
  static bool placed_here(const Units& units, int64_t i, const std::string& owner);
  static void unmark(Units& units, int64_t i);

  std::deque<int64_t> fresh_, replicas_;
  std::map<std::string, std::deque<int64_t>> placed_;  // by owner, in placement order
};

}  // namespace c960::cluster::coord
