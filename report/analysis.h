// What a report shows, computed from a table: for self-play, the score of every position with
// its interval, the test of whether the start position matters (chi-square of homogeneity, and by
// permutation), each position against the overall mean (exact test; Holm and Benjamini-Hochberg
// corrections), the spread of the scores against sampling noise, pooled scores by piece
// placement, and the comparison with a reference table; for perft, counts by position and depth.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/stats.h"
#include "report/tables.h"
#include "selfplay/match.h"
#include "selfplay/mirror.h"
#include "selfplay/ranking.h"

namespace c960::report {

struct PositionResult {
  selfplay::Interval score;  // NaN without games
  double p = kNaN;           // exact two-sided test against the pooled result distribution
  double p_holm = kNaN;      // Holm-adjusted (family-wise error)
  double q_bh = kNaN;        // Benjamini-Hochberg-adjusted (false discovery rate)
};

// Per-position scores binned, against the counts expected if every position had the pooled
// win/draw/loss probabilities (each position's exact score distribution, summed). One bin per
// possible score when every position has the same few games; else round-width bins over the
// range the observed and expected scores take (the expected's last 0.1% counted in the end bins).
struct Histogram {
  std::vector<double> edges;  // bins [edges[i], edges[i+1]); the last one includes its upper edge
  std::vector<double> observed, expected;
};

// Counts pooled by one feature of the back rank (king's file, ...) and the chi-square test of
// whether the groups differ.
struct GroupSummary {
  std::string factor;
  std::vector<std::pair<std::string, selfplay::ResultCounts>> groups;
  std::vector<double> effective;  // each group's effective number of games (its games when not known)
  ChiSquareTest test;             // of the groups' effective counts
};

struct ReferencePoint {
  size_t row = 0, reference_row = 0;  // indices into the two tables
  selfplay::Interval score, reference_score;
  bool disagree = false;  // the two 95% intervals do not overlap
};

struct ReferenceComparison {
  std::vector<ReferencePoint> points;                           // positions in both tables with games in both
  double pearson = kNaN, pearson_lo = kNaN, pearson_hi = kNaN;  // with a 95% interval (Fisher's z)
  double spearman = kNaN;
  int disagreements = 0;
};

struct SelfPlayAnalysis {
  selfplay::ResultCounts total;
  selfplay::Interval total_score;
  // The tests (exact, chi-square, permutation, groups) take each position's counts scaled to its
  // effective number of games, rounded (related games: selfplay/lines.h), where the table gives
  // one below its games: tests_effective, with tested_games games in all.
  bool tests_effective = false;
  int64_t tested_games = 0;
  double win = kNaN, draw = kNaN, loss = kNaN;  // pooled per-game probabilities
  std::vector<PositionResult> positions;        // in the table's order
  std::vector<size_t> by_score;                 // rows with games, best for White first
  // Scores shrunk toward all positions' and rank intervals (selfplay/ranking.h), in table order.
  selfplay::Ranking ranking;
  // Each Chess960 position against its mirror image (selfplay/mirror.h).
  selfplay::MirrorPairs mirrors;
  ChiSquareTest homogeneity;
  double permutation_p = kNaN;
  int permutations = 0;
  int significant_holm = 0, significant_bh = 0;  // at 5%
  Histogram histogram;
  // Spread of the per-position scores: observed, expected from sampling noise alone, and the
  // standard deviation of the positions' true scores that the difference implies (moments).
  double observed_sd = kNaN, noise_sd = kNaN, excess_sd = kNaN;
  std::vector<GroupSummary> groups;  // only for Chess960 start positions
  std::optional<ReferenceComparison> reference;
};

// An adaptive run (SelfPlayTable::adaptive): what its positions' verdicts were, the games they
// took, and their anytime intervals against the fixed-count ones.
struct AdaptiveSummary {
  // "band" (a verdict inside, above or below), "target width" (narrow), or "" when no verdict
  // says which.
  std::string mode;
  // Positions per verdict, in kVerdictOrder, only verdicts that occur.
  std::vector<std::pair<std::string, int>> verdicts;
  int64_t played = 0;  // every game played, over the positions
  int64_t min_played = 0, max_played = 0;
  double median_played = kNaN;  // mean of the two middle ones for an even count
  // Median over positions with games of (anytime width) / (fixed-count 95% interval's width).
  double median_width_ratio = kNaN;
  // Table rows: by verdict in kVerdictOrder, then by the anytime interval's midpoint, highest first.
  std::vector<size_t> order;
};
// The order of verdicts in the report: decided ones first, the band's edges before its inside.
inline constexpr const char* kVerdictOrder[] = {"above", "below", "inside", "narrow", "cap", "open"};

// A position's counts as the tests take them: scaled to its effective number of games
// (selfplay/lines.h: the games over the design effect of their lines) and rounded to whole games
// by largest remainders, so that games of one opening line count for what they are worth (a
// design-effect correction of the exact, chi-square and permutation tests). The counts
// themselves when `effective` is NaN or not below the games.
selfplay::ResultCounts effective_counts(const selfplay::ResultCounts& counts, double effective);

AdaptiveSummary summarise_adaptive(const SelfPlayTable& table, const SelfPlayAnalysis& analysis);

// A two-engine match from A's side (selfplay/match.h): the totals, each position's figures, and
// the tests across positions (sign tests with Holm and Benjamini-Hochberg, heterogeneity).
struct MatchAnalysis {
  selfplay::Pentanomial total{};
  selfplay::MatchFigures figures;  // of the whole match
  int64_t wins = 0, draws = 0, losses = 0, duplicates = 0, unpaired = 0;
  std::vector<selfplay::MatchFigures> positions;  // in the table's order
  selfplay::MatchTests tests;
  std::vector<size_t> by_score;      // rows with pairs, best for A first
  int favours_a = 0, favours_b = 0;  // Holm below 0.05
  int significant_bh = 0;            // Benjamini-Hochberg below 0.05
};

MatchAnalysis analyse_match(const MatchTable& table);

struct AnalysisOptions {
  uint64_t seed = 1;        // of the permutation test
  int permutations = 2000;  // at most; fewer for very large tables (see analysis.cpp)
};

SelfPlayAnalysis analyse_selfplay(const SelfPlayTable& table, const SelfPlayTable* reference,
                                  const AnalysisOptions& options);

// Node counts by position and depth.
struct PerftAnalysis {
  std::vector<int> depths;  // ascending
  struct Position {
    PositionKey key;
    std::map<int, NodeCount> nodes;  // by depth
  };
  std::vector<Position> positions;  // in first-seen order
  std::map<int, NodeCount> total;   // by depth, over positions that have that depth
  std::map<int, int> count;         // positions per depth
};

PerftAnalysis analyse_perft(const PerftTable& table);

}  // namespace c960::report
