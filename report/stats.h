// Statistics for the reports: tail probabilities (normal, chi-square via the regularized
// incomplete gamma function), Pearson's chi-square test of homogeneity with an optional
// permutation p-value, multiple-comparison corrections (Holm, Benjamini-Hochberg), Pearson and
// Spearman correlation (ties get average ranks), and the exact distribution of the points scored
// in n games of win/draw/loss with an exact two-sided test of it.
#pragma once

#include <cstdint>
#include <limits>
#include <vector>

namespace c960::report {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Regularized incomplete gamma functions P(a, x) and Q(a, x) = 1 - P(a, x), for a > 0, x >= 0
// (NaN outside). Each is computed directly (series or continued fraction), not as 1 - the other,
// so small tails keep their relative precision.
double gamma_p(double a, double x);
double gamma_q(double a, double x);

double normal_sf(double z);                  // P(Z > z) for a standard normal Z
double normal_two_sided_p(double z);         // P(|Z| >= |z|)
double chi_square_sf(double x, double dof);  // P(X > x) for X ~ chi-square(dof)

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

// Adjusted p-values, in the input's order. Holm: family-wise error (step-down Bonferroni).
// Benjamini-Hochberg: false discovery rate (step-up). NaN entries are left NaN and not counted.
std::vector<double> holm_adjust(const std::vector<double>& p);
std::vector<double> benjamini_hochberg_adjust(const std::vector<double>& p);

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
