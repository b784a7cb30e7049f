// The dashboard's session table (coordinator/http_sessions.h) on its own: ids, ending, expiry on
// an injected clock, the bounds per credential and in all, and concurrent use.
#include "coordinator/http_sessions.h"

#include <gtest/gtest.h>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "cluster/auth.h"
#include "coordinator/clock.h"

namespace c960::cluster {
namespace {

const std::string kAlice = token_hash("c960_alice-token"), kBob = token_hash("c960_bob-token");

TEST(SessionTable, IdsAreRandomBase64UrlAndOnlyThemResolve) {
  FakeClock clock;
  SessionTable t(&clock);
  std::set<std::string> ids;
  std::vector<std::string> order;
  for (int i = 0; i < 100; ++i) {
    absl::StatusOr<std::string> id = t.create(kAlice, "alice");
    ASSERT_TRUE(id.ok()) << id.status();
    EXPECT_EQ(id->size(), kSessionIdLength);
    EXPECT_EQ(id->find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
              std::string::npos)
        << *id;
    ids.insert(*id);
    order.push_back(*id);
  }
  EXPECT_EQ(ids.size(), 100u);
  EXPECT_EQ(t.size(), size_t(kHttpMaxSessionsPerCredential));  // the newest, the older ended
  for (size_t i = 0; i < order.size(); ++i)
    EXPECT_EQ(t.resolve(order[i]).has_value(), i >= order.size() - kHttpMaxSessionsPerCredential) << i;
  const std::string last = order.back();
  // Nothing but an id made here resolves: not the credential, not an id changed by a character.
  std::string changed = last;
  changed[0] = changed[0] == 'A' ? 'B' : 'A';
  for (const std::string& other : {kAlice, changed, std::string(kSessionIdLength, 'A'), std::string(), last + "="})
    EXPECT_FALSE(t.resolve(other).has_value()) << other;
}

TEST(SessionTable, ASessionRemembersItsCredentialAndEnds) {
  FakeClock clock;
  SessionTable t(&clock);
  const std::string a1 = *t.create(kAlice, "alice"), a2 = *t.create(kAlice, "alice"), b = *t.create(kBob, "bob");
  std::optional<Session> s = t.resolve(a1);
  ASSERT_TRUE(s.has_value());
  EXPECT_EQ(s->credential, kAlice);
  EXPECT_EQ(s->identity, "alice");
  EXPECT_EQ(s->created_ms, clock.now_ms());
  EXPECT_TRUE(t.end(a1));
  EXPECT_FALSE(t.end(a1));
  EXPECT_FALSE(t.resolve(a1).has_value());
  EXPECT_TRUE(t.resolve(a2).has_value());
  EXPECT_EQ(t.end_for_credential(kAlice), 1u);
  EXPECT_FALSE(t.resolve(a2).has_value());
  EXPECT_EQ(t.size_for(kAlice), 0u);
  EXPECT_EQ(t.end_unless([](const std::string& c) { return c != kBob; }), 1u);
  EXPECT_FALSE(t.resolve(b).has_value());
  EXPECT_EQ(t.size(), 0u);
}

TEST(SessionTable, SessionsExpireIdleAndAtTheirLifetime) {
  FakeClock clock;
  SessionTable t(&clock, {.lifetime_ms = 1000, .idle_ms = 400});
  const std::string busy = *t.create(kAlice, "alice"), idle = *t.create(kBob, "bob");
  for (int i = 0; i < 2; ++i) {
    clock.advance_ms(399);
    EXPECT_TRUE(t.resolve(busy).has_value()) << i;
  }
  EXPECT_FALSE(t.resolve(idle).has_value());  // 798 ms unused
  EXPECT_EQ(t.size(), 1u);                    // ... and ended by the look-up
  clock.advance_ms(201);
  EXPECT_TRUE(t.resolve(busy).has_value());  // 999 ms old
  clock.advance_ms(1);
  EXPECT_FALSE(t.resolve(busy).has_value());  // 1000 ms old, however busy
  // expire() ends those no one asked for.
  t.create(kAlice, "alice").IgnoreError();
  t.create(kBob, "bob").IgnoreError();
  clock.advance_ms(400);
  EXPECT_EQ(t.expire(), 2u);
  EXPECT_EQ(t.size(), 0u);
}

TEST(SessionTable, BoundedPerCredentialAndInAll) {
  FakeClock clock;
  SessionTable t(&clock, {.lifetime_ms = 1000, .idle_ms = 1000, .per_credential = 2, .total = 3});
  const std::string a1 = *t.create(kAlice, "alice");
  clock.advance_ms(1);
  const std::string a2 = *t.create(kAlice, "alice");
  clock.advance_ms(1);
  const std::string a3 = *t.create(kAlice, "alice");
  EXPECT_FALSE(t.resolve(a1).has_value());  // the oldest made room
  EXPECT_EQ(t.size_for(kAlice), 2u);
  ASSERT_TRUE(t.create(kBob, "bob").ok());
  const absl::StatusOr<std::string> full = t.create(token_hash("c960_carol-token"), "carol");
  EXPECT_EQ(full.status().code(), absl::StatusCode::kResourceExhausted) << full.status();
  EXPECT_EQ(t.size(), 3u);
  EXPECT_EQ(t.size_for(token_hash("c960_carol-token")), 0u);
  // Expired sessions make room at the next login.
  clock.advance_ms(1000);
  EXPECT_TRUE(t.create(token_hash("c960_carol-token"), "carol").ok());
  EXPECT_EQ(t.size(), 1u);
  EXPECT_FALSE(t.resolve(a2).has_value());
  EXPECT_FALSE(t.resolve(a3).has_value());
}

// Logins, look-ups and logouts from several threads at once (the HTTP side's handler threads):
// each thread's own sessions stay its own, and the bounds hold.
TEST(SessionTable, ConcurrentUseKeepsTheBounds) {
  SystemClock clock;
  SessionTable t(&clock, {.per_credential = 8, .total = 64});
  std::vector<std::thread> threads;
  std::vector<int> wrong(8, 0);
  for (int k = 0; k < 8; ++k)
    threads.emplace_back([&, k] {
      const std::string credential = token_hash("c960_thread-" + std::to_string(k));
      for (int i = 0; i < 200; ++i) {
        absl::StatusOr<std::string> id = t.create(credential, "t");
        if (!id.ok()) continue;
        std::optional<Session> s = t.resolve(*id);
        if (s && s->credential != credential) ++wrong[k];
        if (i % 3 == 0) t.end(*id);
      }
    });
  for (std::thread& th : threads) th.join();
  for (int k = 0; k < 8; ++k) EXPECT_EQ(wrong[k], 0) << k;
  EXPECT_LE(t.size(), 64u);
  for (int k = 0; k < 8; ++k) EXPECT_LE(t.size_for(token_hash("c960_thread-" + std::to_string(k))), 8u);
}

}  // namespace
}  // namespace c960::cluster
