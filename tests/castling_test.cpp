// Every Chess960 castling case and condition, on positions written for it. Perft counts were
// cross-checked with Stockfish 15.1 (go perft, UCI_Chess960 true).
#include "core/movegen.h"
#include "core/notation.h"
#include "core/perft.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

using test::pos_of;

bool has_move(const Position& pos, const std::string& uci) {
  MoveList list;
  generate_legal(pos, list);
  for (Move m : list)
    if (to_uci(m) == uci) return true;
  return false;
}

// Plays a castle given king-takes-rook and checks where king and rook land.
void expect_castle(const std::string& fen, const std::string& uci, Square king_to, Square rook_to) {
  Position pos = pos_of(fen);
  absl::StatusOr<Move> m = parse_uci(pos, uci);
  ASSERT_TRUE(m.ok()) << fen << " " << uci << ": " << m.status().message();
  ASSERT_EQ(m->kind(), CASTLING);
  const Color us = pos.side_to_move();
  const Key before = pos.key();
  const std::string fen_before = pos.fen();
  StateInfo st;
  pos.do_move(*m, st);
  EXPECT_EQ(pos.piece_on(king_to), make_piece(us, KING)) << fen;
  EXPECT_EQ(pos.piece_on(rook_to), make_piece(us, ROOK)) << fen;
  EXPECT_EQ(popcount(pos.pieces(us, ROOK)), popcount(pos_of(fen).pieces(us, ROOK)));
  EXPECT_FALSE(pos.can_castle(us == WHITE ? WHITE_CASTLING : BLACK_CASTLING));
  EXPECT_EQ(pos.key(), pos.compute_key());
  pos.undo_move(*m);
  EXPECT_EQ(pos.fen(), fen_before);
  EXPECT_EQ(pos.key(), before);
}

TEST(Castling, KingAndRookSwap_StartPosition601) {
  const std::string fen = "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1";
  EXPECT_TRUE(has_move(pos_of(fen), "f1g1"));
  expect_castle(fen, "f1g1", SQ_G1, SQ_F1);
  Position pos = pos_of(fen);
  EXPECT_EQ(perft(pos, 1), 20u);
  EXPECT_EQ(perft(pos, 4), 199871u);
}

TEST(Castling, QueenSideSwap) {
  expect_castle("3k4/8/8/8/8/8/8/2RK4 w C - 0 1", "d1c1", SQ_C1, SQ_D1);
  Position pos = pos_of("3k4/8/8/8/8/8/8/2RK4 w C - 0 1");
  EXPECT_EQ(perft(pos, 4), 4435u);
}

TEST(Castling, OnlyTheKingMoves) {
  expect_castle("4k3/8/8/8/8/8/8/4KR2 w F - 0 1", "e1f1", SQ_G1, SQ_F1);
  Position pos = pos_of("4k3/8/8/8/8/8/8/4KR2 w F - 0 1");
  EXPECT_EQ(perft(pos, 4), 4432u);
}

TEST(Castling, OnlyTheRookMoves) {
  expect_castle("6k1/8/8/8/8/8/8/6KR w H - 0 1", "g1h1", SQ_G1, SQ_F1);
  expect_castle("2k5/8/8/8/8/8/8/R1K5 w A - 0 1", "c1a1", SQ_C1, SQ_D1);
  Position a = pos_of("6k1/8/8/8/8/8/8/6KR w H - 0 1"), b = pos_of("2k5/8/8/8/8/8/8/R1K5 w A - 0 1");
  EXPECT_EQ(perft(a, 4), 3357u);
  EXPECT_EQ(perft(b, 4), 6016u);
}

TEST(Castling, BothMoveInTheClassicalArray) {
  const std::string fen = "r3k2r/8/8/8/8/8/8/R3K2R w HAha - 0 1";
  expect_castle(fen, "e1h1", SQ_G1, SQ_F1);
  expect_castle(fen, "e1a1", SQ_C1, SQ_D1);
  Position pos = pos_of(fen);
  EXPECT_EQ(perft(pos, 4), 314346u);
}

TEST(Castling, KingMayNotCrossAnAttackedSquare) {
  // The rook on f8 attacks f1, which the king crosses.
  EXPECT_FALSE(has_move(pos_of("4kr2/8/8/8/8/8/8/4K2R w H - 0 1"), "e1h1"));
  Position pos = pos_of("4kr2/8/8/8/8/8/8/4K2R w H - 0 1");
  EXPECT_EQ(perft(pos, 4), 33770u);
  // ... nor land on one (c1 attacked from c8).
  EXPECT_FALSE(has_move(pos_of("2r1k3/8/8/8/8/8/8/R3K3 w A - 0 1"), "e1a1"));
}

TEST(Castling, TheRookMayCrossAnAttackedSquare) {
  // b1 is attacked, but only the rook passes it.
  EXPECT_TRUE(has_move(pos_of("1r2k3/8/8/8/8/8/8/R3K3 w A - 0 1"), "e1a1"));
  Position pos = pos_of("1r2k3/8/8/8/8/8/8/R3K3 w A - 0 1");
  EXPECT_EQ(perft(pos, 4), 57729u);
}

TEST(Castling, NotOutOfCheck) { EXPECT_FALSE(has_move(pos_of("4r1k1/8/8/8/8/8/8/4K2R w H - 0 1"), "e1h1")); }

TEST(Castling, TheOtherRookBlocksTheRooksLandingSquare) {
  // The h-side rook on d1 stands where the a-side rook must land: a-side castling is blocked.
  const Position pos = pos_of("6k1/8/8/8/8/8/8/RK1R4 w DA - 0 1");
  EXPECT_FALSE(has_move(pos, "b1a1"));
  EXPECT_TRUE(has_move(pos, "b1d1"));
  Position p = pos;
  EXPECT_EQ(perft(p, 4), 13053u);
}

TEST(Castling, AnyPieceOnThePathBlocks) {
  EXPECT_FALSE(has_move(pos_of("4k3/8/8/8/8/8/8/RN2K3 w A - 0 1"), "e1a1"));  // knight on the rook's path
  EXPECT_FALSE(has_move(pos_of("4k3/8/8/8/8/8/8/4KRR1 w G - 0 1"), "e1g1"));  // f1 rook on the king's path
}

TEST(Castling, TheCastlingRookMayBeTheShieldOfTheKing) {
  // Queen a1, rook b1, king c1: after c1b1 the rook is on d1 and the queen sees c1.
  const Position pos = pos_of("3k4/8/8/8/8/8/8/qRK5 w B - 0 1");
  EXPECT_FALSE(has_move(pos, "c1b1"));
  Position p = pos;
  EXPECT_EQ(perft(p, 4), 19070u);
  // X-FEN form of the same trap, from shakmaty's suite.
  EXPECT_FALSE(has_move(pos_of("4r3/3k4/8/8/8/8/6PP/qR1K1R2 w KQ - 0 1"), "d1b1"));
}

TEST(Castling, RightLostWhenTheRookIsCaptured) {
  Position pos = pos_of("4k3/8/8/8/8/8/6b1/4K2R b H - 0 1");
  absl::StatusOr<Move> m = parse_uci(pos, "g2h1");
  ASSERT_TRUE(m.ok());
  StateInfo st;
  pos.do_move(*m, st);
  EXPECT_FALSE(pos.can_castle(WHITE_OO));
  EXPECT_EQ(pos.fen(), "4k3/8/8/8/8/8/8/4K2b w - - 0 2");
  EXPECT_EQ(pos.key(), pos.compute_key());
  Position p = pos_of("4k3/8/8/8/8/8/6b1/4K2R b H - 0 1");
  EXPECT_EQ(perft(p, 4), 39530u);
}

TEST(Castling, RightLostWhenKingOrRookMoves) {
  Position pos = pos_of("r3k2r/8/8/8/8/8/8/R3K2R w HAha - 0 1");
  StateInfo s1, s2, s3;
  pos.do_move(*parse_uci(pos, "h1h2"), s1);
  EXPECT_FALSE(pos.can_castle(WHITE_OO));
  EXPECT_TRUE(pos.can_castle(WHITE_OOO));
  pos.do_move(*parse_uci(pos, "e8d8"), s2);
  EXPECT_FALSE(pos.can_castle(BLACK_CASTLING));
  pos.do_move(*parse_uci(pos, "h2h1"), s3);  // back home: the right does not return
  EXPECT_FALSE(pos.can_castle(WHITE_OO));
  EXPECT_EQ(pos.fen(), "r2k3r/8/8/8/8/8/8/R3K2R b Q - 3 2");
}

TEST(Castling, ClassicalUciFormIsAcceptedAndPrintedOnRequest) {
  const Position pos = pos_of("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  absl::StatusOr<Move> m = parse_uci(pos, "e1g1");
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(to_uci(*m), "e1h1");
  EXPECT_EQ(to_uci(*m, CastlingNotation::kKingDestination), "e1g1");
  // In 601 the king's destination is the rook's square, so both forms agree.
  const Position p601 = pos_of("rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1");
  EXPECT_EQ(to_uci(*parse_uci(p601, "f1g1"), CastlingNotation::kKingDestination), "f1g1");
}

}  // namespace
}  // namespace c960
