// Time as the coordinator sees it, injectable so lease logic is testable without sleeping.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>

namespace c960::cluster {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now_ms() const = 0;  // Unix milliseconds
};

class SystemClock : public Clock {
 public:
  int64_t now_ms() const override {
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
  }
};

class FakeClock : public Clock {
 public:
  explicit FakeClock(int64_t start_ms = 1'700'000'000'000) : now_(start_ms) {}
  int64_t now_ms() const override { return now_.load(); }
  void advance_ms(int64_t ms) { now_ += ms; }

 private:
  std::atomic<int64_t> now_;
};

}  // namespace c960::cluster
