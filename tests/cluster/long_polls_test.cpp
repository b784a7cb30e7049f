// The coordinator's long polls (coordinator/long_polls.h): one wait per session, each taken out
// once (by its session's next call, its ticket, or served), and wake-ups only while one waits.
#include "coordinator/long_polls.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace c960::cluster::coord {
namespace {

LongPolls::Waiter waiter(const std::string& session, int* answered) {
  LongPolls::Waiter w;
  w.session = session;
  w.done = [answered](absl::StatusOr<v1::AcquireWorkResponse>) { ++*answered; };
  return w;
}

TEST(LongPolls, EachWaitLeavesOnceBySessionTicketOrServe) {
  LongPolls p;
  int answered = 0;
  p.park(1, waiter("s1", &answered));
  p.park(2, waiter("s2", &answered));
  p.park(3, waiter("s3", &answered));
  EXPECT_EQ(p.size(), 3u);
  EXPECT_TRUE(p.waiting("s1"));
  std::optional<LongPolls::Waiter> w = p.take_session("s1");
  ASSERT_TRUE(w.has_value());
  EXPECT_FALSE(p.waiting("s1"));
  EXPECT_FALSE(p.take_session("s1").has_value());
  ASSERT_TRUE(p.take(2).has_value());
  EXPECT_FALSE(p.take(2).has_value());  // answered already
  EXPECT_FALSE(p.waiting("s2"));
  std::vector<LongPolls::Answer> out;
  // Served in arrival order; only those given an answer leave.
  p.serve([](LongPolls::Waiter&) { return std::optional<absl::StatusOr<v1::AcquireWorkResponse>>(); }, &out);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(p.size(), 1u);
  p.serve([](LongPolls::Waiter&) { return std::optional(absl::StatusOr<v1::AcquireWorkResponse>()); }, &out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(p.empty());
  EXPECT_FALSE(p.waiting("s3"));
  out[0].first(std::move(out[0].second));
  EXPECT_EQ(answered, 1);
}

TEST(LongPolls, WorkAndCredentialEventsOnlyWhileOneWaits) {
  LongPolls p;
  p.work_arrived();
  p.credentials_changed();
  EXPECT_FALSE(p.events().work);
  EXPECT_FALSE(p.events().auth);
  p.refill_wanted();  // a refill is wanted with or without waits
  EXPECT_TRUE(p.events().refill);
  int answered = 0;
  p.park(1, waiter("s1", &answered));
  p.work_arrived();
  p.credentials_changed();
  const LongPolls::Events e = p.take_served();
  EXPECT_TRUE(e.work && e.auth);
  EXPECT_FALSE(p.events().work || p.events().auth);
  EXPECT_TRUE(p.events().refill);  // taken by the refill, not by serving
  p.clear_refill();
  EXPECT_FALSE(p.events().refill);
}

}  // namespace
}  // namespace c960::cluster::coord
