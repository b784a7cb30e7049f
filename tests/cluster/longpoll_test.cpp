// The coordinator's long poll (AcquireWork waiting for work) and batched completions
// (CompleteUnits), without sockets.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cluster/errors.h"
#include "cluster/u128.h"
#include "coordinator/clock.h"
#include "coordinator/coordinator.h"
#include "tests/cluster/coordinator_fixture.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

using namespace std::chrono_literals;

class LongPollTest : public CoordinatorFixture {
 protected:
  v1::Job submit(int depth, const std::string& sps, int split) {
    return CoordinatorFixture::submit(perft_request(v1::VERIFY_MODE_OFF, depth, sps, split));
  }

  // Starts a waiting acquire; the answer lands in *out.
  struct Waiting {
    std::atomic<bool> answered{false};
    absl::StatusOr<v1::AcquireWorkResponse> answer = v1::AcquireWorkResponse();
    std::mutex m;
    std::condition_variable cv;
    void set(absl::StatusOr<v1::AcquireWorkResponse> r) {
      {
        std::lock_guard lock(m);
        answer = std::move(r);
        answered = true;
      }
      cv.notify_all();
    }
    // Whether the answer came within 5 s (the coordinator's thread answers).
    bool wait() {
      std::unique_lock lock(m);
      return cv.wait_for(lock, 5s, [&] { return answered.load(); });
    }
  };
  void acquire_async(const std::string& worker, int wait_seconds, Waiting* out, int max_units = 1) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(worker);
    req.set_max_units(max_units);
    req.set_wait_seconds(wait_seconds);
    coordinator_->acquire_async(Caller::local(), req, coordinator_->new_ticket(),
                                [out](absl::StatusOr<v1::AcquireWorkResponse> r) { out->set(std::move(r)); });
  }
};

TEST_F(LongPollTest, WaitingAcquireGetsWorkAsSoonAsAJobArrives) {
  const std::string w = hello("w");
  Waiting a;
  acquire_async(w, 30, &a);
  EXPECT_FALSE(a.answered);
  EXPECT_EQ(coordinator_->waiting_acquires(), 1u);
  submit(2, "518", 1);
  ASSERT_TRUE(a.wait());
  ASSERT_TRUE(a.answer.ok()) << a.answer.status();
  EXPECT_EQ(a.answer->leases_size(), 1);
  EXPECT_EQ(coordinator_->waiting_acquires(), 0u);
}

TEST_F(LongPollTest, WaitEndsEmptyAtItsDeadline) {
  const std::string w = hello("w");
  Waiting a;
  acquire_async(w, 5, &a);
  clock_.advance_ms(4'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * kLongPollTickMs));
  EXPECT_FALSE(a.answered);
  clock_.advance_ms(1'000);
  ASSERT_TRUE(a.wait());
  ASSERT_TRUE(a.answer.ok());
  EXPECT_EQ(a.answer->leases_size(), 0);
}

TEST_F(LongPollTest, TheWaitIsCappedByTheServer) {
  const std::string w = hello("w");
  Waiting a;
  acquire_async(w, 100'000, &a);
  clock_.advance_ms(int64_t(kMaxAcquireWaitSeconds) * 1000);
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(a.answer->leases_size(), 0);
}

TEST_F(LongPollTest, ANewerCallOfTheSessionEndsTheOlderWait) {
  const std::string w = hello("w");
  Waiting a, b;
  acquire_async(w, 30, &a);
  acquire_async(w, 30, &b);
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.answer->leases_size(), 0);
  EXPECT_FALSE(b.answered);
  EXPECT_EQ(coordinator_->waiting_acquires(), 1u);
  submit(1, "518", 0);
  ASSERT_TRUE(b.wait());
  EXPECT_EQ(b.answer->leases_size(), 1);
}

TEST_F(LongPollTest, CancelAndShutdownAnswerEveryWaiterEmpty) {
  const std::string w1 = hello("w1"), w2 = hello("w2");
  Waiting a, b;
  const uint64_t ticket = coordinator_->new_ticket();
  v1::AcquireWorkRequest req;
  req.set_worker_id(w1);
  req.set_max_units(1);
  req.set_wait_seconds(30);
  coordinator_->acquire_async(Caller::local(), req, ticket,
                              [&](absl::StatusOr<v1::AcquireWorkResponse> r) { a.set(std::move(r)); });
  acquire_async(w2, 30, &b);
  coordinator_->cancel_acquire(ticket);
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.answer->leases_size(), 0);
  coordinator_->cancel_acquire(ticket);  // twice: nothing happens
  coordinator_->shutdown();
  ASSERT_TRUE(b.wait());
  EXPECT_EQ(b.answer->leases_size(), 0);
  // After shutdown nobody waits.
  Waiting c;
  acquire_async(w2, 30, &c);
  EXPECT_TRUE(c.answered);
}

TEST_F(LongPollTest, WaitersOfAReplacedSessionAreToldToSayHelloAgain) {
  const std::string w = hello("w");
  Waiting a;
  acquire_async(w, 30, &a);
  hello("w");  // the same worker again: a new session
  submit(1, "518", 0);
  ASSERT_TRUE(a.wait());
  EXPECT_EQ(reason_of(a.answer.status()), v1::ErrorInfo::REASON_UNKNOWN_WORKER);
}

TEST_F(LongPollTest, BadWaitIsRefused) {
  const std::string w = hello("w");
  Waiting a;
  acquire_async(w, -1, &a);
  ASSERT_TRUE(a.answered);
  EXPECT_EQ(a.answer.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(LongPollTest, BatchedCompletionsAreCountedOnceEachAndAnsweredEach) {
  const std::string w = hello("w");
  const v1::Job job = submit(3, "518", 1);
  v1::AcquireWorkRequest areq;
  areq.set_worker_id(w);
  areq.set_max_units(100);
  auto leases = coordinator_->acquire(Caller::local(), areq);
  ASSERT_TRUE(leases.ok());
  ASSERT_GT(leases->leases_size(), 3);
  v1::CompleteUnitsRequest batch;
  batch.set_worker_id(w);
  for (const v1::Lease& l : leases->leases()) {
    v1::CompleteUnitRequest* c = batch.add_completions();
    c->set_unit_id(l.unit_id());
    c->set_attempt(l.attempt());
    *c->mutable_result() = *compute_unit(l.spec(), nullptr);
  }
  // One bad entry does not spoil the others.
  v1::CompleteUnitRequest* bad = batch.add_completions();
  bad->set_unit_id(absl::StrCat(job.id(), "/99999"));
  bad->set_attempt(1);
  *bad->mutable_result() = batch.completions(0).result();
  auto resp = coordinator_->complete_units(Caller::local(), batch);
  ASSERT_TRUE(resp.ok()) << resp.status();
  ASSERT_EQ(resp->statuses_size(), batch.completions_size());
  for (int k = 0; k + 1 < resp->statuses_size(); ++k) {
    EXPECT_EQ(resp->statuses(k).code(), 0) << resp->statuses(k).message();
    EXPECT_EQ(resp->statuses(k).outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  }
  EXPECT_EQ(resp->statuses().rbegin()->code(), int(absl::StatusCode::kNotFound));
  // The same batch again (a lost reply): nothing is counted twice.
  auto again = coordinator_->complete_units(Caller::local(), batch);
  ASSERT_TRUE(again.ok());
  for (int k = 0; k + 1 < again->statuses_size(); ++k)
    EXPECT_EQ(again->statuses(k).outcome(), v1::COMPLETION_OUTCOME_DUPLICATE);
  auto done = coordinator_->get_job(Caller::local(), job.id());
  ASSERT_TRUE(done.ok());
  EXPECT_EQ(done->state(), v1::JOB_STATE_SUCCEEDED);
  auto results = coordinator_->results(Caller::local(), job.id(), false);
  ASSERT_TRUE(results.ok());
  EXPECT_EQ(from_proto(results->at(0).perft().nodes()), NodeCount(8'902));  // perft(3) of position 518
}

TEST_F(LongPollTest, BatchBoundsAndSessionAreChecked) {
  v1::CompleteUnitsRequest empty;
  empty.set_worker_id(hello("w"));
  EXPECT_EQ(coordinator_->complete_units(Caller::local(), empty).status().code(), absl::StatusCode::kInvalidArgument);
  v1::CompleteUnitsRequest unknown;
  unknown.set_worker_id("s-nobody");
  unknown.add_completions()->set_unit_id("job-1/0");
  EXPECT_EQ(reason_of(coordinator_->complete_units(Caller::local(), unknown).status()),
            v1::ErrorInfo::REASON_UNKNOWN_WORKER);
}

}  // namespace
}  // namespace c960::cluster
