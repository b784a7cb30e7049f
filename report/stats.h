// Statistics for the reports: tail probabilities (normal, chi-square via the regularized
// incomplete gamma function), Pearson's chi-square test of homogeneity with an optional
// permutation p-value, multiple-comparison corrections (Holm, Benjamini-Hochberg), Pearson and
// Spearman correlation (ties get average ranks), and the exact distribution of the points scored
// in n games of win/draw/loss with an exact two-sided test of it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

#include "selfplay/significance.h"

namespace c960::report {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The tails and the multiplicity corrections live below the reports (selfplay/significance.h).
using selfplay::benjamini_hochberg_adjust;
using selfplay::chi_square_sf;
using selfplay::gamma_p;
using selfplay::gamma_q;
using selfplay::holm_adjust;
using selfplay::normal_sf;
using selfplay::normal_two_sided_p;

struct ChiSquareTest {
  double statistic = kNaN;
  int dof = 0;
  double p_value = kNaN;       // from the chi-square distribution
  int rows = 0, columns = 0;   // after dropping empty rows and columns
  double min_expected = kNaN;  // the asymptotic p-value is doubtful when expected counts are small
  double share_expected_below_5 = kNaN;
};

// Pearson's chi-square test that all rows of a contingency table (rows x categories, counts)
// share one distribution over the categories. Rows and columns without counts are dropped; with
// fewer than two of either the test is undefined (NaN statistic, dof 0).
ChiSquareTest chi_square_homogeneity(const std::vector<std::vector<int64_t>>& table);

// The same test's p-value by permutation: the table's observations are shuffled among its rows
// (row and column totals kept) `permutations` times with a fixed seed; p = (1 + #{X >= observed})
// / (permutations + 1). Valid however small the expected counts.
double chi_square_permutation_p(const std::vector<std::vector<int64_t>>& table, int permutations, uint64_t seed);

// Correlations of paired samples; NaN when undefined (fewer than 2 pairs, or no variance).
double pearson(const std::vector<double>& x, const std::vector<double>& y);
std::vector<double> average_ranks(const std::vector<double>& x);              // 1-based; ties share the mean rank
double spearman(const std::vector<double>& x, const std::vector<double>& y);  // Pearson of the ranks

// The distribution of White's points, in half points 0..2n, over n independent games that White
// wins, draws and loses with the given probabilities (they must add up to 1).
std::vector<double> points_pmf(int n, double win, double draw, double loss);

// Two-sided p-value of scoring `half_points` in n such games. Exact for n <= kExactTestMaxGames:
// the probability of every outcome no more likely than the observed one (as R's binom.test);
// beyond that the normal approximation with a continuity correction.
constexpr int kExactTestMaxGames = 2000;
double points_test_p(int n, int half_points, double win, double draw, double loss);

}  // namespace c960::report
