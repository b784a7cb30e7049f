// Invariants checked at every node of perft walks over the suites' positions:
//  - generate_legal, count_legal and has_legal_move agree;
//  - gives_check(m) agrees with in_check() after making m;
//  - the incremental key equals the key computed from scratch;
//  - undo_move restores FEN and key exactly;
//  - every generated move round-trips through UCI and SAN.
#include "core/movegen.h"
#include "core/notation.h"
#include "core/startpos.h"
#include "core/suite.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

struct Walk {
  uint64_t nodes = 0;
  bool check_notation = true;

  uint64_t run(Position& pos, int depth) {
    MoveList list;
    generate_legal(pos, list);
    EXPECT_EQ(count_legal(pos), list.size()) << pos.fen();
    EXPECT_EQ(has_legal_move(pos), list.size() > 0) << pos.fen();
    EXPECT_EQ(pos.key(), pos.compute_key()) << pos.fen();
    EXPECT_EQ(pos.in_check(),
              (pos.attackers_to(pos.king_square(pos.side_to_move())) & pos.pieces(~pos.side_to_move())) != 0);
    if (depth == 0) return 1;
    uint64_t leaves = 0;
    const std::string fen = pos.fen();
    const Key key = pos.key();
    for (Move m : list) {
      if (check_notation) {
        absl::StatusOr<Move> u = parse_uci(pos, to_uci(m));
        EXPECT_TRUE(u.ok() && *u == m) << fen << " " << to_uci(m);
        const std::string san = to_san(pos, m);
        absl::StatusOr<Move> s = parse_san(pos, san);
        EXPECT_TRUE(s.ok() && *s == m) << fen << " " << san << " " << (s.ok() ? "" : s.status().message());
      }
      const bool gives = pos.gives_check(m);
      StateInfo st;
      pos.do_move(m, st);
      ++nodes;
      EXPECT_EQ(gives, pos.in_check()) << fen << " " << to_uci(m);
      leaves += run(pos, depth - 1);
      pos.undo_move(m);
      if (pos.key() != key || pos.fen() != fen) {
        ADD_FAILURE() << "undo of " << to_uci(m) << " did not restore " << fen << " (got " << pos.fen() << ")";
        return leaves;
      }
    }
    return leaves;
  }
};

void walk_suite(const std::string& file, int depth, bool notation) {
  absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(test::read_data(file));
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  for (const PerftCase& c : *cases) {
    Position pos = test::pos_of(c.fen);
    Walk w{0, notation};
    const uint64_t leaves = w.run(pos, depth);
    for (const auto& [d, n] : c.expected)
      if (d == depth) {
        EXPECT_EQ(leaves, n) << c.id << " " << c.fen;
      }
    if (::testing::Test::HasFailure()) return;  // one broken position is enough to read
  }
}

TEST(Invariants, EdgeCasesDepth3) { walk_suite("chess960_edge_cases.epd", 3, true); }
TEST(Invariants, TrickyDepth3) { walk_suite("shakmaty_tricky.perft", 3, true); }
TEST(Invariants, MidgameFirst100Depth2) {
  absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(test::read_data("chess960_midgame.epd"));
  ASSERT_TRUE(cases.ok());
  for (size_t i = 0; i < cases->size() && i < 100; ++i) {
    Position pos = test::pos_of((*cases)[i].fen);
    Walk w;
    EXPECT_EQ(w.run(pos, 2), (*cases)[i].expected[1].second) << (*cases)[i].fen;
  }
}
TEST(Invariants, StandardDepth2) { walk_suite("standard.epd", 2, true); }
TEST(Invariants, EveryStartPositionDepth2) {
  for (const test::StartposRow& r : test::startpos_table()) {
    if (r.sp % 7) continue;
    Position pos = test::pos_of(r.fen);
    Walk w{0, false};
    EXPECT_EQ(w.run(pos, 2), r.perft[2]) << r.sp;
  }
}

}  // namespace
}  // namespace c960
