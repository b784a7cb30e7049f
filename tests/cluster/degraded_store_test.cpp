// A store that fails (issue 35): a job failed by failure reports is FAILED in the store before
// it is in memory; a store that refuses every write puts the coordinator in degraded mode (writes
// refused with UNAVAILABLE and a retry delay, reads served, no reload per retry, resumed by a
// probe); a completion the store refuses for itself is refused alone and its batch proceeds.
#include <unistd.h>

#include <filesystem>
#include <gtest/gtest.h>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/errors.h"
#include "coordinator/coordinator.h"
#include "tests/cluster/coordinator_fixture.h"

namespace c960::cluster {
namespace {

// Fails store commits as a full disk would: every one while `full`, or the n-th from now.
class Faults {
 public:
  void attach(Store* store) {
    store->set_fault_injector([this](const char* what) {
      if (full_ || (std::string(what) == "commit" && countdown_ > 0 && --countdown_ == 0))
        return absl::InternalError("store: the disk is full (injected)");
      return absl::OkStatus();
    });
  }
  void fill() { full_ = true; }
  void free() { full_ = false; }
  void fail_commit(int n) { countdown_ = n; }

 private:
  bool full_ = false;
  int countdown_ = 0;
};

// ---------------------------------------------------------------------------------------------
// fail_job is durable

class DurableFailTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/c960-degraded-", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    open();
  }
  void TearDown() override {
    coordinator_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }
  // (Re)starts the coordinator on the same file.
  void open() {
    coordinator_.reset();
    store_.reset();
    auto s = Store::open(dir_ + "/c.db");
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    faults_.attach(store_.get());
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, CoordinatorOptions{30'000});
    ASSERT_TRUE(coordinator_->load().ok());
  }
  std::string hello(const std::string& name) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_threads(8);
    req.add_capabilities("selfplay");
    req.add_engines("sf");
    req.set_protocol_version(kProtocolVersion);
    auto r = coordinator_->hello(Caller::local(), req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->worker_id() : "";
  }
  std::string submit() {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    v1::SelfPlayJobSpec& s = *req.mutable_spec()->mutable_selfplay();
    s.set_start_positions("518,0,1,2");
    s.set_games_per_position(2);
    s.set_engine("sf");
    s.set_depth(2);
    s.set_random_plies(4);
    s.set_seed(7);
    s.set_draw_score_cp(10);
    s.set_resign_score_cp(1000);
    s.set_max_plies(60);
    s.set_hash_mb(1);
    s.set_engine_timeout_ms(30000);
    s.set_games_per_unit(2);
    auto j = coordinator_->submit(Caller::local(), req);
    EXPECT_TRUE(j.ok()) << j.status();
    return j.ok() ? j->id() : "";
  }
  v1::Lease lease(const std::string& w) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w);
    req.set_max_units(1);
    auto r = coordinator_->acquire(Caller::local(), req);
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r.ok() ? r->leases_size() : 0, 1);
    return r.ok() && r->leases_size() ? r->leases(0) : v1::Lease();
  }
  absl::StatusOr<v1::CompleteUnitResponse> report(const std::string& w, const v1::Lease& l) {
    v1::CompleteUnitRequest req;
    req.set_worker_id(w);
    req.set_unit_id(l.unit_id());
    req.set_attempt(l.attempt());
    req.set_failure("engine sf crashed");
    return coordinator_->complete(Caller::local(), req);
  }
  v1::JobState state(const std::string& id) { return coordinator_->get_job(Caller::local(), id)->state(); }
  // The state a coordinator freshly loaded from the store gives the job.
  v1::JobState stored_state(const std::string& id) {
    CoordinatorOptions o;
    o.lease_ms = 30'000;
    o.waiter_thread = false;
    Coordinator fresh(store_.get(), &clock_, o);
    EXPECT_TRUE(fresh.load().ok());
    return fresh.get_job(Caller::local(), id)->state();
  }
  // Failure reports that fail the job at the last one: kMaxUnitFailures from `a`, then one from `b`.
  void reports_before_the_last(const std::string& a) {
    for (int i = 0; i < kMaxUnitFailures; ++i) {
      auto r = report(a, lease(a));
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
    }
  }

  std::string dir_;
  FakeClock clock_;
  Faults faults_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(DurableFailTest, AJobFailedByReportsIsFailedAfterARestart) {
  const std::string id = submit();
  const std::string a = hello("a"), b = hello("b");
  reports_before_the_last(a);
  ASSERT_EQ(state(id), v1::JOB_STATE_RUNNING);
  // Today's code committed the copy given up, then wrote FAILED on its own: failing that second
  // write left memory FAILED and the store RUNNING. Now both are one commit.
  const v1::Lease l = lease(b);
  faults_.fail_commit(2);
  auto r = report(b, l);
  faults_.fail_commit(0);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(state(id), v1::JOB_STATE_FAILED);
  EXPECT_EQ(stored_state(id), v1::JOB_STATE_FAILED);
  open();
  EXPECT_EQ(state(id), v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(coordinator_->get_job(Caller::local(), id)->failure_detail(), "engine sf crashed"));
}

TEST_F(DurableFailTest, AFailWhoseCommitFailedStaysRunningAndFailsOnTheNextTry) {
  const std::string id = submit();
  const std::string a = hello("a"), b = hello("b");
  reports_before_the_last(a);
  const v1::Lease l = lease(b);
  faults_.fill();
  auto r = report(b, l);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(state(id), v1::JOB_STATE_RUNNING);
  faults_.free();
  EXPECT_EQ(stored_state(id), v1::JOB_STATE_RUNNING);
  // The worker sends its report again (a probe of the store comes first: it takes writes).
  r = report(b, l);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->outcome(), v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
  EXPECT_EQ(state(id), v1::JOB_STATE_FAILED);
  open();
  EXPECT_EQ(state(id), v1::JOB_STATE_FAILED);
}

// ---------------------------------------------------------------------------------------------
// Degraded mode

class DegradedStoreTest : public CoordinatorFixture {
 protected:
  void SetUp() override {
    CoordinatorFixture::SetUp();
    faults_.attach(store_.get());
  }
  void expect_durable() {
    Coordinator fresh(store_.get(), &clock_, options_);
    ASSERT_TRUE(fresh.load().ok());
    EXPECT_EQ(fresh.durable_state(), coordinator_->durable_state());
  }
  absl::StatusOr<v1::CompleteUnitsResponse> batch(const std::string& w, const std::vector<v1::Lease>& ls) {
    v1::CompleteUnitsRequest req;
    req.set_worker_id(w);
    for (const v1::Lease& l : ls) {
      v1::CompleteUnitRequest* c = req.add_completions();
      c->set_unit_id(l.unit_id());
      c->set_attempt(l.attempt());
      *c->mutable_result() = result(l);
    }
    return coordinator_->complete_units(Caller::local(), req);
  }
  Faults faults_;
};

TEST_F(DegradedStoreTest, AFullStoreRefusesWritesWithoutAReloadPerRetryAndResumesByItself) {
  const std::string w = hello("w");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-5");
  const std::vector<v1::Lease> ls = acquire(w, 3);
  ASSERT_EQ(ls.size(), 3u);
  ASSERT_TRUE(complete(w, ls[0], result(ls[0])).ok());
  EXPECT_EQ(coordinator_->store_degraded(), "");

  faults_.fill();
  // The first failed commit: memory is read back once, and the store is degraded.
  auto first = batch(w, {ls[1], ls[2]});
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  EXPECT_TRUE(absl::StrContains(first.status().message(), "cannot write its store")) << first.status();
  EXPECT_TRUE(absl::StrContains(first.status().message(), "retry in ")) << first.status();
  EXPECT_TRUE(absl::StrContains(first.status().message(), "disk is full")) << first.status();
  EXPECT_TRUE(absl::StrContains(coordinator_->store_degraded(), "disk is full"));
  const CoordinatorMetrics m1 = coordinator_->metrics();
  EXPECT_TRUE(m1.store_degraded);
  EXPECT_EQ(m1.counters.store_reloads, 1);

  // Every worker's retries: refused up front, no reload, no probe before the backoff ends.
  for (int i = 0; i < 50; ++i) {
    auto again = batch(w, {ls[1], ls[2]});
    EXPECT_EQ(again.status().code(), absl::StatusCode::kUnavailable) << again.status();
    EXPECT_TRUE(absl::StrContains(again.status().message(), "cannot write its store")) << again.status();
    v1::AcquireWorkRequest acq;
    acq.set_worker_id(w);
    acq.set_max_units(2);
    EXPECT_EQ(coordinator_->acquire(Caller::local(), acq).status().code(), absl::StatusCode::kUnavailable);
    v1::HelloRequest h;
    h.set_name("late");
    h.set_threads(1);
    h.add_capabilities("perft");
    h.set_protocol_version(kProtocolVersion);
    EXPECT_EQ(coordinator_->hello(Caller::local(), h).status().code(), absl::StatusCode::kUnavailable);
    EXPECT_EQ(coordinator_->cancel(Caller::local(), j.id()).status().code(), absl::StatusCode::kUnavailable);
  }
  const CoordinatorMetrics m2 = coordinator_->metrics();
  EXPECT_EQ(m2.counters.store_reloads, 1);
  EXPECT_EQ(m2.counters.store_probes, m1.counters.store_probes);
  // Reads are served.
  EXPECT_EQ(job(j.id()).progress().units_done(), 1);
  EXPECT_TRUE(coordinator_->list_jobs(Caller::local(), {}).ok());
  EXPECT_TRUE(coordinator_->results(Caller::local(), j.id(), false).ok());
  EXPECT_EQ(workers().size(), 1u);
  // The sweep probes with backoff: still full, still degraded.
  clock_.advance_ms(kStoreProbeMaxMs);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->metrics().counters.store_probes, m1.counters.store_probes + 1);
  EXPECT_NE(coordinator_->store_degraded(), "");
  expect_durable();

  // Space comes back: the next probe resumes writes, without a reload.
  faults_.free();
  clock_.advance_ms(kStoreProbeMaxMs);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->store_degraded(), "");
  EXPECT_FALSE(coordinator_->metrics().store_degraded);
  auto resumed = batch(w, {ls[1], ls[2]});
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  for (const v1::CompletionStatus& s : resumed->statuses()) EXPECT_EQ(s.outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  run({w});
  expect_exact(j.id(), 3);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 1);
  expect_durable();
}

TEST_F(DegradedStoreTest, APassingFaultCostsOneProbeNotARefusalOfTheRetry) {
  const std::string w = hello("w");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-5");
  // A lease whose commit fails: refused; the retry (same clock) probes first, and goes through.
  faults_.fail_commit(1);
  v1::AcquireWorkRequest acq;
  acq.set_worker_id(w);
  acq.set_max_units(1);
  EXPECT_EQ(coordinator_->acquire(Caller::local(), acq).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(coordinator_->store_degraded(), "");
  const std::vector<v1::Lease> ls = acquire(w, 1);
  ASSERT_EQ(ls.size(), 1u);
  EXPECT_EQ(coordinator_->store_degraded(), "");
  // A completion whose commit fails once: the probe commits, so it is tried again alone, in the
  // same call, and accepted.
  faults_.fail_commit(1);
  EXPECT_EQ(complete(w, ls[0], result(ls[0])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(coordinator_->store_degraded(), "");
  const CoordinatorMetrics m = coordinator_->metrics();
  EXPECT_EQ(m.counters.store_reloads, 2);
  EXPECT_EQ(m.counters.store_probes, 2);
  EXPECT_EQ(m.counters.store_commit_failures, 2);
  run({w});
  expect_exact(j.id(), 3);
  expect_durable();
}

// A completion the store refuses for its own content (here a trigger on one unit's row, as a
// constraint or a binding would) is refused alone, naming why; those before it in the batch are
// accepted, those after it are answered UNAVAILABLE and accepted when sent again; sending the
// batch again does not loop.
TEST_F(DegradedStoreTest, ACompletionTheStoreRefusesIsRefusedAloneAndItsBatchProceeds) {
  const std::string w = hello("w");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-5");
  const std::vector<v1::Lease> ls = acquire(w, 3);
  ASSERT_EQ(ls.size(), 3u);
  const std::string refused = ls[1].unit_id();
  const std::string idx = refused.substr(refused.find('/') + 1);
  ASSERT_TRUE(
      store_
          ->exec_for_test(absl::StrCat("CREATE TRIGGER refuse_one BEFORE UPDATE OF result ON units WHEN NEW.job_id = '",
                                       j.id(), "' AND NEW.idx = ", idx,
                                       " AND NEW.result IS NOT NULL BEGIN SELECT RAISE(ABORT, 'refused by the "
                                       "test'); END"))
          .ok());
  auto r = batch(w, ls);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->statuses_size(), 3);
  EXPECT_EQ(r->statuses(0).code(), 0) << r->statuses(0).ShortDebugString();
  EXPECT_EQ(r->statuses(0).outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(absl::StatusCode(r->statuses(1).code()), absl::StatusCode::kFailedPrecondition)
      << r->statuses(1).ShortDebugString();
  EXPECT_TRUE(absl::StrContains(r->statuses(1).message(), "the store refuses this result")) << r->statuses(1).message();
  EXPECT_TRUE(absl::StrContains(r->statuses(1).message(), refused)) << r->statuses(1).message();
  EXPECT_EQ(absl::StatusCode(r->statuses(2).code()), absl::StatusCode::kUnavailable)
      << r->statuses(2).ShortDebugString();
  EXPECT_EQ(coordinator_->store_degraded(), "");
  expect_durable();
  // The worker drops the refused one and sends the rest again: they proceed.
  r = batch(w, {ls[0], ls[2]});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->statuses(0).outcome(), v1::COMPLETION_OUTCOME_DUPLICATE);
  EXPECT_EQ(r->statuses(1).outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  // Sent again anyway, the refused one is refused again, at once: no loop.
  absl::StatusOr<v1::CompletionOutcome> again = complete(w, ls[1], result(ls[1]));
  EXPECT_EQ(again.status().code(), absl::StatusCode::kFailedPrecondition) << again.status();
  EXPECT_EQ(coordinator_->store_degraded(), "");
  expect_durable();
  EXPECT_EQ(job(j.id()).progress().units_done(), 2);
  // Bounded work per call: one reload for the batch, one per try of the refused completion.
  EXPECT_LE(coordinator_->metrics().counters.store_reloads, 2 * (1 + kCompletionTriesAlone));
  // Once the store takes it, the same result is accepted, and the job ends exact.
  ASSERT_TRUE(store_->exec_for_test("DROP TRIGGER refuse_one").ok());
  EXPECT_EQ(complete(w, ls[1], result(ls[1])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  run({w});
  expect_exact(j.id(), 3);
  expect_durable();
}

}  // namespace
}  // namespace c960::cluster
