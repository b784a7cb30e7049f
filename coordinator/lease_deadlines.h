// When leases expire: a min-heap of deadlines, so that the sweep finds the leases due in
// O(due x log n) instead of walking every lease out.
//
// Invariants:
//  - every lease out has an entry with its current expiry (pushed when it was given or renewed);
//  - entries are never updated in place: a lease renewed, completed or given back leaves its old
//    entry behind, stale; the owner tells stale from live when an entry comes due (is_live), and
//    stale entries are dropped then, or all at once when the heap passes twice what was live at
//    the last compaction (compact: amortized O(1) a push, and no count of live leases needed);
//  - an entry points into its owner's state (`job`, a unit index, a copy index): the owner
//    clears the heap whenever that state is replaced (a load from the store).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace c960::cluster {

template <typename JobT>
class LeaseDeadlines {
 public:
  struct Entry {
    int64_t expire_ms = 0;
    JobT* job = nullptr;
    int64_t unit = 0;
    int32_t copy = 0;
  };
  using IsLive = std::function<bool(const Entry&)>;

  // A lease given or renewed. Past twice the entries left live by the last compaction (plus a
  // slack), stale entries are dropped.
  void push(const Entry& e, const IsLive& is_live) {
    heap_.push_back(e);
    std::push_heap(heap_.begin(), heap_.end(), later);
    if (heap_.size() > 2 * live_after_compact_ + kSlack) compact(is_live);
  }
  // Pops every entry due at `now` (expiry <= now), earliest first; live or stale, the caller
  // decides.
  template <typename Fn>
  void pop_due(int64_t now, Fn&& fn) {
    while (!heap_.empty() && heap_.front().expire_ms <= now) {
      std::pop_heap(heap_.begin(), heap_.end(), later);
      const Entry e = heap_.back();
      heap_.pop_back();
      fn(e);
    }
  }
  // The earliest expiry held (live or stale); INT64_MAX when none.
  int64_t next_ms() const { return heap_.empty() ? INT64_MAX : heap_.front().expire_ms; }
  size_t size() const { return heap_.size(); }
  void clear() {
    heap_.clear();
    live_after_compact_ = 0;
  }
  void compact(const IsLive& is_live) {
    heap_.erase(std::remove_if(heap_.begin(), heap_.end(), [&](const Entry& e) { return !is_live(e); }), heap_.end());
    std::make_heap(heap_.begin(), heap_.end(), later);
    live_after_compact_ = heap_.size();
  }

 private:
  static constexpr size_t kSlack = 4096;  // no compaction of small heaps
  static bool later(const Entry& a, const Entry& b) { return a.expire_ms > b.expire_ms; }
  std::vector<Entry> heap_;
  size_t live_after_compact_ = 0;
};

}  // namespace c960::cluster
