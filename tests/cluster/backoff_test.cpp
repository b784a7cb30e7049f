// Backoff with full jitter (cluster/backoff.h): the ceilings it draws under, the cap, a server's
// retry delay, a reset after a success, and a stop that ends a wait.
#include "cluster/backoff.h"

#include <chrono>
#include <cmath>
#include <set>
#include <thread>
#include <vector>

#include "gtest/gtest.h"

namespace c960::cluster {
namespace {

// Draws the same number every time.
Backoff::Uniform always(double u) {
  return [u] { return u; };
}

TEST(BackoffTest, CeilingsGrowByTheMultiplierUpToTheCap) {
  Backoff top(BackoffPolicy{.initial_ms = 1000, .multiplier = 1.6, .max_ms = 30'000}, always(1.0));
  std::vector<int64_t> waits;
  for (int k = 0; k < 10; ++k) waits.push_back(top.next_ms());
  EXPECT_EQ(waits, (std::vector<int64_t>{1000, 1600, 2560, 4096, 6554, 10486, 16777, 26844, 30'000, 30'000}));
  EXPECT_EQ(top.failures(), 10);
  // The draw is where in [0, ceiling] the wait falls: half-way, and at 0.
  Backoff half(BackoffPolicy{.initial_ms = 1000, .multiplier = 2, .max_ms = 5000}, always(0.5));
  waits.clear();
  for (int k = 0; k < 5; ++k) waits.push_back(half.next_ms());
  EXPECT_EQ(waits, (std::vector<int64_t>{500, 1000, 2000, 2500, 2500}));
  Backoff zero(BackoffPolicy{}, always(0.0));
  EXPECT_EQ(zero.next_ms(), 0);
  // The defaults are config.h's.
  EXPECT_EQ(zero.policy().initial_ms, kRetryInitialMs);
  EXPECT_EQ(zero.policy().max_ms, kRetryMaxMs);
  EXPECT_EQ(zero.ceiling_ms(), std::llround(double(kRetryInitialMs) * kRetryMultiplier));
}

TEST(BackoffTest, ASuccessStartsAgainFromTheInitialCeiling) {
  Backoff b(BackoffPolicy{.initial_ms = 100, .multiplier = 2, .max_ms = 10'000}, always(1.0));
  EXPECT_EQ(b.next_ms(), 100);
  EXPECT_EQ(b.next_ms(), 200);
  EXPECT_EQ(b.next_ms(), 400);
  b.reset();
  EXPECT_EQ(b.failures(), 0);
  EXPECT_EQ(b.ceiling_ms(), 100);
  EXPECT_EQ(b.next_ms(), 100);
}

TEST(BackoffTest, AServersRetryDelayIsWaitedAtLeastUpToTheCap) {
  Backoff b(BackoffPolicy{.initial_ms = 1000, .multiplier = 2, .max_ms = 8000}, always(0.1));
  EXPECT_EQ(b.next_ms(3000), 3000);       // more than the draw (100): the server's
  EXPECT_EQ(b.next_ms(10), 200);          // less: the draw
  EXPECT_EQ(b.next_ms(3'600'000), 8000);  // an hour: no longer than the cap
  EXPECT_EQ(b.next_ms(-5), 800);          // nonsense: ignored
}

TEST(BackoffTest, TheRandomDrawStaysUnderTheCeilingAndSpreads) {
  Backoff b(BackoffPolicy{.initial_ms = 1000, .multiplier = 1.6, .max_ms = 30'000});
  std::set<int64_t> firsts;
  for (int k = 0; k < 200; ++k) {
    const int64_t ceiling = b.ceiling_ms();
    const int64_t wait = b.next_ms();
    EXPECT_GE(wait, 0);
    EXPECT_LE(wait, ceiling);
    if (k % 2 == 1) b.reset();
    if (k % 2 == 0) firsts.insert(wait);
  }
  // Jittered: a hundred first waits are not all the same (all equal: odds of 1 in 1000^99).
  EXPECT_GT(firsts.size(), 10u);
}

TEST(StopSignalTest, AStopEndsAWaitAtOnceAndLaterWaitsDoNotWait) {
  StopSignal stop;
  EXPECT_TRUE(stop.wait_ms(1));  // the whole time passed
  bool waited = true;
  std::thread waiter([&] { waited = stop.wait_ms(3'600'000); });  // an hour, unless stopped
  stop.stop();
  waiter.join();  // would hang for an hour if the stop did not end the wait
  EXPECT_FALSE(waited);
  EXPECT_TRUE(stop.stopped());
  EXPECT_FALSE(stop.wait_ms(3'600'000));
}

}  // namespace
}  // namespace c960::cluster
