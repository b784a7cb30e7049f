// Perft against published tables and suites (see tests/data/README.md for the sources).
#include "core/perft.h"

#include "core/startpos.h"
#include "core/suite.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

#ifndef C960_PERFT_MAX_DEPTH_STARTPOS
#define C960_PERFT_MAX_DEPTH_STARTPOS 4
#endif
#ifndef C960_PERFT_MAX_DEPTH_SUITES
#define C960_PERFT_MAX_DEPTH_SUITES 4
#endif

TEST(Perft, AllStartPositionsAgainstTheReferenceTable) {
  const std::vector<test::StartposRow> rows = test::startpos_table();
  ASSERT_EQ(rows.size(), 960u);
  for (const test::StartposRow& r : rows) {
    Position pos = test::pos_of(r.fen);
    for (int d = 1; d <= C960_PERFT_MAX_DEPTH_STARTPOS; ++d)
      ASSERT_EQ(perft(pos, d), r.perft[d]) << "sp " << r.sp << " depth " << d;
  }
}

void check_suite(const std::string& file, int max_depth) {
  absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(test::read_data(file));
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  ASSERT_FALSE(cases->empty());
  int checks = 0;
  for (const PerftCase& c : *cases) {
    Position pos = test::pos_of(c.fen);
    for (const auto& [depth, expected] : c.expected)
      if (depth <= max_depth) {
        EXPECT_EQ(perft(pos, depth), expected) << c.id << " " << c.fen << " depth " << depth;
        ++checks;
      }
  }
  EXPECT_GT(checks, 0);
}

TEST(Perft, Chess960Midgame) { check_suite("chess960_midgame.epd", C960_PERFT_MAX_DEPTH_SUITES); }
TEST(Perft, Chess960EdgeCases) { check_suite("chess960_edge_cases.epd", C960_PERFT_MAX_DEPTH_SUITES + 1); }
TEST(Perft, Tricky) { check_suite("shakmaty_tricky.perft", 64); }  // includes "prison" at depth 32
TEST(Perft, Standard) { check_suite("standard.epd", C960_PERFT_MAX_DEPTH_SUITES - 1); }

TEST(Perft, DivideSumsToPerft) {
  Position pos = test::pos_of("r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1");
  NodeCount sum = 0;
  for (const DivideEntry& e : divide(pos, 3)) sum += e.nodes;
  EXPECT_EQ(uint64_t(sum), 97862u);
  EXPECT_EQ(divide(pos, 3).size(), 48u);
}

TEST(Perft, NodeCountPrintsBeyond64Bits) {
  NodeCount n = NodeCount(UINT64_MAX) + 1;
  EXPECT_EQ(to_string(n), "18446744073709551616");
  EXPECT_EQ(to_string(NodeCount(0)), "0");
  EXPECT_EQ(to_string(n * 1000 + 7), "18446744073709551616007");
}

}  // namespace
}  // namespace c960
