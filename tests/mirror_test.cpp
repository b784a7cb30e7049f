// Mirror pairs (selfplay/mirror.h): the pairing itself, and the tests' error rates, coverage and
// power by simulation with a fixed seed.
#include "selfplay/mirror.h"

#include <cstdio>
#include <set>

#include "core/prng.h"
#include "core/startpos.h"
#include "gtest/gtest.h"

namespace c960::selfplay {
namespace {

TEST(MirrorPairs, EveryPositionHasAnotherAsItsMirror) {
  EXPECT_EQ(mirror_of(518), 534);  // RNBQKBNR <-> RNBKQBNR
  EXPECT_EQ(mirror_of(534), 518);
  EXPECT_EQ(mirror_of(-1), -1);
  EXPECT_EQ(mirror_of(960), -1);
  std::set<std::pair<int, int>> pairs;
  for (int sp = 0; sp < 960; ++sp) {
    const int m = mirror_of(sp);
    ASSERT_GE(m, 0) << sp;
    EXPECT_NE(m, sp);
    EXPECT_EQ(mirror_of(m), sp);
    std::string rank = *backrank_of(sp), mirrored = *backrank_of(m);
    EXPECT_EQ(std::string(rank.rbegin(), rank.rend()), mirrored) << sp;
    pairs.emplace(std::min(sp, m), std::max(sp, m));
  }
  EXPECT_EQ(int(pairs.size()), kMirrorPairs);
}

// n games with White winning, drawing and losing with the given probabilities.
ResultCounts play(Prng& rng, int64_t n, double win, double draw) {
  ResultCounts c;
  for (int64_t g = 0; g < n; ++g) {
    const double u = double(rng.rand64() >> 11) / double(1ULL << 53);
    if (u < win)
      ++c.white_wins;
    else if (u < win + draw)
      ++c.draws;
    else
      ++c.black_wins;
  }
  return c;
}

// Both sides of each pair alike (but pairs unlike each other): about 5% of pairs come out
// significant at 5% unadjusted, the intervals cover the true difference (0) about 95% of the
// time, Holm finds next to nothing, and the overall test's p-value is not small.
TEST(MirrorPairs, PairsThatAreAlikeAreFoundAlikeAtTheNominalRate) {
  Prng rng(20261203);
  int tests = 0, rejected = 0, covered = 0, holm = 0, overall_small = 0;
  const int kReplications = 6;
  for (int rep = 0; rep < kReplications; ++rep) {
    std::map<int, ResultCounts> games;
    for (int sp = 0; sp < 960; ++sp) {
      const int m = mirror_of(sp);
      if (m < sp) continue;
      const double win = 0.25 + 0.2 * double(rng.below(1000)) / 1000,
                   draw = 0.35 + 0.3 * double(rng.below(1000)) / 1000;
      games[sp] = play(rng, 100, win, draw);
      games[m] = play(rng, 100, win, draw);
    }
    const MirrorPairs r = compare_mirror_pairs(games);
    ASSERT_EQ(r.tested, kMirrorPairs);
    ASSERT_EQ(r.dof, kMirrorPairs);
    for (const MirrorPair& p : r.pairs) {
      ++tests;
      rejected += p.p < 0.05;
      covered += p.lo <= 0 && 0 <= p.hi;
    }
    holm += r.significant_holm;
    overall_small += r.p < 0.01;
  }
  const double rate = double(rejected) / tests, coverage = double(covered) / tests;
  std::printf("%d pair tests: %.4f rejected at 5%%, intervals cover %.4f, Holm finds %d\n", tests, rate, coverage,
              holm);
  EXPECT_NEAR(rate, 0.05, 0.015) << rejected << " of " << tests;
  EXPECT_NEAR(coverage, 0.95, 0.015);
  EXPECT_LE(holm, 2);
  EXPECT_LE(overall_small, 1);
}

// Planted differences (White's score 0.75 against 0.55, 400 games a side) are found past Holm
// and Benjamini-Hochberg, the intervals cover them, and the overall test sees them.
TEST(MirrorPairs, PlantedDifferencesAreFound) {
  Prng rng(7);
  std::map<int, ResultCounts> games;
  std::set<int> planted;
  for (int sp = 0; sp < 960; ++sp) {
    const int m = mirror_of(sp);
    if (m < sp) continue;
    if (sp == 518 || (sp % 97 == 0 && planted.size() < 4)) planted.insert(sp);
    games[sp] = play(rng, 400, planted.count(sp) ? 0.55 : 0.35, 0.4);
    games[m] = play(rng, 400, 0.35, 0.4);
  }
  ASSERT_EQ(planted.size(), 5u);
  const MirrorPairs r = compare_mirror_pairs(games);
  EXPECT_LT(r.p, 1e-6);
  int found_holm = 0, found_bh = 0, covered = 0;
  for (const MirrorPair& p : r.pairs) {
    if (!planted.count(p.sp)) continue;
    covered += p.lo < 0.2 && 0.2 < p.hi;
    found_holm += p.p_holm < 0.05;
    found_bh += p.p_bh < 0.05;
  }
  EXPECT_GE(covered, 4);
  EXPECT_GE(found_holm, 4);
  EXPECT_EQ(found_bh, 5);
  EXPECT_LE(r.significant_holm - found_holm, 1);
  EXPECT_LE(r.significant_bh - found_bh, 2);  // the false discoveries BH allows are few
}

// Only pairs with games on both sides are listed, and only those with min_games on both tested;
// a position outside 0..959 or without its mirror is left out.
TEST(MirrorPairs, FewGamesAreListedButNotTested) {
  std::map<int, ResultCounts> games;
  games[518] = {12, 6, 2};
  games[534] = {5, 10, 5};
  games[0] = {1, 1, 1};
  games[mirror_of(0)] = {3, 0, 0};
  games[1] = {10, 10, 10};  // its mirror has no games
  games[5000] = {10, 10, 10};
  const MirrorPairs r = compare_mirror_pairs(games);
  ASSERT_EQ(r.pairs.size(), 2u);
  EXPECT_EQ(r.pairs[0].sp, 0);
  EXPECT_FALSE(r.pairs[0].tested);
  EXPECT_TRUE(std::isnan(r.pairs[0].p));
  EXPECT_EQ(r.pairs[1].sp, 518);
  EXPECT_EQ(r.pairs[1].mirror, 534);
  ASSERT_TRUE(r.pairs[1].tested);
  EXPECT_DOUBLE_EQ(r.pairs[1].difference, 0.75 - 0.5);
  EXPECT_EQ(r.tested, 1);
  EXPECT_NEAR(r.p, r.pairs[1].p, 1e-12);  // chi-square(1) of z^2 is the two-sided normal p
  EXPECT_DOUBLE_EQ(r.pairs[1].p_holm, r.pairs[1].p);
  // All draws on both sides: no difference, p = 1, a zero-width interval at 0.
  games.clear();
  games[518] = {0, 30, 0};
  games[534] = {0, 25, 0};
  const MirrorPairs same = compare_mirror_pairs(games);
  ASSERT_EQ(same.tested, 1);
  EXPECT_EQ(same.pairs[0].p, 1.0);
  EXPECT_EQ(same.pairs[0].lo, 0.0);
}

}  // namespace
}  // namespace c960::selfplay
