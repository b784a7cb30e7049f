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

// The grid priors (see ranking.h): true scores on a grid of cells of equal width, each position's
// likelihood there, and a prior estimated from all positions.
struct Grid {
  std::vector<double> theta;  // cell centres
  double width = 0;           // of a cell
  std::vector<double> like;   // n x J: position k's likelihood at theta_j, scaled to a maximum of 1
  size_t n = 0, cells = 0;
};

// One game's variance when White's true score is t and a fraction d of the games are drawn
// (capped, as in stats.h, by the largest draw rate mean t allows).
double per_game_variance(double t, double d) {
  return std::max(1e-6, t * (1 - t) - std::min({d, 2 * t, 2 - 2 * t}) / 4);
}

Grid make_grid(const std::vector<double>& s, const std::vector<double>& draw, const std::vector<double>& games) {
  Grid grid;
  grid.n = s.size();
  double lo = 1, hi = 0, widest = 0;
  for (size_t k = 0; k < s.size(); ++k) {
    lo = std::min(lo, s[k]);
    hi = std::max(hi, s[k]);
    widest = std::max(widest, std::sqrt(0.25 / games[k]));
  }
  // Room for the truth beyond the observed scores: 4 of the widest standard errors.
  const double a = std::max(0.0, lo - 4 * widest), b = std::min(1.0, hi + 4 * widest);
  grid.cells = kGridCells;
  grid.width = (b - a) / double(grid.cells);
  for (size_t j = 0; j < grid.cells; ++j) grid.theta.push_back(a + grid.width * (double(j) + 0.5));
  grid.like.resize(grid.n * grid.cells);
  for (size_t k = 0; k < grid.n; ++k) {
    double* row = &grid.like[k * grid.cells];
    double top = -INFINITY;
    for (size_t j = 0; j < grid.cells; ++j) {
      const double v = per_game_variance(grid.theta[j], draw[k]) / games[k], e = s[k] - grid.theta[j];
      row[j] = -0.5 * std::log(v) - 0.5 * e * e / v;
      top = std::max(top, row[j]);
    }
    for (size_t j = 0; j < grid.cells; ++j) row[j] = std::exp(row[j] - top);
  }
  return grid;
}

// Sum over positions of log sum_j g_j like_kj.
double log_likelihood(const Grid& grid, const std::vector<double>& g, const std::vector<double>& weight) {
  double ll = 0;
  for (size_t k = 0; k < grid.n; ++k) {
    if (weight[k] == 0) continue;
    const double* row = &grid.like[k * grid.cells];
    double f = 0;
    for (size_t j = 0; j < grid.cells; ++j) f += g[j] * row[j];
    ll += weight[k] * std::log(std::max(f, 1e-300));
  }
  return ll;
}

// Kiefer and Wolfowitz's nonparametric maximum likelihood prior, by EM from the uniform one.
std::vector<double> fit_npmle(const Grid& grid) {
  std::vector<double> g(grid.cells, 1.0 / double(grid.cells)), next(grid.cells);
  double last = -INFINITY;
  for (int it = 0; it < kNpmleIterations; ++it) {
    std::fill(next.begin(), next.end(), 0.0);
    double ll = 0;
    for (size_t k = 0; k < grid.n; ++k) {
      const double* row = &grid.like[k * grid.cells];
      double f = 0;
      for (size_t j = 0; j < grid.cells; ++j) f += g[j] * row[j];
      f = std::max(f, 1e-300);
      ll += std::log(f);
      for (size_t j = 0; j < grid.cells; ++j) next[j] += row[j] / f;
    }
    for (size_t j = 0; j < grid.cells; ++j) g[j] *= next[j] / double(grid.n);
    if (ll - last < 1e-7 * double(grid.n)) break;
    last = ll;
  }
  return g;
}

// Solves a x = y for a symmetric positive definite a (p x p) by Cholesky; false when it is not.
bool cholesky_solve(std::vector<double> a, std::vector<double> y, size_t p, std::vector<double>* x) {
  for (size_t i = 0; i < p; ++i) {
    for (size_t j = 0; j <= i; ++j) {
      double sum = a[i * p + j];
      for (size_t k = 0; k < j; ++k) sum -= a[i * p + k] * a[j * p + k];
      if (i == j) {
        if (sum <= 0) return false;
        a[i * p + i] = std::sqrt(sum);
      } else {
        a[i * p + j] = sum / a[j * p + j];
      }
    }
  }
  for (size_t i = 0; i < p; ++i) {
    for (size_t k = 0; k < i; ++k) y[i] -= a[i * p + k] * y[k];
    y[i] /= a[i * p + i];
  }
  for (size_t i = p; i-- > 0;) {
    for (size_t k = i + 1; k < p; ++k) y[i] -= a[k * p + i] * y[k];
    y[i] /= a[i * p + i];
  }
  *x = std::move(y);
  return true;
}

// Efron's g-modeling (Efron, "Empirical Bayes deconvolution estimates", Biometrika 103, 2016):
// log g = Q alpha - constant, Q the Legendre polynomials of degrees 1..kLogSplineDegree over the
// grid (each column centred and scaled to unit spread), alpha maximising the log-likelihood less
// kLogSplinePenalty |alpha|^2 / 2, by Newton's method with Levenberg's damping.
// weight: each position's weight in the likelihood.
std::vector<double> fit_log_spline(const Grid& grid, const std::vector<double>& weight) {
  const size_t p = kLogSplineDegree, J = grid.cells;
  std::vector<double> q(J * p);
  for (size_t j = 0; j < J; ++j) {
    const double x = 2 * (double(j) + 0.5) / double(J) - 1;
    double prev = 1, cur = x;
    for (size_t d = 1; d <= p; ++d) {
      q[j * p + d - 1] = cur;
      const double next = ((2 * double(d) + 1) * x * cur - double(d) * prev) / (double(d) + 1);
      prev = cur;
      cur = next;
    }
  }
  for (size_t d = 0; d < p; ++d) {
    double m = 0, ss = 0;
    for (size_t j = 0; j < J; ++j) m += q[j * p + d] / double(J);
    for (size_t j = 0; j < J; ++j) ss += (q[j * p + d] - m) * (q[j * p + d] - m) / double(J);
    for (size_t j = 0; j < J; ++j) q[j * p + d] = (q[j * p + d] - m) / std::sqrt(ss);
  }
  const auto prior = [&](const std::vector<double>& alpha) {
    std::vector<double> g(J);
    double top = -INFINITY;
    for (size_t j = 0; j < J; ++j) {
      g[j] = 0;
      for (size_t d = 0; d < p; ++d) g[j] += q[j * p + d] * alpha[d];
      top = std::max(top, g[j]);
    }
    double total = 0;
    for (double& x : g) total += x = std::exp(x - top);
    for (double& x : g) x /= total;
    return g;
  };
  const auto objective = [&](const std::vector<double>& alpha, const std::vector<double>& g) {
    double pen = 0;
    for (double a : alpha) pen += a * a;
    return log_likelihood(grid, g, weight) - 0.5 * kLogSplinePenalty * pen;
  };
  std::vector<double> alpha(p, 0.0), g = prior(alpha);
  double f = objective(alpha, g), damping = 0;
  const double n = std::accumulate(weight.begin(), weight.end(), 0.0);
  std::vector<double> c(J), m(p), grad(p), hess(p * p), step;
  for (int it = 0; it < 200; ++it) {
    // Posterior weights' column sums c_j, and the sum over positions of the posterior means' outer products.
    std::fill(c.begin(), c.end(), 0.0);
    std::vector<double> mm(p * p, 0.0);
    for (size_t k = 0; k < grid.n; ++k) {
      if (weight[k] == 0) continue;
      const double* row = &grid.like[k * J];
      double fk = 0;
      for (size_t j = 0; j < J; ++j) fk += g[j] * row[j];
      fk = std::max(fk, 1e-300);
      std::fill(m.begin(), m.end(), 0.0);
      for (size_t j = 0; j < J; ++j) {
        const double w = weight[k] * g[j] * row[j] / fk;
        c[j] += w;
        for (size_t d = 0; d < p; ++d) m[d] += w * q[j * p + d];
      }
      for (size_t a = 0; a < p; ++a)
        for (size_t b = 0; b < p; ++b) mm[a * p + b] += m[a] * m[b] / weight[k];
    }
    std::vector<double> eg(p, 0.0);
    for (size_t j = 0; j < J; ++j)
      for (size_t d = 0; d < p; ++d) eg[d] += g[j] * q[j * p + d];
    double norm = 0;
    for (size_t d = 0; d < p; ++d) {
      grad[d] = -kLogSplinePenalty * alpha[d];
      for (size_t j = 0; j < J; ++j) grad[d] += (c[j] - n * g[j]) * q[j * p + d];
      norm += grad[d] * grad[d];
    }
    if (norm < 1e-12) break;
    // Minus the Hessian: n Cov_g(Q) - sum_k Cov_post_k(Q) + penalty.
    for (size_t a = 0; a < p; ++a)
      for (size_t b = 0; b < p; ++b) {
        double cg = 0, cp = 0;
        for (size_t j = 0; j < J; ++j) {
          cg += g[j] * q[j * p + a] * q[j * p + b];
          cp += c[j] * q[j * p + a] * q[j * p + b];
        }
        hess[a * p + b] = n * (cg - eg[a] * eg[b]) - (cp - mm[a * p + b]) + (a == b ? kLogSplinePenalty : 0.0);
      }
    bool improved = false;
    for (int tries = 0; tries < 40 && !improved; ++tries) {
      std::vector<double> h = hess;
      for (size_t d = 0; d < p; ++d) h[d * p + d] += damping;
      if (cholesky_solve(h, grad, p, &step)) {
        std::vector<double> next(p);
        for (size_t d = 0; d < p; ++d) next[d] = alpha[d] + step[d];
        std::vector<double> gn = prior(next);
        const double fn = objective(next, gn);
        if (fn >= f) {
          improved = fn - f > 1e-10 * n;
          alpha = std::move(next);
          g = std::move(gn);
          f = fn;
          damping *= 0.3;
          if (!improved) tries = 40;
          break;
        }
      }
      damping = std::max(1e-3 * n, 4 * damping);
    }
    if (!improved) break;
  }
  return g;
}

// A position's posterior on the grid, its mean and its 95% interval (the posterior is taken as
// uniform within each cell).
// Under several priors, the average of the posteriors (one prior: its posterior).
void grid_posterior(const Grid& grid, const std::vector<std::vector<double>>& priors, size_t k, std::vector<double>* w,
                    RankedPosition* out) {
  const double* row = &grid.like[k * grid.cells];
  w->assign(grid.cells, 0.0);
  for (const std::vector<double>& g : priors) {
    double f = 0;
    for (size_t j = 0; j < grid.cells; ++j) f += g[j] * row[j];
    for (size_t j = 0; j < grid.cells; ++j) (*w)[j] += g[j] * row[j] / (f * double(priors.size()));
  }
  double mean = 0;
  for (size_t j = 0; j < grid.cells; ++j) mean += (*w)[j] * grid.theta[j];
  const auto quantile = [&](double q) {
    double c = 0;
    for (size_t j = 0; j < grid.cells; ++j) {
      if (c + (*w)[j] >= q && (*w)[j] > 0) return grid.theta[j] - grid.width / 2 + grid.width * (q - c) / (*w)[j];
      c += (*w)[j];
    }
    return grid.theta.back() + grid.width / 2;
  };
  out->shrunk = mean;
  out->lo = std::clamp(quantile(0.025), 0.0, 1.0);
  out->hi = std::clamp(quantile(0.975), 0.0, 1.0);
}

// Orders the ranked positions by their shrunk scores (then their intervals' lower ends).
void order_by_shrunk(Ranking* r, const std::vector<size_t>& ranked) {
  r->order = ranked;
  std::stable_sort(r->order.begin(), r->order.end(), [&](size_t a, size_t b) {
    const RankedPosition &x = r->positions[a], &y = r->positions[b];
    if (x.shrunk != y.shrunk) return x.shrunk > y.shrunk;
    return x.lo > y.lo;
  });
  for (size_t i = 0; i < r->order.size(); ++i) r->positions[r->order[i]].rank = int(i) + 1;
}

// Each position's rank interval: the middle 95% of its ranks over the draws (ranks[k * draws + d]).
void rank_intervals_from(Ranking* r, const std::vector<size_t>& ranked, std::vector<int>& ranks, size_t draws) {
  const size_t q_lo = draws / 40, q_hi = std::min(draws - 1, draws - 1 - draws / 40);
  for (size_t k = 0; k < ranked.size(); ++k) {
    const auto first = ranks.begin() + long(k * draws), end = first + long(draws);
    std::nth_element(first, first + long(q_lo), end);
    const int lo = first[long(q_lo)];
    std::nth_element(first, first + long(q_hi), end);
    RankedPosition& p = r->positions[ranked[k]];
    p.rank_lo = lo;
    p.rank_hi = first[long(q_hi)];
  }
  r->rank_intervals = true;
}

// Ranks each draw's scores into ranks[k * draws + d] (1: the highest).
void rank_draw(const std::vector<double>& theta, size_t d, size_t draws, std::vector<size_t>* idx,
               std::vector<int>* ranks) {
  std::iota(idx->begin(), idx->end(), 0);
  std::sort(idx->begin(), idx->end(),
            [&](size_t a, size_t b) { return theta[a] > theta[b] || (theta[a] == theta[b] && a < b); });
  for (size_t i = 0; i < idx->size(); ++i) (*ranks)[(*idx)[i] * draws + d] = int(i) + 1;
}

// The ranking under a grid prior (Prior::kNpmle or kLogSpline): each position's posterior on the
// grid, and rank intervals from independent draws of every position's posterior.
Ranking grid_ranking(Ranking r, const std::vector<size_t>& ranked, const std::vector<double>& s,
                     const std::vector<double>& draw, const std::vector<double>& effective,
                     const RankingOptions& options) {
  const Grid grid = make_grid(s, draw, effective);
  const size_t n = ranked.size(), J = grid.cells;
  const std::vector<std::vector<double>> priors = {
      r.prior == Prior::kNpmle ? fit_npmle(grid) : fit_log_spline(grid, std::vector<double>(n, 1.0))};
  std::vector<double> cumulative(n * J), w;
  for (size_t k = 0; k < n; ++k) {
    grid_posterior(grid, priors, k, &w, &r.positions[ranked[k]]);
    r.positions[ranked[k]].ranked = true;
    std::partial_sum(w.begin(), w.end(), cumulative.begin() + long(k * J));
  }
  order_by_shrunk(&r, ranked);
  if (options.draws <= 0) return r;
  const size_t draws = size_t(options.draws);
  Rng rng(options.seed);
  std::vector<int> ranks(n * draws);
  std::vector<double> theta(n);
  std::vector<size_t> idx(n);
  for (size_t d = 0; d < draws; ++d) {
    for (size_t k = 0; k < n; ++k) {
      const auto first = cumulative.begin() + long(k * J), last = first + long(J);
      const double u = rng.uniform() * last[-1];
      const size_t j = std::min<size_t>(J - 1, size_t(std::lower_bound(first, last, u) - first));
      theta[k] = grid.theta[j] + grid.width * (rng.uniform() - 0.5);
    }
    rank_draw(theta, d, draws, &idx, &ranks);
  }
  rank_intervals_from(&r, ranked, ranks, draws);
  return r;
}

}  // namespace

const char* prior_name(Prior prior) {
  switch (prior) {
    case Prior::kNormal: return "normal";
    case Prior::kNpmle: return "npmle";
    case Prior::kLogSpline: return "log-spline";
  }
  return "?";
}

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

  // Scores, each game's variance (own, pooled, blended) and the scores' sampling variances, over
  // the effective number of games where games are related.
  Observed o;
  std::vector<double> own(n), games(n), effective(n), draw(n);
  double pooled_num = 0, pooled_den = 0, drawn = 0;
  for (size_t k = 0; k < n; ++k) {
    const ResultCounts& c = counts[ranked[k]];
    games[k] = double(c.games());
    effective[k] = games[k];
    if (ranked[k] < options.effective_games.size() && options.effective_games[ranked[k]] > 0)
      effective[k] = std::min(games[k], options.effective_games[ranked[k]]);
    const double s = (double(c.white_wins) + 0.5 * double(c.draws)) / games[k];
    own[k] = std::max(0.0, (double(c.white_wins) + 0.25 * double(c.draws)) / games[k] - s * s);
    o.s.push_back(s);
    pooled_num += games[k] * own[k];
    pooled_den += games[k];
    drawn += double(c.draws);
  }
  const double pooled = pooled_num / pooled_den, pooled_draw = drawn / pooled_den;
  for (size_t k = 0; k < n; ++k) {
    const double per_game = (games[k] * own[k] + kVariancePrior * pooled) / (games[k] + kVariancePrior);
    o.v.push_back(std::max(per_game, 1e-6) / effective[k]);  // 1e-6: every game a draw everywhere
    draw[k] = (double(counts[ranked[k]].draws) + kVariancePrior * pooled_draw) / (games[k] + kVariancePrior);
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

  const bool exact = n <= kMaxPositionsForRankIntervals;
  r.prior = exact ? options.prior : Prior::kNormal;
  if (r.prior != Prior::kNormal) return grid_ranking(std::move(r), ranked, o.s, draw, effective, options);

  // Each position: a mixture over tau of normals.
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

  order_by_shrunk(&r, ranked);
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
    rank_draw(theta, d, draws, &idx, &ranks);
  }
  rank_intervals_from(&r, ranked, ranks, draws);
  return r;
}

}  // namespace c960::selfplay
