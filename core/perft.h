// Perft: the number of leaf nodes of the legal move tree to a given depth.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/position.h"

namespace c960 {

// Sums over many positions, or very deep ones, can pass 2^64.
using NodeCount = unsigned __int128;
std::string to_string(NodeCount n);

// A transposition table of perft counts, shared by any number of threads without locks.
// Each slot holds (key ^ data, data): a torn write from a racing thread makes the pair
// inconsistent, so the probe misses instead of returning a wrong count. Entries are verified
// by the full 64-bit key and the depth. Memory is mapped once, in the constructor; clear() is
// not safe while other threads use the table.
class PerftHash {
 public:
  // Throws std::bad_alloc when the memory cannot be mapped or exceeds the machine's memory.
  explicit PerftHash(size_t megabytes);
  ~PerftHash();
  PerftHash(const PerftHash&) = delete;
  PerftHash& operator=(const PerftHash&) = delete;

  bool probe(Key key, int depth, uint64_t& nodes) const;
  // Starts loading the bucket of key, so that a probe a little later does not wait for memory.
  void prefetch(Key key) const {
    if (buckets_) __builtin_prefetch(&table_[key & (buckets_ - 1)]);
  }
  void store(Key key, int depth, uint64_t nodes);
  void clear();
  // Entries stored from now on belong to generation g; older ones are replaced first.
  void set_generation(uint8_t g) { generation_.store(g, std::memory_order_relaxed); }
  size_t bytes() const { return buckets_ * sizeof(Bucket); }

 private:
  void prefault();

  struct Slot {
    std::atomic<uint64_t> check;  // key ^ data
    std::atomic<uint64_t> data;   // nodes << 16 | generation << 8 | depth
  };
  struct alignas(64) Bucket {
    Slot slots[4];
  };
  Bucket* table_ = nullptr;
  std::atomic<uint64_t> generation_{0};
  size_t buckets_ = 0;
};

// Single-threaded perft on a compact copy-make board; depth 0 is 1. With a hash table
// (which may be shared with other threads), subtrees found there are not walked again.
// pos is not modified.
uint64_t perft(const Position& pos, int depth, PerftHash* hash = nullptr);

// The plain make/unmake walk over Position, kept as the reference the fast one is tested against.
uint64_t perft_reference(Position& pos, int depth);

struct DivideEntry {
  Move move;
  NodeCount nodes;
};
// Perft of each legal move at depth - 1, in generation order. depth must be >= 1.
std::vector<DivideEntry> divide(const Position& pos, int depth, PerftHash* hash = nullptr);

struct PerftOptions {
  int threads = 1;
  // Called from worker threads (serialised) after each finished task.
  std::function<void(size_t tasks_done, size_t tasks_total, NodeCount nodes_so_far)> progress;
};

struct PerftResult {
  NodeCount nodes = 0;
  std::vector<DivideEntry> divide;  // per legal root move, in generation order (depth >= 1)
};

// Perft of many roots on a pool of threads. Each root is split below the root (at ply 1, or 2
// when there are few roots) into tasks, largest first, so that every thread stays busy to the
// end, for one position as for a table of 960.
std::vector<PerftResult> perft_parallel(const std::vector<Position>& roots, int depth, const PerftOptions& options,
                                        PerftHash* hash = nullptr);

}  // namespace c960
