#include "selfplay/ranking.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace c960::selfplay {
namespace {

constexpr double kTauMax = 0.5;
constexpr int kCoarseGrid = 1000;   // tau's posterior, first over [0, kTauMax]
constexpr int kFineGrid = 64;       // then over where its mass is
constexpr double kNegligible = 25;  // log-posterior below the maximum: weight e^-25, left out

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// splitmix64, and normal deviates by Box-Muller: the same numbers on every platform.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return (double(next() >> 11) + 0.5) * 0x1.0p-53; }  // in (0, 1)
  double normal() {
    if (has_spare_) {
      has_spare_ = false;
      return spare_;
    }
    const double r = std::sqrt(-2 * std::log(uniform())), a = 2 * M_PI * uniform();
    spare_ = r * std::sin(a);
    has_spare_ = true;
    return r * std::cos(a);
  }

 private:
  uint64_t state_;
  double spare_ = 0;
  bool has_spare_ = false;
};

struct Observed {
  std::vector<double> s, v;  // score and its sampling variance, per ranked position
};

// One value of tau with its posterior weight and mu's conditional posterior N(mu, mu_var).
struct TauPoint {
  double tau = 0, weight = 0, mu = 0, mu_var = 0;
};

// log p(tau | data) up to a constant, and mu's conditional posterior (BDA3 equations 5.20-5.21).
double log_posterior(const Observed& o, double tau, double* mu, double* mu_var) {
  const double t2 = tau * tau;
  double sw = 0, sws = 0, log_det = 0;
  for (size_t k = 0; k < o.s.size(); ++k) {
    const double w = 1 / (o.v[k] + t2);
    sw += w;
    sws += w * o.s[k];
    log_det += std::log(o.v[k] + t2);
  }
  const double m = sws / sw;
  double q = 0;
  for (size_t k = 0; k < o.s.size(); ++k) q += (o.s[k] - m) * (o.s[k] - m) / (o.v[k] + t2);
  *mu = m;
  *mu_var = 1 / sw;
  return -0.5 * std::log(sw) - 0.5 * log_det - 0.5 * q;
}

std::vector<TauPoint> tau_posterior(const Observed& o) {
  const int coarse = o.s.size() > kMaxPositionsForRankIntervals ? 200 : kCoarseGrid;
  std::vector<double> lp(static_cast<size_t>(coarse));
  double mu, mu_var;
  for (int j = 0; j < coarse; ++j) lp[size_t(j)] = log_posterior(o, kTauMax * j / (coarse - 1), &mu, &mu_var);
  const double top = *std::max_element(lp.begin(), lp.end());
  int first = coarse - 1, last = 0;
  for (int j = 0; j < coarse; ++j)
    if (lp[size_t(j)] > top - kNegligible) first = std::min(first, j), last = std::max(last, j);
  const double a = kTauMax * std::max(0, first - 1) / (coarse - 1);
  const double b = kTauMax * std::min(coarse - 1, last + 1) / (coarse - 1);
  std::vector<TauPoint> grid(kFineGrid);
  double best = -INFINITY;
  for (int j = 0; j < kFineGrid; ++j) {
    TauPoint& p = grid[size_t(j)];
    p.tau = a + (b - a) * (j + 0.5) / kFineGrid;  // midpoints: cells of equal width
    p.weight = log_posterior(o, p.tau, &p.mu, &p.mu_var);
    best = std::max(best, p.weight);
  }
  double total = 0;
  for (TauPoint& p : grid) total += p.weight = std::exp(p.weight - best);
  for (TauPoint& p : grid) p.weight /= total;
  std::erase_if(grid, [](const TauPoint& p) { return p.weight < 1e-9; });
  return grid;
}

// A quantile of the mixture sum_g weight_g N(mean_g, var_g), by bisection.
double mixture_quantile(const std::vector<double>& weight, const std::vector<double>& mean,
                        const std::vector<double>& sd, double q) {
  double lo = INFINITY, hi = -INFINITY;
  for (size_t g = 0; g < weight.size(); ++g) {
    lo = std::min(lo, mean[g] - 8 * sd[g]);
    hi = std::max(hi, mean[g] + 8 * sd[g]);
  }
  while (hi - lo > 1e-7) {
    const double x = 0.5 * (lo + hi);
    double f = 0;
    for (size_t g = 0; g < weight.size(); ++g)
      f += weight[g] * (sd[g] > 0 ? normal_cdf((x - mean[g]) / sd[g]) : x >= mean[g] ? 1.0 : 0.0);
    (f < q ? lo : hi) = x;
  }
  return 0.5 * (lo + hi);
}

// Quantiles of a grid distribution (weights of cells of equal width around the points).
double grid_quantile(const std::vector<TauPoint>& grid, double q) {
  double c = 0;
  for (const TauPoint& p : grid) {
    if (c + p.weight >= q) return p.tau;
    c += p.weight;
  }
  return grid.back().tau;
}

}  // namespace

Ranking rank_positions(const std::vector<ResultCounts>& counts, const RankingOptions& options) {
  Ranking r;
  r.positions.resize(counts.size());
  r.min_games = options.min_games;
  std::vector<size_t> ranked;
  for (size_t i = 0; i < counts.size(); ++i) {
    r.most_games = std::max(r.most_games, counts[i].games());
    if (counts[i].games() >= std::max<int64_t>(1, options.min_games)) ranked.push_back(i);
  }
  if (ranked.size() < size_t(kMinPositionsToRank)) return r;
  const size_t n = ranked.size();

  // Scores, each game's variance (own, pooled, blended) and the scores' sampling variances.
  Observed o;
  std::vector<double> own(n), games(n);
  double pooled_num = 0, pooled_den = 0;
  for (size_t k = 0; k < n; ++k) {
    const ResultCounts& c = counts[ranked[k]];
    games[k] = double(c.games());
    const double s = (double(c.white_wins) + 0.5 * double(c.draws)) / games[k];
    own[k] = std::max(0.0, (double(c.white_wins) + 0.25 * double(c.draws)) / games[k] - s * s);
    o.s.push_back(s);
    pooled_num += games[k] * own[k];
    pooled_den += games[k];
  }
  const double pooled = pooled_num / pooled_den;
  for (size_t k = 0; k < n; ++k) {
    const double per_game = (games[k] * own[k] + kVariancePrior * pooled) / (games[k] + kVariancePrior);
    o.v.push_back(std::max(per_game, 1e-6) / games[k]);  // 1e-6: every game a draw everywhere
  }

  const std::vector<TauPoint> grid = tau_posterior(o);
  const size_t m = grid.size();
  std::vector<double> w(m), mean(m), sd(m);
  for (size_t g = 0; g < m; ++g) {
    w[g] = grid[g].weight;
    mean[g] = grid[g].mu;
    sd[g] = std::sqrt(grid[g].mu_var);
  }
  r.mean = std::inner_product(w.begin(), w.end(), mean.begin(), 0.0);
  r.mean_lo = mixture_quantile(w, mean, sd, 0.025);
  r.mean_hi = mixture_quantile(w, mean, sd, 0.975);
  r.tau = 0;
  for (const TauPoint& p : grid) r.tau += p.weight * p.tau;
  r.tau_lo = grid_quantile(grid, 0.025);
  r.tau_hi = grid_quantile(grid, 0.975);

  // Each position: a mixture over tau of normals.
  const bool exact = n <= kMaxPositionsForRankIntervals;
  std::vector<double> shrink(m);  // B for the position at each tau
  for (size_t k = 0; k < n; ++k) {
    RankedPosition& p = r.positions[ranked[k]];
    p.ranked = true;
    double ex = 0, ex2 = 0;
    for (size_t g = 0; g < m; ++g) {
      const double t2 = grid[g].tau * grid[g].tau, b = o.v[k] / (o.v[k] + t2);
      mean[g] = b * grid[g].mu + (1 - b) * o.s[k];
      sd[g] = std::sqrt((1 - b) * o.v[k] + b * b * grid[g].mu_var);
      ex += w[g] * mean[g];
      ex2 += w[g] * (sd[g] * sd[g] + mean[g] * mean[g]);
    }
    p.shrunk = ex;
    if (exact) {
      p.lo = mixture_quantile(w, mean, sd, 0.025);
      p.hi = mixture_quantile(w, mean, sd, 0.975);
    } else {
      const double half = kZ95 * std::sqrt(std::max(0.0, ex2 - ex * ex));
      p.lo = ex - half;
      p.hi = ex + half;
    }
  }

  r.order = ranked;
  std::stable_sort(r.order.begin(), r.order.end(), [&](size_t a, size_t b) {
    const RankedPosition &x = r.positions[a], &y = r.positions[b];
    if (x.shrunk != y.shrunk) return x.shrunk > y.shrunk;
    return x.lo > y.lo;
  });
  for (size_t i = 0; i < n; ++i) r.positions[r.order[i]].rank = int(i) + 1;
  if (!exact || options.draws <= 0) return r;

  // Rank intervals: draws of (tau, mu, theta) from the posterior, ranked.
  const size_t draws = size_t(options.draws);
  std::vector<double> cumulative(m);
  std::partial_sum(w.begin(), w.end(), cumulative.begin());
  Rng rng(options.seed);
  std::vector<int> ranks(n * draws);
  std::vector<double> theta(n);
  std::vector<size_t> idx(n);
  for (size_t d = 0; d < draws; ++d) {
    const double u = rng.uniform() * cumulative.back();
    const size_t g =
        std::min<size_t>(m - 1, size_t(std::lower_bound(cumulative.begin(), cumulative.end(), u) - cumulative.begin()));
    const double t2 = grid[g].tau * grid[g].tau;
    const double mu = grid[g].mu + std::sqrt(grid[g].mu_var) * rng.normal();
    for (size_t k = 0; k < n; ++k) {
      const double b = o.v[k] / (o.v[k] + t2);
      theta[k] = b * mu + (1 - b) * o.s[k] + std::sqrt((1 - b) * o.v[k]) * rng.normal();
    }
    std::iota(idx.begin(), idx.end(), 0);
    std::sort(idx.begin(), idx.end(),
              [&](size_t a, size_t b) { return theta[a] > theta[b] || (theta[a] == theta[b] && a < b); });
    for (size_t i = 0; i < n; ++i) ranks[idx[i] * draws + d] = int(i) + 1;
  }
  const size_t q_lo = draws / 40, q_hi = std::min(draws - 1, draws - 1 - draws / 40);
  for (size_t k = 0; k < n; ++k) {
    const auto first = ranks.begin() + long(k * draws), end = first + long(draws);
    std::nth_element(first, first + long(q_lo), end);
    const int lo = first[long(q_lo)];
    std::nth_element(first, first + long(q_hi), end);
    RankedPosition& p = r.positions[ranked[k]];
    p.rank_lo = lo;
    p.rank_hi = first[long(q_hi)];
  }
  r.rank_intervals = true;
  return r;
}

}  // namespace c960::selfplay
