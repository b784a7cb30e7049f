#include "report/stats.h"

#include <math.h>  // lgamma_r

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/prng.h"

namespace c960::report {
namespace {

// Chi-square statistic of `observed` (rows x columns, empty ones already dropped).
double chi_square_statistic(const std::vector<std::vector<int64_t>>& observed, const std::vector<double>& row_totals,
                            const std::vector<double>& column_totals, double total) {
  double x = 0;
  for (size_t i = 0; i < observed.size(); ++i)
    for (size_t j = 0; j < column_totals.size(); ++j) {
      const double e = row_totals[i] * column_totals[j] / total;
      const double diff = double(observed[i][j]) - e;
      x += diff * diff / e;
    }
  return x;
}

// The table without rows and columns that have no counts, with its totals.
struct Reduced {
  std::vector<std::vector<int64_t>> cells;
  std::vector<double> rows, columns;
  double total = 0;
};

Reduced reduce(const std::vector<std::vector<int64_t>>& table) {
  size_t width = 0;
  for (const auto& row : table) width = std::max(width, row.size());
  std::vector<int64_t> column_sum(width, 0);
  for (const auto& row : table)
    for (size_t j = 0; j < row.size(); ++j) column_sum[j] += row[j];
  std::vector<size_t> keep;
  for (size_t j = 0; j < width; ++j)
    if (column_sum[j] > 0) keep.push_back(j);
  Reduced r;
  for (const auto& row : table) {
    std::vector<int64_t> cells;
    int64_t sum = 0;
    for (size_t j : keep) {
      cells.push_back(j < row.size() ? row[j] : 0);
      sum += cells.back();
    }
    if (sum == 0) continue;
    r.cells.push_back(std::move(cells));
    r.rows.push_back(double(sum));
    r.total += double(sum);
  }
  for (size_t j : keep) r.columns.push_back(double(column_sum[j]));
  return r;
}

}  // namespace

ChiSquareTest chi_square_homogeneity(const std::vector<std::vector<int64_t>>& table) {
  const Reduced r = reduce(table);
  ChiSquareTest t;
  t.rows = int(r.rows.size());
  t.columns = int(r.columns.size());
  if (t.rows < 2 || t.columns < 2) return t;
  t.statistic = chi_square_statistic(r.cells, r.rows, r.columns, r.total);
  t.dof = (t.rows - 1) * (t.columns - 1);
  t.p_value = chi_square_sf(t.statistic, t.dof);
  int below = 0;
  t.min_expected = INFINITY;
  for (double row : r.rows)
    for (double column : r.columns) {
      const double e = row * column / r.total;
      t.min_expected = std::min(t.min_expected, e);
      below += e < 5;
    }
  t.share_expected_below_5 = double(below) / (double(t.rows) * t.columns);
  return t;
}

double chi_square_permutation_p(const std::vector<std::vector<int64_t>>& table, int permutations, uint64_t seed) {
  const Reduced r = reduce(table);
  if (r.rows.size() < 2 || r.columns.size() < 2 || permutations < 1) return kNaN;
  const double observed = chi_square_statistic(r.cells, r.rows, r.columns, r.total);
  std::vector<uint8_t> pool;  // one entry per observation: its column
  for (size_t j = 0; j < r.columns.size(); ++j) pool.insert(pool.end(), size_t(r.columns[j]), uint8_t(j));
  Prng rng(seed);
  std::vector<std::vector<int64_t>> shuffled(r.rows.size(), std::vector<int64_t>(r.columns.size()));
  int at_least = 0;
  // Rounding may differ between equal statistics computed from different tables.
  const double threshold = observed * (1 - 1e-12);
  for (int b = 0; b < permutations; ++b) {
    for (size_t i = pool.size(); i > 1; --i) std::swap(pool[i - 1], pool[rng.below(i)]);
    size_t at = 0;
    for (size_t i = 0; i < r.rows.size(); ++i) {
      std::fill(shuffled[i].begin(), shuffled[i].end(), 0);
      for (int64_t k = 0; k < int64_t(r.rows[i]); ++k) ++shuffled[i][pool[at++]];
    }
    at_least += chi_square_statistic(shuffled, r.rows, r.columns, r.total) >= threshold;
  }
  return (1.0 + at_least) / (1.0 + permutations);
}

double pearson(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return kNaN;
  double mx = 0, my = 0;
  for (size_t i = 0; i < n; ++i) mx += x[i], my += y[i];
  mx /= double(n), my /= double(n);
  double sxx = 0, syy = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    syy += (y[i] - my) * (y[i] - my);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx <= 0 || syy <= 0) return kNaN;
  return std::clamp(sxy / std::sqrt(sxx * syy), -1.0, 1.0);
}

std::vector<double> average_ranks(const std::vector<double>& x) {
  std::vector<size_t> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return x[a] < x[b]; });
  std::vector<double> ranks(x.size());
  for (size_t i = 0; i < idx.size();) {
    size_t j = i;
    while (j + 1 < idx.size() && x[idx[j + 1]] == x[idx[i]]) ++j;
    const double mean_rank = (double(i) + double(j)) / 2 + 1;
    for (size_t k = i; k <= j; ++k) ranks[idx[k]] = mean_rank;
    i = j + 1;
  }
  return ranks;
}

double spearman(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  return pearson(average_ranks({x.begin(), x.begin() + long(n)}), average_ranks({y.begin(), y.begin() + long(n)}));
}

std::vector<double> points_pmf(int n, double win, double draw, double loss) {
  std::vector<double> pmf(size_t(2 * n + 1), 0.0), next(pmf.size());
  pmf[0] = 1;
  // One game at a time: all terms are non-negative, so nothing cancels.
  for (int g = 0; g < n; ++g) {
    const int top = 2 * (g + 1);
    for (int k = 0; k <= top; ++k)
      next[size_t(k)] = loss * (k <= 2 * g ? pmf[size_t(k)] : 0) +
                        draw * (k >= 1 && k - 1 <= 2 * g ? pmf[size_t(k - 1)] : 0) +
                        win * (k >= 2 ? pmf[size_t(k - 2)] : 0);
    std::swap(pmf, next);
  }
  return pmf;
}

double points_test_p(int n, int half_points, double win, double draw, double loss) {
  if (n <= 0 || half_points < 0 || half_points > 2 * n) return kNaN;
  if (n <= kExactTestMaxGames) {
    const std::vector<double> pmf = points_pmf(n, win, draw, loss);
    // Outcomes as likely as the observed one count too; the factor absorbs rounding (as R does).
    const double bound = pmf[size_t(half_points)] * (1 + 1e-7);
    double p = 0;
    for (double q : pmf)
      if (q <= bound) p += q;
    return std::min(1.0, p);
  }
  const double mean = n * (2 * win + draw), var = n * (4 * win + draw - (2 * win + draw) * (2 * win + draw));
  if (var <= 0) return half_points == mean ? 1.0 : 0.0;
  const double dev = std::max(0.0, std::abs(half_points - mean) - 0.5);
  return normal_two_sided_p(dev / std::sqrt(var));
}

}  // namespace c960::report
