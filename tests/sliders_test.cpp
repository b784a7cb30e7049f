// The two slider methods (magic and PEXT, see Sliders in core/bitboard.h) in one binary: the
// templated lookups, the run-time choice, and move generation and perft under each method.
#include <gtest/gtest.h>
#include <vector>

#include "core/bitboard.h"
#include "core/movegen.h"
#include "core/perft.h"
#include "core/prng.h"
#include "core/suite.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

// PEXT by its definition: the bits of b under mask, packed from bit 0 up.
Bitboard pext_by_loop(Bitboard b, Bitboard mask) {
  Bitboard r = 0;
  for (int k = 0; mask; mask &= mask - 1, ++k)
    if (b & mask & -mask) r |= Bitboard(1) << k;
  return r;
}

// Restores the process's method after a test that switches it.
class SlidersTest : public ::testing::Test {
 protected:
  void TearDown() override { set_sliders(saved_); }
  Sliders saved_ = sliders();
};

TEST(Sliders, PextInstructionMatchesItsDefinition) {
  if (!cpu_has_pext()) GTEST_SKIP() << "this CPU has no BMI2";
  Prng rng(7);
  for (int i = 0; i < 20000; ++i) {
    const Bitboard b = rng.rand64(), mask = i % 2 ? rng.rand64() : rng.sparse_rand();
    ASSERT_EQ(pext(b, mask), pext_by_loop(b, mask)) << b << " " << mask;
  }
  EXPECT_EQ(pext(~Bitboard(0), 0), 0u);
  EXPECT_EQ(pext(~Bitboard(0), ~Bitboard(0)), ~Bitboard(0));
}

TEST_F(SlidersTest, TemplatedLookupsOfBothMethodsMatchTheRayWalk) {
  ASSERT_TRUE(set_sliders(Sliders::Magic));  // fills the magic tables if PEXT was in use
  Prng rng(11);
  for (int i = 0; i < 4000; ++i) {
    const Bitboard occ = rng.rand64() & rng.rand64();
    for (int sq = 0; sq < SQUARE_NB; ++sq) {
      const Square s = Square(sq);
      ASSERT_EQ(rook_attacks<Sliders::Magic>(s, occ), sliding_attack_reference(ROOK, s, occ));
      ASSERT_EQ(bishop_attacks<Sliders::Magic>(s, occ), sliding_attack_reference(BISHOP, s, occ));
      ASSERT_EQ(queen_attacks<Sliders::Magic>(s, occ), sliding_attack_reference(QUEEN, s, occ));
      if (!cpu_has_pext()) continue;
      ASSERT_EQ(rook_attacks<Sliders::Pext>(s, occ), sliding_attack_reference(ROOK, s, occ));
      ASSERT_EQ(bishop_attacks<Sliders::Pext>(s, occ), sliding_attack_reference(BISHOP, s, occ));
      ASSERT_EQ(queen_attacks<Sliders::Pext>(s, occ), sliding_attack_reference(QUEEN, s, occ));
    }
  }
}

TEST(Sliders, PextIsSlowOnlyOnAmdBeforeZen3) {
  EXPECT_FALSE(detail::pext_is_fast("AuthenticAMD", 0x15));  // Excavator
  EXPECT_FALSE(detail::pext_is_fast("AuthenticAMD", 0x17));  // Zen 1, Zen 2
  EXPECT_FALSE(detail::pext_is_fast("HygonGenuine", 0x18));  // Dhyana (Zen 1)
  EXPECT_TRUE(detail::pext_is_fast("AuthenticAMD", 0x19));   // Zen 3, Zen 4
  EXPECT_TRUE(detail::pext_is_fast("AuthenticAMD", 0x1A));   // Zen 5
  EXPECT_TRUE(detail::pext_is_fast("GenuineIntel", 6));
}

TEST(Sliders, StartupChoiceFollowsTheCpuOrTheEnvironment) {
  // C960_SLIDERS forces a method (the CI runs the unit tests once with magic); otherwise the
  // CPU decides.
  const char* env = std::getenv("C960_SLIDERS");
  const std::string want = env ? env : "";
  if (want == "magic") {
    EXPECT_EQ(sliders(), Sliders::Magic);
  } else if (want == "pext" && cpu_has_pext()) {
    EXPECT_EQ(sliders(), Sliders::Pext);
  } else if (want.empty() || want == "auto") {
    EXPECT_EQ(sliders(), cpu_has_fast_pext() ? Sliders::Pext : Sliders::Magic);
  }
  EXPECT_STREQ(to_string(Sliders::Magic), "magic");
  EXPECT_STREQ(to_string(Sliders::Pext), "pext");
}

TEST_F(SlidersTest, SwitchingToPextNeedsBmi2) {
  EXPECT_TRUE(set_sliders(Sliders::Magic));
  EXPECT_EQ(sliders(), Sliders::Magic);
  EXPECT_EQ(set_sliders(Sliders::Pext), cpu_has_pext());
  EXPECT_EQ(sliders(), cpu_has_pext() ? Sliders::Pext : Sliders::Magic);
}

// Move lists and perft of the edge-case suite (castling, pins, en passant) under each method
// against the suite's counts: both instantiations of the generator and of perft are checked.
TEST_F(SlidersTest, MoveGenerationAndPerftUnderEachMethod) {
  absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(test::read_data("chess960_edge_cases.epd"));
  ASSERT_TRUE(cases.ok()) << cases.status().message();
  std::vector<Sliders> methods = {Sliders::Magic};
  if (cpu_has_pext()) methods.push_back(Sliders::Pext);
  for (Sliders method : methods) {
    ASSERT_TRUE(set_sliders(method));
    int checks = 0;
    for (const PerftCase& c : *cases) {
      Position pos = test::pos_of(c.fen);
      MoveList list;
      generate_legal(pos, list);
      EXPECT_EQ(count_legal(pos), list.size()) << c.fen;
      EXPECT_EQ(has_legal_move(pos), list.size() > 0) << c.fen;
      for (const auto& [depth, expected] : c.expected)
        if (depth <= 3) {
          EXPECT_EQ(perft(pos, depth), expected) << to_string(method) << " " << c.fen << " depth " << depth;
          if (depth == 1) {
            EXPECT_EQ(uint64_t(list.size()), expected) << to_string(method) << " " << c.fen;
          }
          ++checks;
        }
    }
    EXPECT_GT(checks, 0);
  }
}

}  // namespace
}  // namespace c960
