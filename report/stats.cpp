#include "report/stats.h"

#include <math.h>  // lgamma_r

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/prng.h"

namespace c960::report {
namespace {

constexpr int kMaxIterations = 1000000;
constexpr double kRelEps = 1e-15;
constexpr double kTiny = 1e-300;

// log Gamma(a) for a > 0 without std::lgamma's write to the global signgam (a data race when
// pages are made on several threads).
double log_gamma(double a) {
  int sign = 0;
  return ::lgamma_r(a, &sign);
}

// x^a e^-x / Gamma(a), the factor in front of both expansions, in logs to survive large a and x.
double gamma_prefactor(double a, double x) { return std::exp(a * std::log(x) - x - log_gamma(a)); }

// P(a, x) by its power series; converges quickly for x < a + 1.
double gamma_p_series(double a, double x) {
  double term = 1.0 / a, sum = term;
  for (int n = 1; n < kMaxIterations; ++n) {
    term *= x / (a + n);
    sum += term;
    if (std::abs(term) < std::abs(sum) * kRelEps) break;
  }
  return sum * gamma_prefactor(a, x);
}

// Q(a, x) by its continued fraction (modified Lentz); converges quickly for x >= a + 1.
double gamma_q_fraction(double a, double x) {
  double b = x + 1 - a, c = 1 / kTiny, d = 1 / b, h = d;
  for (int i = 1; i < kMaxIterations; ++i) {
    const double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (std::abs(d) < kTiny) d = kTiny;
    c = b + an / c;
    if (std::abs(c) < kTiny) c = kTiny;
    d = 1 / d;
    const double delta = d * c;
    h *= delta;
    if (std::abs(delta - 1) < kRelEps) break;
  }
  return h * gamma_prefactor(a, x);
}

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

double gamma_p(double a, double x) {
  if (!(a > 0) || !(x >= 0) || std::isinf(a)) return kNaN;
  if (x == 0) return 0;
  if (std::isinf(x)) return 1;
  return x < a + 1 ? gamma_p_series(a, x) : 1 - gamma_q_fraction(a, x);
}

double gamma_q(double a, double x) {
  if (!(a > 0) || !(x >= 0) || std::isinf(a)) return kNaN;
  if (x == 0) return 1;
  if (std::isinf(x)) return 0;
  return x < a + 1 ? 1 - gamma_p_series(a, x) : gamma_q_fraction(a, x);
}

double normal_sf(double z) { return 0.5 * std::erfc(z / std::sqrt(2.0)); }

double normal_two_sided_p(double z) { return std::erfc(std::abs(z) / std::sqrt(2.0)); }

double chi_square_sf(double x, double dof) {
  if (!(dof > 0)) return kNaN;
  if (x <= 0) return 1;
  return gamma_q(dof / 2, x / 2);
}

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

namespace {

// Indices of the non-NaN p-values, ascending by p.
std::vector<size_t> order_of(const std::vector<double>& p) {
  std::vector<size_t> idx;
  for (size_t i = 0; i < p.size(); ++i)
    if (!std::isnan(p[i])) idx.push_back(i);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return p[a] < p[b]; });
  return idx;
}

}  // namespace

std::vector<double> holm_adjust(const std::vector<double>& p) {
  std::vector<double> out(p.size(), kNaN);
  const std::vector<size_t> idx = order_of(p);
  const double m = double(idx.size());
  double running = 0;
  for (size_t k = 0; k < idx.size(); ++k) {
    running = std::max(running, std::min(1.0, (m - double(k)) * p[idx[k]]));
    out[idx[k]] = running;
  }
  return out;
}

std::vector<double> benjamini_hochberg_adjust(const std::vector<double>& p) {
  std::vector<double> out(p.size(), kNaN);
  const std::vector<size_t> idx = order_of(p);
  const double m = double(idx.size());
  double running = 1;
  for (size_t k = idx.size(); k-- > 0;) {
    running = std::min(running, m * p[idx[k]] / double(k + 1));
    out[idx[k]] = running;
  }
  return out;
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
