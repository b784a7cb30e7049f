// The fast perft against the reference walk, and its options: hash table, Zobrist key sets,
// threads. None of them may change a count.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <fstream>
#include <random>
#include <thread>

#include "core/movegen.h"
#include "core/perft.h"
#include "core/prng.h"
#include "core/startpos.h"
#include "core/suite.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

// Positions reached by random legal moves from random start positions.
std::vector<Position> random_positions(int count, uint64_t seed) {
  std::vector<Position> out;
  Prng rng(seed);
  while (int(out.size()) < count) {
    Position pos = test::pos_of(*startpos_fen(int(rng.below(960))));
    const int plies = int(rng.below(60));
    std::vector<StateInfo> states(plies);
    bool ok = true;
    for (int i = 0; i < plies && ok; ++i) {
      MoveList list;
      generate_legal(pos, list);
      if (!list.size())
        ok = false;
      else
        pos.do_move(list.moves[rng.below(uint64_t(list.size()))], states[i]);
    }
    out.push_back(Position(pos));  // a copy keeps only the current state
  }
  return out;
}

std::vector<Position> suite_positions(const std::string& file) {
  std::vector<Position> out;
  const absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(test::read_data(file));
  EXPECT_TRUE(cases.ok());
  if (cases.ok())
    for (const PerftCase& c : *cases) out.push_back(test::pos_of(c.fen));
  return out;
}

TEST(PerftEngine, FastAgreesWithReferenceOnRandomPositions) {
  for (const Position& p : random_positions(300, 2024)) {
    Position ref = p;
    for (int d = 1; d <= 3; ++d) ASSERT_EQ(perft(p, d), perft_reference(ref, d)) << p.fen() << " depth " << d;
  }
}

TEST(PerftEngine, FastAgreesWithReferenceOnTrickyPositions) {
  for (const char* file : {"shakmaty_tricky.perft", "chess960_edge_cases.epd"})
    for (const Position& p : suite_positions(file)) {
      Position ref = p;
      ASSERT_EQ(perft(p, 3), perft_reference(ref, 3)) << p.fen();
    }
}

TEST(PerftHash, StoreAndProbe) {
  PerftHash h(1);
  uint64_t n = 0;
  EXPECT_FALSE(h.probe(0x1234, 3, n));
  h.store(0x1234, 3, 999);
  ASSERT_TRUE(h.probe(0x1234, 3, n));
  EXPECT_EQ(n, 999u);
  EXPECT_FALSE(h.probe(0x1234, 4, n));   // other depth
  EXPECT_FALSE(h.probe(0x11234, 3, n));  // other key, maybe same bucket
  h.clear();
  EXPECT_FALSE(h.probe(0x1234, 3, n));
  PerftHash off(0);
  off.store(1, 2, 3);
  EXPECT_FALSE(off.probe(1, 2, n));
}

// Resident memory of this process, from /proc/self/statm (Linux).
size_t resident_bytes() {
  std::ifstream statm("/proc/self/statm");
  size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return resident * size_t(sysconf(_SC_PAGESIZE));
}

// A table is counted with from its first node: making it writes nothing, so none of its memory
// is resident until the search reaches it, and a store still lands in zeroed memory.
TEST(PerftHash, MakingATableTouchesNoMemory) {
  const size_t before = resident_bytes();
  PerftHash h(512);
  const size_t after = resident_bytes();
  EXPECT_LT(after, before + (size_t(16) << 20)) << "made: " << (after - before) / 1024 << " KB resident";
  uint64_t n = 0;
  EXPECT_FALSE(h.probe(0xABCDEF, 5, n));
  h.store(0xABCDEF, 5, 123456789);
  ASSERT_TRUE(h.probe(0xABCDEF, 5, n));
  EXPECT_EQ(n, 123456789u);
  EXPECT_LT(resident_bytes(), before + (size_t(16) << 20));  // one page (or huge page) more
}

// The count a test stores for (key, depth): different for every depth, and of every size from
// a few bits (compact entries) to 47 (full slots only).
uint64_t test_count(Key key, int depth) {
  const uint64_t mixed = (key ^ (uint64_t(depth) * 0x9E3779B97F4A7C15ULL)) * 0xD6E8FEB86659FD93ULL;
  const int bits = 3 + int(mixed >> 59) % 45;
  return (mixed & ((uint64_t(1) << bits) - 1)) | 1;
}

// Keys that share their low 32 bits share a bucket in any table up to 256 GB.
std::vector<Key> keys_of_one_bucket(int count, uint64_t seed) {
  Prng rng(seed);
  const Key low = rng.rand64() & 0xFFFFFFFFULL;
  std::vector<Key> keys;
  for (int i = 0; i < count; ++i) keys.push_back((rng.rand64() << 32) | low);
  return keys;
}

TEST(PerftHash, EntriesAnswerOnlyTheirOwnKeyAndDepth) {
  for (size_t mb : {1, 64}) {
    PerftHash h(mb);
    const std::vector<Key> keys = keys_of_one_bucket(40, mb);
    for (const Key k : keys)
      for (int depth : {2, 3, 5}) h.store(k, depth, test_count(k, depth));
    int hits = 0;
    for (const Key k : keys)
      for (int depth = 2; depth <= 6; ++depth) {
        uint64_t n = 0;
        if (h.probe(k, depth, n)) {
          ++hits;
          EXPECT_TRUE(depth == 2 || depth == 3 || depth == 5) << "depth " << depth << " was never stored";
          EXPECT_EQ(n, test_count(k, depth)) << std::hex << k << " depth " << depth;
        }
        // Every one of the 64 key bits is verified: flipping any one finds nothing.
        for (int bit = 0; bit < 64; ++bit) {
          const Key other = k ^ (Key(1) << bit);
          if (std::find(keys.begin(), keys.end(), other) == keys.end()) {
            EXPECT_FALSE(h.probe(other, depth, n)) << std::hex << k << " bit " << std::dec << bit << " depth " << depth;
          }
        }
      }
    EXPECT_GT(hits, 0) << mb << " MB";
  }
}

TEST(PerftHash, ShallowStoresKeepTheNewestAndSpareDepthThree) {
  PerftHash h(1);
  const std::vector<Key> keys = keys_of_one_bucket(23, 5);
  // Three depth-3 counts, small enough for compact entries, then twenty depth-2 counts.
  for (int i = 0; i < 3; ++i) h.store(keys[i], 3, 1000 + i);
  for (int i = 3; i < 23; ++i) h.store(keys[i], 2, 100 + i);
  uint64_t n = 0;
  for (int i = 0; i < 3; ++i) {
    ASSERT_TRUE(h.probe(keys[i], 3, n)) << i;
    EXPECT_EQ(n, uint64_t(1000 + i));
  }
  ASSERT_TRUE(h.probe(keys[22], 2, n));
  EXPECT_EQ(n, 122u);
  EXPECT_FALSE(h.probe(keys[3], 2, n)) << "the oldest depth-2 count should have given way";
  // A deeper count is kept over a shallower one of another key in the same bucket.
  h.store(keys[0], 7, 123456789);
  h.store(keys[1], 4, 5555);
  ASSERT_TRUE(h.probe(keys[0], 7, n));
  EXPECT_EQ(n, 123456789u);
}

TEST(PerftHash, RacingThreadsNeverReadAWrongCount) {
  // Few buckets, many keys, all depths and count sizes: threads overwrite each other's entries
  // all the time, so torn or half-shifted entries would show up as wrong counts.
  PerftHash h(1);
  std::vector<Key> keys;
  for (uint64_t b = 0; b < 2; ++b)
    for (Key k : keys_of_one_bucket(16, b + 1)) keys.push_back(k);
  std::atomic<int> wrong{0}, hits{0};
  auto work = [&](uint64_t seed) {
    Prng rng(seed);
    for (int i = 0; i < 1000000; ++i) {
      const Key k = keys[rng.below(keys.size())];
      const int depth = 2 + int(rng.below(6));
      uint64_t n = 0;
      if (rng.below(2)) {
        h.store(k, depth, test_count(k, depth));
      } else if (h.probe(k, depth, n)) {
        ++hits;
        if (n != test_count(k, depth)) ++wrong;
      }
    }
  };
  std::vector<std::thread> pool;
  for (uint64_t t = 0; t < 4; ++t) pool.emplace_back(work, t + 11);
  for (std::thread& t : pool) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_GT(hits.load(), 0);
}

TEST(PerftHash, CountsIdenticalWithAndWithoutTheTable) {
  // A 1 MB table overflows at once: replacement and collisions are exercised, not just hits.
  PerftHash small(1), big(16);
  for (const Position& p : random_positions(60, 7)) {
    const uint64_t plain = perft(p, 4);
    EXPECT_EQ(perft(p, 4, &small), plain) << p.fen();
    EXPECT_EQ(perft(p, 4, &big), plain) << p.fen();
    EXPECT_EQ(perft(p, 4, &big), plain) << p.fen() << " (second time, from the table)";
  }
  for (const test::StartposRow& r : test::startpos_table())
    if (r.sp % 97 == 0) {
      EXPECT_EQ(perft(test::pos_of(r.fen), 5, &big), r.perft[5]) << r.sp;
    }
}

TEST(PerftHash, CountsIdenticalWithAnotherZobristKeySet) {
  const std::vector<std::string> fens = {"r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
                                         "1rqbkrbn/1ppppp1p/1n6/p1N3p1/8/2P4P/PP1PPPP1/1RQBKRBN w FBfb - 0 9",
                                         "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1"};
  std::vector<uint64_t> counts;
  std::vector<Key> keys;
  for (const std::string& f : fens) {
    PerftHash h(4);
    counts.push_back(perft(test::pos_of(f), 4, &h));
    keys.push_back(test::pos_of(f).key());
  }
  const uint64_t old_seed = zobrist::seed();
  zobrist::init(987654321);
  for (size_t i = 0; i < fens.size(); ++i) {
    PerftHash h(4);
    const Position p = test::pos_of(fens[i]);
    EXPECT_NE(p.key(), keys[i]) << "the seed changed nothing";
    EXPECT_EQ(p.key(), p.compute_key());
    EXPECT_EQ(perft(p, 4, &h), counts[i]) << fens[i];
  }
  zobrist::init(old_seed);
  EXPECT_EQ(test::pos_of(fens[0]).key(), keys[0]);
}

// Key sets chosen per call (as the cluster's replicas of a unit do) share one table without
// mixing: the same counts with the global set, two others, and all three in turn on one table.
TEST(PerftHash, KeySetsPerCallShareATableAndAgree) {
  const zobrist::Keys a = zobrist::make_keys(11), b = zobrist::make_keys(12);
  EXPECT_NE(a.psq[W_KING][SQ_E1], b.psq[W_KING][SQ_E1]);
  const zobrist::Keys global = zobrist::current_keys();
  EXPECT_EQ(global.side, zobrist::make_keys(zobrist::seed()).side);
  PerftHash shared(2);
  for (const std::string f :
       {"r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1", "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1"}) {
    const Position p = test::pos_of(f);
    const uint64_t want = perft_reference(*std::make_unique<Position>(p), 4);
    for (int round = 0; round < 2; ++round) {
      EXPECT_EQ(perft(p, 4, &shared), want) << f;
      EXPECT_EQ(perft(p, 4, &shared, &a), want) << f;
      EXPECT_EQ(perft(p, 4, &shared, &b), want) << f;
      EXPECT_EQ(perft(p, 4, &shared, &global), want) << f;
    }
    EXPECT_EQ(divide(p, 3, &shared, &a).size(), divide(p, 3, nullptr).size());
  }
}

TEST(PerftParallel, ThreadsSplitBelowTheRootAndAgree) {
  const std::vector<Position> roots = random_positions(5, 99);
  for (int threads : {1, 2, 4}) {
    PerftOptions opt;
    opt.threads = threads;
    size_t calls = 0, last_total = 0;
    opt.progress = [&](size_t done, size_t total, NodeCount) {
      ++calls;
      EXPECT_LE(done, total);
      last_total = total;
    };
    PerftHash h(2);
    for (PerftHash* hash : {static_cast<PerftHash*>(nullptr), &h}) {
      const std::vector<PerftResult> res = perft_parallel(roots, 4, opt, hash);
      ASSERT_EQ(res.size(), roots.size());
      for (size_t i = 0; i < roots.size(); ++i) {
        EXPECT_EQ(res[i].nodes, NodeCount(perft(roots[i], 4))) << threads << " threads";
        NodeCount sum = 0;
        MoveList list;
        generate_legal(roots[i], list);
        ASSERT_EQ(int(res[i].divide.size()), list.size());
        for (const DivideEntry& e : res[i].divide) {
          sum += e.nodes;
          Position child = roots[i];
          StateInfo st;
          child.do_move(e.move, st);
          EXPECT_EQ(e.nodes, perft(child, 3));
        }
        EXPECT_EQ(sum, res[i].nodes);
      }
    }
    EXPECT_GT(calls, 0u);
    EXPECT_EQ(calls, 2 * last_total);
  }
}

TEST(PerftParallel, OnePositionWithManyThreadsAndATinySharedTable) {
  // Contention on a full table: torn or stale entries must never show up as wrong counts.
  PerftHash h(1);
  PerftOptions opt;
  opt.threads = 4;
  const Position pos = test::pos_of("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1");
  EXPECT_EQ(perft_parallel({pos}, 4, opt, &h).front().nodes, NodeCount(4085603));
  EXPECT_EQ(perft_parallel({pos}, 1, opt, &h).front().nodes, NodeCount(48));
  EXPECT_EQ(perft_parallel({pos}, 0, opt, &h).front().nodes, NodeCount(1));
}

}  // namespace
}  // namespace c960
