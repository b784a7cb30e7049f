// Perft: the number of leaf nodes of the legal move tree to a given depth.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "position.h"

namespace c960 {

// Sums over many positions, or very deep ones, can pass 2^64.
using NodeCount = unsigned __int128;
std::string to_string(NodeCount n);

// A transposition table of perft counts, shared by any number of threads without locks.
// Each slot holds (key ^ data, data): a torn write from a racing thread makes the pair
// inconsistent, so the probe misses instead of returning a wrong count. Entries are verified
// by the full 64-bit key and the depth. Memory is allocated once, in the constructor.
class PerftHash {
 public:
  explicit PerftHash(size_t megabytes);
  PerftHash(const PerftHash&) = delete;
  PerftHash& operator=(const PerftHash&) = delete;

  bool probe(Key key, int depth, uint64_t& nodes) const;
  void store(Key key, int depth, uint64_t nodes);
  void clear();
  size_t bytes() const { return buckets_ * sizeof(Bucket); }

 private:
  struct Slot {
    std::atomic<uint64_t> check;  // key ^ data
    std::atomic<uint64_t> data;   // nodes << 8 | depth
  };
  struct alignas(64) Bucket {
    Slot slots[4];
  };
  std::unique_ptr<Bucket[]> table_;
  size_t buckets_ = 0;
};

// Single-threaded perft; depth 0 is 1. With a hash table, subtrees found there are not walked.
uint64_t perft(Position& pos, int depth, PerftHash* hash = nullptr);

struct DivideEntry {
  Move move;
  uint64_t nodes;
};
// Perft of each legal move at depth - 1, in generation order. depth must be >= 1.
std::vector<DivideEntry> divide(Position& pos, int depth, PerftHash* hash = nullptr);

}  // namespace c960
