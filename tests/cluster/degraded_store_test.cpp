// A store that fails (issue 35): a job failed by failure reports is FAILED in the store before
// it is in memory; a store that refuses every write puts the coordinator in degraded mode (writes
// refused with UNAVAILABLE and a retry delay, reads served, no reload per retry, resumed by a
// probe); a completion the store refuses for itself is refused alone and its batch proceeds.
#include <unistd.h>

#include <algorithm>
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

// Fails store commits as a full disk would: every write while `full`, every outermost commit
// while `commits` (the writes inside a transaction succeed, its commit fails: a transition runs
// to its end before it fails), or the n-th commit from now.
class Faults {
 public:
  void attach(Store* store) {
    store->set_fault_injector([this](const char* what) {
      const bool commit = std::string(what) == "commit";
      if (full_ || (commit && commits_) || (commit && countdown_ > 0 && --countdown_ == 0))
        return absl::InternalError("store: the disk is full (injected)");
      return absl::OkStatus();
    });
  }
  void fill() { full_ = true; }
  void free() { full_ = commits_ = false; }
  void fail_commits() { commits_ = true; }
  void fail_commit(int n) { countdown_ = n; }

 private:
  bool full_ = false;
  bool commits_ = false;
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
  // The first failed commit: memory is left as it was (planned, not applied: no reload), and
  // the store is degraded.
  auto first = batch(w, {ls[1], ls[2]});
  EXPECT_EQ(first.status().code(), absl::StatusCode::kUnavailable) << first.status();
  EXPECT_TRUE(absl::StrContains(first.status().message(), "cannot write its store")) << first.status();
  EXPECT_TRUE(absl::StrContains(first.status().message(), "retry in ")) << first.status();
  // The delay travels typed too, through gRPC, for the workers to wait at least that long.
  EXPECT_GE(error_info_of(first.status()).retry_delay_ms(), kStoreProbeFirstMs) << first.status();
  EXPECT_EQ(retry_delay_ms_of(to_grpc(first.status())), error_info_of(first.status()).retry_delay_ms());
  EXPECT_TRUE(absl::StrContains(first.status().message(), "disk is full")) << first.status();
  EXPECT_TRUE(absl::StrContains(coordinator_->store_degraded(), "disk is full"));
  const CoordinatorMetrics m1 = coordinator_->metrics();
  EXPECT_TRUE(m1.store_degraded);
  EXPECT_EQ(m1.counters.store_reloads, 0);

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
  EXPECT_EQ(m2.counters.store_reloads, 0);
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
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
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
  EXPECT_EQ(m.counters.store_reloads, 0);  // planned transitions: a failed commit changed nothing
  EXPECT_EQ(m.counters.store_probes, 2);
  EXPECT_EQ(m.counters.store_commit_failures, 2);
  run({w});
  expect_exact(j.id(), 3);
  expect_durable();
}

// What a failed transition must leave as it was: the durable state, the per-credential lease
// counts, the units by state, the workers' counters, and the counters of leases and reloads.
std::string memory_of(Coordinator& c) {
  const CoordinatorMetrics m = c.metrics();
  std::string out = absl::StrCat(
      c.durable_state(), "\nlease counts: ", c.check_lease_counts(), "\nunits pending ", m.units_pending, " leased ",
      m.units_leased, " verifying ", m.units_verifying, " done ", m.units_done, " disagreeing ", m.units_disagreeing,
      "\nexpiries ", m.counters.lease_expiries, " requeues ", m.counters.requeues, " reloads ",
      m.counters.store_reloads, " quarantines ", m.counters.quarantines, " mismatches ", m.counters.mismatches,
      " disagreements ", m.counters.disagreements, " replicated ", m.counters.replicated, "\n");
  auto js = c.list_jobs(Caller::local(), {});
  if (js.ok())
    for (const v1::Job& j : js->jobs()) {
      auto full = c.get_job(Caller::local(), j.id());
      if (full.ok()) absl::StrAppend(&out, "job ", full->ShortDebugString(), "\n");
    }
  auto ws = c.list_workers(Caller::local(), {});
  if (ws.ok())
    for (const v1::WorkerInfo& w : ws->workers())
      absl::StrAppend(&out, "worker ", w.name(), " done ", w.units_done(), " trust ", int(w.trust()), " alive ",
                      w.alive(), "\n");
  return out;
}

// Plan, commit, apply (issue 35): a lease batch whose commit fails changes nothing in memory —
// no copy, attempt, lease count or deadline — and needs no reload; once the store takes writes
// the same acquire leases the same units.
TEST_F(DegradedStoreTest, AFailedLeaseCommitLeavesMemoryAsItWasWithoutAReload) {
  const std::string w = hello("w"), v = hello("v");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 3, "0-3");
  const std::vector<v1::Lease> first = acquire(v, 1);
  ASSERT_EQ(first.size(), 1u);
  const std::string before = memory_of(*coordinator_);
  faults_.fail_commit(1);
  v1::AcquireWorkRequest acq;
  acq.set_worker_id(w);
  acq.set_max_units(3);
  auto refused = coordinator_->acquire(Caller::local(), acq);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(coordinator_->store_degraded(), "");
  EXPECT_EQ(memory_of(*coordinator_), before);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
  EXPECT_EQ(coordinator_->check_lease_counts(), "");
  expect_durable();
  // No lease of the failed batch expires later: none was given.
  clock_.advance_ms(options_.lease_ms / 2);
  coordinator_->sweep();  // probes the store: it takes writes again
  EXPECT_EQ(coordinator_->store_degraded(), "");
  EXPECT_EQ(coordinator_->metrics().counters.lease_expiries, 0);
  // The retry leases, as the first try would have.
  const std::vector<v1::Lease> again = acquire(w, 3);
  EXPECT_EQ(again.size(), 3u);
  for (const v1::Lease& l : again) EXPECT_EQ(l.attempt(), l.unit_id() == first[0].unit_id() ? 2 : 1);
  EXPECT_EQ(coordinator_->check_lease_counts(), "");
  expect_durable();
  EXPECT_TRUE(complete(v, first[0]).ok());
  for (const v1::Lease& l : again) EXPECT_TRUE(complete(w, l).ok());
  run({w, v});
  expect_exact(j.id(), 3);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
  expect_durable();
}

// Plan, commit, apply (issue 35): a completion batch whose commit fails — a result waiting for
// a second worker's, and one that settles its unit with a credit — changes nothing in memory
// (copies, votes, progress, workers' counts and trust) and needs no reload; sent again once the
// store takes writes, the batch is accepted and the job ends exact.
TEST_F(DegradedStoreTest, AFailedCompletionCommitLeavesMemoryAsItWasWithoutAReload) {
  const std::string a = hello("a"), b = hello("b");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 3, "0-3");
  const std::vector<v1::Lease> la = acquire(a, 2);
  ASSERT_EQ(la.size(), 2u);
  const std::vector<v1::Lease> lb = acquire(b, 4);
  ASSERT_GE(lb.size(), 1u);
  const v1::Lease* shared = nullptr;  // a unit both hold
  for (const v1::Lease& l : lb)
    if (l.unit_id() == la[0].unit_id()) shared = &l;
  ASSERT_NE(shared, nullptr);
  // a's first result waits for b's; b's batch then settles it (with a credit for a) and sends
  // a first result for its other units.
  ASSERT_EQ(complete(a, la[0], result(la[0])).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  const std::string before = memory_of(*coordinator_);
  faults_.fill();
  auto r = batch(b, lb);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(memory_of(*coordinator_), before);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
  EXPECT_EQ(coordinator_->check_lease_counts(), "");
  // And a single completion, waiting for another result.
  auto one = complete(a, la[1], result(la[1]));
  EXPECT_EQ(one.status().code(), absl::StatusCode::kUnavailable) << one.status();
  EXPECT_EQ(memory_of(*coordinator_), before);
  expect_durable();
  faults_.free();
  clock_.advance_ms(kStoreProbeMaxMs);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->store_degraded(), "");
  r = batch(b, lb);
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::CompletionStatus& st : r->statuses())
    EXPECT_EQ(st.outcome(), st.unit_id() == shared->unit_id() ? v1::COMPLETION_OUTCOME_ACCEPTED
                                                              : v1::COMPLETION_OUTCOME_PENDING_VERIFICATION)
        << st.ShortDebugString();
  EXPECT_EQ(job(j.id()).progress().units_done(), 1);
  EXPECT_EQ(workers().at("a").units_done(), 1);
  EXPECT_EQ(workers().at("b").units_done(), int64_t(lb.size()));
  expect_durable();
  EXPECT_TRUE(complete(a, la[1]).ok());
  run({a, b});
  expect_exact(j.id(), 3);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
  expect_durable();
}

// The sweep marks a silent worker lost and stores its last sighting: when that write fails,
// the worker stays as it was (not lost), and the next sweep after the store recovers marks it.
TEST_F(DegradedStoreTest, AFailedSweepWriteLeavesTheWorkerAsItWas) {
  hello("w");
  clock_.advance_ms(options_.lease_ms + 1);
  const std::string before = memory_of(*coordinator_);
  faults_.fill();
  coordinator_->sweep();
  EXPECT_NE(coordinator_->store_degraded(), "");
  EXPECT_EQ(memory_of(*coordinator_), before);
  ASSERT_EQ(workers().count("w"), 1u);
  EXPECT_TRUE(workers().at("w").alive());
  expect_durable();
  faults_.free();
  clock_.advance_ms(kStoreProbeMaxMs);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->store_degraded(), "");
  ASSERT_EQ(workers().count("w"), 1u);
  EXPECT_FALSE(workers().at("w").alive());
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
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

// ---------------------------------------------------------------------------------------------
// The completions whose effects reach beyond their unit and worker (issue 35): a batch whose
// commit fails leaves memory exactly as it was, with no reload and no event logged; sent again
// once the store takes writes, it has its effects.

const Caller kRoot1{"r1", Role::kWorker, true};
const Caller kRoot2{"r2", Role::kWorker, true};

class FailedCascadeTest : public DegradedStoreTest {
 protected:
  void SetUp() override {
    DegradedStoreTest::SetUp();
    CoordinatorOptions o;
    o.trust_roots = {"r1", "r2"};
    o.audit_rate = 0;
    open(o);
    faults_.attach(store_.get());
  }
  static Caller untrusted(const std::string& name) { return Caller{name, Role::kWorker, true}; }
  // The batch `req` sent while every commit fails: refused (UNAVAILABLE), memory as it was, no
  // reload, and none of `events` logged. Then sent again once the store takes writes: its
  // answers.
  v1::CompleteUnitsResponse refused_then_kept(const v1::CompleteUnitsRequest& req, const Caller& caller,
                                              const std::vector<std::string>& events) {
    const std::string before = memory_of(*coordinator_);
    faults_.fail_commits();
    ::testing::internal::CaptureStderr();
    auto r = coordinator_->complete_units(caller, req);
    const std::string logged = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
    EXPECT_NE(coordinator_->store_degraded(), "");
    EXPECT_EQ(memory_of(*coordinator_), before);
    EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
    EXPECT_EQ(coordinator_->check_lease_counts(), "");
    EXPECT_EQ(coordinator_->check_parts(), "");  // e.g. a job the batch failed runs again
    for (const std::string& e : events) EXPECT_FALSE(absl::StrContains(logged, e)) << e << " logged:\n" << logged;
    expect_durable();
    faults_.free();
    clock_.advance_ms(kStoreProbeMaxMs);  // the next call probes the store: it takes writes
    ::testing::internal::CaptureStderr();
    r = coordinator_->complete_units(caller, req);
    last_logged_ = ::testing::internal::GetCapturedStderr();
    EXPECT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(coordinator_->store_degraded(), "");
    EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
    EXPECT_EQ(coordinator_->check_parts(), "");
    expect_durable();
    return r.ok() ? *r : v1::CompleteUnitsResponse();
  }
  static v1::CompleteUnitsRequest request(const std::string& w,
                                          const std::vector<std::pair<v1::Lease, v1::UnitResult>>& rs) {
    v1::CompleteUnitsRequest req;
    req.set_worker_id(w);
    for (const auto& [l, r] : rs) {
      v1::CompleteUnitRequest* c = req.add_completions();
      c->set_unit_id(l.unit_id());
      c->set_attempt(l.attempt());
      *c->mutable_result() = r;
    }
    return req;
  }
  // Each worker in turn leases one unit, and the lease expires before the next leases: they all
  // hold a copy of the same unit (the job's first), the last one's lease still out.
  v1::Lease one_unit_to_all(const std::vector<std::pair<std::string, Caller>>& ws) {
    v1::Lease first;
    for (size_t k = 0; k < ws.size(); ++k) {
      const std::vector<v1::Lease> l = acquire(ws[k].first, 1, ws[k].second);
      EXPECT_EQ(l.size(), 1u);
      if (l.empty()) return first;
      if (k == 0) first = l[0];
      EXPECT_EQ(l[0].unit_id(), first.unit_id());
      if (k + 1 == ws.size()) return l[0];
      clock_.advance_ms(options_.lease_ms + 1);
      coordinator_->sweep();
    }
    return first;
  }
  std::string last_logged_;
};

// (a) An impossible result quarantines its worker: everything it settled alone is taken back,
// a unit still in memory and a lazily planned root already folded (planned again).
TEST_F(DegradedStoreTest, AFailedQuarantineCascadeLeavesMemoryAsItWas) {
  CoordinatorOptions o;  // every unit planned lazily, one root per refill
  o.lazy_plan_walk = 0;
  o.lazy_window_units = 1;
  o.lazy_low_water_units = 1;
  open(o);
  faults_.attach(store_.get());
  const std::string w = hello("w");
  const v1::Job j = submit(perft_request(v1::VERIFY_MODE_OFF, 4, "0-2", 2));
  // Verify off: every result stands on w's word alone. The first root is settled and folded, and
  // some units of the second are settled.
  const int64_t first_root = job(j.id()).progress().units_total();
  ASSERT_GT(first_root, 0);
  for (int64_t done = 0; done < first_root + 5; ++done) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w);
    req.set_max_units(1);
    req.set_wait_seconds(5);  // the next root is expanded by the coordinator's own thread
    auto got = coordinator_->acquire(Caller::local(), req);
    ASSERT_TRUE(got.ok() && got->leases_size() == 1) << got.status();
    ASSERT_EQ(complete(w, got->leases(0)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  }
  ASSERT_GT(job(j.id()).progress().units_total(), first_root + 5);
  auto rows = store_->unit_rows(j.id());
  ASSERT_TRUE(rows.ok());
  ASSERT_LT(*rows, job(j.id()).progress().units_total()) << "the first root was not folded";
  const std::vector<v1::Lease> l = acquire(w, 1);
  ASSERT_EQ(l.size(), 1u);
  v1::UnitResult impossible = result(l[0]);
  impossible.mutable_perft()->mutable_nodes()->set_hi(~0ULL);
  impossible.mutable_perft()->mutable_nodes()->set_lo(~0ULL);
  v1::CompleteUnitsRequest req;
  req.set_worker_id(w);
  v1::CompleteUnitRequest* c = req.add_completions();
  c->set_unit_id(l[0].unit_id());
  c->set_attempt(l[0].attempt());
  *c->mutable_result() = impossible;

  const std::string before = memory_of(*coordinator_);
  const int64_t done_before = job(j.id()).progress().units_done();
  faults_.fail_commits();
  ::testing::internal::CaptureStderr();
  auto r = coordinator_->complete_units(Caller::local(), req);
  const std::string logged = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(memory_of(*coordinator_), before);
  EXPECT_EQ(job(j.id()).progress().units_done(), done_before);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
  EXPECT_EQ(coordinator_->check_lease_counts(), "");
  EXPECT_FALSE(absl::StrContains(logged, "QUARANTINED")) << logged;
  EXPECT_FALSE(absl::StrContains(logged, "taken back")) << logged;
  expect_durable();
  // Sent again once the store takes writes: the quarantine and all it takes back.
  faults_.free();
  clock_.advance_ms(kStoreProbeMaxMs);
  r = coordinator_->complete_units(Caller::local(), req);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(absl::StatusCode(r->statuses(0).code()), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(workers().at("w").trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  EXPECT_EQ(coordinator_->metrics().counters.store_reloads, 0);
  expect_durable();
}

// (b) A trust root overturns a result an untrusted owner settled alone: the root's result
// replaces it and the owner is quarantined.
TEST_F(FailedCascadeTest, AFailedOverturnLeavesMemoryAsItWas) {
  const Caller a = untrusted("a");
  const std::string wa = hello("wa", a), wr = hello("wr", kRoot1);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 5, "0", Caller::local(), 1);
  const v1::Lease lr = one_unit_to_all({{wa, a}, {wr, kRoot1}});
  ASSERT_EQ(complete(wa, lr, result(lr, 1), a).value(), v1::COMPLETION_OUTCOME_ACCEPTED);  // a lie, settled
  const v1::CompleteUnitsResponse r =
      refused_then_kept(request(wr, {{lr, result(lr)}}), kRoot1, {"QUARANTINED", "RESULT MISMATCH"});
  ASSERT_EQ(r.statuses_size(), 1);
  EXPECT_EQ(r.statuses(0).outcome(), v1::COMPLETION_OUTCOME_ACCEPTED) << r.ShortDebugString();
  EXPECT_EQ(workers().at("a/wa").trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_GE(job(j.id()).result_mismatches(), 1);
}

// (c) Five owners sent results for one unit and the two trust roots among them disagree: the
// job fails.
TEST_F(FailedCascadeTest, AFailedFailOnTiedVotesLeavesMemoryAsItWas) {
  const Caller u1 = untrusted("u1"), u2 = untrusted("u2"), u3 = untrusted("u3");
  const std::string w1 = hello("w1", u1), w2 = hello("w2", u2), w3 = hello("w3", u3);
  const std::string r1 = hello("r1w", kRoot1), r2 = hello("r2w", kRoot2);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 5, "0", Caller::local(), 1);
  const v1::Lease l = one_unit_to_all({{w1, u1}, {w2, u2}, {w3, u3}, {r1, kRoot1}, {r2, kRoot2}});
  ASSERT_EQ(complete(w1, l, result(l), u1).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  ASSERT_EQ(complete(w2, l, result(l), u2).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  ASSERT_EQ(complete(w3, l, result(l), u3).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  ASSERT_EQ(complete(r1, l, result(l), kRoot1).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  refused_then_kept(request(r2, {{l, result(l, 1)}}), kRoot2, {"FAILED", "RESULT MISMATCH"});
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(job(j.id()).failure_detail(), "tied")) << job(j.id()).failure_detail();
  EXPECT_TRUE(absl::StrContains(last_logged_, "FAILED")) << last_logged_;
}

// (d) A root's batch confirms an untrusted owner's results: the owner earns trust in it.
TEST_F(FailedCascadeTest, AFailedBatchThatEarnsTrustLeavesMemoryAsItWas) {
  CoordinatorOptions o = options_;
  o.trust_after = 1;  // the first result a trust root confirms
  open(o);
  faults_.attach(store_.get());
  const Caller a = untrusted("a");
  const std::string wa = hello("wa", a), wr = hello("wr", kRoot1);
  submit(v1::VERIFY_MODE_ALL, 3, "0-3");
  const std::vector<v1::Lease> la = acquire(wa, 1, a);
  ASSERT_EQ(la.size(), 1u);
  ASSERT_EQ(complete(wa, la[0], result(la[0]), a).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  std::vector<std::pair<v1::Lease, v1::UnitResult>> rs;  // the root's copies, one of them of a's unit
  for (const v1::Lease& l : acquire(wr, 8, kRoot1)) rs.emplace_back(l, result(l));
  ASSERT_TRUE(std::any_of(rs.begin(), rs.end(), [&](const auto& r) { return r.first.unit_id() == la[0].unit_id(); }));
  EXPECT_EQ(workers().at("a/wa").trust(), v1::TRUST_STATE_NEW);
  refused_then_kept(request(wr, rs), kRoot1, {"trusted"});
  EXPECT_EQ(workers().at("a/wa").trust(), v1::TRUST_STATE_TRUSTED);
  EXPECT_TRUE(absl::StrContains(last_logged_, "worker a/wa trusted")) << last_logged_;
}

// (e) A batch that sends one unit twice (and another unit once).
TEST_F(FailedCascadeTest, AFailedBatchWithAUnitTwiceLeavesMemoryAsItWas) {
  const std::string w = hello("w", kRoot1);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-3");
  const std::vector<v1::Lease> l = acquire(w, 2, kRoot1);
  ASSERT_EQ(l.size(), 2u);
  const v1::CompleteUnitsResponse r =
      refused_then_kept(request(w, {{l[0], result(l[0])}, {l[0], result(l[0])}, {l[1], result(l[1])}}), kRoot1, {});
  ASSERT_EQ(r.statuses_size(), 3);
  EXPECT_EQ(r.statuses(0).outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(r.statuses(1).outcome(), v1::COMPLETION_OUTCOME_DUPLICATE);
  EXPECT_EQ(r.statuses(2).outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(job(j.id()).progress().units_done(), 2);
}

}  // namespace
}  // namespace c960::cluster
