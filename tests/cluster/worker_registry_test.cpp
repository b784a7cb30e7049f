// The coordinator's worker registry (coordinator/worker_registry.h): records with the caps'
// counts kept in step, sessions with each worker's newest, trust rebuilt from the records at a
// load, lease counts without zeros, and what a staged batch keeps and puts back.
#include "coordinator/worker_registry.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "c960/v1/cluster.pb.h"

namespace c960::cluster::coord {
namespace {

StoredWorker record(const std::string& identity, const std::string& host, const std::string& owner = "") {
  StoredWorker r;
  r.identity = identity;
  r.owner = owner;
  r.host = host;
  r.key = identity.empty() ? host : identity + "/" + host;
  r.trust = v1::TRUST_STATE_NEW;
  return r;
}

Session session(const std::string& id, const std::string& key) {
  Session s;
  s.id = id;
  s.key = key;
  s.voter = key;
  return s;
}

TEST(WorkerRegistry, CountsFollowRecordsInstalledReplacedAndErased) {
  WorkerRegistry r;
  r.install(record("alice", "a1"));
  r.install(record("alice", "a2", "org"));
  r.install(record("", "anon"));  // nobody authenticated: no caps
  EXPECT_EQ(r.per_identity("alice"), 2);
  EXPECT_EQ(r.per_owner("alice"), 1);
  EXPECT_EQ(r.per_owner("org"), 1);
  EXPECT_EQ(r.voter_of("alice/a2"), "org");
  EXPECT_EQ(r.voter_of("anon"), "anon");
  // The owner changes with a new record: the count moves with it.
  r.install(record("alice", "a1", "org"));
  EXPECT_EQ(r.per_owner("alice"), 0);
  EXPECT_EQ(r.per_owner("org"), 2);
  r.erase_worker("alice/a2");
  EXPECT_EQ(r.per_identity("alice"), 1);
  EXPECT_EQ(r.per_owner("org"), 1);
  EXPECT_EQ(r.find("alice/a2"), nullptr);
  EXPECT_EQ(r.check(), "");
}

TEST(WorkerRegistry, ARecordReplacedKeepsItsSamples) {
  WorkerRegistry r;
  r.install(record("alice", "a1")).samples.push_back({1, 2});
  StoredWorker again = record("alice", "a1");
  again.units_done = 7;
  r.install(again);
  EXPECT_EQ(r.at("alice/a1").rec.units_done, 7);
  EXPECT_EQ(r.at("alice/a1").samples.size(), 1u);
}

TEST(WorkerRegistry, SessionOfNamesTheNewestSessionOnly) {
  WorkerRegistry r;
  r.install(record("", "w"));
  r.add_session(session("s1", "w"));
  r.add_session(session("s2", "w"));  // a second Hello before the first session is forgotten
  ASSERT_NE(r.session_of("w"), nullptr);
  EXPECT_EQ(*r.session_of("w"), "s2");
  r.forget_session("s1");  // the older one: the newest stays the worker's
  ASSERT_NE(r.session_of("w"), nullptr);
  EXPECT_EQ(*r.session_of("w"), "s2");
  EXPECT_EQ(r.check(), "");
  r.forget_session("s2");
  EXPECT_EQ(r.session_of("w"), nullptr);
  EXPECT_TRUE(r.sessions().empty());
  EXPECT_EQ(r.check(), "");
}

TEST(WorkerRegistry, ALoadRebuildsTrustAndEndsSessionsOfUnknownWorkers) {
  WorkerRegistry r;
  r.install(record("", "gone"));
  r.add_session(session("s-gone", "gone"));
  r.install(record("alice", "a1")).samples.push_back({1, 1});
  r.add_session(session("s-a1", "alice/a1"));
  r.take_lease("alice");
  StoredWorker a1 = record("alice", "a1");
  a1.trust = v1::TRUST_STATE_TRUSTED;
  StoredWorker b1 = record("bob", "b1", "bobs");
  b1.trust = v1::TRUST_STATE_QUARANTINED;
  b1.trust_reason = "outvoted";
  StoredWorker c1 = record("carol", "c1");
  c1.trust = v1::TRUST_STATE_QUARANTINED;
  c1.trust_reason = "fault: wrong count under verify hosts";
  r.load({a1, b1, c1}, "fault: ");
  EXPECT_TRUE(r.trusted("alice"));
  EXPECT_TRUE(r.quarantined("bobs"));      // the whole owner
  EXPECT_TRUE(r.quarantined("carol/c1"));  // the worker alone
  EXPECT_FALSE(r.quarantined("carol"));
  EXPECT_TRUE(r.barred("bob/b1"));
  EXPECT_EQ(r.session_of("gone"), nullptr);  // its record is gone: so is its session
  ASSERT_NE(r.session_of("alice/a1"), nullptr);
  EXPECT_EQ(r.at("alice/a1").samples.size(), 1u);
  EXPECT_EQ(r.leases_held("alice"), 0);  // the jobs' leases are loaded again
  EXPECT_EQ(r.per_identity("carol"), 1);
  EXPECT_EQ(r.check(), "");
}

TEST(WorkerRegistry, LeaseCountsHoldNoZero) {
  WorkerRegistry r;
  r.take_lease("alice");
  r.take_lease("alice");
  r.drop_lease("alice");
  EXPECT_EQ(r.leases_held("alice"), 1);
  r.drop_lease("alice");
  r.drop_lease("alice");  // none left: stays none
  EXPECT_TRUE(r.leases_held().empty());
  EXPECT_EQ(r.check(), "");
}

TEST(WorkerRegistry, RestorePutsBackWhatAStagedBatchChanged) {
  WorkerRegistry r;
  r.install(record("alice", "a1"));
  r.trust("alice");
  r.take_lease("alice");
  WorkerRegistry::Kept kept = r.keep();
  r.quarantine_voter("alice");
  r.at("alice/a1").rec.trust = v1::TRUST_STATE_QUARANTINED;
  r.drop_lease("alice");
  EXPECT_FALSE(r.trusted("alice"));
  r.restore(std::move(kept));
  EXPECT_TRUE(r.trusted("alice"));
  EXPECT_FALSE(r.quarantined("alice"));
  EXPECT_EQ(r.at("alice/a1").rec.trust, v1::TRUST_STATE_NEW);
  EXPECT_EQ(r.leases_held("alice"), 1);
  EXPECT_EQ(r.check(), "");
}

TEST(WorkerRegistry, ForgettingIsDueOncePerInterval) {
  WorkerRegistry r;
  EXPECT_TRUE(r.forget_due(1000, 500));
  EXPECT_FALSE(r.forget_due(1499, 500));
  EXPECT_TRUE(r.forget_due(1500, 500));
}

}  // namespace
}  // namespace c960::cluster::coord
