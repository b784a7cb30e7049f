#include "cluster/backoff.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <random>

namespace c960::cluster {

Backoff::Backoff(BackoffPolicy policy, Uniform uniform) : policy_(policy), uniform_(std::move(uniform)) {
  policy_.initial_ms = std::max<int64_t>(1, policy_.initial_ms);
  policy_.max_ms = std::max(policy_.initial_ms, policy_.max_ms);
  policy_.multiplier = std::max(1.0, policy_.multiplier);
  if (!uniform_)
    uniform_ = [rng = std::mt19937_64(std::random_device{}())]() mutable {
      return std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    };
}

int64_t Backoff::ceiling_ms() const {
  // initial * multiplier^failures, computed in floating point and capped before it can overflow.
  const double c = double(policy_.initial_ms) * std::pow(policy_.multiplier, double(std::min(failures_, 200)));
  return c >= double(policy_.max_ms) ? policy_.max_ms : std::llround(c);
}

int64_t Backoff::next_ms(int64_t server_delay_ms) {
  const int64_t ceiling = ceiling_ms();
  ++failures_;
  const double u = std::clamp(uniform_(), 0.0, 1.0);
  const int64_t drawn = std::llround(u * double(ceiling));
  return std::max(drawn, std::clamp<int64_t>(server_delay_ms, 0, policy_.max_ms));
}

void Backoff::reset() { failures_ = 0; }

void StopSignal::stop() {
  {
    std::lock_guard lock(mu_);
    stopped_ = true;
  }
  cv_.notify_all();
}

bool StopSignal::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

bool StopSignal::wait_ms(int64_t ms) const {
  std::unique_lock lock(mu_);
  return !cv_.wait_for(lock, std::chrono::milliseconds(std::max<int64_t>(0, ms)), [&] { return stopped_; });
}

}  // namespace c960::cluster
