#include "core/perft.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <thread>
#include <type_traits>

#include "core/movegen.h"
#include "core/perft_board.h"

namespace c960 {

std::string to_string(NodeCount n) {
  if (n == 0) return "0";
  std::string s;
  while (n) {
    s += char('0' + int(n % 10));
    n /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

// ---------------------------------------------------------------------------------------------
// PerftHash

PerftHash::PerftHash(size_t megabytes) {
  // A power of two of buckets, so the index is a mask and its bits are key bits.
  const size_t want = megabytes * 1024 * 1024 / sizeof(Bucket);
  buckets_ = want ? size_t(1) << (63 - std::countl_zero(uint64_t(want))) : 0;
  if (!buckets_) return;
  index_bits_ = std::countr_zero(uint64_t(buckets_));
  // More than the machine has would only swap or be killed: refuse it like a failed mapping.
  if (bytes() / sysconf(_SC_PAGESIZE) > size_t(sysconf(_SC_PHYS_PAGES))) {
    buckets_ = 0;
    throw std::bad_alloc();
  }
  // Anonymous pages arrive zeroed, and an empty bucket is all zero, so nothing is written here:
  // each page is faulted in by the first probe or store that reaches it, and the count starts at
  // once whatever the size. Huge pages (where the system has them) spare the TLB on random
  // probes and make those first touches 512 times fewer; they need a 2 MB aligned range, so the
  // mapping is made 2 MB larger and the table starts at its first 2 MB boundary.
  map_bytes_ = bytes() + kHugePage;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    buckets_ = 0;
    throw std::bad_alloc();
  }
  map_ = p;
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  table_ = reinterpret_cast<Bucket*>(aligned);
  madvise(table_, bytes(), MADV_HUGEPAGE);
}

PerftHash::~PerftHash() {
  if (map_) munmap(map_, map_bytes_);
}

void PerftHash::clear() {
  if (!table_) return;
  // Private anonymous pages read back as zero; they are faulted in again as the search reaches them.
  madvise(table_, bytes(), MADV_DONTNEED);
  deep_stores_.store(0, std::memory_order_relaxed);
}

namespace {

// A compact entry: the key above the index bits I, then a depth bit (0: depth 2, 1: depth 3),
// then the count in the I - 1 bits left. The all-zero word is the empty entry, never stored.
struct CompactFormat {
  int index_bits;
  int count_bits() const { return index_bits - 1; }
  bool fits(int depth, uint64_t nodes) const {
    return (depth == 2 || depth == 3) && index_bits >= 8 && nodes >> count_bits() == 0;
  }
  // Everything but the count: the word a match must have above the count bits.
  uint64_t tag(Key key, int depth) const {
    return (key >> index_bits << index_bits) | uint64_t(depth - 2) << count_bits();
  }
  uint64_t count_mask() const { return (uint64_t(1) << count_bits()) - 1; }
};

// The full slot's generation advances every 2^-kGenerationShift table of deep stores; an entry
// kStaleAge generations old (four tables of deep stores later) is stale. Measured on perft 8 of
// 518 with 16 MB: stale after one table lost half the depth-5 hits; after 4 or 16 tables did
// equally well. The generation wraps after 256: a very old entry may pass for a new one, which
// costs only its slot until it is stale again.
constexpr int kGenerationShift = 2;
constexpr int kStaleAge = 16;

}  // namespace

bool PerftHash::probe(Key key, int depth, uint64_t& nodes) const {
  if (!buckets_) return false;
  const Bucket& b = table_[key & (buckets_ - 1)];
  if (depth >= 3) {
    const uint64_t data = b.data.load(std::memory_order_relaxed);
    if ((b.check.load(std::memory_order_relaxed) ^ data) == key && int(data & 0xFF) == depth && data) {
      nodes = data >> 16;
      return true;
    }
    if (depth > 3) return false;
  }
  const CompactFormat f{index_bits_};
  if (f.index_bits < 8) return false;
  const uint64_t tag = f.tag(key, depth);
  for (const std::atomic<uint64_t>& w : b.compact) {
    const uint64_t e = w.load(std::memory_order_relaxed);
    if (e && (e & ~f.count_mask()) == tag) {
      nodes = e & f.count_mask();
      return true;
    }
  }
  return false;
}

bool PerftHash::store_compact(Bucket& b, Key key, int depth, uint64_t nodes) {
  const CompactFormat f{index_bits_};
  if (!f.fits(depth, nodes)) return false;
  const uint64_t e = f.tag(key, depth) | nodes;
  if (!e) return false;
  // Newest first. The victim is the oldest empty word, else the oldest depth-2 entry, else the
  // oldest entry (or a copy of this entry, which a racing thread may have stored meanwhile);
  // the words before it shift down one place.
  uint64_t w[kCompact];
  for (int i = 0; i < kCompact; ++i) w[i] = b.compact[i].load(std::memory_order_relaxed);
  int victim = kCompact - 1;
  const uint64_t shallow_bit = uint64_t(1) << f.count_bits();
  for (int i = kCompact - 1; i >= 0; --i)
    if (w[i] == e) {
      victim = i;
      break;
    }
  if (w[victim] != e) {
    int empty = -1, shallow = -1;
    for (int i = kCompact - 1; i >= 0; --i) {
      if (!w[i] && empty < 0) empty = i;
      if (w[i] && !(w[i] & shallow_bit) && shallow < 0) shallow = i;
    }
    victim = empty >= 0 ? empty : shallow >= 0 ? shallow : kCompact - 1;
  }
  for (int i = victim; i > 0; --i) b.compact[i].store(w[i - 1], std::memory_order_relaxed);
  b.compact[0].store(e, std::memory_order_relaxed);
  return true;
}

bool PerftHash::store_full(Bucket& b, Key key, int depth, uint64_t nodes) {
  if (nodes >> 48) return false;  // too big to fit: rare enough not to cache
  const uint64_t stores = deep_stores_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t gen = (stores >> std::max(0, index_bits_ - kGenerationShift)) & 0xFF;
  const uint64_t old = b.data.load(std::memory_order_relaxed);
  const Key old_key = b.check.load(std::memory_order_relaxed) ^ old;
  const bool stale = int((gen - (old >> 8)) & 0xFF) >= kStaleAge;
  if (old && !stale) {
    if (int(old & 0xFF) > depth) return false;  // the deeper count stays
    // A depth-3 count that gives way moves to the compact entries (measured: with 16 MB, perft 8
    // of 518 went from 13.5 to 10.1 s). The pair's key is read as a probe reads it, so a torn
    // pair moves only under a key whose bits lead here: one that a probe here would have matched.
    if (old_key != key && (old_key & (buckets_ - 1)) == (key & (buckets_ - 1)))
      store_compact(b, old_key, int(old & 0xFF), old >> 16);
  }
  const uint64_t data = nodes << 16 | gen << 8 | uint64_t(depth);
  b.check.store(key ^ data, std::memory_order_relaxed);
  b.data.store(data, std::memory_order_relaxed);
  return true;
}

void PerftHash::store(Key key, int depth, uint64_t nodes) {
  if (!buckets_) return;
  Bucket& b = table_[key & (buckets_ - 1)];
  if (depth >= 3 && store_full(b, key, depth, nodes)) return;
  store_compact(b, key, depth, nodes);
}

// The fast perft's board and recursion: core/perft_board.h.

namespace {

using namespace perft_detail;

template <Sliders S>
uint64_t perft_dispatch(const Board& b, Color us, int depth, PerftHash* hash) {
  const bool use_hash = hash && hash->bytes() && depth >= kMinHashDepth;
  if (use_hash) return perft_hashed<S>(b, us, depth, hash);
  return us == WHITE ? perft_board<WHITE, false, S>(b, depth, hash) : perft_board<BLACK, false, S>(b, depth, hash);
}

}  // namespace

uint64_t perft(const Position& pos, int depth, PerftHash* hash, const zobrist::Keys* keys) {
  CastleInfo ci;
  Board b;
  init_board(pos, keys ? *keys : zobrist::current_keys(), ci, b);
  if (depth <= 0) return 1;
  // The slider method is chosen here, once per call, not per lookup.
  if (sliders() == Sliders::Pext) return perft_dispatch<Sliders::Pext>(b, pos.side_to_move(), depth, hash);
  return perft_dispatch<Sliders::Magic>(b, pos.side_to_move(), depth, hash);
}

uint64_t perft_reference(Position& pos, int depth) {
  if (depth <= 0) return 1;
  MoveList list;
  generate_legal(pos, list);
  if (depth == 1) return uint64_t(list.size());
  uint64_t nodes = 0;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    nodes += perft_reference(pos, depth - 1);
    pos.undo_move(m);
  }
  return nodes;
}

std::vector<DivideEntry> divide(const Position& root, int depth, PerftHash* hash, const zobrist::Keys* keys) {
  Position pos = root;
  MoveList list;
  generate_legal(pos, list);
  std::vector<DivideEntry> out;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    out.push_back({m, perft(pos, depth - 1, hash, keys)});
    pos.undo_move(m);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parallel perft: roots are expanded to tasks below the root; threads take tasks, largest first.

std::vector<PerftResult> perft_parallel(const std::vector<Position>& roots, int depth, const PerftOptions& options,
                                        PerftHash* hash) {
  std::vector<PerftResult> results(roots.size());
  if (depth <= 0) {
    for (PerftResult& r : results) r.nodes = 1;
    return results;
  }

  struct Task {
    size_t root;
    int root_move;  // index into the root's divide
    Position pos;   // after one or two plies
    int depth;      // remaining
    uint64_t estimate = 0;
    uint64_t nodes = 0;
  };
  const int threads = std::max(1, options.threads);
  // Two plies when one ply would leave too few tasks to keep every thread busy to the end.
  const bool two_plies = depth >= 3 && roots.size() * 20 < size_t(threads) * 64;
  std::vector<Task> tasks;
  for (size_t r = 0; r < roots.size(); ++r) {
    Position pos = roots[r];
    MoveList list;
    generate_legal(pos, list);
    for (int i = 0; i < list.size(); ++i) {
      const Move m = list.moves[i];
      results[r].divide.push_back({m, 0});
      StateInfo st;
      pos.do_move(m, st);
      if (two_plies) {
        MoveList replies;
        generate_legal(pos, replies);
        for (Move m2 : replies) {
          StateInfo st2;
          pos.do_move(m2, st2);
          tasks.push_back({r, i, pos, depth - 2});
          pos.undo_move(m2);
        }
      } else {
        tasks.push_back({r, i, pos, depth - 1});
      }
      pos.undo_move(m);
    }
  }
  // Largest first: a shallow perft predicts the size of a subtree well enough. Roots stay
  // together (largest root first, then its largest tasks), so threads share one root's
  // transpositions in the hash table.
  std::vector<uint64_t> root_estimate(roots.size(), 0);
  if (depth >= 4 && threads > 1) {
    for (Task& t : tasks) root_estimate[t.root] += t.estimate = perft(t.pos, std::min(t.depth, 2));
    std::stable_sort(tasks.begin(), tasks.end(), [&](const Task& a, const Task& b) {
      if (a.root != b.root)
        return root_estimate[a.root] != root_estimate[b.root] ? root_estimate[a.root] > root_estimate[b.root]
                                                              : a.root < b.root;
      return a.estimate > b.estimate;
    });
  }

  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  size_t done = 0;
  NodeCount done_nodes = 0;
  auto work = [&] {
    for (size_t i;
         !(options.stop && options.stop()) && (i = next.fetch_add(1, std::memory_order_relaxed)) < tasks.size();) {
      tasks[i].nodes = perft(tasks[i].pos, tasks[i].depth, hash);
      if (options.progress) {
        std::lock_guard lock(progress_mu);
        done_nodes += tasks[i].nodes;
        options.progress(++done, tasks.size(), done_nodes);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  for (const Task& t : tasks) {
    results[t.root].divide[t.root_move].nodes += t.nodes;
    results[t.root].nodes += t.nodes;
  }
  return results;
}

}  // namespace c960
