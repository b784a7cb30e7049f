#include "report/analysis.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "core/startpos.h"

namespace c960::report {
namespace {

// Work budget of the permutation test, in observations shuffled: 2000 permutations of 25 000
// games; larger tables get fewer permutations (but at least 100).
constexpr double kPermutationBudget = 5e7;
constexpr int kMinPermutations = 100;
// Bins of the histogram when the positions have different numbers of games or many games each.
constexpr int kHistogramBins = 20;
constexpr int kMaxValueBins = 41;  // one bin per possible score up to 20 games per position

double score_of(const selfplay::ResultCounts& c) {
  return c.games() ? (double(c.white_wins) + 0.5 * double(c.draws)) / double(c.games()) : kNaN;
}

std::vector<std::vector<int64_t>> wdl_table(const std::vector<selfplay::ResultCounts>& counts) {
  std::vector<std::vector<int64_t>> t;
  t.reserve(counts.size());
  for (const selfplay::ResultCounts& c : counts) t.push_back({c.white_wins, c.draws, c.black_wins});
  return t;
}

// Each position's score distribution under the pooled probabilities, summed into the bins.
Histogram make_histogram(const SelfPlayTable& table, double win, double draw, double loss) {
  Histogram h;
  int64_t common_n = -1;
  bool same_n = true;
  for (const SelfPlayRow& r : table.rows) {
    const int64_t n = r.counts.games();
    if (n == 0) continue;
    if (common_n < 0) common_n = n;
    same_n = same_n && n == common_n;
  }
  if (same_n && common_n > 0 && 2 * common_n + 1 <= kMaxValueBins) {
    // One bin per possible score k / 2n, centred on it.
    const double step = 1.0 / double(2 * common_n);
    for (int64_t k = 0; k <= 2 * common_n + 1; ++k) h.edges.push_back(std::clamp((double(k) - 0.5) * step, 0.0, 1.0));
  } else {
    // Bins over the range the scores take, observed or expected (3.3 standard deviations of the
    // noise either side of the pooled score at the fewest games: all but 0.1% of it), of a round
    // width (1, 2, 2.5 or 5 times a power of ten) that gives at least kHistogramBins of them:
    // a table whose scores lie within 0.50..0.60 gets bins 0.005 wide, not three bars 0.05 wide.
    double lo = 1, hi = 0;
    int64_t fewest = 0;
    for (const SelfPlayRow& r : table.rows) {
      const int64_t n = r.counts.games();
      if (n == 0) continue;
      lo = std::min(lo, score_of(r.counts));
      hi = std::max(hi, score_of(r.counts));
      fewest = fewest ? std::min(fewest, n) : n;
    }
    const double mean = win + 0.5 * draw;
    const double noise =
        3.3 * std::sqrt(std::max(0.0, win + 0.25 * draw - mean * mean) / double(std::max<int64_t>(1, fewest)));
    lo = std::max(0.0, std::min(lo, mean - noise));
    hi = std::min(1.0, std::max(hi, mean + noise));
    const double target = std::max(hi - lo, 0.01) / kHistogramBins;  // at least 0.0005
    const auto round_width = [target] {
      for (double decade = 0.1;; decade /= 10)
        for (double m : {5.0, 2.5, 2.0, 1.0})
          if (m * decade <= target) return m * decade;
    };
    const double width = round_width();
    const int64_t first = int64_t(std::floor(lo / width + 1e-9)), last = int64_t(std::ceil(hi / width - 1e-9));
    for (int64_t k = first; k <= std::max(last, first + 1); ++k)
      h.edges.push_back(std::clamp(double(k) * width, 0.0, 1.0));
  }
  const size_t bins = h.edges.size() - 1;
  h.observed.assign(bins, 0);
  h.expected.assign(bins, 0);
  const auto bin_of = [&](double x) {
    const size_t i = size_t(std::upper_bound(h.edges.begin(), h.edges.end(), x) - h.edges.begin());
    return std::min(bins - 1, i == 0 ? 0 : i - 1);
  };
  std::map<int64_t, std::vector<double>> pmf_cache;  // by number of games
  const double per_game_var = win + 0.25 * draw - (win + 0.5 * draw) * (win + 0.5 * draw);
  for (const SelfPlayRow& r : table.rows) {
    if (r.counts.games() == 0) continue;
    h.observed[bin_of(score_of(r.counts))] += 1;
    // The noise of a position's score is that of its effective number of games.
    const int64_t n = effective_counts(r.counts, r.effective_games).games();
    if (n <= kExactTestMaxGames) {
      auto it = pmf_cache.find(n);
      if (it == pmf_cache.end()) it = pmf_cache.emplace(n, points_pmf(int(n), win, draw, loss)).first;
      for (size_t k = 0; k < it->second.size(); ++k) h.expected[bin_of(double(k) / double(2 * n))] += it->second[k];
    } else {
      // The normal approximation of the score's distribution, integrated over each bin.
      const double mean = win + 0.5 * draw, sd = std::sqrt(per_game_var / double(n));
      double below = 0;
      for (size_t b = 0; b < bins; ++b) {
        const double upper =
            b + 1 == bins ? 1.0
                          : (sd > 0 ? 1 - normal_sf((h.edges[b + 1] - mean) / sd) : double(h.edges[b + 1] > mean));
        h.expected[b] += upper - below;
        below = upper;
      }
    }
  }
  return h;
}

std::vector<GroupSummary> group_summaries(const SelfPlayTable& table) {
  // The test pools each position's effective counts (effective_counts); the table shows the
  // games and their effective number.
  // "c" or "b+g": the files of a piece on the back rank.
  const auto files_of = [](const std::string& rank, char piece) {
    std::string out;
    for (size_t i = 0; i < rank.size(); ++i)
      if (rank[i] == piece) absl::StrAppend(&out, out.empty() ? "" : "+", std::string(1, char('a' + i)));
    return out;
  };
  std::vector<GroupSummary> out;
  const auto summarise = [&](const std::string& name, const auto& label) {
    struct Pooled {
      selfplay::ResultCounts games, tested;
      double effective = 0;
    };
    std::map<std::string, Pooled> groups;
    for (const SelfPlayRow& r : table.rows) {
      if (r.key.sp < 0 || r.counts.games() == 0) continue;
      Pooled& g = groups[label(*backrank_of(r.key.sp))];
      const selfplay::ResultCounts e = effective_counts(r.counts, r.effective_games);
      g.games.white_wins += r.counts.white_wins;
      g.games.draws += r.counts.draws;
      g.games.black_wins += r.counts.black_wins;
      g.tested.white_wins += e.white_wins;
      g.tested.draws += e.draws;
      g.tested.black_wins += e.black_wins;
      g.effective += std::isnan(r.effective_games) ? double(r.counts.games()) : r.effective_games;
    }
    if (groups.size() < 2) return;
    GroupSummary s;
    s.factor = name;
    std::vector<selfplay::ResultCounts> counts;
    for (const auto& [k, g] : groups) {
      s.groups.emplace_back(k, g.games);
      s.effective.push_back(g.effective);
      counts.push_back(g.tested);
    }
    s.test = chi_square_homogeneity(wdl_table(counts));
    out.push_back(std::move(s));
  };
  summarise("king's file", [&](const std::string& r) { return files_of(r, 'K'); });
  summarise("queen's file", [&](const std::string& r) { return files_of(r, 'Q'); });
  summarise("bishops' files", [&](const std::string& r) { return files_of(r, 'B'); });
  summarise("knights' files", [&](const std::string& r) { return files_of(r, 'N'); });
  summarise("rooks' files", [&](const std::string& r) { return files_of(r, 'R'); });
  return out;
}

ReferenceComparison compare(const SelfPlayTable& table, const SelfPlayTable& reference) {
  // Chess960 positions match by number (the two tables may spell FENs differently), others by id.
  std::map<std::string, size_t> index;
  const auto key_of = [](const PositionKey& k) { return k.sp >= 0 ? absl::StrCat("sp ", k.sp) : "id " + k.id; };
  for (size_t i = 0; i < reference.rows.size(); ++i) index.emplace(key_of(reference.rows[i].key), i);
  ReferenceComparison c;
  std::vector<double> x, y;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    auto it = index.find(key_of(table.rows[i].key));
    if (it == index.end() || table.rows[i].counts.games() == 0 || reference.rows[it->second].counts.games() == 0)
      continue;
    ReferencePoint p{i, it->second, table.rows[i].counts.score(), reference.rows[it->second].counts.score(), false};
    p.disagree = p.score.lo > p.reference_score.hi || p.score.hi < p.reference_score.lo;
    c.disagreements += p.disagree;
    x.push_back(p.score.value);
    y.push_back(p.reference_score.value);
    c.points.push_back(p);
  }
  c.pearson = pearson(x, y);
  c.spearman = spearman(x, y);
  const double n = double(x.size());
  if (n > 3 && std::isfinite(c.pearson) && std::abs(c.pearson) < 1) {
    const double z = std::atanh(c.pearson), se = 1 / std::sqrt(n - 3);
    c.pearson_lo = std::tanh(z - selfplay::kZ95 * se);
    c.pearson_hi = std::tanh(z + selfplay::kZ95 * se);
  }
  return c;
}

}  // namespace

selfplay::ResultCounts effective_counts(const selfplay::ResultCounts& c, double effective) {
  const int64_t n = c.games();
  if (n == 0 || !(effective > 0) || effective >= double(n)) return c;
  const int64_t target = std::max<int64_t>(1, std::llround(effective));
  const int64_t raw[3] = {c.white_wins, c.draws, c.black_wins};
  int64_t out[3];
  double rest[3];
  int64_t sum = 0;
  for (int k = 0; k < 3; ++k) {
    const double q = double(raw[k]) * double(target) / double(n);
    out[k] = int64_t(std::floor(q));
    rest[k] = q - double(out[k]);
    sum += out[k];
  }
  for (; sum < target; ++sum) {
    const int k = int(std::max_element(rest, rest + 3) - rest);
    ++out[k];
    rest[k] = -1;
  }
  return {out[0], out[1], out[2]};
}

SelfPlayAnalysis analyse_selfplay(const SelfPlayTable& table, const SelfPlayTable* reference,
                                  const AnalysisOptions& options) {
  SelfPlayAnalysis a;
  // with_games: the positions' counts as the tests take them (effective_counts).
  std::vector<selfplay::ResultCounts> with_games;
  for (const SelfPlayRow& r : table.rows) {
    a.total.white_wins += r.counts.white_wins;
    a.total.draws += r.counts.draws;
    a.total.black_wins += r.counts.black_wins;
    if (r.counts.games() == 0) continue;
    with_games.push_back(effective_counts(r.counts, r.effective_games));
    a.tested_games += with_games.back().games();
  }
  a.tests_effective = a.tested_games < a.total.games();
  a.total_score = a.total.score();
  const double n_total = double(a.total.games());
  if (n_total > 0) {
    a.win = double(a.total.white_wins) / n_total;
    a.draw = double(a.total.draws) / n_total;
    a.loss = double(a.total.black_wins) / n_total;
  }

  std::vector<double> p;
  for (const SelfPlayRow& r : table.rows) {
    PositionResult pr;
    pr.score = selfplay::effective_score(r.counts, r.effective_games);
    const selfplay::ResultCounts e = effective_counts(r.counts, r.effective_games);
    const int64_t n = e.games();
    if (n > 0) pr.p = points_test_p(int(n), int(2 * e.white_wins + e.draws), a.win, a.draw, a.loss);
    a.positions.push_back(pr);
    p.push_back(pr.p);
  }
  const std::vector<double> holm = holm_adjust(p), bh = benjamini_hochberg_adjust(p);
  for (size_t i = 0; i < a.positions.size(); ++i) {
    a.positions[i].p_holm = holm[i];
    a.positions[i].q_bh = bh[i];
    a.significant_holm += holm[i] < 0.05;
    a.significant_bh += bh[i] < 0.05;
    if (table.rows[i].counts.games()) a.by_score.push_back(i);
  }
  std::stable_sort(a.by_score.begin(), a.by_score.end(), [&](size_t x, size_t y) {
    const selfplay::Interval &sx = a.positions[x].score, &sy = a.positions[y].score;
    if (sx.value != sy.value) return sx.value > sy.value;
    return sx.lo > sy.lo;
  });
  std::vector<selfplay::ResultCounts> counts;
  std::vector<double> effective;
  for (const SelfPlayRow& r : table.rows) {
    counts.push_back(r.counts);
    effective.push_back(std::isnan(r.effective_games) ? 0.0 : r.effective_games);
  }
  a.ranking = selfplay::rank_positions(counts, {.effective_games = effective});
  std::map<int, selfplay::ResultCounts> by_sp;
  std::map<int, double> effective_by_sp;
  for (const SelfPlayRow& r : table.rows)
    if (r.key.sp >= 0) {
      by_sp[r.key.sp] = r.counts;
      if (!std::isnan(r.effective_games)) effective_by_sp[r.key.sp] = r.effective_games;
    }
  a.mirrors = selfplay::compare_mirror_pairs(by_sp, selfplay::kMinGamesToRank, effective_by_sp);

  const std::vector<std::vector<int64_t>> wdl = wdl_table(with_games);
  a.homogeneity = chi_square_homogeneity(wdl);
  if (a.homogeneity.dof > 0) {
    a.permutations =
        std::max(kMinPermutations, std::min(options.permutations, int(kPermutationBudget / double(a.tested_games))));
    a.permutation_p = chi_square_permutation_p(wdl, a.permutations, options.seed);
  }

  if (n_total > 0) {
    a.histogram = make_histogram(table, a.win, a.draw, a.loss);
    // Spread: the variance of the scores is the true positions' variance plus each position's
    // sampling variance (per-game variance / effective games), averaged.
    const double per_game_var = a.win + 0.25 * a.draw - (a.win + 0.5 * a.draw) * (a.win + 0.5 * a.draw);
    std::vector<double> scores;
    double mean = 0, noise = 0;
    for (const SelfPlayRow& r : table.rows) {
      if (r.counts.games() == 0) continue;
      const double n = double(r.counts.games());
      scores.push_back(score_of(r.counts));
      mean += scores.back();
      noise += per_game_var / (r.effective_games > 0 && r.effective_games < n ? r.effective_games : n);
    }
    const double m = double(scores.size());
    mean /= m;
    noise /= m;
    double var = 0;
    for (double s : scores) var += (s - mean) * (s - mean);
    if (m > 1) {
      var /= m - 1;
      a.observed_sd = std::sqrt(var);
      a.noise_sd = std::sqrt(noise);
      a.excess_sd = std::sqrt(std::max(0.0, var - noise));
    }
  }
  a.groups = group_summaries(table);
  if (reference) a.reference = compare(table, *reference);
  return a;
}

AdaptiveSummary summarise_adaptive(const SelfPlayTable& table, const SelfPlayAnalysis& analysis) {
  AdaptiveSummary s;
  std::map<std::string, int> count;
  std::vector<int64_t> played;
  std::vector<double> ratios;
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const SelfPlayRow& r = table.rows[i];
    ++count[r.verdict];
    if (r.verdict == "narrow") s.mode = "target width";
    if (r.verdict == "inside" || r.verdict == "above" || r.verdict == "below") s.mode = "band";
    played.push_back(r.played());
    s.played += r.played();
    const selfplay::Interval& fixed = analysis.positions[i].score;
    if (r.counts.games() > 0 && fixed.hi > fixed.lo)
      ratios.push_back((r.anytime_hi - r.anytime_lo) / (fixed.hi - fixed.lo));
  }
  for (const char* v : kVerdictOrder)
    if (auto it = count.find(v); it != count.end()) s.verdicts.emplace_back(v, it->second);
  const auto median = [](auto v) {
    std::sort(v.begin(), v.end());
    const size_t n = v.size();
    return n == 0 ? kNaN : n % 2 ? double(v[n / 2]) : (double(v[n / 2 - 1]) + double(v[n / 2])) / 2;
  };
  if (!played.empty()) {
    s.min_played = *std::min_element(played.begin(), played.end());
    s.max_played = *std::max_element(played.begin(), played.end());
  }
  s.median_played = median(played);
  s.median_width_ratio = median(ratios);
  const auto rank_of = [](const std::string& v) {
    return size_t(std::find(std::begin(kVerdictOrder), std::end(kVerdictOrder), v) - std::begin(kVerdictOrder));
  };
  for (size_t i = 0; i < table.rows.size(); ++i) s.order.push_back(i);
  std::stable_sort(s.order.begin(), s.order.end(), [&](size_t x, size_t y) {
    const SelfPlayRow &a = table.rows[x], &b = table.rows[y];
    if (rank_of(a.verdict) != rank_of(b.verdict)) return rank_of(a.verdict) < rank_of(b.verdict);
    return a.anytime_lo + a.anytime_hi > b.anytime_lo + b.anytime_hi;
  });
  return s;
}

MatchAnalysis analyse_match(const MatchTable& table) {
  MatchAnalysis a;
  std::vector<selfplay::Pentanomial> pentas;
  for (const MatchRow& r : table.rows) {
    pentas.push_back(r.penta);
    for (size_t i = 0; i < a.total.size(); ++i) a.total[i] += r.penta[i];
    a.wins += r.wins, a.draws += r.draws, a.losses += r.losses;
    a.duplicates += r.duplicates, a.unpaired += r.unpaired;
    a.positions.push_back(selfplay::match_figures(r.penta));
  }
  a.figures = selfplay::match_figures(a.total);
  a.tests = selfplay::match_tests(pentas);
  for (size_t i = 0; i < table.rows.size(); ++i) {
    if (a.positions[i].pairs > 0) a.by_score.push_back(i);
    const std::string f = selfplay::match_favours(a.positions[i], a.tests.holm[i]);
    a.favours_a += f == "A";
    a.favours_b += f == "B";
    a.significant_bh += a.tests.bh[i] < 0.05;
  }
  std::stable_sort(a.by_score.begin(), a.by_score.end(),
                   [&](size_t x, size_t y) { return a.positions[x].score > a.positions[y].score; });
  return a;
}

PerftAnalysis analyse_perft(const PerftTable& table) {
  PerftAnalysis a;
  std::map<std::string, size_t> index;
  for (const PerftRow& r : table.rows) {
    auto [it, fresh] = index.emplace(r.key.id, a.positions.size());
    if (fresh) a.positions.push_back({r.key, {}});
    a.positions[it->second].nodes[r.depth] = r.nodes;
    a.total[r.depth] += r.nodes;
    a.count[r.depth] += 1;
  }
  for (const auto& [d, n] : a.total) a.depths.push_back(d);
  return a;
}

}  // namespace c960::report
