// Lazily planned perft jobs: roots expanded into units as workers need them. Their totals equal
// the eager plan's and the published table, and a coordinator restart in the middle of one
// loses nothing and counts nothing twice.
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "cluster/u128.h"
#include "coordinator/clock.h"
#include "coordinator/coordinator.h"
#include "coordinator/planner.h"
#include "tests/cluster/reference.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

// Every unit lazily planned, one root per refill.
CoordinatorOptions tiny_window() {
  CoordinatorOptions o;
  o.lease_ms = 30'000;
  o.lazy_plan_walk = 0;
  o.lazy_window_units = 1;
  o.lazy_low_water_units = 1;
  return o;
}

class LazyPlanTest : public ::testing::Test {
 protected:
  void open(const std::string& path, CoordinatorOptions options) {
    coordinator_.reset();
    store_.reset();
    auto s = Store::open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, options);
    ASSERT_TRUE(coordinator_->load().ok());
    v1::HelloRequest req;
    req.set_name("w");
    req.set_threads(1);
    req.add_capabilities("perft");
    req.set_protocol_version(kProtocolVersion);
    auto r = coordinator_->hello(Caller::local(), req);
    ASSERT_TRUE(r.ok()) << r.status();
    worker_ = r->worker_id();
  }

  v1::Job submit(int depth, const std::string& sps, int split) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(split);
    auto j = coordinator_->submit(Caller::local(), req);
    EXPECT_TRUE(j.ok()) << j.status();
    return j.ok() ? *j : v1::Job();
  }

  bool running(const std::string& job) {
    auto j = coordinator_->get_job(Caller::local(), job);
    return j.ok() && j->state() == v1::JOB_STATE_RUNNING;
  }

  // Leases and completes up to `limit` units of a running job; returns how many were completed.
  // Acquires wait for units (the next roots are expanded by the coordinator's own thread).
  int64_t work(const std::string& job, int64_t limit, std::vector<v1::CompleteUnitRequest>* sent = nullptr) {
    int64_t n = 0;
    while (n < limit && running(job)) {
      v1::AcquireWorkRequest areq;
      areq.set_worker_id(worker_);
      areq.set_max_units(int(std::min<int64_t>(limit - n, 7)));
      areq.set_wait_seconds(5);
      auto leases = coordinator_->acquire(Caller::local(), areq);
      EXPECT_TRUE(leases.ok()) << leases.status();
      if (!leases.ok() || leases->leases_size() == 0) break;
      for (const v1::Lease& l : leases->leases()) {
        v1::CompleteUnitRequest c;
        c.set_worker_id(worker_);
        c.set_unit_id(l.unit_id());
        c.set_attempt(l.attempt());
        *c.mutable_result() = *compute_unit(l.spec(), nullptr);
        auto r = coordinator_->complete(Caller::local(), c);
        EXPECT_TRUE(r.ok()) << r.status();
        EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
        if (sent) sent->push_back(c);
        ++n;
      }
    }
    return n;
  }

  std::vector<v1::ResultChunk> results(const std::string& job, bool divide = false) {
    auto r = coordinator_->results(Caller::local(), job, divide);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : std::vector<v1::ResultChunk>();
  }

  FakeClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::string worker_;
};

TEST(LazyPlanner, RootExpansionsMakeTheEagerPlan) {
  v1::PerftJobSpec spec;
  spec.set_depth(5);
  spec.set_start_positions("0,518,959");
  spec.set_split_depth(3);
  auto eager = plan_perft(spec);
  auto roots = plan_perft_roots(spec);
  ASSERT_TRUE(eager.ok() && roots.ok());
  std::vector<PlannedPerftUnit> lazy;
  for (size_t i = 0; i < roots->roots.size(); ++i)
    for (PlannedPerftUnit& u : expand_perft_root(roots->roots[i], int(i), 5, 3)) lazy.push_back(std::move(u));
  ASSERT_EQ(lazy.size(), eager->units.size());
  for (size_t k = 0; k < lazy.size(); ++k) {
    EXPECT_EQ(lazy[k].fen, eager->units[k].fen);
    EXPECT_EQ(lazy[k].weights, eager->units[k].weights);
    // The estimate is of the right order: perft(2) exactly, within a factor of 4 here.
    const uint64_t exact = uint64_t(perft(*Position::from_fen(lazy[k].fen), 2));
    EXPECT_GT(lazy[k].estimated_nodes, exact / 4);
    EXPECT_LT(lazy[k].estimated_nodes, exact * 4);
  }
}

TEST(LazyPlanner, OneRootsWalkIsBounded) {
  v1::PerftJobSpec spec;
  spec.set_depth(12);
  spec.set_split_depth(6);
  spec.set_start_positions("518");
  EXPECT_EQ(plan_perft_roots(spec).status().code(), absl::StatusCode::kResourceExhausted);
  spec.set_depth(10);
  spec.clear_split_depth();
  spec.clear_start_positions();  // perft(10) of all 960: accepted
  auto p = plan_perft_roots(spec);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->roots.size(), 960u);
  EXPECT_EQ(p->split_depth, 3);
}

TEST_F(LazyPlanTest, TotalsEqualTheEagerPlanAndThePublishedTable) {
  open(":memory:", tiny_window());
  const v1::Job lazy = submit(4, "0-5,518", 2);
  EXPECT_EQ(lazy.state(), v1::JOB_STATE_RUNNING);
  // Only the first root is expanded at submit.
  EXPECT_LT(lazy.progress().units_total(), 500);
  work(lazy.id(), 1'000'000);
  auto done = coordinator_->get_job(Caller::local(), lazy.id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
  const std::vector<v1::ResultChunk> lazy_results = results(lazy.id(), true);

  open(":memory:", CoordinatorOptions{30'000});  // eager
  const v1::Job eager = submit(4, "0-5,518", 2);
  EXPECT_EQ(eager.progress().units_total(), done->progress().units_total());
  work(eager.id(), 1'000'000);
  const std::vector<v1::ResultChunk> eager_results = results(eager.id(), true);
  ASSERT_EQ(lazy_results.size(), 7u);
  ASSERT_EQ(eager_results.size(), 7u);
  for (size_t i = 0; i < 7; ++i) {
    const v1::PerftRootResult& l = lazy_results[i].perft();
    EXPECT_TRUE(l.complete());
    EXPECT_EQ(l.SerializeAsString(), eager_results[i].perft().SerializeAsString());
    EXPECT_EQ(from_proto(l.nodes()), NodeCount(test::reference().at(l.start_position())[4])) << l.start_position();
  }
}

TEST_F(LazyPlanTest, RestartInTheMiddleLosesNothingAndCountsNothingTwice) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/lazy-", ::testing::UnitTest::GetInstance()->random_seed(), ".db");
  std::filesystem::remove(path);
  open(path, tiny_window());
  const v1::Job job = submit(4, "100-103", 2);
  std::vector<v1::CompleteUnitRequest> sent;
  ASSERT_EQ(work(job.id(), 700, &sent), 700);  // some roots done, one in the middle, others not expanded
  auto before = coordinator_->get_job(Caller::local(), job.id());
  ASSERT_TRUE(before.ok());
  EXPECT_EQ(before->progress().units_done(), 700);

  open(path, tiny_window());  // a restart
  auto after = coordinator_->get_job(Caller::local(), job.id());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->progress().units_done(), 700);
  EXPECT_EQ(after->progress().units_total(), before->progress().units_total());
  // Results sent before the restart, sent again: counted once.
  open(path, tiny_window());
  for (v1::CompleteUnitRequest c : {sent.front(), sent.back()}) {
    c.set_worker_id(worker_);
    // The new session is the same worker (same name), which holds the copies.
    auto r = coordinator_->complete(Caller::local(), c);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_DUPLICATE);
  }
  work(job.id(), 1'000'000);
  auto done = coordinator_->get_job(Caller::local(), job.id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_GT(done->progress().units_total(), before->progress().units_total());  // roots were left to expand
  for (const v1::ResultChunk& c : results(job.id())) {
    EXPECT_TRUE(c.perft().complete());
    EXPECT_EQ(from_proto(c.perft().nodes()), NodeCount(test::reference().at(c.perft().start_position())[4]));
  }
  coordinator_.reset();
  store_.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace c960::cluster
