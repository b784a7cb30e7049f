// The worker's loop: one control thread talks to the coordinator (hello, acquire with
// prefetch, renew, deliver results, release on shutdown) and N compute threads take leased
// units from a local queue. Results wait in memory until the coordinator has acknowledged them.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "c960/v1/cluster.pb.h"
#include "cluster/backoff.h"
#include "cluster/config.h"
#include "cluster/log.h"
#include "core/perft.h"
#include "worker/compute.h"
#include "worker/connection.h"

namespace c960::cluster {

struct WorkerOptions {
  int threads = 1;
  int hash_mb = kDefaultWorkerHashMb;
  int64_t grace_ms = kDefaultGraceSeconds * 1000;
  std::string name;
  std::string version;
  std::map<std::string, EngineOffer> engines;  // engine name -> its binary and policy, besides "builtin"
  std::string cpu;                             // the host's CPU model (provenance)
  BackoffPolicy retry;                         // waits before trying again (cluster/backoff.h)
};

class Worker {
 public:
  Worker(std::unique_ptr<CoordinatorConnection> coordinator, WorkerOptions options);
  ~Worker();
  // Runs until request_stop(); returns the process exit code (0 after a clean stop).
  int run();
  // Async-signal-safe enough: sets a flag the control loop polls.
  // Not async-signal-safe (it ends a waiting acquire): call it from a thread, e.g. one in sigwait.
  void request_stop() {
    stop_requested_ = true;
    coordinator_->cancel_waits();
  }

 private:
  // What to do after a call: go on, retry after the backoff, give up on this request, register
  // again, or stop for good (quarantined, refused credentials or version; see fatal_code_).
  enum class Rpc { kOk, kRetry, kFailed, kUnknownWorker, kFatal };
  Rpc classify(const grpc::Status& s, const char* what);
  bool hello();
  void deliver();
  // Handles the coordinator's answer to one completion; false: stop delivering for now.
  bool delivered(const v1::CompleteUnitRequest& req, const grpc::Status& s, v1::CompletionOutcome outcome);
  void acquire();
  void renew();
  void release_queued();
  void release_running();
  void compute_loop();
  int64_t now_ms() const;
  void log(const std::string& msg, LogLevel level = LogLevel::kInfo) const;

  std::unique_ptr<CoordinatorConnection> coordinator_;
  WorkerOptions options_;
  std::unique_ptr<PerftHash> hash_;
  std::atomic<bool> stop_requested_{false};
  int fatal_code_ = 0;  // the exit code after a kFatal answer

  std::mutex mu_;
  std::condition_variable work_cv_;              // compute threads wait for leases
  std::condition_variable control_cv_;           // the control loop waits for results
  std::deque<v1::Lease> queue_;                  // leased, not started
  std::map<std::string, v1::Lease> running_;     // being computed
  std::deque<v1::CompleteUnitRequest> results_;  // computed, not yet acknowledged
  uint64_t results_added_ = 0;                   // wakes the control loop for new results only, not during a backoff
  bool stopping_ = false;                        // no new units; compute threads end when idle
  std::vector<std::thread> threads_;

  // Control-thread state.
  std::string worker_id_;
  int64_t lease_ms_ = kDefaultLeaseSeconds * 1000;
  int64_t retry_at_ms_ = 0;  // no call before this (a wait to try again)
  Backoff backoff_;
  int64_t next_renew_ms_ = 0;
  int64_t next_acquire_ms_ = 0;
  int64_t busy_poll_at_ms_ = 0;    // a busy worker that got nothing asks again then (or when a unit ends)
  bool batch_completions_ = true;  // false once the coordinator said it has no CompleteUnits
};

}  // namespace c960::cluster
