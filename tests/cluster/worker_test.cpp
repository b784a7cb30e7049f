// The worker's control logic against an in-process coordinator, through a connection that
// injects the failures a network brings: an unreachable coordinator, lost acknowledgements, a
// coordinator that forgot the worker, a stop with queued units. No sockets.
#include "worker/worker.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>

#include "cluster/errors.h"
#include "cluster/u128.h"
#include "coordinator/clock.h"
#include "coordinator/coordinator.h"
#include "core/perft.h"
#include "core/position.h"
#include "core/startpos.h"

namespace c960::cluster {
namespace {

using namespace std::chrono_literals;

// The coordinator's calls as a worker sees them over the network, with failures on demand.
class FlakyConnection final : public CoordinatorConnection {
 public:
  explicit FlakyConnection(Coordinator* c) : c_(c) {}

  // The next n calls of the kind fail as described.
  std::atomic<int> unreachable_hellos{0};  // UNAVAILABLE, nothing done
  std::atomic<int> lost_acks{0};           // completion applied, its reply lost (UNAVAILABLE)
  std::atomic<int> forgotten{0};           // NOT_FOUND with REASON_UNKNOWN_WORKER, nothing done
  std::atomic<int> unknown_units{0};       // completion answered NOT_FOUND without a reason
  std::atomic<int> lost_grants{0};         // leases granted, then the call waits for the stop: CANCELLED
  std::atomic<int> hellos{0}, completions{0}, releases{0}, released_units{0};
  std::atomic<bool> holding_lost_grant{false};  // such a call is waiting for the stop

  grpc::Status hello(const v1::HelloRequest& req, v1::HelloResponse* resp, int64_t) override {
    ++hellos;
    if (take(unreachable_hellos)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "connection refused");
    return reply(c_->hello(Caller::local(), req), resp);
  }
  grpc::Status acquire(const v1::AcquireWorkRequest& req, v1::AcquireWorkResponse* resp, int64_t) override {
    if (take(forgotten)) return unknown_worker();
    // The in-process long poll cannot be cancelled: kept short, so that a stopping worker ends soon.
    v1::AcquireWorkRequest r = req;
    r.set_wait_seconds(std::min(r.wait_seconds(), 1));
    grpc::Status s = reply(c_->acquire(Caller::local(), r), resp);
    if (s.ok() && resp->leases_size() > 0 && take(lost_grants)) {
      // What a stop's cancel_waits does to a call the coordinator has answered already.
      holding_lost_grant = true;
      std::unique_lock lock(mu_);
      cancelled_cv_.wait(lock, [&] { return cancelled_; });
      resp->Clear();
      return grpc::Status(grpc::StatusCode::CANCELLED, "worker stopping");
    }
    return s;
  }
  void cancel_waits() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    cancelled_cv_.notify_all();
  }
  grpc::Status renew(const v1::RenewLeasesRequest& req, v1::RenewLeasesResponse* resp, int64_t) override {
    return reply(c_->renew(Caller::local(), req), resp);
  }
  grpc::Status complete(const v1::CompleteUnitRequest& req, v1::CompleteUnitResponse* resp, int64_t) override {
    ++completions;
    if (take(forgotten)) return unknown_worker();
    if (take(unknown_units)) return grpc::Status(grpc::StatusCode::NOT_FOUND, "unit_id: no such unit");
    grpc::Status s = reply(c_->complete(Caller::local(), req), resp);
    if (s.ok() && take(lost_acks)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, "reply lost");
    return s;
  }
  grpc::Status release(const v1::ReleaseUnitsRequest& req, v1::ReleaseUnitsResponse*, int64_t) override {
    ++releases;
    released_units += req.unit_ids_size();
    return to_grpc(c_->release(Caller::local(), req));
  }

 private:
  static bool take(std::atomic<int>& n) {
    for (int v = n.load(); v > 0;)
      if (n.compare_exchange_weak(v, v - 1)) return true;
    return false;
  }
  template <typename T>
  static grpc::Status reply(absl::StatusOr<T> v, T* out) {
    if (!v.ok()) return to_grpc(v.status());
    *out = std::move(*v);
    return grpc::Status::OK;
  }
  static grpc::Status unknown_worker() {
    return to_grpc(
        with_reason(absl::NotFoundError("worker_id: no worker; call Hello"), v1::ErrorInfo::REASON_UNKNOWN_WORKER));
  }
  Coordinator* c_;
  std::mutex mu_;
  std::condition_variable cancelled_cv_;
  bool cancelled_ = false;
};

class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = std::move(Store::open(":memory:").value());
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, CoordinatorOptions{2000});
    ASSERT_TRUE(coordinator_->load().ok());
    sweeper_ = std::thread([this] {
      while (!stop_sweeping_) {
        coordinator_->sweep();
        std::this_thread::sleep_for(50ms);
      }
    });
  }
  void TearDown() override {
    if (worker_) {
      worker_->request_stop();
      if (runner_.joinable()) runner_.join();
    }
    stop_sweeping_ = true;
    sweeper_.join();
  }

  // A worker with `threads` compute threads on a flaky connection, running in the background.
  FlakyConnection* start_worker(int threads = 2) {
    auto conn = std::make_unique<FlakyConnection>(coordinator_.get());
    FlakyConnection* raw = conn.get();
    WorkerOptions options;
    options.threads = threads;
    options.hash_mb = 0;
    options.name = "test";
    options.grace_ms = 10'000;
    options.retry = BackoffPolicy{.initial_ms = 200, .multiplier = 2, .max_ms = 1000};  // quick tests
    worker_ = std::make_unique<Worker>(std::move(conn), options);
    runner_ = std::thread([this] { exit_code_ = worker_->run(); });
    return raw;
  }

  v1::Job submit(int depth, const std::string& sps, int split) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);  // one worker: nothing to compare with
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(split);
    return coordinator_->submit(Caller::local(), req).value();
  }

  // Waits for the job to end; false after the timeout.
  bool wait_for(const std::string& job_id, std::chrono::seconds timeout = 60s) {
    for (auto end = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < end;) {
      if (Coordinator::is_final(coordinator_->get_job(Caller::local(), job_id)->state())) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // Totals per root equal the core's perft, and the progress counts each unit once.
  void expect_exact(const v1::Job& job, int depth) {
    const v1::Job now = coordinator_->get_job(Caller::local(), job.id()).value();
    EXPECT_EQ(now.state(), v1::JOB_STATE_SUCCEEDED);
    EXPECT_EQ(now.result_mismatches(), 0) << now.mismatch_detail();
    NodeCount sum = 0;
    absl::StatusOr<std::vector<v1::ResultChunk>> chunks = coordinator_->results(Caller::local(), job.id(), false);
    ASSERT_TRUE(chunks.ok()) << chunks.status();
    for (const v1::ResultChunk& c : *chunks) {
      const NodeCount expected = perft(*Position::from_fen(c.perft().fen()), depth);
      EXPECT_EQ(from_proto(c.perft().nodes()), expected) << c.perft().fen();
      sum += expected;
    }
    EXPECT_EQ(from_proto(now.progress().nodes_done()), sum) << "a unit was counted twice or not at all";
  }

  SystemClock clock_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Worker> worker_;
  std::thread runner_, sweeper_;
  std::atomic<bool> stop_sweeping_{false};
  std::atomic<int> exit_code_{-1};
};

TEST_F(WorkerTest, ComputesAJobExactly) {
  const v1::Job job = submit(4, "0-9", 1);
  start_worker();
  ASSERT_TRUE(wait_for(job.id()));
  expect_exact(job, 4);
}

// The stop cancels an acquire that the coordinator had answered: the worker never hears of those
// leases, and gives them back all the same (release_all_others) instead of leaving them to expire.
TEST_F(WorkerTest, StopGivesBackWhatACancelledAcquireWasGranted) {
  const v1::Job job = submit(4, "0-9", 1);
  FlakyConnection* conn = start_worker(1);
  conn->lost_grants = 1;
  for (int i = 0; i < 1000 && !conn->holding_lost_grant; ++i) std::this_thread::sleep_for(5ms);
  ASSERT_TRUE(conn->holding_lost_grant);
  EXPECT_GE(coordinator_->get_job(Caller::local(), job.id())->progress().units_leased(), 1);
  worker_->request_stop();
  runner_.join();
  EXPECT_EQ(exit_code_, 0);
  // Well inside the 2 s lease: given back, not expired.
  EXPECT_EQ(coordinator_->get_job(Caller::local(), job.id())->progress().units_leased(), 0);
  EXPECT_EQ(conn->releases.load(), 1);
}

TEST_F(WorkerTest, KeepsCallingHelloUntilTheCoordinatorAnswers) {
  const v1::Job job = submit(3, "0-3", 1);
  FlakyConnection* conn = nullptr;
  {
    auto c = std::make_unique<FlakyConnection>(coordinator_.get());
    c->unreachable_hellos = 4;
    conn = c.get();
    WorkerOptions options;
    options.hash_mb = 0;
    options.retry = BackoffPolicy{.initial_ms = 200, .multiplier = 2, .max_ms = 1000};
    worker_ = std::make_unique<Worker>(std::move(c), options);
    runner_ = std::thread([this] { exit_code_ = worker_->run(); });
  }
  ASSERT_TRUE(wait_for(job.id()));
  EXPECT_GE(conn->hellos.load(), 5);
  expect_exact(job, 3);
}

TEST_F(WorkerTest, KeepsResultsUntilTheCoordinatorAcknowledgesThem) {
  const v1::Job job = submit(4, "0-5", 1);
  FlakyConnection* conn = start_worker();
  conn->lost_acks = 4;  // applied but unanswered: the worker sends them again (backing off)
  ASSERT_TRUE(wait_for(job.id()));
  expect_exact(job, 4);
  // The job can finish before the last unanswered batch is sent again (the worker backs off):
  // the resends come, within a few seconds.
  for (int i = 0; i < 500 && conn->completions.load() < job.progress().units_total() + 4; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_GE(conn->completions.load(), job.progress().units_total() + 4);
}

TEST_F(WorkerTest, RegistersAgainWhenTheCoordinatorForgetsIt) {
  const v1::Job job = submit(4, "0-5", 1);
  FlakyConnection* conn = start_worker();
  conn->forgotten = 3;
  ASSERT_TRUE(wait_for(job.id()));
  expect_exact(job, 4);
  EXPECT_GE(conn->hellos.load(), 2) << "an unknown-worker reply must lead to a new Hello";
}

TEST_F(WorkerTest, AnUnknownUnitIsNotMistakenForAnUnknownWorker) {
  const v1::Job job = submit(3, "0-3", 1);
  FlakyConnection* conn = start_worker();
  conn->unknown_units = 2;  // those results are dropped; their leases expire and others redo them
  ASSERT_TRUE(wait_for(job.id()));
  expect_exact(job, 3);
  EXPECT_EQ(conn->hellos.load(), 1) << "NOT_FOUND without the reason is not a lost registration";
}

TEST_F(WorkerTest, AStopReleasesQueuedUnitsAndDeliversFinishedOnes) {
  // Units of perft 6 take long enough (about a second) that the worker still holds a queued one
  // when told to stop.
  const v1::Job job = submit(7, "0-3", 1);
  FlakyConnection* conn = start_worker(1);
  for (auto end = std::chrono::steady_clock::now() + 30s;
       coordinator_->get_job(Caller::local(), job.id())->progress().units_leased() < 2 &&
       std::chrono::steady_clock::now() < end;)
    std::this_thread::sleep_for(10ms);
  ASSERT_GE(coordinator_->get_job(Caller::local(), job.id())->progress().units_leased(), 2);
  worker_->request_stop();
  runner_.join();
  EXPECT_EQ(exit_code_.load(), 0);
  EXPECT_GE(conn->released_units.load(), 1);
  const v1::Job after = coordinator_->get_job(Caller::local(), job.id()).value();
  EXPECT_EQ(after.progress().units_leased(), 0) << "the stopped worker kept leases";
  EXPECT_EQ(after.state(), v1::JOB_STATE_RUNNING);
  worker_.reset();
}

}  // namespace
}  // namespace c960::cluster
