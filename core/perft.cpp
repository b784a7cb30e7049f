#include "perft.h"

#include <algorithm>
#include <bit>

#include "movegen.h"

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

PerftHash::PerftHash(size_t megabytes) {
  // A power of two of buckets, so the index is a mask.
  const size_t want = megabytes * 1024 * 1024 / sizeof(Bucket);
  buckets_ = want ? size_t(1) << (63 - std::countl_zero(uint64_t(want))) : 0;
  if (buckets_) table_.reset(new Bucket[buckets_]);
  clear();
}

void PerftHash::clear() {
  for (size_t i = 0; i < buckets_; ++i)
    for (Slot& s : table_[i].slots) {
      s.check.store(0, std::memory_order_relaxed);
      s.data.store(0, std::memory_order_relaxed);
    }
}

bool PerftHash::probe(Key key, int depth, uint64_t& nodes) const {
  if (!buckets_) return false;
  const Bucket& b = table_[key & (buckets_ - 1)];
  for (const Slot& s : b.slots) {
    const uint64_t data = s.data.load(std::memory_order_relaxed);
    if ((s.check.load(std::memory_order_relaxed) ^ data) == key && int(data & 0xFF) == depth && data) {
      nodes = data >> 8;
      return true;
    }
  }
  return false;
}

void PerftHash::store(Key key, int depth, uint64_t nodes) {
  if (!buckets_ || nodes >> 56) return;  // too big to fit: rare enough not to cache
  Bucket& b = table_[key & (buckets_ - 1)];
  // Replace the shallowest entry: deep subtrees are the expensive ones to recompute.
  Slot* victim = &b.slots[0];
  int victim_depth = 256;
  for (Slot& s : b.slots) {
    const int d = int(s.data.load(std::memory_order_relaxed) & 0xFF);
    if (d < victim_depth) {
      victim = &s;
      victim_depth = d;
    }
  }
  const uint64_t data = nodes << 8 | uint64_t(depth);
  victim->check.store(key ^ data, std::memory_order_relaxed);
  victim->data.store(data, std::memory_order_relaxed);
}

uint64_t perft(Position& pos, int depth, PerftHash* hash) {
  if (depth <= 0) return 1;
  // Bulk counting: the last ply is counted from target sets, never made.
  if (depth == 1) return uint64_t(count_legal(pos));
  uint64_t nodes = 0;
  if (hash && hash->probe(pos.key(), depth, nodes)) return nodes;
  MoveList list;
  generate_legal(pos, list);
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    nodes += perft(pos, depth - 1, hash);
    pos.undo_move(m);
  }
  if (hash) hash->store(pos.key(), depth, nodes);
  return nodes;
}

std::vector<DivideEntry> divide(Position& pos, int depth, PerftHash* hash) {
  MoveList list;
  generate_legal(pos, list);
  std::vector<DivideEntry> out;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    out.push_back({m, perft(pos, depth - 1, hash)});
    pos.undo_move(m);
  }
  return out;
}

}  // namespace c960
