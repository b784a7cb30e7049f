// The report's statistics against values computed independently here: closed forms (the
// incomplete gamma function at a = 1, 1/2 and integers; chi-square with even degrees of freedom),
// textbook values (chi-square and normal quantiles, Wikipedia's chi-square example, Anscombe's r),
// brute force (every game sequence, every 2x2 table with fixed margins, every rejection set).
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <vector>

#include "gtest/gtest.h"
#include "report/stats.h"

namespace c960::report {
namespace {

// Q(n, x) for whole n: the probability of fewer than n Poisson(x) events, summed in logs.
double poisson_upper_gamma(int n, double x) {
  long double sum = 0;
  for (int k = 0; k < n; ++k) sum += std::exp((long double)(k * std::log(x) - x - std::lgamma(k + 1.0)));
  return double(sum);
}

TEST(ReportStats, IncompleteGammaMatchesClosedForms) {
  for (double x : {0.001, 0.1, 0.5, 1.0, 2.0, 5.0, 20.0, 60.0}) {
    SCOPED_TRACE(x);
    EXPECT_NEAR(gamma_p(1, x), -std::expm1(-x), 1e-14);
    EXPECT_NEAR(gamma_q(1, x) / std::exp(-x), 1, 1e-12);
    EXPECT_NEAR(gamma_p(0.5, x), std::erf(std::sqrt(x)), 1e-14);
    EXPECT_NEAR(gamma_q(0.5, x) / std::erfc(std::sqrt(x)), 1, 1e-10);
  }
  // Whole a, up to the 959 of a chi-square with 1918 degrees of freedom (960 positions x 3
  // results), around the middle where both expansions meet, and far in the tails.
  for (int n : {1, 2, 3, 7, 20, 50, 200, 959}) {
    const double sd = std::sqrt(double(n));
    for (double k : {-4.0, -1.0, -0.2, 0.0, 0.3, 1.0, 3.0, 6.0}) {
      const double x = n + k * sd;
      if (x <= 0) continue;
      SCOPED_TRACE(::testing::Message() << "a " << n << " x " << x);
      const double q = poisson_upper_gamma(n, x);
      EXPECT_NEAR(gamma_q(n, x) / q, 1, 1e-9);
      EXPECT_NEAR(gamma_p(n, x) + gamma_q(n, x), 1, 1e-12);
    }
  }
  EXPECT_TRUE(std::isnan(gamma_p(0, 1)));
  EXPECT_TRUE(std::isnan(gamma_q(1, -1)));
  EXPECT_EQ(gamma_p(2, 0), 0);
}

TEST(ReportStats, ChiSquareAndNormalTailsMatchTextbookQuantiles) {
  struct Quantile {
    double x, dof, p;
  };
  // Critical values of the chi-square tables (NIST/SEMATECH e-Handbook, more digits).
  const Quantile q[] = {{3.841458820694124, 1, 0.05},   {6.634896601021214, 1, 0.01},    {5.991464547107979, 2, 0.05},
                        {18.307038053275146, 10, 0.05}, {124.34211340400407, 100, 0.05}, {2.705543454095404, 1, 0.10}};
  for (const Quantile& k : q) EXPECT_NEAR(chi_square_sf(k.x, k.dof), k.p, 1e-9) << k.x << " " << k.dof;
  // Even degrees of freedom: P(X > x) = e^{-x/2} sum_{k < dof/2} (x/2)^k / k!.
  for (int dof : {2, 4, 10, 40})
    for (double x : {0.5, 3.0, 12.0, 50.0, 200.0}) {
      double sum = 0, term = 1;
      for (int k = 0; k < dof / 2; ++k, term *= x / 2 / k) sum += term;
      EXPECT_NEAR(chi_square_sf(x, dof) / (std::exp(-x / 2) * sum), 1, 1e-10) << dof << " " << x;
    }
  EXPECT_NEAR(normal_sf(1.959963984540054), 0.025, 1e-15);
  EXPECT_NEAR(normal_two_sided_p(-2.5758293035489004), 0.01, 1e-14);
  EXPECT_NEAR(normal_sf(-1), 0.8413447460685429, 1e-15);
}

TEST(ReportStats, ChiSquareHomogeneityOfATextbookTable) {
  // Wikipedia, "Pearson's chi-squared test": occupations in four neighbourhoods.
  const std::vector<std::vector<int64_t>> t = {{90, 60, 104, 95}, {30, 50, 51, 20}, {30, 40, 45, 35}};
  const ChiSquareTest r = chi_square_homogeneity(t);
  // Brute force: the statistic from its definition, the p-value in closed form (6 dof).
  double row[3] = {}, col[4] = {}, n = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      row[i] += double(t[size_t(i)][size_t(j)]), col[j] += double(t[size_t(i)][size_t(j)]),
          n += double(t[size_t(i)][size_t(j)]);
  double x = 0;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j) {
      const double e = row[i] * col[j] / n;
      x += (double(t[size_t(i)][size_t(j)]) - e) * (double(t[size_t(i)][size_t(j)]) - e) / e;
    }
  EXPECT_NEAR(r.statistic, x, 1e-9);
  EXPECT_NEAR(r.statistic, 24.57, 0.01);  // as published
  EXPECT_EQ(r.dof, 6);
  const double h = x / 2;
  EXPECT_NEAR(r.p_value, std::exp(-h) * (1 + h + h * h / 2), 1e-12);
  EXPECT_GT(r.min_expected, 5);
  EXPECT_EQ(r.share_expected_below_5, 0);

  // Empty rows and columns change nothing.
  const ChiSquareTest padded =
      chi_square_homogeneity({{90, 0, 60, 104, 95}, {0, 0, 0, 0, 0}, {30, 0, 50, 51, 20}, {30, 0, 40, 45, 35}});
  EXPECT_DOUBLE_EQ(padded.statistic, r.statistic);
  EXPECT_EQ(padded.dof, 6);
  // Identical rows: nothing to see. One row: no test.
  EXPECT_NEAR(chi_square_homogeneity({{5, 3, 2}, {10, 6, 4}}).p_value, 1, 1e-12);
  EXPECT_EQ(chi_square_homogeneity({{5, 3, 2}}).dof, 0);
  EXPECT_TRUE(std::isnan(chi_square_homogeneity({{5, 0, 0}, {3, 0, 0}}).p_value));
}

TEST(ReportStats, PermutationPValueMatchesTheExactConditionalTest) {
  // A 2x2 table with margins (rows 7, 9; columns 8, 8): every table with these margins has a
  // hypergeometric probability; the exact p-value sums those at least as extreme.
  const std::vector<std::vector<int64_t>> t = {{6, 1}, {2, 7}};
  const auto stat = [](int a) {
    const std::vector<std::vector<int64_t>> u = {{a, 7 - a}, {8 - a, 1 + a}};
    return chi_square_homogeneity(u).statistic;
  };
  const auto choose = [](int n, int k) {
    return std::exp(std::lgamma(n + 1.0) - std::lgamma(k + 1.0) - std::lgamma(n - k + 1.0));
  };
  double exact = 0;
  const double observed = stat(6);
  for (int a = 0; a <= 7; ++a)
    if (stat(a) >= observed * (1 - 1e-12)) exact += choose(8, a) * choose(8, 7 - a) / choose(16, 7);
  constexpr int kPermutations = 20000;
  const double p = chi_square_permutation_p(t, kPermutations, 7);
  EXPECT_NEAR(p, exact, 4 * std::sqrt(exact * (1 - exact) / kPermutations));
  // Same seed, same answer; identical rows give p = 1.
  EXPECT_EQ(p, chi_square_permutation_p(t, kPermutations, 7));
  EXPECT_EQ(chi_square_permutation_p({{4, 2, 2}, {4, 2, 2}}, 500, 1), 1.0);
  // Large expected counts: close to the chi-square distribution's p-value.
  const std::vector<std::vector<int64_t>> big = {{60, 40, 50}, {45, 55, 50}, {50, 50, 52}};
  EXPECT_NEAR(chi_square_permutation_p(big, 4000, 3), chi_square_homogeneity(big).p_value, 0.03);
}

TEST(ReportStats, HolmAndBenjaminiHochbergByHandAndByTheirProcedures) {
  const std::vector<double> p = {0.01, 0.04, 0.03, 0.005};
  const std::vector<double> holm = holm_adjust(p), bh = benjamini_hochberg_adjust(p);
  const std::vector<double> want_holm = {0.03, 0.06, 0.06, 0.02}, want_bh = {0.02, 0.04, 0.04, 0.02};
  for (size_t i = 0; i < p.size(); ++i) {
    EXPECT_NEAR(holm[i], want_holm[i], 1e-15);
    EXPECT_NEAR(bh[i], want_bh[i], 1e-15);
  }
  // For many p-value sets and levels: rejecting where the adjusted p <= alpha is exactly what the
  // step-down (Holm) and step-up (BH) procedures reject.
  uint64_t s = 12345;
  const auto uniform = [&s] {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return double(s >> 11) * 0x1.0p-53;
  };
  for (int trial = 0; trial < 200; ++trial) {
    const size_t m = 1 + size_t(trial % 30);
    std::vector<double> q(m);
    for (double& x : q) x = trial % 3 ? std::pow(uniform(), 3) : uniform();
    if (trial % 5 == 0) q[0] = q[m - 1];  // ties
    const std::vector<double> h = holm_adjust(q), b = benjamini_hochberg_adjust(q);
    std::vector<double> sorted = q;
    std::sort(sorted.begin(), sorted.end());
    for (double alpha : {0.001, 0.01, 0.05, 0.1, 0.25, 0.5}) {
      // Holm: reject the k smallest while p_(k) <= alpha / (m - k + 1).
      size_t holm_k = 0;
      while (holm_k < m && sorted[holm_k] <= alpha / double(m - holm_k)) ++holm_k;
      // BH: reject the k smallest for the largest k with p_(k) <= k alpha / m.
      size_t bh_k = 0;
      for (size_t k = 1; k <= m; ++k)
        if (sorted[k - 1] <= double(k) * alpha / double(m)) bh_k = k;
      for (size_t i = 0; i < m; ++i) {
        // Ties are rejected together by both procedures.
        EXPECT_EQ(h[i] <= alpha * (1 + 1e-12), holm_k > 0 && q[i] <= sorted[holm_k - 1])
            << trial << " " << alpha << " " << i;
        EXPECT_EQ(b[i] <= alpha * (1 + 1e-12), bh_k > 0 && q[i] <= sorted[bh_k - 1])
            << trial << " " << alpha << " " << i;
      }
    }
  }
  EXPECT_TRUE(std::isnan(holm_adjust({0.1, NAN})[1]));
  EXPECT_NEAR(holm_adjust({0.1, NAN})[0], 0.1, 1e-15);  // NaN is not counted
}

TEST(ReportStats, PearsonAndSpearman) {
  // Anscombe's first data set: r = 0.816 in every textbook.
  const std::vector<double> x = {10, 8, 13, 9, 11, 14, 6, 4, 12, 7, 5};
  const std::vector<double> y = {8.04, 6.95, 7.58, 8.81, 8.33, 9.96, 7.24, 4.26, 10.84, 4.82, 5.68};
  EXPECT_NEAR(pearson(x, y), 0.81642051634484, 1e-12);
  // Without ties Spearman is 1 - 6 sum d^2 / (n (n^2 - 1)) with d the rank differences.
  {
    const size_t n = x.size();
    const auto rank_of = [](const std::vector<double>& v, size_t i) {
      return 1.0 + double(std::count_if(v.begin(), v.end(), [&](double t) { return t < v[i]; }));
    };
    double d2 = 0;
    for (size_t i = 0; i < n; ++i) d2 += std::pow(rank_of(x, i) - rank_of(y, i), 2);
    EXPECT_NEAR(spearman(x, y), 1 - 6 * d2 / (double(n) * (double(n * n) - 1)), 1e-12);
  }
  // With ties: Pearson of mid-ranks, each counted by brute force.
  const std::vector<double> a = {1, 2, 2, 3, 3, 3, 7, 0.5, 2}, b = {0.3, 0.3, 0.1, 0.9, 0.9, 0.2, 0.8, 0.3, 0.5};
  const auto midranks = [](const std::vector<double>& v) {
    std::vector<double> r;
    for (double t : v) {
      const double less = double(std::count_if(v.begin(), v.end(), [&](double u) { return u < t; }));
      const double equal = double(std::count(v.begin(), v.end(), t));
      r.push_back(less + (equal + 1) / 2);
    }
    return r;
  };
  EXPECT_EQ(average_ranks(a), midranks(a));
  const std::vector<double> ra = midranks(a), rb = midranks(b);
  double ma = 0, mb = 0;
  for (size_t i = 0; i < ra.size(); ++i) ma += ra[i] / double(ra.size()), mb += rb[i] / double(rb.size());
  double sab = 0, saa = 0, sbb = 0;
  for (size_t i = 0; i < ra.size(); ++i)
    sab += (ra[i] - ma) * (rb[i] - mb), saa += (ra[i] - ma) * (ra[i] - ma), sbb += (rb[i] - mb) * (rb[i] - mb);
  EXPECT_NEAR(spearman(a, b), sab / std::sqrt(saa * sbb), 1e-12);
  // Monotone but not linear: Spearman 1, Pearson below.
  const std::vector<double> u = {1, 2, 3, 4, 5}, v = {1, 4, 9, 100, 1000};
  EXPECT_DOUBLE_EQ(spearman(u, v), 1);
  EXPECT_LT(pearson(u, v), 0.9);
  EXPECT_TRUE(std::isnan(pearson({1, 1, 1}, {1, 2, 3})));
  EXPECT_TRUE(std::isnan(spearman({1}, {2})));
}

TEST(ReportStats, PointsDistributionAndExactTestByEnumeration) {
  const double w = 0.35, d = 0.45, l = 0.2;
  for (int n = 1; n <= 7; ++n) {
    // Every sequence of n games.
    std::vector<double> brute(size_t(2 * n + 1), 0);
    std::function<void(int, int, double)> walk = [&](int g, int points, double prob) {
      if (g == n) {
        brute[size_t(points)] += prob;
        return;
      }
      walk(g + 1, points + 2, prob * w);
      walk(g + 1, points + 1, prob * d);
      walk(g + 1, points, prob * l);
    };
    walk(0, 0, 1);
    const std::vector<double> pmf = points_pmf(n, w, d, l);
    ASSERT_EQ(pmf.size(), brute.size());
    for (size_t k = 0; k < pmf.size(); ++k) EXPECT_NEAR(pmf[k], brute[k], 1e-15);
    for (int k = 0; k <= 2 * n; ++k) {
      double p = 0;
      for (double q : brute)
        if (q <= brute[size_t(k)] * (1 + 1e-7)) p += q;
      EXPECT_NEAR(points_test_p(n, k, w, d, l), std::min(1.0, p), 1e-12) << n << " " << k;
    }
  }
  // Beyond the exact range: the normal approximation, checked at two standard deviations.
  const int n = kExactTestMaxGames + 1;
  const double mean = n * (2 * w + d), sd = std::sqrt(n * (4 * w + d - (2 * w + d) * (2 * w + d)));
  EXPECT_NEAR(points_test_p(n, int(std::lround(mean + 2 * sd + 0.5)), w, d, l), 0.0455, 0.002);
  EXPECT_TRUE(std::isnan(points_test_p(3, 7, w, d, l)));
}

}  // namespace
}  // namespace c960::report
