// Evaluations beside game scores: the table `c960 evaluate` (or `c960 results` of an evaluation
// job) writes, read back, and the statistics the report shows with a self-play table: agreement
// between engines (Spearman's rank correlation with a confidence interval, the mean absolute
// difference in centipawns), the calibration of centipawns to White's score (a logistic fit,
// weighted by each position's games), and the positions where evaluation and games disagree
// beyond the games' interval.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "report/stats.h"

namespace c960::report {

// One engine's evaluation of one start position (White to move: White's view).
struct EvalEntry {
  int sp = -1;
  std::string engine;
  double cp = kNaN;  // NaN for a mate
  int mate = 0;      // moves; negative: White is mated
  int depth = 0;
  std::string best_move, pv;
};

struct EvaluationTable {
  std::vector<std::string> engines;  // in the order of first appearance
  std::vector<EvalEntry> rows;
};

// The CSV of `c960 evaluate --format csv` ("sp,fen,engine,depth_limit,nodes_limit,depth,nodes,
// score_cp,mate,best_move,pv"; columns found by name: sp, engine, score_cp and mate are needed).
// Tables may be concatenated (a header again is skipped), e.g. two runs at different depths.
// Errors name the line and the column; a (position, engine) twice is an error.
absl::StatusOr<EvaluationTable> parse_evaluation_csv(absl::string_view text);

// Spearman's rank correlation of paired samples with a 95% interval: Fisher's z with the
// variance (1 + rho^2 / 2) / (n - 3) of Bonett and Wright (2000). NaN ends below 4 pairs.
struct RankCorrelation {
  double rho = kNaN, lo = kNaN, hi = kNaN;
  size_t n = 0;
};
RankCorrelation spearman_interval(const std::vector<double>& x, const std::vector<double>& y);

// White's expected score at an evaluation of x centipawns: 1 / (1 + exp(-(a + b x / 100))),
// fitted by maximum likelihood to the points scored (weight: games; a draw half a point), as
// binomial trials: a (the score at 0 cp, on the logit scale), b (per pawn), their standard
// errors, the deviance against the null model's (constant score), and n positions. ok: the fit
// converged with at least 3 positions and two distinct evaluations.
struct LogisticFit {
  double a = kNaN, b = kNaN, se_a = kNaN, se_b = kNaN;
  double deviance = kNaN, null_deviance = kNaN;
  size_t n = 0;
  bool ok = false;
  double score_at(double cp) const;
};
LogisticFit fit_logistic(const std::vector<double>& cp, const std::vector<double>& score,
                         const std::vector<double>& games);

}  // namespace c960::report
