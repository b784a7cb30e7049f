#include "selfplay/mirror.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/startpos.h"
#include "selfplay/lines.h"
#include "selfplay/significance.h"

namespace c960::selfplay {

int mirror_of(int sp) {
  absl::StatusOr<std::string> rank = backrank_of(sp);
  if (!rank.ok()) return -1;
  std::reverse(rank->begin(), rank->end());
  absl::StatusOr<int> n = number_of_backrank(*rank);
  return n.ok() ? *n : -1;
}

namespace {

struct Moments {
  double n = 0, mean = 0, second = 0;  // games, mean score, mean squared score
};

Moments moments_of(const ResultCounts& c) {
  Moments m;
  m.n = double(c.games());
  if (m.n == 0) return m;
  m.mean = (double(c.white_wins) + 0.5 * double(c.draws)) / m.n;
  m.second = (double(c.white_wins) + 0.25 * double(c.draws)) / m.n;
  return m;
}

void test_pair(MirrorPair* pair) {
  const Moments a = moments_of(pair->a), b = moments_of(pair->b);
  const double n = a.n + b.n, mean = (a.n * a.mean + b.n * b.mean) / n;
  // The pooled per-game variance (with n - 1), as if the two were one sample.
  const double variance = std::max(0.0, (a.n * a.second + b.n * b.second) / n - mean * mean) * n / (n - 1);
  // Each side's effective games (at most its games, more than 0) in the standard error.
  const auto effective = [](double e, double n) { return e > 0 && e < n ? e : n; };
  const double se =
      std::sqrt(variance * (1 / effective(pair->a_effective, a.n) + 1 / effective(pair->b_effective, b.n)));
  pair->difference = a.mean - b.mean;
  pair->z = se > 0 ? pair->difference / se : 0.0;  // no variance at all: the same games' scores
  pair->p = normal_two_sided_p(pair->z);
  pair->lo = std::max(-1.0, pair->difference - kZ95 * se);
  pair->hi = std::min(1.0, pair->difference + kZ95 * se);
}

}  // namespace

MirrorPairs compare_mirror_pairs(const std::map<int, ResultCounts>& by_sp, int64_t min_games,
                                 const std::map<int, double>& effective) {
  MirrorPairs out;
  out.min_games = std::max<int64_t>(min_games, 2);
  for (const auto& [sp, counts] : by_sp) {
    const int m = mirror_of(sp);
    if (m < 0 || m < sp) continue;  // each pair once, from its lower number
    const auto other = by_sp.find(m);
    if (other == by_sp.end() || counts.games() == 0 || other->second.games() == 0) continue;
    MirrorPair pair;
    pair.sp = sp;
    pair.mirror = m;
    pair.a = counts;
    pair.b = other->second;
    const auto effective_of = [&](int n) {
      const auto e = effective.find(n);
      return e == effective.end() ? MirrorPair::kNaN : e->second;
    };
    pair.a_effective = effective_of(sp);
    pair.b_effective = effective_of(m);
    pair.tested = pair.a.games() >= out.min_games && pair.b.games() >= out.min_games;
    if (pair.tested) test_pair(&pair);
    out.pairs.push_back(pair);
  }
  std::vector<double> p;
  for (const MirrorPair& pair : out.pairs) p.push_back(pair.p);
  const std::vector<double> holm = holm_adjust(p), bh = benjamini_hochberg_adjust(p);
  double chi = 0;
  for (size_t i = 0; i < out.pairs.size(); ++i) {
    MirrorPair& pair = out.pairs[i];
    if (!pair.tested) continue;
    pair.p_holm = holm[i];
    pair.p_bh = bh[i];
    ++out.tested;
    chi += pair.z * pair.z;
    out.significant_holm += pair.p_holm < 0.05;
    out.significant_bh += pair.p_bh < 0.05;
  }
  if (out.tested > 0) {
    out.dof = out.tested;
    out.chi_square = chi;
    out.p = chi_square_sf(chi, out.dof);
  }
  return out;
}

MirrorPairs compare_mirror_pairs(const SelfPlayStats& stats, int64_t min_games) {
  std::map<int, ResultCounts> by_sp;
  std::map<int, double> effective;
  const Relatedness related = stats.relatedness();
  const std::vector<const PositionStats*> rows = stats.rows();
  for (size_t i = 0; i < rows.size(); ++i)
    if (rows[i]->sp >= 0) {
      by_sp[rows[i]->sp] = rows[i]->counts;
      effective[rows[i]->sp] = related.effective[i];
    }
  return compare_mirror_pairs(by_sp, min_games, effective);
}

}  // namespace c960::selfplay
