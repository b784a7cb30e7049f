// xorshift64* generator: tiny, fast, and reproducible across platforms for a given seed.
#pragma once

#include <cstdint>

namespace c960 {

class Prng {
 public:
  explicit Prng(uint64_t seed) : s_(seed ? seed : 0x9E3779B97F4A7C15ULL) {}

  uint64_t rand64() {
    s_ ^= s_ >> 12;
    s_ ^= s_ << 25;
    s_ ^= s_ >> 27;
    return s_ * 2685821657736338717ULL;
  }
  // About 1/8 of the bits set: good magic candidates.
  uint64_t sparse_rand() { return rand64() & rand64() & rand64(); }
  // Uniform in [0, n) without modulo bias.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = rand64();
    while (r >= limit);
    return r % n;
  }

 private:
  uint64_t s_;
};

}  // namespace c960
