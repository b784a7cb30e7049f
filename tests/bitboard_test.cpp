#include "core/bitboard.h"

#include "core/prng.h"
#include "gtest/gtest.h"

namespace c960 {
namespace {

// Occupancies of every density: sparse ones hit long rays, dense ones short.
std::vector<Bitboard> occupancies() {
  std::vector<Bitboard> out = {0, ~Bitboard(0)};
  Prng rng(42);
  for (int i = 0; i < 3000; ++i) {
    out.push_back(rng.sparse_rand());
    out.push_back(rng.rand64() & rng.rand64());
    out.push_back(rng.rand64());
    out.push_back(rng.rand64() | rng.rand64());
  }
  return out;
}

TEST(Bitboard, SliderLookupsMatchRayWalkOnEverySquare) {
  for (Bitboard occ : occupancies())
    for (int i = 0; i < SQUARE_NB; ++i) {
      const Square s = Square(i);
      ASSERT_EQ(rook_attacks(s, occ), sliding_attack_reference(ROOK, s, occ));
      ASSERT_EQ(bishop_attacks(s, occ), sliding_attack_reference(BISHOP, s, occ));
      ASSERT_EQ(magic_attacks(ROOK, s, occ), sliding_attack_reference(ROOK, s, occ));
      ASSERT_EQ(magic_attacks(BISHOP, s, occ), sliding_attack_reference(BISHOP, s, occ));
      if (cpu_has_pext()) {
        ASSERT_EQ(pext_attacks(ROOK, s, occ), magic_attacks(ROOK, s, occ));
        ASSERT_EQ(pext_attacks(BISHOP, s, occ), magic_attacks(BISHOP, s, occ));
      }
    }
}

TEST(Bitboard, EverySubsetOfEveryMaskAgrees) {
  // Exhaustive over the relevant occupancy bits: this is where magic collisions would show.
  for (int i = 0; i < SQUARE_NB; ++i) {
    const Square s = Square(i);
    for (const Magic* m : {&RookMagics[s], &BishopMagics[s]}) {
      const PieceType pt = m == &RookMagics[s] ? ROOK : BISHOP;
      Bitboard b = 0;
      do {
        ASSERT_EQ(magic_attacks(pt, s, b), sliding_attack_reference(pt, s, b));
        if (cpu_has_pext()) {
          ASSERT_EQ(pext_attacks(pt, s, b), sliding_attack_reference(pt, s, b));
        }
        b = (b - m->mask) & m->mask;
      } while (b);
    }
  }
}

TEST(Bitboard, StepAttacks) {
  EXPECT_EQ(popcount(knight_attacks(SQ_A1)), 2);
  EXPECT_EQ(popcount(knight_attacks(SQ_D4)), 8);
  EXPECT_EQ(popcount(king_attacks(SQ_H8)), 3);
  EXPECT_EQ(pawn_attacks(WHITE, SQ_A2), square_bb(SQ_B3));
  EXPECT_EQ(pawn_attacks(BLACK, SQ_H7), square_bb(SQ_G6));
}

TEST(Bitboard, BetweenIncludesTheFarSquareAndLineRunsEdgeToEdge) {
  EXPECT_EQ(between_bb(SQ_A1, SQ_D4), square_bb(SQ_B2) | square_bb(SQ_C3) | square_bb(SQ_D4));
  EXPECT_EQ(between_bb(SQ_A1, SQ_B3), square_bb(SQ_B3));  // not aligned: only the target
  EXPECT_EQ(line_bb(SQ_C1, SQ_C5), file_bb(FILE_C));
  EXPECT_EQ(line_bb(SQ_A1, SQ_B3), 0u);
  EXPECT_TRUE(aligned(SQ_A1, SQ_H8, SQ_E5));
  EXPECT_FALSE(aligned(SQ_A1, SQ_H8, SQ_E4));
}

// The tables are built from rays at start-up; here every pair is checked against the ray walk.
TEST(Bitboard, BetweenLineAndRaysOfEveryPairMatchTheRayWalk) {
  for (int a = 0; a < SQUARE_NB; ++a) {
    const Square s1 = Square(a);
    ASSERT_EQ(RookRays[s1], sliding_attack_reference(ROOK, s1, 0));
    ASSERT_EQ(BishopRays[s1], sliding_attack_reference(BISHOP, s1, 0));
    for (int b = 0; b < SQUARE_NB; ++b) {
      const Square s2 = Square(b);
      Bitboard between = square_bb(s2), line = 0;
      for (PieceType pt : {BISHOP, ROOK})
        if (sliding_attack_reference(pt, s1, 0) & square_bb(s2)) {
          between |= sliding_attack_reference(pt, s1, square_bb(s2)) & sliding_attack_reference(pt, s2, square_bb(s1));
          line = (sliding_attack_reference(pt, s1, 0) & sliding_attack_reference(pt, s2, 0)) | square_bb(s1) |
                 square_bb(s2);
        }
      ASSERT_EQ(between_bb(s1, s2), between) << a << " " << b;
      ASSERT_EQ(line_bb(s1, s2), line) << a << " " << b;
    }
  }
}

}  // namespace
}  // namespace c960
