// A job's lease queues (coordinator/unit_queues.h): the fresh and replicas lanes, placements
// per owner, entries of units folded since, and the marks on the units kept in step with the
// queues; the invariants are checked after every operation, and a random sequence of
// operations is compared with a simple model.
#include "coordinator/unit_queues.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <map>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "coordinator/job.h"

namespace c960::cluster::coord {
namespace {

using Ids = std::vector<int64_t>;

class UnitQueuesTest : public ::testing::Test {
 protected:
  void SetUp() override { units.resize(16); }
  // The invariants hold after every step (a test asserts this after each operation).
  void ok() { ASSERT_EQ(q.check(units), ""); }
  Ids pop_all(Lane lane) {
    Ids out;
    while (std::optional<int64_t> i = q.pop(units, lane)) out.push_back(*i);
    return out;
  }

  Units units;
  UnitQueues q;
};

TEST_F(UnitQueuesTest, LanesKeepTheirOrderAndHoldAUnitOnce) {
  EXPECT_TRUE(q.empty());
  EXPECT_TRUE(q.push(units, 1, Lane::kFresh));
  EXPECT_TRUE(q.push(units, 2, Lane::kFresh));
  EXPECT_TRUE(q.push(units, 3, Lane::kFresh, true));  // a copy given back goes first
  EXPECT_TRUE(q.push(units, 4, Lane::kReplicas));
  ok();
  EXPECT_TRUE(q.holds(units, 2));
  EXPECT_FALSE(q.holds(units, 5));
  // A unit is in one queue at most: pushed again, to either lane, nothing changes.
  EXPECT_FALSE(q.push(units, 2, Lane::kFresh));
  EXPECT_FALSE(q.push(units, 2, Lane::kReplicas, true));
  EXPECT_FALSE(q.place(units, 4, "alice", 0));
  ok();
  EXPECT_EQ(q.size(Lane::kFresh), 3u);
  EXPECT_EQ(q.size(Lane::kReplicas), 1u);
  EXPECT_EQ(pop_all(Lane::kFresh), (Ids{3, 1, 2}));
  ok();
  EXPECT_FALSE(q.holds(units, 1));  // popped: no longer held, so it may be queued again
  EXPECT_TRUE(q.push(units, 1, Lane::kReplicas));
  ok();
  EXPECT_EQ(pop_all(Lane::kReplicas), (Ids{4, 1}));
  EXPECT_EQ(q.pop(units, Lane::kReplicas), std::nullopt);
  EXPECT_TRUE(q.empty());
  ok();
}

TEST_F(UnitQueuesTest, UnitsNotLiveAreNeitherQueuedNorPlaced) {
  EXPECT_FALSE(q.push(units, 16, Lane::kFresh));  // not given out yet
  EXPECT_FALSE(q.push(units, -1, Lane::kFresh));
  units.fold(0, 2);
  EXPECT_FALSE(q.push(units, 0, Lane::kFresh));
  EXPECT_FALSE(q.place(units, 1, "alice", 0));
  EXPECT_FALSE(q.holds(units, 0));
  EXPECT_TRUE(q.empty());
  ok();
}

TEST_F(UnitQueuesTest, AFoldedUnitsEntryIsPoppedForTheCallerToSkipAndPassedOverInOwnersQueues) {
  for (int64_t i : {4, 5, 6}) ASSERT_TRUE(q.push(units, i, Lane::kFresh));
  for (int64_t i : {7, 8}) ASSERT_TRUE(q.place(units, i, "alice", 10));
  units.fold(4, 5);  // units 4 (queued) ...
  units.fold(7, 8);  // ... and 7 (placed) lose their state: their entries are stale
  ok();
  EXPECT_FALSE(q.holds(units, 4));
  EXPECT_EQ(q.size(Lane::kFresh), 3u);  // the stale entry stays until popped
  // pop() returns it (a scan counts the entries it looked at); the caller sees it is not live.
  EXPECT_EQ(q.pop(units, Lane::kFresh), 4);
  EXPECT_FALSE(units.live(4));
  ok();
  // An owner's queue drops it on the way.
  EXPECT_EQ(q.pop_placed(units, "alice"), 8);
  EXPECT_FALSE(q.has_placed("alice"));  // emptied: no queue left for the owner
  ok();
  // A queue holding stale entries only yields nothing and goes.
  ASSERT_TRUE(q.place(units, 9, "bob", 10));
  units.fold(9, 10);
  EXPECT_TRUE(q.has_placed("bob"));
  EXPECT_EQ(q.pop_placed(units, "bob"), std::nullopt);
  EXPECT_FALSE(q.has_placed("bob"));
  ok();
}

TEST_F(UnitQueuesTest, PlacementsAreTakenOnlyByTheirOwnerInPlacementOrder) {
  ASSERT_TRUE(q.place(units, 3, "alice", 100));
  ASSERT_TRUE(q.place(units, 1, "bob", 100));
  ASSERT_TRUE(q.place(units, 2, "alice", 101));
  ASSERT_TRUE(q.push(units, 5, Lane::kFresh));
  ok();
  EXPECT_TRUE(q.holds(units, 3));
  EXPECT_FALSE(q.push(units, 3, Lane::kFresh));  // placed: not queued as well
  EXPECT_FALSE(q.place(units, 3, "bob", 102));   // nor placed twice
  EXPECT_EQ(q.placed_size(), 3u);
  EXPECT_FALSE(q.empty_for("carol"));  // the lanes are everyone's
  EXPECT_EQ(q.pop_placed(units, "carol"), std::nullopt);
  EXPECT_EQ(q.pop_placed(units, "alice"), 3);
  ok();
  EXPECT_FALSE(q.holds(units, 3));
  EXPECT_EQ(q.pop_placed(units, "alice"), 2);
  EXPECT_EQ(q.pop_placed(units, "alice"), std::nullopt);
  EXPECT_FALSE(q.has_placed("alice"));
  EXPECT_TRUE(q.has_placed("bob"));
  ok();
  EXPECT_EQ(pop_all(Lane::kFresh), Ids{5});
  EXPECT_TRUE(q.empty_for("alice"));
  EXPECT_FALSE(q.empty_for("bob"));
  EXPECT_EQ(q.unplace_all(units, "bob"), Ids{1});
  EXPECT_TRUE(q.empty());
  EXPECT_FALSE(q.holds(units, 1));
  ok();
}

TEST_F(UnitQueuesTest, ExpiredPlacementsAndThoseOfOwnersGoneAreTakenFromTheFront) {
  ASSERT_TRUE(q.place(units, 1, "alice", 100));
  ASSERT_TRUE(q.place(units, 2, "alice", 150));
  ASSERT_TRUE(q.place(units, 3, "alice", 120));  // out of time order: it waits behind unit 2
  ASSERT_TRUE(q.place(units, 4, "bob", 100));
  ASSERT_TRUE(q.place(units, 5, "carol", 190));
  units.fold(6, 7);
  ok();
  std::vector<std::string> asked;
  const auto gone = [&](const std::string& owner) {
    asked.push_back(owner);
    return owner == "carol";
  };
  // At 200 with 60 ms: alice's 1 is too old, her 2 stays (and 3 behind it); bob's 4 is too old;
  // carol is gone, so her 5 goes however new.
  EXPECT_EQ(q.unplace_expired(units, 200, 60, gone), (Ids{1, 4, 5}));
  EXPECT_EQ(asked, (std::vector<std::string>{"alice", "bob", "carol"}));  // each owner once
  ok();
  EXPECT_TRUE(q.has_placed("alice"));
  EXPECT_FALSE(q.has_placed("bob"));
  EXPECT_FALSE(q.has_placed("carol"));
  EXPECT_FALSE(q.holds(units, 1));
  EXPECT_TRUE(q.holds(units, 3));
  // An age exactly at the limit stays.
  EXPECT_EQ(q.unplace_expired(units, 210, 60, gone), Ids{});
  EXPECT_EQ(q.unplace_expired(units, 211, 60, gone), (Ids{2, 3}));
  EXPECT_TRUE(q.empty());
  ok();
}

TEST_F(UnitQueuesTest, ClearEmptiesEveryQueueAndReleasesTheUnits) {
  ASSERT_TRUE(q.push(units, 1, Lane::kFresh));
  ASSERT_TRUE(q.push(units, 2, Lane::kReplicas));
  ASSERT_TRUE(q.place(units, 3, "alice", 0));
  units.fold(1, 2);
  q.clear(units);
  EXPECT_TRUE(q.empty());
  for (int64_t i = 0; i < 16; ++i) EXPECT_FALSE(q.holds(units, i)) << i;
  ok();
  EXPECT_TRUE(q.push(units, 3, Lane::kFresh));  // held nowhere: it may be queued again
  ok();
}

TEST_F(UnitQueuesTest, CheckFindsMarksAndQueuesThatDisagree) {
  // Two queue objects over the same units stand for queues and marks out of step.
  UnitQueues other;
  ASSERT_TRUE(other.push(units, 1, Lane::kFresh));
  EXPECT_EQ(other.check(units), "");
  EXPECT_NE(q.check(units), "");  // unit 1 is marked as queued, but q does not hold it
  ASSERT_TRUE(q.place(units, 2, "alice", 0));
  EXPECT_NE(other.check(units), "");  // unit 2 is placed, but other does not hold it
}

TEST_F(UnitQueuesTest, CheckFindsAnEntryWhoseUnitIsMarkedForAnotherPlace) {
  ASSERT_TRUE(q.push(units, 5, Lane::kReplicas));
  ok();
  UnitQueues copy = q;
  ASSERT_NE(copy.pop(units, Lane::kReplicas), std::nullopt);  // the mark is cleared ...
  EXPECT_NE(q.check(units), "");                              // ... under q's entry
  UnitQueues other;
  ASSERT_TRUE(other.push(units, 5, Lane::kFresh));
  EXPECT_NE(q.check(units), "");  // q's replicas entry, the mark says fresh
}

TEST_F(UnitQueuesTest, AQueueCopiedWithItsUnitsIsPutBackWhole) {
  // A staged batch's Undo keeps a copy of the job (units and queues) and swaps it back in.
  ASSERT_TRUE(q.push(units, 1, Lane::kFresh));
  ASSERT_TRUE(q.place(units, 2, "alice", 7));
  Units units_before = units;
  UnitQueues before = q;
  ASSERT_EQ(q.pop(units, Lane::kFresh), 1);
  ASSERT_EQ(q.pop_placed(units, "alice"), 2);
  ASSERT_TRUE(q.push(units, 3, Lane::kReplicas));
  ok();
  EXPECT_NE(before.check(units), "");  // the old queues do not fit the new marks
  units = units_before;
  q = before;
  ok();
  EXPECT_TRUE(q.holds(units, 1));
  EXPECT_TRUE(q.holds(units, 2));
  EXPECT_FALSE(q.holds(units, 3));
  EXPECT_EQ(q.pop_placed(units, "alice"), 2);
}

// The model: where each unit is, and an order ticket (back pushes count up, front pushes
// down); a lane's or owner's order is its entries' tickets. Folded units keep their entries
// (stale) until an operation takes them out.
struct Model {
  enum class In { kNone, kFresh, kReplicas, kPlaced };
  struct Entry {
    In in = In::kNone;
    std::string owner;
    int64_t ms = 0;
    int64_t ticket = 0;
  };
  std::map<int64_t, Entry> entries;  // by unit: only units with an entry
  std::set<int64_t> folded;
  int64_t back = 0, front = 0;

  bool held(int64_t i) const { return !folded.count(i) && entries.count(i); }
  // Units with entries in `in` (of `owner`), in queue order.
  std::vector<int64_t> order(In in, const std::string& owner = "") const {
    std::map<int64_t, int64_t> by_ticket;
    for (const auto& [i, e] : entries)
      if (e.in == in && (in != In::kPlaced || e.owner == owner)) by_ticket[e.ticket] = i;
    std::vector<int64_t> out;
    for (const auto& [t, i] : by_ticket) out.push_back(i);
    return out;
  }
  std::set<std::string> owners() const {
    std::set<std::string> out;
    for (const auto& [i, e] : entries)
      if (e.in == In::kPlaced) out.insert(e.owner);
    return out;
  }
};

TEST(UnitQueues, RandomOperationsAgreeWithAModel) {
  const std::vector<std::string> owners = {"alice", "bob", "carol"};
  for (uint32_t seed = 1; seed <= 40; ++seed) {
    std::mt19937 rng(seed);
    Units units;
    units.resize(40);
    UnitQueues q;
    Model m;
    int64_t now = 0;
    auto pick = [&](int n) { return int(std::uniform_int_distribution<int>(0, n - 1)(rng)); };
    for (int step = 0; step < 400; ++step) {
      SCOPED_TRACE(testing::Message() << "seed " << seed << " step " << step);
      now += pick(20);
      const int64_t i = pick(42) - 1;  // -1 and 40: not live
      const std::string& owner = owners[size_t(pick(3))];
      const bool live = i >= 0 && i < 40 && !m.folded.count(i);
      switch (pick(9)) {
        case 0:
        case 1: {  // push
          const Lane lane = pick(2) ? Lane::kFresh : Lane::kReplicas;
          const bool front = pick(2);
          const bool want = live && !m.held(i);
          ASSERT_EQ(q.push(units, i, lane, front), want);
          if (want)
            m.entries[i] = {lane == Lane::kFresh ? Model::In::kFresh : Model::In::kReplicas, "", 0,
                            front ? --m.front : ++m.back};
          break;
        }
        case 2: {  // place
          const bool want = live && !m.held(i);
          ASSERT_EQ(q.place(units, i, owner, now), want);
          if (want) m.entries[i] = {Model::In::kPlaced, owner, now, ++m.back};
          break;
        }
        case 3: {  // pop a lane
          const Lane lane = pick(2) ? Lane::kFresh : Lane::kReplicas;
          const std::vector<int64_t> order = m.order(lane == Lane::kFresh ? Model::In::kFresh : Model::In::kReplicas);
          const std::optional<int64_t> want = order.empty() ? std::nullopt : std::optional<int64_t>(order.front());
          ASSERT_EQ(q.pop(units, lane), want);
          if (want) m.entries.erase(*want);
          break;
        }
        case 4: {  // pop an owner's
          std::optional<int64_t> want;
          for (int64_t k : m.order(Model::In::kPlaced, owner)) {
            const bool stale = m.folded.count(k) > 0;
            m.entries.erase(k);
            if (!stale) {
              want = k;
              break;
            }
          }
          ASSERT_EQ(q.pop_placed(units, owner), want);
          break;
        }
        case 5: {  // unplace an owner's
          std::vector<int64_t> want;
          for (int64_t k : m.order(Model::In::kPlaced, owner)) {
            if (!m.folded.count(k)) want.push_back(k);
            m.entries.erase(k);
          }
          ASSERT_EQ(q.unplace_all(units, owner), want);
          break;
        }
        case 6: {  // expire placements
          const int64_t age = pick(100);
          const std::string gone = owners[size_t(pick(3))];
          std::vector<int64_t> want;
          for (const std::string& o : m.owners())
            for (int64_t k : m.order(Model::In::kPlaced, o)) {
              const bool stale = m.folded.count(k) > 0;
              if (!stale && o != gone && now - m.entries[k].ms <= age) break;
              if (!stale) want.push_back(k);
              m.entries.erase(k);
            }
          ASSERT_EQ(q.unplace_expired(units, now, age, [&](const std::string& o) { return o == gone; }), want);
          break;
        }
        case 7: {  // fold a few units
          const int64_t first = pick(40), end = std::min<int64_t>(40, first + 1 + pick(3));
          units.fold(first, end);
          for (int64_t k = first; k < end; ++k) m.folded.insert(k);
          break;
        }
        case 8:
          if (pick(10) == 0) {
            q.clear(units);
            m.entries.clear();
          }
          break;
      }
      ASSERT_EQ(q.check(units), "");
      for (int64_t k = -1; k <= 40; ++k) ASSERT_EQ(q.holds(units, k), m.held(k)) << "unit " << k;
      ASSERT_EQ(q.size(Lane::kFresh), m.order(Model::In::kFresh).size());
      ASSERT_EQ(q.size(Lane::kReplicas), m.order(Model::In::kReplicas).size());
      size_t placed = 0;
      for (const std::string& o : owners) {
        ASSERT_EQ(q.has_placed(o), !m.order(Model::In::kPlaced, o).empty()) << o;
        placed += m.order(Model::In::kPlaced, o).size();
      }
      ASSERT_EQ(q.placed_size(), placed);
    }
  }
}

}  // namespace
}  // namespace c960::cluster::coord
