// Adaptive allocation (selfplay/adaptive.h): the anytime interval's coverage at every look,
// the verdicts, the local runner's games under a rule (independent of threads and resumption),
// and a simulation with the Stockfish 16 study's per-position results as the truth: games
// needed by adaptive against uniform allocation for the same precision and for the same correct
// decisions. The simulation prints its figures (docs/selfplay.md quotes the full run:
// `build/release/tests/adaptive_test --gtest_also_run_disabled_tests --gtest_filter='*Full*'`).
#include "selfplay/adaptive.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "selfplay/local_runner.h"
#include "selfplay/spec.h"
#include "selfplay/stats.h"
#include "tests/test_paths.h"

namespace c960::selfplay {
namespace {

struct Truth {
  int sp = 0;
  double w = 0, d = 0, l = 0;
  double mean() const { return w + d / 2; }
  double variance() const { return w + d / 4 - mean() * mean(); }
};

std::vector<Truth> sf16_table() {
  std::ifstream in(std::string(c960::test::data_dir()) + "/stumpc5_sf16_by_position.csv");
  std::vector<Truth> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    const std::vector<std::string> f = absl::StrSplit(line, ',');
    if (f.size() != 7) continue;
    Truth t{std::stoi(f[0]), std::stod(f[3]) / 100, std::stod(f[4]) / 100, std::stod(f[5]) / 100};
    const double sum = t.w + t.d + t.l;  // percentages to 0.1: make them sum to 1
    t.w /= sum, t.d /= sum, t.l /= sum;
    out.push_back(t);
  }
  return out;
}

// One game's result for White: 2 (win), 1 (draw), 0 (loss).
int draw_game(const Truth& t, std::mt19937_64& rng) {
  const double u = std::uniform_real_distribution<double>(0, 1)(rng);
  return u < t.w ? 2 : u < t.w + t.d ? 1 : 0;
}

TEST(AnytimeInterval, WithoutGamesIsEverything) {
  const AnytimeInterval a = anytime_interval(0, 0, 0);
  EXPECT_EQ(a.lo, 0);
  EXPECT_EQ(a.hi, 1);
}

TEST(AnytimeInterval, HoldsTheScoreSymmetricAndNarrowsWithGames) {
  const AnytimeInterval a = anytime_interval(30, 50, 20), b = anytime_interval(20, 50, 30);
  EXPECT_LT(a.lo, 0.55);
  EXPECT_GT(a.hi, 0.55);
  EXPECT_NEAR(a.lo, 1 - b.hi, 1e-9);
  EXPECT_NEAR(a.hi, 1 - b.lo, 1e-9);
  const AnytimeInterval c = anytime_interval(300, 500, 200);
  EXPECT_LT(c.width(), a.width() / 2.5);
  // Draws shrink the variance, and the interval with it.
  EXPECT_LT(anytime_interval(10, 80, 10).width(), anytime_interval(50, 0, 50).width() * 0.7);
  // All wins: the upper end is 1.
  EXPECT_EQ(anytime_interval(20, 0, 0).hi, 1);
  EXPECT_GT(anytime_interval(20, 0, 0).lo, 0.5);
}

// The price of anytime validity, against the fixed-count interval (stats.h) at the same counts.
TEST(AnytimeInterval, IsWiderThanTheFixedCountIntervalByABoundedFactor) {
  for (int n : {100, 1000, 10000, 100000}) {
    const int64_t w = n * 3 / 10, d = n / 2, l = n - w - d;
    const ResultCounts counts{w, d, l};
    const Interval fixed = counts.score();
    const double ratio = anytime_interval(w, d, l).width() / (fixed.hi - fixed.lo);
    std::printf("n=%d: anytime width %.4f, fixed %.4f, ratio %.2f\n", n, anytime_interval(w, d, l).width(),
                fixed.hi - fixed.lo, ratio);
    EXPECT_GT(ratio, 1.0);
    EXPECT_LT(ratio, 2.2);
  }
}

// Coverage at every look: the share of simulated runs whose interval ever misses the true score
// in 100 looks (every 20 games to 2,000) stays within 5%, for win/draw/loss mixes from the study
// and at the edges. The fixed-count interval looked at this often misses far more often.
TEST(AnytimeInterval, CoversTheTrueScoreAtEveryLook) {
  const std::vector<Truth> mixes = {{0, 0.234, 0.571, 0.195}, {0, 0.30, 0.397, 0.303}, {0, 0.1, 0.8, 0.1},
                                    {0, 0.5, 0, 0.5},         {0, 0.85, 0.15, 0},      {0, 0.02, 0.03, 0.95}};
  std::mt19937_64 rng(20261203);
  constexpr int kRuns = 150, kLooks = 100, kBatch = 20;
  int fixed_missed_total = 0;
  for (const Truth& t : mixes) {
    int missed = 0, fixed_missed = 0;
    for (int r = 0; r < kRuns; ++r) {
      int64_t c[3] = {0, 0, 0};
      bool miss = false, fixed_miss = false;
      for (int look = 1; look <= kLooks; ++look) {
        for (int g = 0; g < kBatch; ++g) ++c[draw_game(t, rng)];
        const AnytimeInterval a = anytime_interval(c[2], c[1], c[0]);
        miss |= a.lo > t.mean() || a.hi < t.mean();
        const Interval f = ResultCounts{c[2], c[1], c[0]}.score();
        fixed_miss |= f.lo > t.mean() || f.hi < t.mean();
      }
      missed += miss;
      fixed_missed += fixed_miss;
    }
    std::printf("W/D/L %.3f/%.3f/%.3f: ever missed %d/%d (fixed-count interval: %d)\n", t.w, t.d, t.l, missed, kRuns,
                fixed_missed);
    EXPECT_LE(missed, kRuns * 5 / 100) << t.w << "/" << t.d << "/" << t.l;
    fixed_missed_total += fixed_missed;
  }
  EXPECT_GT(fixed_missed_total, int(mixes.size()) * kRuns * 10 / 100);  // the need for the anytime one
}

TEST(AdaptiveRule, VerdictsAndLooks) {
  AdaptiveRule width;
  width.target_width = 0.1;
  EXPECT_EQ(verdict(width, {0.50, 0.59}, 40, 100), Verdict::kNarrow);
  EXPECT_EQ(verdict(width, {0.50, 0.61}, 40, 100), Verdict::kOpen);
  EXPECT_EQ(verdict(width, {0.50, 0.61}, 100, 100), Verdict::kCap);
  AdaptiveRule band;
  ASSERT_TRUE(parse_band("--band", "0.50+-0.03", &band).ok());
  EXPECT_NEAR(band.band_lo, 0.47, 1e-12);
  EXPECT_NEAR(band.band_hi, 0.53, 1e-12);
  EXPECT_EQ(verdict(band, {0.48, 0.52}, 20, 100), Verdict::kInside);
  EXPECT_EQ(verdict(band, {0.531, 0.6}, 20, 100), Verdict::kAbove);
  EXPECT_EQ(verdict(band, {0.3, 0.469}, 20, 100), Verdict::kBelow);
  EXPECT_EQ(verdict(band, {0.46, 0.52}, 20, 100), Verdict::kOpen);
  EXPECT_EQ(next_look(band, 20, 100), 40);
  EXPECT_EQ(next_look(band, 90, 100), 100);
  AdaptiveRule colon;
  ASSERT_TRUE(parse_band("--band", "0.47:0.53", &colon).ok());
  EXPECT_EQ(colon.band_lo, 0.47);
  ASSERT_TRUE(parse_band("--band",
                         "0.5\xc2\xb1"
                         "0.03",
                         &colon)
                  .ok());
  EXPECT_NEAR(colon.band_hi, 0.53, 1e-12);
  for (const char* bad : {"0.53:0.47", "abc", "0.5+-0", "0.5+-x", ":0.5", ""})
    EXPECT_NE(parse_band("--band", bad, &colon).message().find("--band"), absl::string_view::npos) << bad;
}

TEST(AdaptiveRule, ValidationNamesTheField) {
  const auto error = [](auto change) {
    AdaptiveRule r;
    r.target_width = 0.1;
    change(r);
    return std::string(r.validate(1000).message());
  };
  EXPECT_EQ(error([](AdaptiveRule&) {}), "");
  EXPECT_NE(error([](AdaptiveRule& r) { r.target_width = 1.5; }).find("target_width"), std::string::npos);
  EXPECT_NE(error([](AdaptiveRule& r) { r.target_width = 0.0001; }).find("target_width"), std::string::npos);
  EXPECT_NE(error([](AdaptiveRule& r) { r.batch = 1; }).find("batch"), std::string::npos);
  EXPECT_NE(error([](AdaptiveRule& r) { r.batch = 2000; }).find("batch"), std::string::npos);
  EXPECT_NE(error([](AdaptiveRule& r) { r.band_lo = 0.4, r.band_hi = 0.6; }).find("band"), std::string::npos);
  EXPECT_NE(error([](AdaptiveRule& r) { r.target_width = 0, r.band_lo = 0.6, r.band_hi = 1.2; }).find("band"),
            std::string::npos);
}

SelfPlaySpec adaptive_spec() {
  SelfPlaySpec s;
  s.positions = chess960_positions({0, 518, 959});
  s.games_per_position = 12;
  s.limits.nodes = 300;
  s.random_plies = 6;
  s.seed = 5;
  s.hash_mb = 1;
  s.max_plies = 60;
  s.adaptive.band_lo = 0.45;
  s.adaptive.band_hi = 0.55;
  s.adaptive.batch = 4;
  return s;
}

// The games a rule plays: each position stops at its first look (a batch multiple, or the cap)
// whose verdict is not open, the same games on one thread or two, and the same again when half
// of them are handed in as done (a resumed run).
TEST(AdaptiveRun, EachPositionStopsAtItsFirstVerdictWhateverTheThreads) {
  const SelfPlaySpec spec = adaptive_spec();
  bool complete = false;
  const std::vector<PlayedGame> one = *play_local(spec, 1, {}, {}, {}, &complete);
  EXPECT_TRUE(complete);
  const std::vector<PlayedGame> two = *play_local(spec, 2);
  ASSERT_EQ(one.size(), two.size());
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].position, two[i].position);
    EXPECT_EQ(one[i].index, two[i].index);
    EXPECT_EQ(one[i].record.moves, two[i].record.moves);
  }
  std::vector<int> played(spec.positions.size(), 0);
  for (const PlayedGame& g : one) ++played[g.position];
  for (size_t k = 0; k < spec.positions.size(); ++k) {
    PositionStats stats;
    int look = 0;
    for (const PlayedGame& g : one) {
      if (g.position != k) continue;
      stats.add(g.record);
      ++look;
      if (look % spec.adaptive.batch != 0 && look != spec.games_per_position) continue;
      const Verdict v =
          verdict(spec.adaptive, anytime_interval(stats.counts.white_wins, stats.counts.draws, stats.counts.black_wins),
                  look, spec.games_per_position);
      if (look < played[k]) {
        EXPECT_EQ(v, Verdict::kOpen) << "position " << k << " went on past a verdict at " << look;
      }
      if (look == played[k]) {
        EXPECT_NE(v, Verdict::kOpen) << "position " << k << " stopped while open";
      }
    }
    EXPECT_EQ(look, played[k]);
  }
  std::vector<PlayedGame> half;
  for (size_t i = 0; i < one.size(); i += 2) half.push_back(one[i]);
  int replayed = 0;
  const std::vector<PlayedGame> resumed = *play_local(
      spec, 2, [&](const PlayedGame&) { ++replayed; }, half);
  ASSERT_EQ(resumed.size(), one.size());
  EXPECT_EQ(size_t(replayed), one.size() - half.size());
  for (size_t i = 0; i < one.size(); ++i) EXPECT_EQ(resumed[i].record.moves, one[i].record.moves);
}

TEST(AdaptiveRun, AStopEndsTheRunIncomplete) {
  const SelfPlaySpec spec = adaptive_spec();
  int games = 0;
  bool complete = true;
  const std::vector<PlayedGame> some = *play_local(
      spec, 1, [&](const PlayedGame&) { ++games; }, {}, [&] { return games >= 5; }, &complete);
  EXPECT_FALSE(complete);
  EXPECT_EQ(some.size(), 5u);
}

// The simulation: each position's games drawn from its row of the table, looked at every batch.
struct PositionPath {
  std::vector<AnytimeInterval> anytime;  // at each look
  std::vector<Interval> fixed;           // the fixed-count interval at each look
};

PositionPath simulate(const Truth& t, int batch, int cap, uint64_t seed, const AdaptiveRule* stop_rule) {
  std::mt19937_64 rng(seed);
  PositionPath path;
  int64_t c[3] = {0, 0, 0};
  for (int n = batch; n <= cap; n += batch) {
    for (int g = 0; g < batch; ++g) ++c[draw_game(t, rng)];
    path.anytime.push_back(anytime_interval(c[2], c[1], c[0]));
    path.fixed.push_back(ResultCounts{c[2], c[1], c[0]}.score());
    if (stop_rule && verdict(*stop_rule, path.anytime.back(), n, cap) != Verdict::kOpen) break;
  }
  return path;
}

struct Comparison {
  int64_t adaptive_games = 0, uniform_games = 0, fixed_games = 0;
  int positions = 0, adaptive_missed = 0, uniform_missed = 0;
  // Band mode: correct and wrong decisions.
  int adaptive_right = 0, adaptive_wrong = 0, uniform_right = 0, uniform_wrong = 0, uniform_budget_right = 0;
};

// Target width: adaptive stops each position at its first narrow look; uniform plays the same
// count everywhere, the least that makes every position narrow with the same anytime interval;
// "fixed" is a fixed count with the fixed-count interval (valid only if nobody looks before the
// end), the least that makes every position's fixed-count interval narrow.
Comparison compare_width(const std::vector<Truth>& table, double width, int batch, int cap, uint64_t seed) {
  AdaptiveRule rule;
  rule.target_width = width;
  rule.batch = batch;
  Comparison c;
  const int looks = cap / batch;
  int uniform_look = 0, fixed_look = 0;
  for (size_t k = 0; k < table.size(); ++k) {
    const PositionPath p = simulate(table[k], batch, cap, seed + k, nullptr);
    ++c.positions;
    int first = looks - 1, last_wide = -1, last_fixed_wide = -1;
    bool missed = false;
    for (int i = 0; i < looks; ++i) {
      if (p.anytime[size_t(i)].width() <= width) {
        first = std::min(first, i);
      } else {
        last_wide = i;
      }
      if (p.fixed[size_t(i)].hi - p.fixed[size_t(i)].lo > width) last_fixed_wide = i;
    }
    for (int i = 0; i <= first; ++i)
      missed |= p.anytime[size_t(i)].lo > table[k].mean() || p.anytime[size_t(i)].hi < table[k].mean();
    c.adaptive_games += int64_t(first + 1) * batch;
    c.adaptive_missed += missed;
    uniform_look = std::max(uniform_look, std::min(last_wide + 1, looks - 1));
    fixed_look = std::max(fixed_look, std::min(last_fixed_wide + 1, looks - 1));
  }
  for (size_t k = 0; k < table.size(); ++k) {
    const PositionPath p = simulate(table[k], batch, (uniform_look + 1) * batch, seed + k, nullptr);
    bool missed = false;
    for (const AnytimeInterval& a : p.anytime) missed |= a.lo > table[k].mean() || a.hi < table[k].mean();
    c.uniform_missed += missed;
  }
  c.uniform_games = int64_t(uniform_look + 1) * batch * int64_t(table.size());
  c.fixed_games = int64_t(fixed_look + 1) * batch * int64_t(table.size());
  return c;
}

// Band: a position's truth is inside the band or above or below it. Adaptive stops each position
// at its first decision (or the cap, undecided); uniform plays one count everywhere and decides
// from the same anytime interval there: the least count with as many right decisions as
// adaptive made, and the right decisions at adaptive's budget.
Comparison compare_band(const std::vector<Truth>& table, double lo, double hi, int batch, int cap, uint64_t seed) {
  AdaptiveRule rule;
  rule.band_lo = lo;
  rule.band_hi = hi;
  rule.batch = batch;
  const auto truth = [&](const Truth& t) {
    return t.mean() > hi ? Verdict::kAbove : t.mean() < lo ? Verdict::kBelow : Verdict::kInside;
  };
  Comparison c;
  const int looks = cap / batch;
  std::vector<PositionPath> paths;
  for (size_t k = 0; k < table.size(); ++k) paths.push_back(simulate(table[k], batch, cap, seed + k, nullptr));
  for (size_t k = 0; k < table.size(); ++k) {
    ++c.positions;
    for (int i = 0; i < looks; ++i) {
      const Verdict v = verdict(rule, paths[k].anytime[size_t(i)], int64_t(i + 1) * batch, cap);
      if (v == Verdict::kOpen) continue;
      c.adaptive_games += int64_t(i + 1) * batch;
      if (v != Verdict::kCap) (v == truth(table[k]) ? c.adaptive_right : c.adaptive_wrong)++;
      break;
    }
  }
  // Uniform at look i: the decisions every position's interval gives there.
  const auto uniform_at = [&](int i, int* right, int* wrong) {
    *right = *wrong = 0;
    for (size_t k = 0; k < table.size(); ++k) {
      const Verdict v = verdict(rule, paths[k].anytime[size_t(i)], 0, cap);
      if (v != Verdict::kOpen) (v == truth(table[k]) ? *right : *wrong)++;
    }
  };
  const int budget_look = std::max(0, int(c.adaptive_games / int64_t(table.size()) / batch) - 1);
  int wrong = 0;
  uniform_at(std::min(budget_look, looks - 1), &c.uniform_budget_right, &wrong);
  c.uniform_games = -1;  // never, within the cap
  for (int i = 0; i < looks; ++i) {
    int right = 0;
    uniform_at(i, &right, &wrong);
    if (right >= c.adaptive_right) {
      c.uniform_games = int64_t(i + 1) * batch * int64_t(table.size());
      c.uniform_right = right;
      c.uniform_wrong = wrong;
      break;
    }
  }
  return c;
}

void print_width(const char* what, const Comparison& c, double width) {
  std::printf(
      "%s: target width %.3f over %d positions: adaptive %lld games (anytime interval missed the truth in %d), "
      "uniform with the same anytime interval %lld games (%.2fx adaptive; missed in %d), fixed count with the "
      "fixed-count interval (no looking before the end) %lld games\n",
      what, width, c.positions, (long long)c.adaptive_games, c.adaptive_missed, (long long)c.uniform_games,
      double(c.uniform_games) / double(c.adaptive_games), c.uniform_missed, (long long)c.fixed_games);
}

void print_band(const char* what, const Comparison& c, double lo, double hi, int cap) {
  const std::string uniform =
      c.uniform_games > 0
          ? absl::StrFormat("uniform needs %d games (%.2fx adaptive) for as many right decisions (%d right, %d wrong)",
                            c.uniform_games, double(c.uniform_games) / double(c.adaptive_games), c.uniform_right,
                            c.uniform_wrong)
          : absl::StrFormat("uniform makes fewer right decisions at every count up to the cap (%d per position)", cap);
  std::printf(
      "%s: band %.2f:%.2f over %d positions: adaptive %lld games, %d right and %d wrong decisions (%d undecided at "
      "the cap); %s; at adaptive's budget uniform makes %d right decisions\n",
      what, lo, hi, c.positions, (long long)c.adaptive_games, c.adaptive_right, c.adaptive_wrong,
      c.positions - c.adaptive_right - c.adaptive_wrong, uniform.c_str(), c.uniform_budget_right);
}

std::vector<Truth> every(const std::vector<Truth>& table, size_t step) {
  std::vector<Truth> out;
  for (size_t k = 0; k < table.size(); k += step) out.push_back(table[k]);
  return out;
}

TEST(AdaptiveSimulation, TheStudyTableHasTheSpreadItSays) {
  const std::vector<Truth> table = sf16_table();
  ASSERT_EQ(table.size(), 960u);
  double sum = 0, lo = 1, hi = 0;
  for (const Truth& t : table) {
    sum += t.mean();
    lo = std::min(lo, t.d);
    hi = std::max(hi, t.d);
  }
  EXPECT_NEAR(sum / 960, 0.5465, 0.001);
  EXPECT_NEAR(lo, 0.397, 0.002);
  EXPECT_NEAR(hi, 0.712, 0.002);
}

// A twentieth of the table (every 20th position), so that the default run stays short.
TEST(AdaptiveSimulation, AdaptiveNeedsFewerGamesForTheSamePrecisionAndDecisions) {
  const std::vector<Truth> table = every(sf16_table(), 20);
  const Comparison w = compare_width(table, 0.1, 20, 4000, 7);
  print_width("sample", w, 0.1);
  EXPECT_LT(w.adaptive_games, w.uniform_games);
  EXPECT_LE(w.adaptive_missed, int(table.size()) * 5 / 100 + 2);
  const Comparison b = compare_band(table, 0.47, 0.53, 20, 8000, 11);
  print_band("sample", b, 0.47, 0.53, 8000);
  EXPECT_EQ(b.adaptive_wrong, 0);
  EXPECT_TRUE(b.uniform_games < 0 || b.adaptive_games < b.uniform_games);
  EXPECT_GE(b.adaptive_right, b.uniform_budget_right);
}

// The whole table (minutes): the figures docs/selfplay.md quotes.
TEST(AdaptiveSimulation, DISABLED_FullTable) {
  const std::vector<Truth> table = sf16_table();
  for (double width : {0.1, 0.05, 0.03}) print_width("full", compare_width(table, width, 20, 40000, 7), width);
  print_band("full", compare_band(table, 0.47, 0.53, 20, 20000, 11), 0.47, 0.53, 20000);
  print_band("full", compare_band(table, 0.52, 0.58, 20, 20000, 13), 0.52, 0.58, 20000);
}

}  // namespace
}  // namespace c960::selfplay
