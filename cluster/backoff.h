// Waiting before trying again: exponential backoff with full jitter, as in AWS's "Exponential
// Backoff and Jitter" and gRPC's connection-backoff spec (doc/connection-backoff.md). After the
// n-th failure in a row a client waits a time drawn uniformly from [0, ceiling], the ceiling
// being initial * multiplier^(n-1), capped: clients that failed together (a coordinator gone for
// all its workers) spread their next tries over the whole interval instead of coming back in
// step. A delay the server asked for (ErrorInfo.retry_delay_ms) is waited at least, up to the
// cap. A success resets it. The random draw is injectable, so tests see exact delays.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>

#include "cluster/config.h"

namespace c960::cluster {

struct BackoffPolicy {
  int64_t initial_ms = kRetryInitialMs;  // the first ceiling
  double multiplier = kRetryMultiplier;  // the ceiling grows by this at every failure
  int64_t max_ms = kRetryMaxMs;          // no ceiling, and no server-given delay, beyond this
};

class Backoff {
 public:
  // A number in [0, 1]; by default a random one.
  using Uniform = std::function<double()>;
  explicit Backoff(BackoffPolicy policy = {}, Uniform uniform = nullptr);

  // After a failure: how long to wait before the next try, in ms, at least server_delay_ms
  // (capped at policy.max_ms). Counts the failure.
  int64_t next_ms(int64_t server_delay_ms = 0);
  // After a success: the next failure starts again from the initial ceiling.
  void reset();
  // Failures counted since the last reset.
  int failures() const { return failures_; }
  // The ceiling the next failure's wait is drawn under.
  int64_t ceiling_ms() const;
  const BackoffPolicy& policy() const { return policy_; }

 private:
  BackoffPolicy policy_;
  Uniform uniform_;
  int failures_ = 0;
};

// A stop that ends waits at once, from any thread (the worker's signal thread): a process told
// to stop while it waits to try again does not wait out the delay.
class StopSignal {
 public:
  void stop();
  bool stopped() const;
  // Waits `ms`, or less when stopped meanwhile. True when the whole time passed without a stop.
  bool wait_ms(int64_t ms) const;

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool stopped_ = false;
};

}  // namespace c960::cluster
