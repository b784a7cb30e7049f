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

// A transposition table of perft counts, shared by any number of threads without locks. Every
// entry is verified by all 64 bits of the key and by the depth, and no torn write can pass as an
// entry: counts never depend on the table. A bucket is one 64-byte cache line:
// - six compact entries for depths 2 and 3, most of the entries: one 64-bit word each, written
//   whole, holding the key bits above the bucket index (the index holds the rest), a depth bit
//   and the count. They are kept newest first; a store drops the oldest depth-2 entry (the
//   oldest entry when all are depth 3).
// - one full slot for deeper counts, and depth 3 while no deeper one holds it: (key ^ data,
//   data), so that a torn write from a racing thread makes the pair inconsistent and the probe
//   misses. It keeps the deeper count unless that one is stale: a generation passes every
//   quarter table of deep stores, and an entry sixteen generations old (typically from an
//   earlier root or unit) gives way. A depth-3 count it gives up moves to the compact entries.
// Memory is mapped once, in the constructor, and never touched there: pages arrive zeroed (empty)
// as the search first reaches them. clear() is not safe while other threads use it.
class PerftHash {
 public:
  // Throws std::bad_alloc when the memory cannot be mapped or exceeds the machine's memory.
  explicit PerftHash(size_t megabytes);
  ~PerftHash();
  PerftHash(const PerftHash&) = delete;
  PerftHash& operator=(const PerftHash&) = delete;

  bool probe(Key key, int depth, uint64_t& nodes) const;
  void store(Key key, int depth, uint64_t nodes);
  // Starts loading the bucket of key, so that a probe a little later does not wait for memory.
  void prefetch(Key key) const {
    if (buckets_) __builtin_prefetch(&table_[key & (buckets_ - 1)]);
  }
  void clear();
  size_t bytes() const { return buckets_ * sizeof(Bucket); }

 private:
  static constexpr int kCompact = 6;
  struct alignas(64) Bucket {
    std::atomic<uint64_t> compact[kCompact];  // newest first; 0 is empty
    std::atomic<uint64_t> check;              // key ^ data
    std::atomic<uint64_t> data;               // nodes << 16 | generation << 8 | depth
  };
  static_assert(sizeof(Bucket) == 64);

  bool store_compact(Bucket& b, Key key, int depth, uint64_t nodes);
  bool store_full(Bucket& b, Key key, int depth, uint64_t nodes);

  static constexpr size_t kHugePage = size_t(2) << 20;
  void* map_ = nullptr;  // the mapping: the table and up to one huge page before it
  size_t map_bytes_ = 0;
  Bucket* table_ = nullptr;
  size_t buckets_ = 0;
  int index_bits_ = 0;  // log2(buckets_): the key bits a bucket's position already verifies
  std::atomic<uint64_t> deep_stores_{0};
};

// Single-threaded perft on a compact copy-make board; depth 0 is 1. With a hash table
// (which may be shared with other threads), subtrees found there are not walked again.
// pos is not modified.
// keys: the Zobrist key set the hash table's entries are keyed with (null: the global one).
uint64_t perft(const Position& pos, int depth, PerftHash* hash = nullptr, const zobrist::Keys* keys = nullptr);

// The plain make/unmake walk over Position, kept as the reference the fast one is tested against.
uint64_t perft_reference(Position& pos, int depth);

struct DivideEntry {
  Move move;
  NodeCount nodes;
};
// Perft of each legal move at depth - 1, in generation order. depth must be >= 1.
std::vector<DivideEntry> divide(const Position& pos, int depth, PerftHash* hash = nullptr,
                                const zobrist::Keys* keys = nullptr);

struct PerftOptions {
  int threads = 1;
  // Called from worker threads (serialised) after each finished task.
  std::function<void(size_t tasks_done, size_t tasks_total, NodeCount nodes_so_far)> progress;
  // Asked before each task (from worker threads): once it says true, no further task starts, and
  // the counts returned are partial (a caller that stops them must not report them as perft).
  std::function<bool()> stop;
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
