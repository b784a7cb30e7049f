// The lease deadline heap (coordinator/lease_deadlines.h): due entries come out earliest
// first and only once due, stale ones are the owner's to tell apart, and stale entries never
// let the heap grow past twice the live leases (plus its slack), however often leases renew.
#include "coordinator/lease_deadlines.h"

#include <gtest/gtest.h>
#include <map>
#include <random>

namespace c960::cluster {
namespace {

struct FakeJob {};

TEST(LeaseDeadlines, DueEntriesComeOutEarliestFirstAndOnlyWhenDue) {
  LeaseDeadlines<FakeJob> d;
  FakeJob job;
  auto all_live = [](const auto&) { return true; };
  for (int64_t t : {50, 10, 40, 20, 30}) d.push({t, &job, t, 0}, all_live);
  EXPECT_EQ(d.next_ms(), 10);
  std::vector<int64_t> out;
  d.pop_due(25, [&](const auto& e) { out.push_back(e.expire_ms); });
  EXPECT_EQ(out, (std::vector<int64_t>{10, 20}));
  out.clear();
  d.pop_due(25, [&](const auto& e) { out.push_back(e.expire_ms); });
  EXPECT_TRUE(out.empty());
  d.pop_due(50, [&](const auto& e) { out.push_back(e.expire_ms); });
  EXPECT_EQ(out, (std::vector<int64_t>{30, 40, 50}));
  EXPECT_EQ(d.size(), 0u);
  EXPECT_EQ(d.next_ms(), INT64_MAX);
}

// A model of leases renewed at random: the heap holds every live lease's current expiry (the
// sweep finds each expiry exactly when due) and stays bounded by the live count.
TEST(LeaseDeadlines, RenewalsLeaveStaleEntriesThatStayBounded) {
  LeaseDeadlines<FakeJob> d;
  FakeJob job;
  std::map<int64_t, int64_t> expiry;  // unit -> its lease's current expiry (live leases)
  auto live = [&](const LeaseDeadlines<FakeJob>::Entry& e) {
    auto it = expiry.find(e.unit);
    return it != expiry.end() && it->second == e.expire_ms;
  };
  std::mt19937_64 rng(7);
  int64_t now = 0;
  size_t most = 0;
  for (int step = 0; step < 200'000; ++step) {
    now += 1;
    const int64_t unit = int64_t(rng() % 1000);
    const int64_t t = now + 100 + int64_t(rng() % 1000);
    expiry[unit] = t;  // given or renewed
    d.push({t, &job, unit, 0}, live);
    most = std::max(most, d.size());
    if (rng() % 4 == 0) expiry.erase(int64_t(rng() % 1000));  // completed: its entry goes stale
    d.pop_due(now, [&](const auto& e) {
      if (!live(e)) return;
      EXPECT_EQ(e.expire_ms, now) << "a live lease must come out when due, not later";
      expiry.erase(e.unit);
    });
    for (const auto& [u, when] : expiry) ASSERT_GE(when, now) << "a lease past due is still out: unit " << u;
  }
  EXPECT_LE(most, 2 * 1000 + 4096 + 1);
}

}  // namespace
}  // namespace c960::cluster
