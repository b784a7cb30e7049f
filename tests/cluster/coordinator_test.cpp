// Coordinator logic without sockets: leases under a fake clock, idempotent completion,
// aggregation, persistence across a restart, and request validation.
#include "coordinator/coordinator.h"

#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "cluster/errors.h"
#include "cluster/u128.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/position.h"
#include "core/startpos.h"
#include "tests/cluster/coordinator_fixture.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

// Leases of 30 s (the fixture's).
constexpr int64_t kLeaseMs = 30'000;

class CoordinatorTest : public CoordinatorFixture {
 protected:
  void open(const std::string& path) {
    open_store(path);
    CoordinatorFixture::open();
  }

  // Without verification unless asked: these tests are about leases, storage and results.
  v1::Job submit(int depth, const std::string& sps, int split, const std::string& request_id = "",
                 v1::VerifyMode verify = v1::VERIFY_MODE_OFF) {
    return CoordinatorFixture::submit(perft_request(verify, depth, sps, split, request_id));
  }

  static v1::ListJobsRequest page(int size) {
    v1::ListJobsRequest r;
    r.set_page_size(size);
    return r;
  }
};

TEST_F(CoordinatorTest, ExpiredLeasesReturnToTheQueueWithANewAttempt) {
  const std::string w1 = hello("one"), w2 = hello("two");
  const v1::Job j = submit(3, "0-3", 0);
  std::vector<v1::Lease> l1 = acquire(w1, 2);
  ASSERT_EQ(l1.size(), 2u);
  EXPECT_EQ(l1[0].attempt(), 1);
  EXPECT_EQ(l1[0].expire_unix_ms(), clock_.now_ms() + kLeaseMs);  // set by the server
  clock_.advance_ms(kLeaseMs - 1);
  coordinator_->sweep();
  std::vector<v1::Lease> l2 = acquire(w2, 4);
  ASSERT_EQ(l2.size(), 2u);  // only the two never leased
  for (const v1::Lease& a : l2)
    for (const v1::Lease& b : l1) EXPECT_NE(a.unit_id(), b.unit_id());
  clock_.advance_ms(1);
  coordinator_->sweep();
  EXPECT_EQ(job(j.id()).progress().units_leased(), 2);  // w2's leases are younger
  std::vector<v1::Lease> again = acquire(w2, 4);
  ASSERT_EQ(again.size(), 2u);
  std::set<std::string> first_ids = {l1[0].unit_id(), l1[1].unit_id()};
  for (const v1::Lease& l : again) {
    EXPECT_TRUE(first_ids.count(l.unit_id())) << l.unit_id();
    EXPECT_EQ(l.attempt(), 2);
  }
}

// A copy left by a worker that went away (its lease expired, no result) does not hold its
// owner's vote: another worker of the same owner computes the unit (found by the failover test
// across namespaces, deploy/tests/failover_test.sh: two workers under one owner's tokens, one
// killed, the job stalled at 198 of 200 units). The owner still counts once: its late result,
// the same, is no second vote, so the unit still waits for another owner's.
TEST_F(CoordinatorTest, AnOwnersOtherWorkerTakesOverACopyItsDeadWorkerLeft) {
  CoordinatorOptions o;
  o.trust_roots = {"root"};
  o.audit_rate = 0;
  CoordinatorFixture::open(o);
  const Caller x1{"x1", Role::kWorker, true, 0, "xavier"}, x2{"x2", Role::kWorker, true, 0, "xavier"};
  const Caller y1{"y1", Role::kWorker, true, 0, "yvonne"};
  const std::string wx1 = hello("x-one", x1), wx2 = hello("x-two", x2), wy1 = hello("y-one", y1);
  const v1::Job j = CoordinatorFixture::submit(perft_request(v1::VERIFY_MODE_ALL, 3, "518", 0));
  // Both owners get a copy of the one unit; xavier's goes to x-one, which then dies.
  std::optional<v1::Lease> held, other;
  for (int k = 0; k < 20 && (!held || !other); ++k) {
    if (!held)
      for (const v1::Lease& l : acquire(wx1, 1, x1)) held = l;
    if (!other)
      for (const v1::Lease& l : acquire(wy1, 1, y1)) other = l;
    clock_.advance_ms(options_.placement_ms + 1);  // a placement with a silent owner moves on
    coordinator_->sweep();
  }
  ASSERT_TRUE(held && other) << "both owners leased a copy";
  ASSERT_EQ(complete(wy1, *other, result(*other), y1).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  clock_.advance_ms(kLeaseMs + 1);
  coordinator_->sweep();
  // x-two computes it, and the unit settles on two owners' agreeing results.
  std::vector<v1::Lease> taken;
  for (int k = 0; k < 5 && taken.empty(); ++k) {
    taken = acquire(wx2, 1, x2);
    if (taken.empty()) {
      clock_.advance_ms(options_.placement_ms + 1);
      coordinator_->sweep();
    }
  }
  ASSERT_EQ(taken.size(), 1u) << "x-two never got the unit its owner's dead worker left";
  EXPECT_EQ(taken[0].unit_id(), held->unit_id());
  EXPECT_EQ(complete(wx2, taken[0], result(taken[0]), x2).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  // x-one's late result is its owner's again: no new vote, nothing counted twice.
  EXPECT_EQ(complete(wx1, *held, result(*held), x1).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  expect_exact(j.id(), 3);
}

TEST_F(CoordinatorTest, RenewalExtendsLeasesAndSilentWorkersAreLost) {
  const std::string w1 = hello("one"), w2 = hello("two");
  const v1::Job j = submit(3, "0", 0);
  std::vector<v1::Lease> l = acquire(w1, 1);
  ASSERT_EQ(l.size(), 1u);
  clock_.advance_ms(kLeaseMs - 1000);
  v1::RenewLeasesRequest rr;
  rr.set_worker_id(w1);
  rr.add_unit_ids(l[0].unit_id());
  auto renewed = coordinator_->renew(Caller::local(), rr);
  ASSERT_TRUE(renewed.ok()) << renewed.status();
  ASSERT_EQ(renewed->renewals_size(), 1);
  EXPECT_EQ(renewed->renewals(0).status(), v1::LEASE_STATUS_ACTIVE);
  EXPECT_EQ(renewed->renewals(0).expire_unix_ms(), clock_.now_ms() + kLeaseMs);
  clock_.advance_ms(kLeaseMs - 1000);
  coordinator_->sweep();
  EXPECT_EQ(job(j.id()).progress().units_leased(), 1);
  EXPECT_EQ(job(j.id()).progress().workers_alive(), 1);  // w2 has been silent for a lease period
  clock_.advance_ms(1000);
  coordinator_->sweep();
  EXPECT_EQ(job(j.id()).progress().units_leased(), 0);
  EXPECT_EQ(job(j.id()).progress().workers_alive(), 0);
  // A unit back in the queue that its old holder renews is leased to it again.
  renewed = coordinator_->renew(Caller::local(), rr);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->renewals(0).status(), v1::LEASE_STATUS_ACTIVE);
  EXPECT_EQ(job(j.id()).progress().workers_alive(), 1);
  EXPECT_TRUE(acquire(w2, 1).empty());
  // Someone else's unit: lost.
  rr.set_worker_id(w2);
  renewed = coordinator_->renew(Caller::local(), rr);
  ASSERT_TRUE(renewed.ok());
  EXPECT_EQ(renewed->renewals(0).status(), v1::LEASE_STATUS_LOST);
}

// Issue 19: a submit sent again while its plan still runs is told so instead of being planned a
// second time (the CLI used to resend after its deadline: up to nine plans of one job); one plan
// at a time per caller; a plan stops when its caller goes away, or when the coordinator shuts
// down.
TEST_F(CoordinatorTest, APlanRunsOnceAndStopsWhenItsCallerGoes) {
  const Caller alice{"alice", Role::kSubmit, true};
  v1::SubmitJobRequest req;
  req.set_request_id("r1");
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  req.mutable_spec()->mutable_perft()->set_depth(6);
  req.mutable_spec()->mutable_perft()->set_start_positions("0-29");
  req.mutable_spec()->mutable_perft()->set_split_depth(3);
  absl::Status again, other;
  bool asked = false;
  // Asked while the plan walks: the same submit again, and another of the same caller.
  const PlanCancelled during = [&] {
    if (!asked) {
      asked = true;
      again = coordinator_->submit(alice, req).status();
      v1::SubmitJobRequest second = req;
      second.set_request_id("r2");
      other = coordinator_->submit(alice, second).status();
    }
    return false;
  };
  absl::StatusOr<v1::Job> j = coordinator_->submit(alice, req, during);
  ASSERT_TRUE(j.ok()) << j.status();
  ASSERT_TRUE(asked);
  EXPECT_EQ(again.code(), absl::StatusCode::kUnavailable) << again;
  EXPECT_TRUE(absl::StrContains(again.message(), "still being planned")) << again;
  EXPECT_EQ(other.code(), absl::StatusCode::kResourceExhausted) << other;
  // Asked again now, by its request id: the job, not a second plan.
  absl::StatusOr<v1::Job> same = coordinator_->submit(alice, req);
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(same->id(), j->id());
  // A caller that went away stops its plan, and can submit again at once.
  req.set_request_id("r3");
  EXPECT_EQ(coordinator_->submit(alice, req, [] { return true; }).status().code(), absl::StatusCode::kCancelled);
  req.set_request_id("r4");
  req.mutable_spec()->mutable_perft()->set_start_positions("0-1");
  EXPECT_TRUE(coordinator_->submit(alice, req).ok());
  // So does a shutdown.
  coordinator_->shutdown();
  req.set_request_id("r5");
  req.mutable_spec()->mutable_perft()->set_start_positions("0-29");
  EXPECT_FALSE(coordinator_->submit(alice, req).ok());
}

// Issue 19: a cost budget per caller. Each plan's time is charged to its caller, whatever came of
// it; once the budget is spent, the caller's next submit is refused saying when to try again,
// while other callers plan as before.
TEST_F(CoordinatorTest, PlanningTimeIsChargedToEachCallersBudget) {
  CoordinatorOptions o{kLeaseMs};
  o.plan_budget_ms = 1;  // every plan costs 1 ms at least: one plan, then a refusal
  o.plan_budget_window_ms = 3'600'000;
  coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, o);
  ASSERT_TRUE(coordinator_->load().ok());
  const Caller alice{"alice", Role::kSubmit, true}, bob{"bob", Role::kSubmit, true};
  v1::SubmitJobRequest req;
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  req.mutable_spec()->mutable_perft()->set_depth(3);
  req.mutable_spec()->mutable_perft()->set_start_positions("0-3");
  // A cancelled plan is charged too.
  EXPECT_EQ(coordinator_->submit(alice, req, [] { return true; }).status().code(), absl::StatusCode::kCancelled);
  const absl::Status refused = coordinator_->submit(alice, req).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kResourceExhausted) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "budget")) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "try again in")) << refused;
  EXPECT_TRUE(coordinator_->submit(bob, req).ok());
  EXPECT_EQ(coordinator_->submit(bob, req).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(CoordinatorTest, CompletionIsCountedOnceAndMismatchesAreRecorded) {
  const std::string w1 = hello("one"), w2 = hello("two");
  // Depth 5: deep enough that a wrong count passes the coordinator's own bounds.
  const v1::Job j = submit(5, "518", 0);
  std::vector<v1::Lease> l = acquire(w1, 1);
  ASSERT_EQ(l.size(), 1u);
  EXPECT_EQ(complete(w1, l[0]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(complete(w1, l[0]).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  // A worker that never held the unit may not complete it.
  absl::StatusOr<v1::CompletionOutcome> foreign = complete(w2, l[0]);
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(reason_of(foreign.status()), v1::ErrorInfo::REASON_NOT_LEASED);
  // The holder sending another answer is recorded, and quarantines it.
  v1::UnitResult wrong = *compute_unit(l[0].spec(), nullptr);
  wrong.mutable_perft()->mutable_nodes()->set_lo(wrong.perft().nodes().lo() + 1);
  wrong.mutable_perft()->mutable_divide(0)->mutable_nodes()->set_lo(wrong.perft().divide(0).nodes().lo() + 1);
  EXPECT_EQ(complete(w1, l[0], wrong).value(), v1::COMPLETION_OUTCOME_MISMATCH);
  const v1::Job done = job(j.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.result_mismatches(), 1);
  EXPECT_TRUE(absl::StrContains(done.mismatch_detail(), l[0].unit_id()));
  EXPECT_EQ(from_proto(done.progress().nodes_done()), NodeCount(4865609));
  EXPECT_EQ(done.progress().units_done(), 1);
  v1::AcquireWorkRequest a;
  a.set_worker_id(w1);
  a.set_max_units(1);
  EXPECT_EQ(reason_of(coordinator_->acquire(Caller::local(), a).status()), v1::ErrorInfo::REASON_QUARANTINED);
}

TEST_F(CoordinatorTest, LateCompletionFromAnExpiredLeaseIsAcceptedOnce) {
  const std::string w1 = hello("one"), w2 = hello("two");
  const v1::Job j = submit(2, "0", 0);
  std::vector<v1::Lease> l1 = acquire(w1, 1);
  clock_.advance_ms(kLeaseMs);
  coordinator_->sweep();
  std::vector<v1::Lease> l2 = acquire(w2, 1);
  ASSERT_EQ(l2.size(), 1u);
  EXPECT_EQ(l2[0].unit_id(), l1[0].unit_id());
  EXPECT_EQ(l2[0].attempt(), 2);
  EXPECT_EQ(complete(w1, l1[0]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(complete(w2, l2[0]).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  EXPECT_EQ(from_proto(job(j.id()).progress().nodes_done()), NodeCount(400));
  EXPECT_EQ(job(j.id()).progress().units_leased(), 0);
}

TEST_F(CoordinatorTest, ReleasedUnitsAreServedFirst) {
  const std::string w1 = hello("one"), w2 = hello("two");
  submit(2, "0-9", 0);
  std::vector<v1::Lease> l = acquire(w1, 3);
  v1::ReleaseUnitsRequest rel;
  rel.set_worker_id(w1);
  rel.add_unit_ids(l[1].unit_id());
  rel.add_unit_ids("job-77/0");  // unknown: ignored
  ASSERT_TRUE(coordinator_->release(Caller::local(), rel).ok());
  std::vector<v1::Lease> next = acquire(w2, 1);
  ASSERT_EQ(next.size(), 1u);
  EXPECT_EQ(next[0].unit_id(), l[1].unit_id());
  // Releasing someone else's unit does nothing.
  rel.clear_unit_ids();
  rel.add_unit_ids(l[0].unit_id());
  rel.set_worker_id(w2);
  ASSERT_TRUE(coordinator_->release(Caller::local(), rel).ok());
  EXPECT_NE(acquire(w2, 1)[0].unit_id(), l[0].unit_id());
}

// A worker that stops with an acquire in flight cannot know what that call granted: it releases
// everything it holds but what it is still finishing (release_all_others), and nobody else's.
TEST_F(CoordinatorTest, ReleaseAllOthersGivesBackUnitsTheWorkerNeverHeardOf) {
  const std::string w1 = hello("one"), w2 = hello("two");
  const v1::Job j = submit(2, "0-9", 0);
  const std::vector<v1::Lease> finishing = acquire(w1, 1), lost = acquire(w1, 3), other = acquire(w2, 2);
  ASSERT_EQ(lost.size(), 3u);
  ASSERT_EQ(other.size(), 2u);
  EXPECT_EQ(job(j.id()).progress().units_leased(), 6);
  v1::ReleaseUnitsRequest rel;
  rel.set_worker_id(w1);
  rel.add_keep_unit_ids(finishing[0].unit_id());
  EXPECT_EQ(coordinator_->release(Caller::local(), rel).code(),
            absl::StatusCode::kInvalidArgument);  // keep without all_others
  rel.set_release_all_others(true);
  rel.add_keep_unit_ids("job-1/x");
  EXPECT_EQ(coordinator_->release(Caller::local(), rel).code(), absl::StatusCode::kInvalidArgument);
  rel.mutable_keep_unit_ids()->RemoveLast();
  ASSERT_TRUE(coordinator_->release(Caller::local(), rel).ok());
  EXPECT_EQ(job(j.id()).progress().units_leased(), 3);  // the kept one and w2's two
  // The released ones are served first, to the other worker; the kept one still counts.
  std::vector<std::string> next;
  for (const v1::Lease& l : acquire(w2, 3)) next.push_back(l.unit_id());
  std::vector<std::string> want;
  for (const v1::Lease& l : lost) want.push_back(l.unit_id());
  std::sort(next.begin(), next.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(next, want);
  EXPECT_EQ(complete(w1, finishing[0]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
}

TEST_F(CoordinatorTest, AggregatesTotalsAndDivideLikeTheCore) {
  const std::string w = hello("one");
  for (int split : {0, 2}) {
    const v1::Job j = submit(4, "0,518,959", split);
    drain(w);
    ASSERT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
    auto chunks = coordinator_->results(Caller::local(), j.id(), true);
    ASSERT_TRUE(chunks.ok());
    ASSERT_EQ(chunks->size(), 3u);
    NodeCount sum = 0;
    for (const v1::ResultChunk& c : *chunks) {
      const v1::PerftRootResult& r = c.perft();
      EXPECT_TRUE(r.complete());
      Position pos = *Position::from_fen(r.fen());
      EXPECT_EQ(r.fen(), *startpos_fen(r.start_position()));
      EXPECT_EQ(from_proto(r.nodes()), NodeCount(perft(pos, 4)));
      std::map<std::string, NodeCount> expected, got;
      for (const DivideEntry& e : divide(pos, 4)) expected[to_uci(e.move)] = e.nodes;
      for (const v1::MoveCount& m : r.divide()) got[m.move()] = from_proto(m.nodes());
      EXPECT_EQ(got, expected) << "split " << split;
      sum += from_proto(r.nodes());
    }
    EXPECT_EQ(from_proto(job(j.id()).progress().nodes_done()), sum);
  }
}

TEST_F(CoordinatorTest, SameRequestIdReturnsTheSameJob) {
  const v1::Job a = submit(3, "0-9", 0, "req-1");
  const v1::Job b = submit(3, "0-9", 0, "req-1");
  EXPECT_EQ(a.id(), b.id());
  const v1::Job c = submit(3, "0-9", 0, "req-2");
  EXPECT_NE(a.id(), c.id());
  v1::SubmitJobRequest other;
  other.mutable_spec()->mutable_perft()->set_depth(4);
  other.set_request_id("req-1");
  EXPECT_EQ(coordinator_->submit(Caller::local(), other).status().code(), absl::StatusCode::kAlreadyExists);
  auto list = coordinator_->list_jobs(Caller::local(), page(0));
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->jobs_size(), 2);
}

// Request ids are per submitter (issue 19): another caller's id is neither seen nor taken;
// each caller's "req-1" is its own job, and a restart keeps them apart.
TEST_F(CoordinatorTest, RequestIdsArePerSubmitter) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/request-ids-", getpid(), ".db");
  std::filesystem::remove(path);
  open(path);
  const Caller alice{"alice", Role::kSubmit, true}, bob{"bob", Role::kSubmit, true};
  v1::SubmitJobRequest req;
  req.set_request_id("req-1");
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  req.mutable_spec()->mutable_perft()->set_depth(2);
  req.mutable_spec()->mutable_perft()->set_start_positions("518");
  absl::StatusOr<v1::Job> a = coordinator_->submit(alice, req);
  ASSERT_TRUE(a.ok()) << a.status();
  v1::SubmitJobRequest bobs = req;
  bobs.mutable_spec()->mutable_perft()->set_depth(3);  // another spec, the same id: bob's own
  absl::StatusOr<v1::Job> b = coordinator_->submit(bob, bobs);
  ASSERT_TRUE(b.ok()) << b.status();
  EXPECT_NE(a->id(), b->id());
  EXPECT_EQ(b->owner(), "bob");
  open(path);
  absl::StatusOr<v1::Job> a2 = coordinator_->submit(alice, req), b2 = coordinator_->submit(bob, bobs);
  ASSERT_TRUE(a2.ok() && b2.ok());
  EXPECT_EQ(a2->id(), a->id());
  EXPECT_EQ(b2->id(), b->id());
  std::filesystem::remove(path);
}

TEST_F(CoordinatorTest, CancelledJobsHandOutNothingAndDiscardResults) {
  const std::string w = hello("one");
  const v1::Job j = submit(3, "0-9", 0);
  std::vector<v1::Lease> l = acquire(w, 2);
  auto c = coordinator_->cancel(Caller::local(), j.id());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->state(), v1::JOB_STATE_CANCELLED);
  EXPECT_TRUE(acquire(w, 5).empty());
  EXPECT_EQ(complete(w, l[0]).value(), v1::COMPLETION_OUTCOME_DISCARDED);
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  EXPECT_EQ(coordinator_->cancel(Caller::local(), j.id())->state(), v1::JOB_STATE_CANCELLED);  // idempotent
}

TEST_F(CoordinatorTest, RestartResumesWithoutLosingOrRepeatingUnits) {
  const std::string path = ::testing::TempDir() + "/coordinator_test_restart.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  open(path);
  std::string w = hello("one");
  const v1::Job j = submit(4, "0-19", 1);
  const int64_t total = j.progress().units_total();
  std::set<std::string> completed;
  for (const v1::Lease& l : acquire(w, int(total / 2))) {
    ASSERT_EQ(complete(w, l).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
    completed.insert(l.unit_id());
  }
  std::vector<v1::Lease> held = acquire(w, 5);  // leased, never completed
  ASSERT_EQ(held.size(), 5u);
  open(path);  // a new coordinator on the same file
  v1::Job resumed = job(j.id());
  EXPECT_EQ(resumed.state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(resumed.progress().units_done(), int64_t(completed.size()));
  EXPECT_EQ(resumed.progress().units_total(), total);
  w = hello("one");  // the worker's session ended with the coordinator; it calls Hello again
  int64_t served = 0;
  for (std::vector<v1::Lease> ls; !(ls = acquire(w, 64)).empty();)
    for (const v1::Lease& l : ls) {
      EXPECT_FALSE(completed.count(l.unit_id())) << l.unit_id() << " handed out again";
      ASSERT_EQ(complete(w, l).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
      ++served;
    }
  EXPECT_EQ(served, total - int64_t(completed.size()));
  auto chunks = coordinator_->results(Caller::local(), j.id(), false);
  ASSERT_TRUE(chunks.ok());
  for (const v1::ResultChunk& c : *chunks) {
    Position pos = *Position::from_fen(c.perft().fen());
    EXPECT_EQ(from_proto(c.perft().nodes()), NodeCount(perft(pos, 4)));
  }
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  open(path);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job(j.id()).progress().units_done(), total);
}

TEST_F(CoordinatorTest, AJobWhoseUnitsAreMissingFromTheStoreIsRefusedLoudly) {
  const std::string path = ::testing::TempDir() + "/coordinator_test_damaged.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  open(path);
  const std::string w = hello("one");
  const v1::Job damaged = submit(2, "0-9", 0);
  const v1::Job intact = submit(2, "10-11", 0);
  for (std::vector<v1::Lease> ls; !(ls = acquire(w, 64)).empty();)
    for (const v1::Lease& l : ls) ASSERT_EQ(complete(w, l).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  ASSERT_EQ(job(damaged.id()).state(), v1::JOB_STATE_SUCCEEDED);
  ASSERT_TRUE(store_->exec_for_test("DELETE FROM units WHERE job_id = '" + damaged.id() + "' AND idx >= 3").ok());
  open(path);
  const v1::Job j = job(damaged.id());
  EXPECT_EQ(j.state(), v1::JOB_STATE_FAILED);
  EXPECT_NE(j.failure_detail().find("3 of its 10 units"), std::string::npos) << j.failure_detail();
  auto results = coordinator_->results(Caller::local(), damaged.id(), false);
  EXPECT_EQ(results.status().code(), absl::StatusCode::kDataLoss) << "results of a damaged job were served";
  // The other job is untouched, and the verdict survives another restart.
  EXPECT_EQ(job(intact.id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(coordinator_->results(Caller::local(), intact.id(), false).ok());
  open(path);
  EXPECT_EQ(job(damaged.id()).state(), v1::JOB_STATE_FAILED);
}

// Issue 19: a stored result swapped with another unit's valid result gave a silently wrong row.
// Every result is bound to its row (schema 8): moved there from another unit's row, with its
// binding or without, it is refused on load and the job fails as damaged, naming the unit.
TEST_F(CoordinatorTest, AResultMovedToAnotherUnitsRowIsRefused) {
  const std::string path = ::testing::TempDir() + "/coordinator_test_bound.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  open(path);
  const std::string w = hello("one");
  const v1::Job settled = submit(2, "0-9", 0);
  const v1::Job copied = submit(2, "10-19", 0);
  const v1::Job intact = submit(2, "20-21", 0);
  for (std::vector<v1::Lease> ls; !(ls = acquire(w, 64)).empty();)
    for (const v1::Lease& l : ls) ASSERT_EQ(complete(w, l).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  ASSERT_EQ(job(settled.id()).state(), v1::JOB_STATE_SUCCEEDED);
  // Unit 1's settled result (and its binding) in unit 0's row; a copy's the same way.
  const auto move = [&](const std::string& table, const std::string& job_id, const std::string& from,
                        const std::string& to) {
    const std::string where = " WHERE job_id = '" + job_id + "' AND ";
    ASSERT_TRUE(store_
                    ->exec_for_test("UPDATE " + table + " SET result = (SELECT result FROM " + table + where + from +
                                    "), bound = (SELECT bound FROM " + table + where + from + ")" + where + to)
                    .ok());
  };
  move("units", settled.id(), "idx = 1", "idx = 0");
  move("copies", copied.id(), "idx = 3 AND copy = 0", "idx = 2 AND copy = 0");
  open(path);
  const v1::Job a = job(settled.id()), b = job(copied.id());
  EXPECT_EQ(a.state(), v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(a.failure_detail(), "unit 0's result is not bound to it")) << a.failure_detail();
  EXPECT_EQ(coordinator_->results(Caller::local(), settled.id(), false).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_EQ(b.state(), v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(b.failure_detail(), "unit 2 copy 0: its result is not bound to it"))
      << b.failure_detail();
  EXPECT_EQ(job(intact.id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_TRUE(coordinator_->results(Caller::local(), intact.id(), false).ok());
  // The store's own read of a settled result (taking a unit back) refuses it too.
  EXPECT_EQ(store_->unit_result(settled.id(), 0).status().code(), absl::StatusCode::kDataLoss);
  EXPECT_TRUE(store_->unit_result(settled.id(), 1).ok());
}

TEST_F(CoordinatorTest, ASubmitCutOffWhileStoringItsPlanIsDroppedOnRestart) {
  const std::string path = ::testing::TempDir() + "/coordinator_test_cut.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  open(path);
  const v1::Job j = submit(2, "0-9", 0, "req-1");
  // As if the process died between two batches of a big plan.
  ASSERT_TRUE(store_->exec_for_test("UPDATE jobs SET planned = 0 WHERE id = '" + j.id() + "'").ok());
  ASSERT_TRUE(store_->exec_for_test("DELETE FROM units WHERE idx >= 5").ok());
  open(path);
  EXPECT_EQ(coordinator_->get_job(Caller::local(), j.id()).status().code(), absl::StatusCode::kNotFound);
  // The client's retry with the same request id plans it again, under a new id.
  const v1::Job again = submit(2, "0-9", 0, "req-1");
  EXPECT_NE(again.id(), j.id());
  EXPECT_EQ(again.progress().units_total(), 10);
}

TEST_F(CoordinatorTest, InvalidRequestsGetTheRightCodes) {
  const std::string w = hello("one");
  const v1::Job j = submit(2, "0", 0);
  std::vector<v1::Lease> l = acquire(w, 1);
  using C = absl::StatusCode;
  EXPECT_EQ(coordinator_->get_job(Caller::local(), "job-999").status().code(), C::kNotFound);
  EXPECT_EQ(coordinator_->get_job(Caller::local(), "").status().code(), C::kInvalidArgument);
  EXPECT_EQ(coordinator_->get_job(Caller::local(), "a/b").status().code(), C::kInvalidArgument);
  EXPECT_EQ(coordinator_->get_job(Caller::local(), std::string(200, 'a')).status().code(), C::kInvalidArgument);
  EXPECT_EQ(coordinator_->cancel(Caller::local(), "job-999").status().code(), C::kNotFound);
  EXPECT_EQ(coordinator_->results(Caller::local(), "job-999", false).status().code(), C::kNotFound);
  EXPECT_EQ(coordinator_->list_jobs(Caller::local(), page(-1)).status().code(), C::kInvalidArgument);
  EXPECT_EQ(coordinator_->list_jobs(Caller::local(), page(kMaxPageSize + 1)).status().code(), C::kInvalidArgument);
  EXPECT_EQ(coordinator_->submit(Caller::local(), v1::SubmitJobRequest()).status().code(), C::kInvalidArgument);
  v1::SubmitJobRequest bad_id;
  bad_id.mutable_spec()->mutable_perft()->set_depth(1);
  bad_id.set_request_id(std::string(kMaxRequestIdLength + 1, 'x'));
  EXPECT_EQ(coordinator_->submit(Caller::local(), bad_id).status().code(), C::kInvalidArgument);
  bad_id.set_request_id("tab\there");
  EXPECT_EQ(coordinator_->submit(Caller::local(), bad_id).status().code(), C::kInvalidArgument);

  v1::HelloRequest h;
  h.set_protocol_version(kProtocolVersion);
  h.set_threads(0);
  EXPECT_EQ(coordinator_->hello(Caller::local(), h).status().code(), C::kInvalidArgument);
  h.set_threads(1);
  h.set_name(std::string(kMaxNameLength + 1, 'n'));
  EXPECT_EQ(coordinator_->hello(Caller::local(), h).status().code(), C::kInvalidArgument);
  h.set_name("ok");
  h.add_capabilities("bad capability");
  EXPECT_EQ(coordinator_->hello(Caller::local(), h).status().code(), C::kInvalidArgument);

  v1::AcquireWorkRequest a;
  a.set_worker_id("w-999");
  a.set_max_units(1);
  EXPECT_EQ(coordinator_->acquire(Caller::local(), a).status().code(), C::kNotFound);
  a.set_worker_id(w);
  a.set_max_units(0);
  EXPECT_EQ(coordinator_->acquire(Caller::local(), a).status().code(), C::kInvalidArgument);
  a.set_max_units(kMaxAcquire + 1);
  EXPECT_EQ(coordinator_->acquire(Caller::local(), a).status().code(), C::kInvalidArgument);

  v1::CompleteUnitRequest c;
  c.set_worker_id(w);
  c.set_attempt(1);
  *c.mutable_result() = *compute_unit(l[0].spec(), nullptr);
  for (const char* id : {"", "job-1", "job-1/x", "job-1/-1", "/3", "job 1/0"}) {
    c.set_unit_id(id);
    EXPECT_EQ(coordinator_->complete(Caller::local(), c).status().code(), C::kInvalidArgument) << id;
  }
  c.set_unit_id("job-999/0");
  EXPECT_EQ(coordinator_->complete(Caller::local(), c).status().code(), C::kNotFound);
  c.set_unit_id(j.id() + "/5");
  EXPECT_EQ(coordinator_->complete(Caller::local(), c).status().code(), C::kNotFound);
  c.set_unit_id(l[0].unit_id());
  c.set_attempt(0);
  EXPECT_EQ(coordinator_->complete(Caller::local(), c).status().code(), C::kInvalidArgument);
  c.set_attempt(1);
  c.set_worker_id("w-999");
  EXPECT_EQ(coordinator_->complete(Caller::local(), c).status().code(), C::kNotFound);
  c.set_worker_id(w);
  v1::CompleteUnitRequest no_result = c;
  no_result.clear_result();
  EXPECT_EQ(coordinator_->complete(Caller::local(), no_result).status().code(), C::kInvalidArgument);
  // None of the refused calls changed anything.
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  EXPECT_EQ(coordinator_->complete(Caller::local(), c)->outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  // A result that cannot be right is refused, and its sender quarantined.
  const std::string w2 = hello("two");
  const v1::Job j2 = submit(2, "1", 0);
  std::vector<v1::Lease> l2 = acquire(w2, 1);
  ASSERT_EQ(l2.size(), 1u);
  v1::CompleteUnitRequest bad_divide = c;
  bad_divide.set_worker_id(w2);
  bad_divide.set_unit_id(l2[0].unit_id());
  *bad_divide.mutable_result() = *compute_unit(l2[0].spec(), nullptr);
  bad_divide.mutable_result()->mutable_perft()->mutable_divide(0)->set_move("a1a1");
  EXPECT_EQ(coordinator_->complete(Caller::local(), bad_divide).status().code(), C::kInvalidArgument);
  EXPECT_EQ(job(j2.id()).progress().units_done(), 0);
  a.set_worker_id(w2);
  a.set_max_units(1);
  EXPECT_EQ(coordinator_->acquire(Caller::local(), a).status().code(), C::kPermissionDenied);

  v1::RenewLeasesRequest r;
  r.set_worker_id(w);
  r.add_unit_ids("nonsense");
  EXPECT_EQ(coordinator_->renew(Caller::local(), r).status().code(), C::kInvalidArgument);
  r.clear_unit_ids();
  for (int i = 0; i <= kMaxUnitIdsPerCall; ++i) r.add_unit_ids(j.id() + "/0");
  EXPECT_EQ(coordinator_->renew(Caller::local(), r).status().code(), C::kInvalidArgument);
  v1::ReleaseUnitsRequest rel;
  rel.set_worker_id("w-999");
  EXPECT_EQ(coordinator_->release(Caller::local(), rel).code(), C::kNotFound);
}

TEST(PerftKindTest, TotalsPast2To64AggregateExactly) {
  std::unique_ptr<JobKind> kind = make_perft_kind();
  v1::store::JobPlan plan;
  plan.mutable_perft()->set_depth(12);
  plan.mutable_perft()->set_split_depth(1);
  plan.mutable_perft()->add_roots()->set_fen(*startpos_fen(518));
  const uint64_t big = ~uint64_t(0) - 5;  // a unit count just below 2^64
  v1::UnitSpec spec;
  spec.mutable_perft()->set_depth(11);
  std::vector<v1::store::UnitMeta> metas(2);
  std::vector<v1::UnitResult> results(2);
  for (int i = 0; i < 2; ++i) {
    v1::store::MoveWeight* w = metas[i].mutable_perft()->add_weights();
    w->set_move(i == 0 ? "e2e4" : "d2d4");
    w->set_count(3);
    to_proto(NodeCount(big), results[i].mutable_perft()->mutable_nodes());
  }
  std::vector<UnitView> views = {{&spec, &metas[0], &results[0]}, {&spec, &metas[1], &results[1]}};
  std::vector<v1::ResultChunk> out = kind->results(plan, views, true, false);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(from_proto(out[0].perft().nodes()), NodeCount(big) * 6);
  EXPECT_EQ(to_string(from_proto(out[0].perft().nodes())), "110680464442257309660");
  ASSERT_EQ(out[0].perft().divide_size(), 2);
  EXPECT_EQ(from_proto(out[0].perft().divide(1).nodes()), NodeCount(big) * 3);
  EXPECT_EQ(kind->work(spec, metas[0], results[0]), NodeCount(big) * 3);
  // Through the wire format and back.
  v1::UInt128 wire;
  ASSERT_TRUE(wire.ParseFromString(out[0].perft().nodes().SerializeAsString()));
  EXPECT_EQ(from_proto(wire), NodeCount(big) * 6);
}

// Without a seed (a daemon), session ids come from OpenSSL's generator: 128 bits as 32 hex
// digits, none repeated (each Hello of the worker replaces its session).
TEST_F(CoordinatorTest, UnseededSessionIdsAreRandomAndDistinct) {
  CoordinatorOptions o;
  o.waiter_thread = false;
  Coordinator c(store_.get(), &clock_, o);
  ASSERT_TRUE(c.load().ok());
  std::set<std::string> ids;
  for (int k = 0; k < 200; ++k) {
    absl::StatusOr<v1::HelloResponse> r = c.hello(Caller::local(), hello_request("w", hello_options_));
    ASSERT_TRUE(r.ok()) << r.status();
    const std::string& id = r->worker_id();
    ASSERT_EQ(id.size(), 34u) << id;
    EXPECT_TRUE(absl::StartsWith(id, "s-")) << id;
    EXPECT_EQ(id.find_first_not_of("0123456789abcdef", 2), std::string::npos) << id;
    ids.insert(id);
  }
  EXPECT_EQ(ids.size(), 200u);
}

}  // namespace
}  // namespace c960::cluster
