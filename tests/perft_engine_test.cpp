// The fast perft against the reference walk, and its options: hash table, Zobrist key sets,
// threads. None of them may change a count.
#include <random>

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
