// Who leads among coordinators sharing a store (coordinator/leadership.h): the pure decision in
// every case, and elections of several coordinators over one lease as a store keeps it: one
// leader at a time, a standby taking over only once the lease has expired, a paused leader
// deposed, a store that stops answering.
#include "coordinator/leadership.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace c960::cluster {
namespace {

// The lease as a store keeps it: the same rule as the SQL step (take when free or expired, renew
// when held at the epoch given), on a clock the test moves.
class FakeLeaseStore final : public LeaseStore {
 public:
  int64_t now = 1'000'000;
  bool down = false;
  LeaseRow row;
  absl::StatusOr<Step> take_or_renew_lease(const std::string& holder, int64_t epoch, int64_t ttl_ms) override {
    if (down) return absl::UnavailableError("store: connection refused");
    Step s;
    const bool free = row.epoch == 0 || row.expires_ms <= now;
    const bool mine = row.holder == holder && row.epoch == epoch && epoch != 0;
    if (mine || free) {
      if (!mine) {
        ++row.epoch;
        row.holder = holder;
      }
      row.expires_ms = now + ttl_ms;
      s.granted = true;
    }
    s.row = row;
    s.now_ms = now;
    return s;
  }
  absl::Status release_lease(const std::string& holder, int64_t epoch) override {
    if (down) return absl::UnavailableError("store: connection refused");
    if (row.holder == holder && row.epoch == epoch) row.expires_ms = 0;
    return absl::OkStatus();
  }
};

const LeaderTiming kTiming{.ttl_ms = 9'000};

TEST(LeaderElectionDecide, EveryCase) {
  using R = LeaderRole;
  const auto d = [](R was, bool stepped, bool granted, int64_t row_epoch, int64_t epoch, int64_t left) {
    return LeaderElection::decide(was, stepped, granted, row_epoch, epoch, left, kTiming);
  };
  EXPECT_EQ(d(R::kStandby, true, true, 1, 0, 0), R::kLeader);        // took a free lease
  EXPECT_EQ(d(R::kStandby, true, false, 1, 0, 0), R::kStandby);      // another holds it
  EXPECT_EQ(d(R::kStandby, false, false, 0, 0, 0), R::kStandby);     // store down: waits
  EXPECT_EQ(d(R::kLeader, true, true, 4, 4, 100), R::kLeader);       // renewed
  EXPECT_EQ(d(R::kLeader, true, false, 5, 4, 5'000), R::kDeposed);   // another took it
  EXPECT_EQ(d(R::kLeader, true, true, 6, 4, 5'000), R::kDeposed);    // lost, then taken again
  EXPECT_EQ(d(R::kLeader, false, false, 0, 4, 1'801), R::kLeader);   // store down, time left
  EXPECT_EQ(d(R::kLeader, false, false, 0, 4, 1'800), R::kDeposed);  // ... within the margin
  EXPECT_EQ(d(R::kDeposed, true, true, 7, 7, 9'000), R::kDeposed);   // for good
}

TEST(LeaderElectionTest, OneLeadsAndAStandbyTakesOverOnlyOnceTheLeaseExpired) {
  FakeLeaseStore store;
  LeaderElection a(&store, "a:7960", kTiming), b(&store, "b:7960", kTiming);
  EXPECT_EQ(a.step(0), LeaderRole::kLeader);
  EXPECT_EQ(a.epoch(), 1);
  EXPECT_EQ(b.step(0), LeaderRole::kStandby);
  EXPECT_EQ(b.leader(), "a:7960");
  // a renews on time for a while; b never gets it.
  for (int k = 1; k <= 10; ++k) {
    store.now += kTiming.renew_every_ms();
    EXPECT_EQ(a.step(k * kTiming.renew_every_ms()), LeaderRole::kLeader);
    EXPECT_EQ(b.step(k * kTiming.renew_every_ms()), LeaderRole::kStandby);
  }
  EXPECT_EQ(store.row.epoch, 1);
  // a pauses (no steps) past its lease: b takes over with the next epoch...
  store.now += kTiming.ttl_ms;
  EXPECT_EQ(b.step(0), LeaderRole::kLeader);
  EXPECT_EQ(b.epoch(), 2);
  // ...and a, waking, is deposed at its first step (its epoch is fenced in the store meanwhile).
  EXPECT_EQ(a.step(11 * kTiming.renew_every_ms()), LeaderRole::kDeposed);
  EXPECT_NE(a.why().find("b:7960"), std::string::npos) << a.why();
  // A clean shutdown gives the lease up at once: the other takes it without waiting.
  ASSERT_TRUE(store.release_lease("b:7960", 2).ok());
  LeaderElection c(&store, "c:7960", kTiming);
  EXPECT_EQ(c.step(0), LeaderRole::kLeader);
  EXPECT_EQ(c.epoch(), 3);
}

TEST(LeaderElectionTest, ALeaderWhoseStoreStopsAnsweringStepsDownBeforeItsLeaseCanBeTaken) {
  FakeLeaseStore store;
  LeaderElection a(&store, "a:7960", kTiming);
  ASSERT_EQ(a.step(0), LeaderRole::kLeader);
  store.down = true;
  int64_t t = 0;
  while (a.step(t = a.next_step_ms()) == LeaderRole::kLeader) {}
  EXPECT_EQ(a.role(), LeaderRole::kDeposed);
  // Deposed while the store would still say its lease holds: no standby led in between.
  EXPECT_LT(t, kTiming.ttl_ms);
  EXPECT_NE(a.why().find("connection refused"), std::string::npos) << a.why();
}

TEST(LeaderElectionTest, ARestartedCoordinatorUnderTheSameNameWaitsForItsOldLease) {
  FakeLeaseStore store;
  LeaderElection old_self(&store, "a:7960", kTiming);
  ASSERT_EQ(old_self.step(0), LeaderRole::kLeader);
  // The same address again (a restart while the old process may still run): not the holder of
  // the old epoch, so a standby until that lease expires.
  LeaderElection again(&store, "a:7960", kTiming);
  EXPECT_EQ(again.step(0), LeaderRole::kStandby);
  store.now += kTiming.ttl_ms;
  EXPECT_EQ(again.step(0), LeaderRole::kLeader);
  EXPECT_EQ(again.epoch(), 2);
}

// Many coordinators stepping in a random order on a clock that jumps: never two leaders that
// both believe they lead at the same epoch, and the store's epoch only grows.
TEST(LeaderElectionTest, NeverTwoLeadersOfOneEpoch) {
  FakeLeaseStore store;
  std::vector<LeaderElection> cs;
  for (int k = 0; k < 4; ++k) cs.emplace_back(&store, absl::StrCat("c", k, ":1"), kTiming);
  uint64_t x = 88172645463325252ull;
  auto rnd = [&x] {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    return x;
  };
  int64_t local = 0;
  int64_t last_epoch = 0;
  for (int i = 0; i < 20'000; ++i) {
    const int64_t dt = int64_t(rnd() % 5'000);
    store.now += dt, local += dt;
    store.down = rnd() % 10 == 0;
    LeaderElection& c = cs[rnd() % cs.size()];
    if (c.role() == LeaderRole::kDeposed) c = LeaderElection(&store, c.holder(), kTiming);  // restarted
    c.step(local);
    ASSERT_GE(store.row.epoch, last_epoch);
    last_epoch = store.row.epoch;
    std::map<int64_t, int> leaders;
    for (const LeaderElection& e : cs)
      if (e.role() == LeaderRole::kLeader) ++leaders[e.epoch()];
    for (const auto& [epoch, n] : leaders) ASSERT_EQ(n, 1) << "epoch " << epoch << " at step " << i;
    // A leader of an epoch the store no longer holds knows its lease ran out (its own clock says
    // so before its next step): it never serves as leader past the moment another took over.
    for (const LeaderElection& e : cs) {
      if (e.role() == LeaderRole::kLeader && e.epoch() != store.row.epoch) {
        ASSERT_LE(e.lease_left_ms(local), 0) << e.holder() << " at step " << i;
      }
    }
  }
  EXPECT_GT(last_epoch, 100);  // the lease changed hands many times
}

}  // namespace
}  // namespace c960::cluster
