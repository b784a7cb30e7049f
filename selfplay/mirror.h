// Mirror pairs: a Chess960 start position and its mirror image, the back rank read from h to a
// (518 RNBQKBNR and 534 RNBKQBNR). The mirror swaps the king's and the queen's sides, castling
// included; no position is its own mirror, so the 960 make 480 pairs. Whether a pair's White
// scores differ, pair by pair with Holm's and Benjamini-Hochberg's corrections, and all at once.
#pragma once

#include <limits>
#include <map>
#include <vector>

#include "selfplay/ranking.h"
#include "selfplay/stats.h"

namespace c960::selfplay {

inline constexpr int kMirrorPairs = 480;

// The number of sp's mirror image (0..959); -1 for a number outside 0..959.
int mirror_of(int sp);

struct MirrorPair {
  static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  int sp = -1, mirror = -1;  // sp < mirror
  ResultCounts a, b;         // sp's games, the mirror's
  // Their effective numbers of games (selfplay/lines.h): the games where their lines are not
  // known. The standard error uses them: related games count for fewer.
  double a_effective = kNaN, b_effective = kNaN;
  // Both have min_games: the figures below are set.
  bool tested = false;
  // White's score at sp minus at its mirror, with a 95% interval.
  double difference = kNaN, lo = kNaN, hi = kNaN;
  double z = kNaN, p = kNaN;          // two-sided, that the two share one score
  double p_holm = kNaN, p_bh = kNaN;  // over the tested pairs
};

struct MirrorPairs {
  int64_t min_games = kMinGamesToRank;
  std::vector<MirrorPair> pairs;  // every pair with games on both sides, by sp
  int tested = 0;
  // Whether any pair differs: the sum of the tested pairs' z^2, chi-square with one degree of
  // freedom a pair (the pairs are disjoint, so their tests are independent).
  double chi_square = MirrorPair::kNaN, p = MirrorPair::kNaN;
  int dof = 0;
  int significant_holm = 0, significant_bh = 0;  // at 5%
};

// The pairs of the positions in by_sp (Chess960 numbers; others are ignored). A pair is tested
// when both sides have min_games counted games or more. The test is the normal approximation of
// the difference of two mean scores (games scored 1, 1/2, 0) with the per-game variance pooled
// over the pair, which is what it is when the two share one distribution; the interval uses the
// same standard error. Games are the distinct ones the statistics count (duplicates are not
// evidence). Games related by a shared opening count for fewer: each side's share of the
// variance is divided by its effective number of games (`effective`, by sp; a position not in it
// has its games, taken as independent), the design effect's correction.
MirrorPairs compare_mirror_pairs(const std::map<int, ResultCounts>& by_sp, int64_t min_games = kMinGamesToRank,
                                 const std::map<int, double>& effective = {});
// The same for a table's Chess960 start positions (those with an sp number), with their
// effective numbers of games (SelfPlayStats::relatedness).
MirrorPairs compare_mirror_pairs(const SelfPlayStats& stats, int64_t min_games = kMinGamesToRank);

}  // namespace c960::selfplay
