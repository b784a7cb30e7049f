// Self-play statistics: known counts give known intervals (values computed independently with
// Python from the formula in stats.h; the (6, 0, 4) case is the textbook Wilson interval).
#include <cmath>

#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "selfplay/stats.h"

namespace c960::selfplay {
namespace {

struct Known {
  int64_t w, d, l;
  double s, lo, hi, elo, elo_lo, elo_hi;
};

TEST(Stats, KnownCountsGiveKnownIntervals) {
  const double inf = INFINITY;
  const Known cases[] = {
      {10, 0, 0, 1.0, 0.7224672001, 1.0, inf, 166.2015271839, inf},
      {6, 0, 4, 0.6, 0.3126737697, 0.8318196703, 70.4365036223, -136.8285873533, 277.7015945979},
      {30, 40, 30, 0.5, 0.4249508884, 0.5750491116, 0.0, -52.5464781043, 52.5464781043},
      {0, 8, 0, 0.5, 0.2152160622, 0.7847839378, 0.0, -224.7501699376, 224.7501699376},
      {550, 300, 150, 0.7, 0.6767573224, 0.7222573072, 147.1907141178, 128.3617071695, 166.0197210661},
      {0, 0, 5, 0.0, 0.0, 0.4344824648, -inf, -inf, -45.7895289183},
  };
  const auto near = [](double expected, double actual) {
    if (std::isinf(expected)) return actual == expected;
    return std::abs(expected - actual) < 1e-8;
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
  EXPECT_EQ(lines[0].rfind("sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,draw_rate,mean_plies", 0), 0u);
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
  EXPECT_EQ(col(sp0, "rank"), "2");
  EXPECT_EQ(col(sp518, "white_wins"), "2");
  EXPECT_EQ(col(sp518, "duplicates"), "1");
  EXPECT_EQ(col(sp518, "score"), "0.8333");
  EXPECT_EQ(col(sp518, "rank"), "1");
  EXPECT_EQ(col(all, "sp"), "all");
  EXPECT_EQ(col(all, "games"), "5");
  EXPECT_EQ(col(all, "checkmate"), "2");
  EXPECT_EQ(st.ranking(), (std::vector<int>{518, 0}));

  const std::string json = st.to_json();
  EXPECT_NE(json.find("\"sp\": 518"), std::string::npos);
  EXPECT_NE(json.find("\"ranking\": [518, 0]"), std::string::npos);
  EXPECT_EQ(json.find("inf"), std::string::npos);  // JSON has no infinity
  EXPECT_EQ(json.find("nan"), std::string::npos);
}

TEST(Stats, InfiniteEloIsNullInJsonAndInfInCsv) {
  SelfPlayStats st;
  st.add(5, game(GameResult::kWhiteWins, Termination::kCheckmate, 30, 1));
  EXPECT_NE(st.to_json().find("\"elo\": null"), std::string::npos);
  EXPECT_NE(st.to_csv().find(",inf,"), std::string::npos);
}

}  // namespace
}  // namespace c960::selfplay
