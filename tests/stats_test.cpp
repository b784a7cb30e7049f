// Self-play statistics: known counts give known intervals (values computed independently with
// Python, by bisection rather than the closed-form roots of stats.cpp); the interval's coverage,
// computed exactly and by simulation; its width moving continuously with the counts.
#include "selfplay/stats.h"

#include <array>
#include <cmath>
#include <map>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/prng.h"
#include "gtest/gtest.h"
#include "selfplay/mirror.h"

namespace c960::selfplay {
namespace {

struct Known {
  int64_t w, d, l;
  double s, lo, hi, elo, elo_lo, elo_hi;
};

TEST(Stats, KnownCountsGiveKnownIntervals) {
  const double inf = INFINITY;
  const Known cases[] = {
      {10, 0, 0, 1.0, 0.6791126942, 1.0, inf, 130.2357246938, inf},
      {6, 0, 4, 0.6, 0.3116040663, 0.8328893737, 70.4365036223, -137.6940719788, 279.0333017943},
      {30, 40, 30, 0.5, 0.4245952480, 0.5754047520, 0.0, -52.7993259498, 52.7993259498},
      {0, 8, 0, 0.5, 0.3377962176, 0.6622037824, 0.0, -116.9347499120, 116.9347499120},
      {550, 300, 150, 0.7, 0.6764557110, 0.7220135856, 147.1907141178, 128.1222517062, 165.8087190845},
      {0, 0, 5, 0.0, 0.0, 0.4890548596, -inf, -inf, -7.6066776599},
      {0, 40, 0, 0.5, 0.4561891994, 0.5438108006, 0.0, -30.5211320005, 30.5211320005},
      {1, 39, 0, 0.5125, 0.4623370232, 0.5644068448, 8.6876998773, -26.2205838870, 45.0044901092},
  };
  const auto near = [](double expected, double actual) {
    if (std::isinf(expected)) return actual == expected;
    return std::abs(expected - actual) < 2e-8;
  };
  for (const Known& k : cases) {
    SCOPED_TRACE(::testing::Message() << k.w << "/" << k.d << "/" << k.l);
    const ResultCounts c{k.w, k.d, k.l};
    const Interval s = c.score(), e = c.elo();
    EXPECT_TRUE(near(k.s, s.value)) << s.value;
    EXPECT_TRUE(near(k.lo, s.lo)) << s.lo;
    EXPECT_TRUE(near(k.hi, s.hi)) << s.hi;
    EXPECT_TRUE(near(k.elo, e.value)) << e.value;
    EXPECT_TRUE(near(k.elo_lo, e.lo)) << e.lo;
    EXPECT_TRUE(near(k.elo_hi, e.hi)) << e.hi;
  }
}

TEST(Stats, DrawsNarrowTheInterval) {
  // Same score, fewer decisive games: less variance, a narrower interval.
  const Interval decisive = ResultCounts{60, 0, 40}.score(), drawish = ResultCounts{20, 80, 0}.score();
  EXPECT_DOUBLE_EQ(decisive.value, drawish.value);
  EXPECT_LT(drawish.hi - drawish.lo, decisive.hi - decisive.lo);
  // And more games, a narrower interval.
  const Interval more = ResultCounts{600, 0, 400}.score();
  EXPECT_LT(more.hi - more.lo, decisive.hi - decisive.lo);
}

// The probability that the interval of n games covers the true mean, summed exactly over every
// outcome (w, d, l) with its multinomial probability.
double exact_coverage(int n, double pw, double pd, double pl) {
  const double mean = pw + pd / 2;
  double covered = 0;
  for (int w = 0; w <= n; ++w)
    for (int d = 0; w + d <= n; ++d) {
      const int l = n - w - d;
      if ((w && pw == 0) || (d && pd == 0) || (l && pl == 0)) continue;
      const Interval s = ResultCounts{w, d, l}.score();
      if (mean < s.lo - 1e-9 || mean > s.hi + 1e-9) continue;
      double lp = std::lgamma(n + 1.0) - std::lgamma(w + 1.0) - std::lgamma(d + 1.0) - std::lgamma(l + 1.0);
      if (w) lp += w * std::log(pw);
      if (d) lp += d * std::log(pd);
      if (l) lp += l * std::log(pl);
      covered += std::exp(lp);
    }
  return covered;
}

// Every (W, D, L) on a 0.05 grid of the simplex, corners and edges included.
std::vector<std::array<double, 3>> mix_grid() {
  std::vector<std::array<double, 3>> out;
  for (int i = 0; i <= 20; ++i)
    for (int j = 0; i + j <= 20; ++j) out.push_back({i / 20.0, j / 20.0, (20 - i - j) / 20.0});
  return out;
}

TEST(Stats, IntervalCoversAtLeast93PercentAtEveryMix) {
  for (int n : {20, 21, 22, 25, 30, 33, 40, 50, 75, 100, 200}) {
    double worst = 1;
    std::array<double, 3> worst_mix{};
    for (const auto& m : mix_grid()) {
      const double c = exact_coverage(n, m[0], m[1], m[2]);
      if (c < worst) worst = c, worst_mix = m;
    }
    EXPECT_GE(worst, 0.93) << "n " << n << " W/D/L " << worst_mix[0] << "/" << worst_mix[1] << "/" << worst_mix[2];
  }
}

TEST(Stats, IntervalCoverageBySimulationMatchesTheExactSum) {
  // Games drawn with a fixed seed; the simulated coverage must reach 93% and agree with the exact
  // sum within 4 standard errors (a check of both computations).
  Prng rng(960);
  constexpr int kTrials = 10000;
  const std::array<double, 3> mixes[] = {{0.45, 0.1, 0.45}, {0.3, 0.6, 0.1}, {0.05, 0.9, 0.05}, {0.0, 0.05, 0.95},
                                         {0.75, 0.25, 0.0}, {0.6, 0.0, 0.4}, {0.1, 0.2, 0.7},   {0.02, 0.97, 0.01}};
  for (int n : {20, 40}) {
    for (const auto& m : mixes) {
      SCOPED_TRACE(::testing::Message() << "n " << n << " W/D/L " << m[0] << "/" << m[1] << "/" << m[2]);
      int covered = 0;
      for (int t = 0; t < kTrials; ++t) {
        ResultCounts c;
        for (int g = 0; g < n; ++g) {
          const double u = double(rng.rand64() >> 11) * 0x1.0p-53;
          if (u < m[0])
            ++c.white_wins;
          else if (u < m[0] + m[1])
            ++c.draws;
          else
            ++c.black_wins;
        }
        const Interval s = c.score();
        const double mean = m[0] + m[1] / 2;
        covered += s.lo - 1e-9 <= mean && mean <= s.hi + 1e-9;
      }
      const double simulated = double(covered) / kTrials, exact = exact_coverage(n, m[0], m[1], m[2]);
      EXPECT_GE(simulated, 0.93);
      EXPECT_NEAR(simulated, exact, 4 * std::sqrt(exact * (1 - exact) / kTrials) + 1e-9);
    }
  }
}

TEST(Stats, IntervalWidthMovesContinuouslyWithTheCounts) {
  // The old interval: 40 draws gave width 0.296, one win among them 0.049. Now one game changing
  // its result changes the width by less than 40%, anywhere.
  const auto width = [](int64_t w, int64_t d, int64_t l) {
    const Interval s = ResultCounts{w, d, l}.score();
    return s.hi - s.lo;
  };
  EXPECT_NEAR(width(1, 39, 0) / width(0, 40, 0), 1.0, 0.2);
  EXPECT_NEAR(width(0, 39, 1) / width(0, 40, 0), 1.0, 0.2);
  for (int n : {20, 40, 100}) {
    for (int w = 0; w <= n; ++w)
      for (int d = 0; w + d <= n; ++d) {
        const int l = n - w - d;
        const double x = width(w, d, l);
        ASSERT_GT(x, 0) << w << "/" << d << "/" << l;
        // A draw becomes a win, a loss becomes a draw.
        if (d > 0) {
          EXPECT_LT(std::abs(std::log(width(w + 1, d - 1, l) / x)), std::log(1.4)) << w << "/" << d << "/" << l;
        }
        if (l > 0) {
          EXPECT_LT(std::abs(std::log(width(w, d + 1, l - 1) / x)), std::log(1.4)) << w << "/" << d << "/" << l;
        }
      }
  }
}

TEST(Stats, NoGamesGiveNoNumbers) {
  const ResultCounts none;
  EXPECT_TRUE(std::isnan(none.score().value));
  EXPECT_TRUE(std::isnan(none.elo().lo));
  EXPECT_TRUE(std::isnan(none.draw_rate()));
}

GameRecord game(GameResult r, Termination t, int plies, uint16_t first_move) {
  GameRecord g;
  g.start_fen = "x";
  g.result = r;
  g.termination = t;
  for (int i = 0; i < plies; ++i) g.moves.push_back(Move(uint16_t(first_move + i)));
  return g;
}

TEST(Stats, TableColumnsDuplicatesAndRanking) {
  SelfPlayStats st;
  st.add(518, game(GameResult::kWhiteWins, Termination::kCheckmate, 40, 100));
  st.add(518, game(GameResult::kWhiteWins, Termination::kCheckmate, 40, 100));  // same moves: duplicate
  st.add(518, game(GameResult::kDraw, Termination::kThreefoldRepetition, 61, 300));
  st.add(0, game(GameResult::kBlackWins, Termination::kAdjudicatedResign, 80, 100));
  st.add(0, game(GameResult::kDraw, Termination::kStalemate, 100, 200));

  const std::string csv = st.to_csv();
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 4u);  // header, sp 0, sp 518, all
  EXPECT_EQ(
      lines[0].rfind(
          "sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,draw_rate,mean_plies", 0),
      0u);
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  const std::vector<std::string> sp0 = absl::StrSplit(lines[1], ',');
  const std::vector<std::string> sp518 = absl::StrSplit(lines[2], ',');
  const std::vector<std::string> all = absl::StrSplit(lines[3], ',');
  ASSERT_EQ(sp0.size(), header.size());
  ASSERT_EQ(all.size(), header.size());
  const auto col = [&](const std::vector<std::string>& row, const std::string& name) {
    return row[size_t(std::find(header.begin(), header.end(), name) - header.begin())];
  };
  EXPECT_EQ(col(sp0, "sp"), "0");
  EXPECT_EQ(col(sp0, "fen"), "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w KQkq - 0 1");
  EXPECT_EQ(col(sp0, "games"), "2");
  EXPECT_EQ(col(sp0, "score"), "0.2500");
  EXPECT_EQ(col(sp0, "mean_plies"), "90.0");
  EXPECT_EQ(col(sp0, "draw_rate"), "0.5000");
  EXPECT_EQ(col(sp0, "stalemate"), "1");
  EXPECT_EQ(col(sp0, "adjudicated_resign"), "1");
  EXPECT_EQ(col(sp0, "rank"), "");  // two games: not ranked (selfplay/ranking.h)
  EXPECT_EQ(col(sp0, "shrunk"), "");
  // The duplicate is reported, not counted again: one win and one draw.
  EXPECT_EQ(col(sp518, "white_wins"), "1");
  EXPECT_EQ(col(sp518, "games"), "2");
  EXPECT_EQ(col(sp518, "duplicates"), "1");
  EXPECT_EQ(col(sp518, "score"), "0.7500");
  EXPECT_EQ(col(sp518, "mean_plies"), "47.0");  // over the three games played
  EXPECT_EQ(col(sp518, "rank"), "");
  EXPECT_EQ(col(all, "sp"), "all");
  EXPECT_EQ(col(all, "games"), "4");
  EXPECT_EQ(col(all, "checkmate"), "2");
  EXPECT_EQ(st.ranking(), (std::vector<std::string>{"518", "0"}));

  const std::string json = st.to_json();
  EXPECT_NE(json.find("\"sp\": 518"), std::string::npos);
  EXPECT_NE(json.find("\"ranking\": []"), std::string::npos) << json;
  EXPECT_NE(json.find("\"rank\": null, \"shrunk\": null"), std::string::npos) << json;
  EXPECT_EQ(json.find("inf"), std::string::npos);  // JSON has no infinity
  EXPECT_EQ(json.find("nan"), std::string::npos);
}

TEST(Stats, PositionsWithEnoughGamesAreRankedByTheirShrunkScore) {
  // Positions 0..3 with 30 games each, position 4 with 10 (1.000: not ranked, listed after).
  SelfPlayStats st;
  const int wins[] = {20, 12, 16, 8};
  for (int sp = 0; sp < 4; ++sp)
    for (int g = 0; g < 30; ++g)
      st.add(sp, game(g < wins[sp] ? GameResult::kWhiteWins : GameResult::kDraw, Termination::kCheckmate, 30,
                      uint16_t(sp * 100 + g + 1)));
  for (int g = 0; g < 10; ++g) st.add(4, game(GameResult::kWhiteWins, Termination::kCheckmate, 30, uint16_t(900 + g)));
  EXPECT_EQ(st.ranking(), (std::vector<std::string>{"0", "2", "1", "3", "4"}));
  const std::vector<std::string> lines = absl::StrSplit(st.to_csv(), '\n', absl::SkipEmpty());
  const std::vector<std::string> header = absl::StrSplit(lines[0], ',');
  const auto col = [&](size_t line, const std::string& name) {
    const std::vector<std::string> row = absl::StrSplit(lines[line], ',');
    return row[size_t(std::find(header.begin(), header.end(), name) - header.begin())];
  };
  EXPECT_EQ(col(1, "rank"), "1");
  EXPECT_EQ(col(4, "rank"), "4");
  EXPECT_EQ(col(5, "rank"), "");
  EXPECT_EQ(col(6, "rank"), "");  // the 'all' row
  const double raw = std::stod(col(1, "score")), shrunk = std::stod(col(1, "shrunk"));
  EXPECT_LT(shrunk, raw);  // the best is pulled toward the rest
  EXPECT_LE(std::stod(col(1, "shrunk_lo")), shrunk);
  EXPECT_GE(std::stod(col(1, "shrunk_hi")), shrunk);
  EXPECT_EQ(col(1, "rank_lo"), "1");
  EXPECT_GE(std::stoi(col(1, "rank_hi")), 1);
  const std::string json = st.to_json();
  EXPECT_NE(json.find("\"ranking\": [\"0\", \"2\", \"1\", \"3\"]"), std::string::npos) << json;
  EXPECT_NE(json.find("\"shrinkage\": {\"min_games\": 20, \"ranked\": 4, "), std::string::npos) << json;
}

// Each position against its mirror image in the JSON: the pair's distinct games, the difference
// of White's scores with its interval and p-values; a copied game is not counted again.
TEST(Stats, MirrorPairsInJson) {
  SelfPlayStats st;
  for (int g = 0; g < 24; ++g) {
    st.add(518,
           game(g < 18 ? GameResult::kWhiteWins : GameResult::kDraw, Termination::kCheckmate, 30, uint16_t(g + 1)));
    st.add(534,
           game(g < 6 ? GameResult::kWhiteWins : GameResult::kDraw, Termination::kCheckmate, 30, uint16_t(g + 100)));
  }
  for (int g = 0; g < 30; ++g)  // one game 30 times: 1 distinct game, not tested
    st.add(0, game(GameResult::kWhiteWins, Termination::kCheckmate, 30, 7));
  st.add(mirror_of(0), game(GameResult::kBlackWins, Termination::kCheckmate, 30, 8));
  const std::string json = st.to_json();
  EXPECT_NE(json.find("\"mirror_pairs\": {\"min_games\": 20, \"tested\": 1, "), std::string::npos) << json;
  const size_t pair = json.find(
      "{\"sp\": 518, \"mirror\": 534, \"games\": [24, 24], \"score\": [0.8750, 0.6250], "
      "\"tested\": true, \"difference\": 0.2500, ");
  EXPECT_NE(pair, std::string::npos) << json;
  EXPECT_NE(json.find(absl::StrCat("{\"sp\": 0, \"mirror\": ", mirror_of(0), ", \"games\": [1, 1], ")),
            std::string::npos)
      << json;
  const MirrorPairs m = compare_mirror_pairs(st);
  ASSERT_EQ(m.pairs.size(), 2u);
  EXPECT_FALSE(m.pairs[0].tested);
  EXPECT_LT(m.pairs[1].p, 0.05);
  EXPECT_LT(m.pairs[1].lo, 0.25);
  EXPECT_GT(m.pairs[1].lo, 0);
}

TEST(Stats, InfiniteEloIsNullInJsonAndInfInCsv) {
  SelfPlayStats st;
  st.add(5, game(GameResult::kWhiteWins, Termination::kCheckmate, 30, 1));
  EXPECT_NE(st.to_json().find("\"elo\": null"), std::string::npos);
  EXPECT_NE(st.to_csv().find(",inf,"), std::string::npos);
}

}  // namespace
}  // namespace c960::selfplay
