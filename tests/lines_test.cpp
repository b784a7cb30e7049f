// Related games (selfplay/lines.h): games grouped by line, the correlation within lines, the
// effective number of games and the intervals that use it.
#include "selfplay/lines.h"

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "core/prng.h"
#include "gtest/gtest.h"
#include "selfplay/mirror.h"
#include "selfplay/ranking.h"
#include "selfplay/stats.h"

namespace c960::selfplay {
namespace {

constexpr char kStart[] = "RNBQKBNR/8/8/8/8/8/8/rnbqkbnr w KQkq - 0 1";

// A game whose first 12 plies are line `line` and whose 13th ply is `tail` (moves as raw
// numbers: only their hashes matter here), with the given result.
GameRecord game(int line, int tail, GameResult result) {
  GameRecord g;
  g.start_fen = kStart;
  for (int i = 0; i < 12; ++i) g.moves.push_back(Move(uint16_t(64 + 64 * line + i + 1)));
  g.moves.push_back(Move(uint16_t(100 + tail)));
  g.result = result;
  g.termination = Termination::kCheckmate;
  return g;
}

TEST(RelatedGames, ThirtyFourOfFortyGamesInOneLineCountForFewGames) {
  // The README example's case: 34 of 40 games share their first 12 plies.
  SelfPlayStats stats;
  for (int i = 0; i < 34; ++i)
    stats.add(518, game(0, i, i < 28 ? GameResult::kWhiteWins : i < 32 ? GameResult::kDraw : GameResult::kBlackWins));
  for (int i = 0; i < 6; ++i)
    stats.add(518, game(1 + i, 0, i < 2 ? GameResult::kWhiteWins : i < 4 ? GameResult::kDraw : GameResult::kBlackWins));
  const PositionStats* p = stats.find("518");
  ASSERT_NE(p, nullptr);
  ASSERT_EQ(p->counts.games(), 40);
  EXPECT_EQ(p->duplicates, 0);
  const Relatedness r = stats.relatedness();
  ASSERT_EQ(r.effective.size(), 1u);
  EXPECT_EQ(r.lines[0], 7);
  EXPECT_EQ(r.largest[0], 34);
  EXPECT_TRUE(r.mostly_one_line[0]);
  EXPECT_FALSE(r.estimated);  // one shared line: rho = 1 assumed
  EXPECT_DOUBLE_EQ(r.rho, 1.0);
  EXPECT_NEAR(r.effective[0], 1600.0 / (34 * 34 + 6), 1e-9);  // Kish: n^2 / sum n_c^2
  const Interval raw = p->counts.score(), related = effective_score(p->counts, r.effective[0]);
  EXPECT_DOUBLE_EQ(related.value, raw.value);
  EXPECT_LT(related.lo, raw.lo - 0.15);
  EXPECT_GT(related.hi - related.lo, 2 * (raw.hi - raw.lo));
  EXPECT_NE(r.note().find("WARNING: 1 position's games mostly follow one line (largest: 34 games"), std::string::npos)
      << r.note();
  // Every output carries the effective number and the wider interval.
  const std::string csv = stats.to_csv();
  EXPECT_NE(csv.find(",lines,effective_games,"), std::string::npos);
  EXPECT_NE(csv.find(absl::StrFormat(",0,0,7,%.1f,", r.effective[0])), std::string::npos) << csv;
  EXPECT_NE(csv.find(absl::StrFormat("%.4f,%.4f", related.lo, related.hi)), std::string::npos) << csv;
  const std::string json = stats.to_json();
  EXPECT_NE(json.find("\"mostly_one_line\": 1"), std::string::npos);
  EXPECT_NE(json.find(absl::StrFormat("\"score_lo\": %.4f", related.lo)), std::string::npos);
}

TEST(RelatedGames, EveryGameItsOwnLineChangesNothing) {
  SelfPlayStats stats;
  for (int i = 0; i < 30; ++i) stats.add(0, game(i, 0, i % 3 ? GameResult::kWhiteWins : GameResult::kDraw));
  const Relatedness r = stats.relatedness();
  EXPECT_DOUBLE_EQ(r.effective[0], 30.0);
  EXPECT_EQ(r.shared_lines, 0);
  EXPECT_EQ(r.note(), "");
  const Interval s = effective_score(stats.find("0")->counts, r.effective[0]), raw = stats.find("0")->counts.score();
  EXPECT_EQ(s.lo, raw.lo);
  EXPECT_EQ(s.hi, raw.hi);
}

// 60 positions, each with 10 lines of 4 games: the lines' games have one result each (related as
// copies) or independent results; the correlation is estimated from the lines.
Relatedness lines_of(bool copies) {
  Prng rng(5);
  SelfPlayStats stats;
  for (int sp = 0; sp < 60; ++sp)
    for (int line = 0; line < 10; ++line) {
      const GameResult shared = GameResult(rng.rand64() % 3);
      for (int g = 0; g < 4; ++g) stats.add(sp, game(line, g, copies ? shared : GameResult(rng.rand64() % 3)));
    }
  return stats.relatedness();
}

TEST(RelatedGames, TheCorrelationIsEstimatedFromManyLines) {
  const Relatedness copies = lines_of(true), independent = lines_of(false);
  EXPECT_TRUE(copies.estimated);
  EXPECT_GT(copies.rho, 0.9);
  EXPECT_NEAR(copies.effective[0], 10, 1);  // 40 games in 10 lines of copies: about 10
  EXPECT_TRUE(independent.estimated);
  EXPECT_LT(independent.rho, 0.15);
  EXPECT_GT(independent.effective[0], 30);
}

TEST(RelatedGames, FiguresFromElsewhereWithoutLinesAreTakenAsIndependentAndSaySo) {
  SelfPlayStats stats;
  PositionStats p;
  p.id = "518";
  p.sp = 518;
  p.counts = {20, 10, 10};
  stats.set_position(p);
  const Relatedness r = stats.relatedness();
  EXPECT_FALSE(r.recorded);
  EXPECT_DOUBLE_EQ(r.effective[0], 40.0);
  EXPECT_NE(r.note().find("not recorded"), std::string::npos);
  EXPECT_NE(stats.to_csv().find(",0,0,,40.0,"), std::string::npos) << stats.to_csv();
}

TEST(RelatedGames, TheShrinkageUsesTheEffectiveGames) {
  // Three positions alike but for how related their games are: the related one is pulled more.
  std::vector<ResultCounts> counts = {{60, 20, 20}, {40, 40, 20}, {40, 40, 20}, {30, 40, 30}, {35, 40, 25}};
  const Ranking plain = rank_positions(counts);
  const Ranking related = rank_positions(counts, {.effective_games = {5, 0, 0, 0, 0}});
  EXPECT_LT(related.positions[0].shrunk, plain.positions[0].shrunk);
  EXPECT_GT(related.positions[0].hi - related.positions[0].lo, plain.positions[0].hi - plain.positions[0].lo);
}

TEST(RelatedGames, LinesGroupedByTheirResultsGiveTheSameFiguresWhateverTheirHashes) {
  // A cluster job's results carry lines as groups of results (v1.LineCounts) and number them
  // afresh: the figures must be those of the lines by hash, to the last bit.
  SelfPlayStats stats;
  for (int line = 0; line < 30; ++line)
    for (int g = 0; g <= line % 3; ++g)
      stats.add(518, game(line, g,
                          (line + g) % 3 == 0   ? GameResult::kWhiteWins
                          : (line + g) % 3 == 1 ? GameResult::kDraw
                                                : GameResult::kBlackWins));
  PositionStats renumbered = *stats.find("518");
  Lines lines;
  uint64_t number = 0;
  for (const auto& [counts, n] : line_groups(renumbered.lines))
    for (int64_t k = 0; k < n; ++k) lines[number++] = {counts[0], counts[1], counts[2]};
  renumbered.lines = lines;
  SelfPlayStats copy;
  copy.set_position(renumbered);
  const Relatedness a = stats.relatedness(), b = copy.relatedness();
  EXPECT_TRUE(a.estimated);
  EXPECT_EQ(a.rho, b.rho);
  EXPECT_EQ(a.effective, b.effective);
  EXPECT_EQ(stats.to_csv(), copy.to_csv());
}

TEST(RelatedGames, MirrorPairTestsUseTheEffectiveGames) {
  // 518 and its mirror 534 differ by 0.15 over 100 games each: significant as independent games,
  // not when each side's games count for 10.
  const std::map<int, ResultCounts> by_sp = {{518, {60, 20, 20}}, {534, {45, 20, 35}}};
  const MirrorPairs plain = compare_mirror_pairs(by_sp);
  const MirrorPairs related = compare_mirror_pairs(by_sp, kMinGamesToRank, {{518, 10.0}, {534, 10.0}});
  ASSERT_EQ(plain.pairs.size(), 1u);
  ASSERT_EQ(related.pairs.size(), 1u);
  EXPECT_LT(plain.pairs[0].p, 0.05);
  EXPECT_GT(related.pairs[0].p, 0.05);
  EXPECT_NEAR(related.pairs[0].z, plain.pairs[0].z / std::sqrt(10.0), 1e-9);
  EXPECT_DOUBLE_EQ(related.pairs[0].difference, plain.pairs[0].difference);
}

}  // namespace
}  // namespace c960::selfplay
