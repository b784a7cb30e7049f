// Rankings of start positions that survive noise: each position's White score shrunk toward the
// distribution of all positions' scores (empirical Bayes, a hierarchical normal model), with a
// 95% interval, and the interval of ranks it can plausibly hold.
//
// The model (Gelman et al., Bayesian Data Analysis, 3rd ed., section 5.4, the "eight schools"):
// position i's observed score s_i = (W + D/2)/n is normal about its true score theta_i with
// variance v_i = sigma_i^2 / n_i, and the true scores are normal about an overall mean mu with
// spread tau. mu has a flat prior and tau a flat one on [0, 1/2] (no score's spread can be wider).
// Everything follows from the posterior of tau, computed on a grid: given tau, theta_i's posterior
// is normal with mean s_i pulled toward the mean by B_i = v_i / (v_i + tau^2), so a position with
// few games or a score far from the rest moves most. Its interval is the 2.5% and 97.5% quantiles
// of the mixture over tau, so it allows for not knowing tau or mu. sigma_i^2, one game's variance,
// is the position's own (W + D/4)/n - s^2 blended with the pooled one as if from kVariancePrior
// games of the pool: one needs both, as draw rates (so variances) differ between positions, and
// 20 games alone estimate a variance poorly.
//
// Rank intervals: 1000 draws from the joint posterior (fixed seed: the same counts give the same
// intervals), each ranking the positions; a position's interval holds the middle 95% of its ranks.
// Rank 1 is the best for White. Each interval is for one position (marginal), not for all at once.
//
// Only positions with at least min_games distinct games are ranked (the normal approximation needs
// them, and a list of 2-game positions is luck), and only when at least kMinPositionsToRank are:
// with fewer the spread cannot be estimated. The intervals' average coverage over positions is
// checked by simulation in tests/ranking_test.cpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <vector>

#include "selfplay/stats.h"

namespace c960::selfplay {

inline constexpr int64_t kMinGamesToRank = 20;
inline constexpr int kMinPositionsToRank = 3;
inline constexpr double kVariancePrior = 10;  // games' worth of the pooled per-game variance
// Beyond this many ranked positions the rank intervals are not simulated (and the shrunk
// intervals are normal approximations of the mixture): Double Fischer Random's 921 600.
inline constexpr size_t kMaxPositionsForRankIntervals = 5000;

// The prior: what the true scores of the positions are taken to be distributed as.
//  - kNormal: normal about a mean with a spread, both estimated (the model above).
//  - kNpmle: any distribution on a grid of kGridCells true scores, the one under which the
//    observed scores are most likely (Kiefer and Wolfowitz's nonparametric maximum likelihood,
//    by EM). It is spiky: its posteriors are too narrow, and it is here to be compared.
//  - kLogSpline: a smooth distribution on the same grid that may be skewed or heavy-tailed, its
//    log-density a polynomial of degree kLogSplineDegree, fitted by penalised maximum likelihood
//    (Efron's g-modeling). The default.
// Under a grid prior each position's posterior is computed on the grid (its likelihood there is
// normal about the true score t with one game's variance at t given the position's draw rate,
// over its effective games), and its interval holds the middle 95% of that posterior; the rank
// intervals come from draws of every position's posterior. The prior is taken as known (its own
// uncertainty is not carried into the intervals). The mean and spread reported stay the normal
// model's, with their intervals.
enum class Prior { kNormal, kNpmle, kLogSpline };
inline constexpr size_t kGridCells = 300;
inline constexpr int kNpmleIterations = 1000;
inline constexpr size_t kLogSplineDegree = 8;
inline constexpr double kLogSplinePenalty = 1;

struct RankedPosition {
  bool ranked = false;
  double shrunk = std::numeric_limits<double>::quiet_NaN();  // posterior mean of White's true score
  double lo = std::numeric_limits<double>::quiet_NaN();      // its 95% interval
  double hi = std::numeric_limits<double>::quiet_NaN();
  int rank = 0;                  // 1: best for White by `shrunk`, among the ranked; 0 when not ranked
  int rank_lo = 0, rank_hi = 0;  // 95% interval of the rank; 0 when not ranked or not simulated
};

struct Ranking {
  std::vector<RankedPosition> positions;  // in the order of the input
  std::vector<size_t> order;              // the ranked positions' indices, best for White first
  int64_t min_games = kMinGamesToRank;
  int64_t most_games = 0;  // of any position (to say how far an unranked job is from ranking)
  bool rank_intervals = false;
  Prior prior = Prior::kNormal;  // the prior the shrunk figures used
  // The distribution of the ranked positions' true scores: its mean and spread (standard
  // deviation), posterior means with 95% intervals. NaN when nothing is ranked.
  double mean = std::numeric_limits<double>::quiet_NaN(), mean_lo = mean, mean_hi = mean;
  double tau = std::numeric_limits<double>::quiet_NaN(), tau_lo = tau, tau_hi = tau;
  size_t ranked() const { return order.size(); }
};

struct RankingOptions {
  int64_t min_games = kMinGamesToRank;
  int draws = 1000;  // posterior draws for the rank intervals
  uint64_t seed = 1;
  Prior prior = Prior::kLogSpline;  // kNormal beyond kMaxPositionsForRankIntervals positions
  // Per position, in the order of the counts: the effective number of independent games (games
  // related by a shared opening count for less; see SelfPlayStats::relatedness). Empty, zero or
  // more than the games: the games.
  std::vector<double> effective_games = {};
};

// "normal", "npmle", "log-spline".
const char* prior_name(Prior prior);

// counts: the distinct evidence games of each position (PositionStats::counts), in table order.
Ranking rank_positions(const std::vector<ResultCounts>& counts, const RankingOptions& options = {});

}  // namespace c960::selfplay
