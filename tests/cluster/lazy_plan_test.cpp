// Lazily planned perft jobs: roots expanded into units as workers need them. Their totals equal
// the eager plan's and the published table, and a coordinator restart in the middle of one
// loses nothing and counts nothing twice.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cluster/u128.h"
#include "coordinator/clock.h"
#include "coordinator/coordinator.h"
#include "coordinator/planner.h"
#include "tests/cluster/coordinator_fixture.h"
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

class LazyPlanTest : public CoordinatorFixture {
 protected:
  void SetUp() override {}  // each test opens its store
  // A store at `path`, a coordinator with `options` over it, and a session for `worker`.
  void open(const std::string& path, CoordinatorOptions options, const std::string& worker = "w") {
    open_store(path);
    CoordinatorFixture::open(options);
    worker_ = hello(worker);
  }

  int64_t unit_rows(const std::string& job) {
    auto n = store_->unit_rows(job);
    EXPECT_TRUE(n.ok()) << n.status();
    return n.ok() ? *n : -1;
  }

  v1::Job submit(int depth, const std::string& sps, int split) {
    return CoordinatorFixture::submit(perft_request(v1::VERIFY_MODE_OFF, depth, sps, split));
  }

  bool running(const std::string& job) {
    auto j = coordinator_->get_job(Caller::local(), job);
    return j.ok() && j->state() == v1::JOB_STATE_RUNNING;
  }

  // Leases and completes up to `limit` units of a running job; returns how many were completed.
  // Acquires wait for units (the next roots are expanded by the coordinator's own thread).
  // wait_seconds 0: returns as soon as nothing is there for this worker.
  int64_t work(const std::string& job, int64_t limit, std::vector<v1::CompleteUnitRequest>* sent = nullptr,
               std::string worker = "", int wait_seconds = 5) {
    if (worker.empty()) worker = worker_;
    int64_t n = 0;
    while (n < limit && running(job)) {
      v1::AcquireWorkRequest areq;
      areq.set_worker_id(worker);
      areq.set_max_units(int(std::min<int64_t>(limit - n, 7)));
      areq.set_wait_seconds(wait_seconds);
      auto leases = coordinator_->acquire(Caller::local(), areq);
      EXPECT_TRUE(leases.ok()) << leases.status();
      if (!leases.ok() || leases->leases_size() == 0) break;
      for (const v1::Lease& l : leases->leases()) {
        v1::CompleteUnitRequest c;
        c.set_worker_id(worker);
        c.set_unit_id(l.unit_id());
        c.set_attempt(l.attempt());
        *c.mutable_result() = *compute_unit(l.spec(), nullptr);
        auto r = coordinator_->complete(Caller::local(), c);
        EXPECT_TRUE(r.ok()) << r.status();
        // A unit that wants a second result waits for it (units taken back from a quarantined worker).
        if (!(pending_ok_ && r->outcome() == v1::COMPLETION_OUTCOME_PENDING_VERIFICATION)) {
          EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
        }
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

  bool pending_ok_ = false;
  std::string worker_;
};

// Units of each root of perft(depth) of `sps` split at `split`, as the lazy plan expands them.
std::vector<int64_t> units_per_root(int depth, const std::string& sps, int split) {
  v1::PerftJobSpec spec;
  spec.set_depth(depth);
  spec.set_start_positions(sps);
  spec.set_split_depth(split);
  auto roots = plan_perft_roots(spec);
  EXPECT_TRUE(roots.ok()) << roots.status();
  std::vector<int64_t> out;
  if (!roots.ok()) return out;
  for (size_t i = 0; i < roots->roots.size(); ++i)
    out.push_back(int64_t(expand_perft_root(roots->roots[i], int(i), depth, split).size()));
  return out;
}

void expect_table(const std::vector<v1::ResultChunk>& results, int depth, size_t roots) {
  ASSERT_EQ(results.size(), roots);
  for (const v1::ResultChunk& c : results) {
    const v1::PerftRootResult& r = c.perft();
    EXPECT_TRUE(r.complete()) << r.start_position();
    EXPECT_EQ(from_proto(r.nodes()), NodeCount(test::reference().at(r.start_position())[depth])) << r.start_position();
    NodeCount sum = 0;
    for (const v1::MoveCount& m : r.divide()) sum += from_proto(m.nodes());
    if (r.divide_size() > 0) {
      EXPECT_EQ(sum, from_proto(r.nodes())) << r.start_position();
    }
  }
}

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
  EXPECT_EQ(p->split_depth, 1);
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
  const int64_t rows = unit_rows(job.id());
  EXPECT_LT(rows, before->progress().units_total());  // a root was folded

  open(path, tiny_window());  // a restart
  auto after = coordinator_->get_job(Caller::local(), job.id());
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->progress().units_done(), 700);
  EXPECT_EQ(after->progress().units_total(), before->progress().units_total());
  EXPECT_EQ(from_proto(after->progress().nodes_done()), from_proto(before->progress().nodes_done()));
  EXPECT_EQ(unit_rows(job.id()), rows);
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
  expect_table(results(job.id(), true), 4, 4);
  EXPECT_EQ(unit_rows(job.id()), 0);
  coordinator_.reset();
  store_.reset();
  std::filesystem::remove(path);
}

TEST_F(LazyPlanTest, FinishedRootsAreFoldedSoTheStoreHoldsOnlyTheWindow) {
  open(":memory:", tiny_window());
  const std::vector<int64_t> per_root = units_per_root(4, "0-9", 2);
  std::vector<int64_t> sorted = per_root;
  std::sort(sorted.rbegin(), sorted.rend());
  // One root per window: the root being finished and the next one, at most.
  const int64_t bound = sorted[0] + sorted[1];
  int64_t planned = 0;
  for (int64_t n : per_root) planned += n;
  ASSERT_GT(planned, 3 * bound);  // so that a store keeping every unit would pass the bound
  const v1::Job j = submit(4, "0-9", 2);
  int64_t most = 0;
  while (running(j.id())) {
    ASSERT_GT(work(j.id(), 40), 0);
    most = std::max(most, unit_rows(j.id()));
    ASSERT_LE(unit_rows(j.id()), bound);
    const v1::Job now = job(j.id());
    EXPECT_LE(now.progress().units_done(), now.progress().units_total());
  }
  EXPECT_GT(most, 0);
  const v1::Job done = job(j.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.progress().units_total(), planned);
  EXPECT_EQ(done.progress().units_done(), planned);
  EXPECT_EQ(unit_rows(j.id()), 0);  // every root folded
  NodeCount total = 0;
  for (int sp = 0; sp <= 9; ++sp) total += NodeCount(test::reference().at(sp)[4]);
  EXPECT_EQ(from_proto(done.progress().nodes_done()), total);
  expect_table(results(j.id(), true), 4, 10);
  expect_table(results(j.id(), false), 4, 10);
}

// An eager plan keeps its units while it runs and for a lease period after (a late copy is
// still compared: a worker contradicting itself is caught), then only its roots' totals: the
// finished job takes no unit rows, and a restart reloads none.
TEST_F(LazyPlanTest, AFinishedEagerJobKeepsOnlyItsRootsTotals) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/eager-", ::testing::UnitTest::GetInstance()->random_seed(), ".db");
  std::filesystem::remove(path);
  CoordinatorOptions eager;
  eager.lease_ms = 30'000;
  open(path, eager);
  const v1::Job j = submit(5, "0-3", 1);
  const int64_t units = j.progress().units_total();
  std::vector<v1::CompleteUnitRequest> sent;
  ASSERT_EQ(work(j.id(), units, &sent), units);
  ASSERT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  const std::vector<v1::ResultChunk> before = results(j.id(), true);
  expect_table(before, 5, 4);
  coordinator_->sweep();
  EXPECT_EQ(unit_rows(j.id()), units);  // within the lease period: every unit is there
  // Its worker sending another count for a unit now is a recorded mismatch (perft 4: past the
  // exact check).
  v1::CompleteUnitRequest wrong = sent.front();
  to_proto(from_proto(wrong.result().perft().nodes()) + 1, wrong.mutable_result()->mutable_perft()->mutable_nodes());
  auto r = coordinator_->complete(Caller::local(), wrong);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_MISMATCH);

  clock_.advance_ms(eager.lease_ms + 1);
  coordinator_->sweep();
  EXPECT_EQ(unit_rows(j.id()), 0);  // folded: four roots' totals
  const v1::Job folded = job(j.id());
  EXPECT_EQ(folded.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(folded.progress().units_done(), units);
  EXPECT_EQ(folded.progress().units_total(), units);
  EXPECT_EQ(folded.result_mismatches(), 1);
  for (bool divide : {true, false}) {
    const std::vector<v1::ResultChunk> now = results(j.id(), divide);
    ASSERT_EQ(now.size(), before.size());
    for (size_t i = 0; i < now.size(); ++i) {
      v1::PerftRootResult want = before[i].perft();
      if (!divide) want.clear_divide();
      EXPECT_EQ(now[i].perft().SerializeAsString(), want.SerializeAsString()) << i;
    }
  }
  open(path, eager, "w2");  // a restart: nothing of its units comes back
  EXPECT_EQ(job(j.id()).progress().units_done(), units);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  expect_table(results(j.id(), true), 5, 4);
  std::filesystem::remove(path);
}

TEST_F(LazyPlanTest, ALateCompletionOfAFoldedUnitChangesNothing) {
  open(":memory:", tiny_window());
  const std::vector<int64_t> per_root = units_per_root(4, "0-3", 2);
  const v1::Job j = submit(4, "0-3", 2);
  std::vector<v1::CompleteUnitRequest> sent;
  ASSERT_EQ(work(j.id(), per_root[0], &sent), per_root[0]);                          // exactly the first root
  EXPECT_EQ(unit_rows(j.id()), job(j.id()).progress().units_total() - per_root[0]);  // it folded
  const v1::Job before = job(j.id());
  const std::string other = hello("other");
  for (const std::string& worker : {worker_, other}) {
    // A wrong count for a folded unit, from its worker and from one that never held it: taken
    // as a settled unit's copy, never counted.
    v1::CompleteUnitRequest late = sent.front();
    late.set_worker_id(worker);
    to_proto(from_proto(late.result().perft().nodes()) + 1, late.mutable_result()->mutable_perft()->mutable_nodes());
    auto r = coordinator_->complete(Caller::local(), late);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_DUPLICATE);
    v1::CompleteUnitRequest failed = sent.back();
    failed.set_worker_id(worker);
    failed.clear_result();
    failed.set_failure("out of memory");
    r = coordinator_->complete(Caller::local(), failed);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_DISCARDED);
    v1::CompleteUnitsRequest batch;
    batch.set_worker_id(worker);
    *batch.add_completions() = late;
    auto rs = coordinator_->complete_units(Caller::local(), batch);
    ASSERT_TRUE(rs.ok()) << rs.status();
    EXPECT_EQ(rs->statuses(0).outcome(), v1::COMPLETION_OUTCOME_DUPLICATE);
    v1::RenewLeasesRequest renew;
    renew.set_worker_id(worker);
    renew.add_unit_ids(sent.front().unit_id());
    auto rn = coordinator_->renew(Caller::local(), renew);
    ASSERT_TRUE(rn.ok()) << rn.status();
    EXPECT_EQ(rn->renewals(0).status(), v1::LEASE_STATUS_COMPLETED);
    v1::ReleaseUnitsRequest release;
    release.set_worker_id(worker);
    release.add_unit_ids(sent.front().unit_id());
    EXPECT_TRUE(coordinator_->release(Caller::local(), release).ok());
  }
  // A unit the plan never gave out is still unknown.
  v1::CompleteUnitRequest unknown = sent.front();
  unknown.set_unit_id(absl::StrCat(j.id(), "/", before.progress().units_total() + 1000));
  EXPECT_EQ(coordinator_->complete(Caller::local(), unknown).status().code(), absl::StatusCode::kNotFound);
  const v1::Job after = job(j.id());
  EXPECT_EQ(after.progress().units_done(), before.progress().units_done());
  EXPECT_EQ(from_proto(after.progress().nodes_done()), from_proto(before.progress().nodes_done()));
  EXPECT_EQ(after.result_mismatches(), 0);
  work(j.id(), 1'000'000);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  expect_table(results(j.id(), true), 4, 4);
}

TEST_F(LazyPlanTest, AFoldedRootOnAQuarantinedWorkersWordIsComputedAgain) {
  const std::string path =
      absl::StrCat(::testing::TempDir(), "/lazy-q-", ::testing::UnitTest::GetInstance()->random_seed(), ".db");
  std::filesystem::remove(path);
  open(path, tiny_window());
  const std::vector<int64_t> per_root = units_per_root(4, "0-2", 2);
  const v1::Job j = submit(4, "0-2", 2);
  // Verify off: every result stands on its worker's word alone.
  ASSERT_EQ(work(j.id(), per_root[0] + 10), per_root[0] + 10);
  const v1::Job before = job(j.id());
  EXPECT_EQ(before.progress().units_done(), per_root[0] + 10);
  EXPECT_LT(unit_rows(j.id()), before.progress().units_total());  // the first root folded
  // The worker sends an impossible count: quarantined, and everything it settled is taken back,
  // the folded root too.
  v1::AcquireWorkRequest areq;
  areq.set_worker_id(worker_);
  areq.set_max_units(1);
  auto lease = coordinator_->acquire(Caller::local(), areq);
  ASSERT_TRUE(lease.ok() && lease->leases_size() == 1);
  v1::CompleteUnitRequest lie;
  lie.set_worker_id(worker_);
  lie.set_unit_id(lease->leases(0).unit_id());
  lie.set_attempt(lease->leases(0).attempt());
  *lie.mutable_result() = *compute_unit(lease->leases(0).spec(), nullptr);
  to_proto(from_proto(lie.result().perft().nodes()) + 1, lie.mutable_result()->mutable_perft()->mutable_nodes());
  EXPECT_EQ(coordinator_->complete(Caller::local(), lie).status().code(), absl::StatusCode::kInvalidArgument);
  const v1::Job taken_back = job(j.id());
  EXPECT_EQ(taken_back.progress().units_done(), 0);
  EXPECT_EQ(from_proto(taken_back.progress().nodes_done()), NodeCount(0));
  EXPECT_EQ(taken_back.progress().units_total(), before.progress().units_total());
  // Two other workers compute it all (the units taken back want two results), with a restart
  // in the middle.
  pending_ok_ = true;
  auto both = [&](int64_t limit) {
    const std::string a = hello("honest-a"), b = hello("honest-b");
    int64_t n = 0;
    for (int idle = 0; n < limit && running(j.id()) && idle < 500;) {
      const int64_t k = work(j.id(), limit - n, nullptr, a, 0) + work(j.id(), limit - n, nullptr, b, 0);
      n += k;
      idle = k ? 0 : idle + 1;
      if (!k) std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the next root is expanded
    }
  };
  both(per_root[0] + 5);
  open(path, tiny_window(), "honest-a");  // "w" is quarantined: its Hello is refused
  both(1'000'000);
  const v1::Job done = job(j.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(done.progress().units_done(), done.progress().units_total());
  int64_t planned = 0;
  for (int64_t n : per_root) planned += n;
  EXPECT_EQ(done.progress().units_total(), planned);
  expect_table(results(j.id(), true), 4, 3);
  open(path, tiny_window(), "honest-a");  // and as loaded from the store
  EXPECT_EQ(job(j.id()).progress().units_total(), planned);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  expect_table(results(j.id(), true), 4, 3);
  coordinator_.reset();
  store_.reset();
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace c960::cluster
