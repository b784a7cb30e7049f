// The result tables of cli/table_format.h (text for people, CSV and JSON for programs) and the
// additions to SelfPlayStats they use: incomplete positions and positions without games.
#include "cli/table_format.h"

#include <algorithm>
#include <gtest/gtest.h>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/startpos.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

std::vector<std::string> lines_of(const std::string& text) { return absl::StrSplit(text, '\n', absl::SkipEmpty()); }

TEST(OutputFormat, TextOnATerminalCsvElsewhereUnlessGiven) {
  EXPECT_EQ(*output_format(std::nullopt, true), OutputFormat::kText);
  EXPECT_EQ(*output_format(std::nullopt, false), OutputFormat::kCsv);
  EXPECT_EQ(*output_format(std::string("csv"), true), OutputFormat::kCsv);
  EXPECT_EQ(*output_format(std::string("json"), true), OutputFormat::kJson);
  EXPECT_EQ(*output_format(std::string("text"), false), OutputFormat::kText);
  const absl::StatusOr<OutputFormat> bad = output_format(std::string("xml"), true);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StartsWith(bad.status().message(), "--format")) << bad.status();
}

TEST(WithThousands, GroupsOfThreeUpTo128Bits) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(197281), "197,281");
  EXPECT_EQ(with_thousands(NodeCount(1) << 64), "18,446,744,073,709,551,616");
}

TEST(RenderColumns, AlignsEachColumnToItsWidestCellWithoutTrailingSpaces) {
  const std::string t = render_columns({{"id", false}, {"nodes", true}, {"note", false}},
                                       {{"518", "197,281", ""}, {"all", "5"}, {"7", "12", "x"}});
  EXPECT_EQ(t,
            "id     nodes  note\n"
            "518  197,281\n"
            "all        5\n"
            "7         12  x\n");
}

PerftRow row(int sp, int depth, NodeCount nodes, bool complete = true) {
  return {sp, sp >= 0 ? *startpos_fen(sp) : "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", depth, nodes, complete, {}};
}

TEST(PerftTextTable, SortedByStartPositionWithBackRankThousandsAndATotal) {
  const std::vector<PerftRow> rows = {row(518, 4, 197281), row(-1, 4, 7795662), row(0, 4, 101240)};
  const std::vector<std::string> lines = lines_of(perft_text_table(rows, false));
  ASSERT_EQ(lines.size(), 5u) << perft_text_table(rows, false);
  EXPECT_TRUE(absl::StartsWith(lines[0], " sp  position")) << lines[0];
  EXPECT_TRUE(absl::EndsWith(lines[0], "nodes")) << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[1], "  0  BBQNNRKR")) << lines[1];
  EXPECT_TRUE(absl::EndsWith(lines[1], " 101,240")) << lines[1];
  EXPECT_TRUE(absl::StartsWith(lines[2], "518  RNBQKBNR")) << lines[2];
  EXPECT_TRUE(absl::EndsWith(lines[2], " 197,281")) << lines[2];
  // A root given as FEN: after the start positions, shown by its placement.
  EXPECT_TRUE(absl::StrContains(lines[3], "r3k2r/8/8/8/8/8/8/R3K2R")) << lines[3];
  EXPECT_TRUE(absl::EndsWith(lines[3], "7,795,662")) << lines[3];
  EXPECT_TRUE(absl::StrContains(lines[4], "total")) << lines[4];
  EXPECT_TRUE(absl::EndsWith(lines[4], "8,094,183")) << lines[4];
  // Right-aligned: every line ends in the same column.
  for (const std::string& l : lines) EXPECT_EQ(l.size(), lines[0].size()) << l;
}

TEST(PerftTextTable, IncompleteRootsAreMarkedAndCounted) {
  const std::string t = perft_text_table({row(1, 6, 5000, false), row(2, 6, 119060324)}, false);
  const std::vector<std::string> lines = lines_of(t);
  ASSERT_EQ(lines.size(), 5u) << t;
  EXPECT_TRUE(absl::EndsWith(lines[1], "5,000  incomplete")) << t;
  EXPECT_TRUE(absl::EndsWith(lines[2], "119,060,324")) << t;
  EXPECT_EQ(lines[4], "1 of 2 positions are incomplete (counts so far)");
}

TEST(PerftTextTable, DivideRowsFollowTheirRoot) {
  PerftRow r = row(518, 2, 400);
  r.divide = {{"e2e4", 20}, {"d2d4", 20}};
  const std::vector<std::string> lines = lines_of(perft_text_table({r}, true));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_TRUE(absl::StrContains(lines[0], "move")) << lines[0];
  EXPECT_TRUE(absl::StartsWith(lines[1], "518  RNBQKBNR")) << lines[1];
  EXPECT_TRUE(absl::StrContains(lines[2], "e2e4")) << lines[2];
  EXPECT_TRUE(absl::EndsWith(lines[2], " 20")) << lines[2];
  EXPECT_TRUE(absl::StrContains(lines[3], "d2d4")) << lines[3];
}

TEST(PerftCsv, TheFormatScriptsReadWithAnOptionalCompleteColumn) {
  const std::string fen = *startpos_fen(518);
  const std::vector<PerftRow> rows = {row(518, 4, 197281), row(3, 4, 1000, false)};
  EXPECT_EQ(perft_csv(rows, false),
            absl::StrCat("sp,fen,depth,nodes\n518,", fen, ",4,197281\n3,", *startpos_fen(3), ",4,1000\n"));
  EXPECT_EQ(perft_csv(rows, false, true), absl::StrCat("sp,fen,depth,nodes,complete\n518,", fen, ",4,197281,true\n3,",
                                                       *startpos_fen(3), ",4,1000,false\n"));
  PerftRow d = row(-1, 1, 26);
  d.divide = {{"a1b1", 1}};
  EXPECT_EQ(perft_csv({d}, true), absl::StrCat("sp,fen,depth,move,nodes\n,", d.fen, ",1,a1b1,1\n"));
}

TEST(PerftJson, MetadataThenPositionsWithExactCounts) {
  PerftRow big = row(0, 9, (NodeCount(1) << 64) + 1, false);
  big.divide = {{"a2a3", 7}};
  const std::string j = perft_json({big}, true, {{"job", "job-1"}, {"depth", "9", true}}, true);
  EXPECT_EQ(j, absl::StrCat("{\"metadata\": {\"job\": \"job-1\", \"depth\": 9},\n\"positions\": [\n  {\"sp\": 0, "
                            "\"fen\": \"",
                            big.fen,
                            "\", \"depth\": 9, \"nodes\": 18446744073709551617, \"divide\": {\"a2a3\": 7}, "
                            "\"complete\": false}\n]}\n"));
  EXPECT_EQ(perft_json({row(-1, 1, 26)}, false, {}),
            "{\"positions\": [\n  {\"sp\": null, \"fen\": \"r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1\", \"depth\": 1, "
            "\"nodes\": 26}\n]}\n");
}

selfplay::PositionStats position(int sp, int64_t w, int64_t d, int64_t l, bool complete = true) {
  selfplay::PositionStats p;
  p.id = absl::StrCat(sp);
  p.sp = sp;
  p.fen = *startpos_fen(sp);
  p.counts = {w, d, l};
  p.total_plies = 80 * (w + d + l);
  p.complete = complete;
  return p;
}

TEST(SelfPlayTextTable, AllRowFirstThenBestForWhiteWithAlignedIntervals) {
  selfplay::SelfPlayStats stats;
  stats.set_position(position(0, 2, 4, 4));    // 0.400
  stats.set_position(position(518, 9, 1, 0));  // 0.950
  stats.set_position(position(959, 5, 0, 5));  // 0.500
  const std::string t = selfplay_text_table(stats);
  std::vector<std::string> lines = lines_of(t);
  ASSERT_EQ(lines.size(), 8u) << t;
  // Under the table: why nothing is ranked, whether the start position matters, and a word on
  // small counts.
  EXPECT_EQ(lines[5], "Not ranked yet: ranks need 3 positions with 20 games each (most so far: 10)") << t;
  EXPECT_TRUE(absl::StartsWith(lines[6], "Does the start position matter? chi-square ")) << t;
  EXPECT_TRUE(absl::StrContains(lines[7], "permutation test")) << t;
  lines.resize(5);
  EXPECT_TRUE(absl::StrContains(lines[0], "White's score [95%]")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[0], "rank  id   position  games")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[1], "      all               30")) << t;
  // Not ranked (10 games each): blank ranks, listed by score.
  EXPECT_TRUE(absl::StartsWith(lines[2], "      518  RNBQKBNR     10")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[3], "      959  RKRNNQBB")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[4], "      0    BBQNNRKR")) << t;
  // The score and its interval as the statistics give them, three decimals.
  const selfplay::Interval s = stats.find("518")->counts.score();
  EXPECT_TRUE(absl::StrContains(lines[2], absl::StrFormat("0.950 [%.3f, %.3f]", s.lo, s.hi))) << t;
  // Intervals and Elo brackets line up from row to row.
  for (char c : {'[', ']'}) {
    std::vector<size_t> at;
    for (size_t i = 1; i < lines.size(); ++i) {
      std::vector<size_t> here;
      for (size_t k = lines[i].find(c); k != std::string::npos; k = lines[i].find(c, k + 1)) here.push_back(k);
      ASSERT_EQ(here.size(), 2u) << lines[i];
      if (at.empty()) at = here;
      EXPECT_EQ(here, at) << t;
    }
  }
  EXPECT_FALSE(absl::StrContains(t, "incomplete")) << t;
}

// Issue 20: the table was 112+ columns wide. On a terminal of W columns the columns that matter
// least are left out until it fits; White's results, score and interval always stay.
TEST(SelfPlayTextTable, FitsTheTerminalWidth) {
  selfplay::SelfPlayStats stats;
  stats.set_position(position(0, 2, 4, 4));
  stats.set_position(position(518, 90, 10, 0));
  stats.set_position(position(959, 5, 0, 5));
  const auto widest = [](const std::string& t) {
    size_t w = 0;
    for (const std::string& l : lines_of(t)) w = std::max(w, l.size());
    return w;
  };
  const std::string full = selfplay_text_table(stats), narrow = selfplay_text_table(stats, 80);
  EXPECT_GT(widest(full), 80u) << full;
  EXPECT_LE(widest(narrow), 80u) << narrow;
  for (const char* kept : {"games", "white", "draws", "black", "White's score [95%]", "RNBQKBNR"})
    EXPECT_TRUE(absl::StrContains(narrow, kept)) << kept << "\n" << narrow;
  EXPECT_FALSE(absl::StrContains(narrow, "elo [95%]")) << narrow;
  EXPECT_EQ(selfplay_text_table(stats, 200), full);
}

// Issue 20: positions ranked by their shrunk score (20 games or more), with the rank's interval;
// at 80 columns the shrunk score stays.
TEST(SelfPlayTextTable, RanksByTheShrunkScoreWithRankIntervals) {
  selfplay::SelfPlayStats stats;
  stats.set_position(position(0, 20, 10, 10));  // 0.625 from 40
  stats.set_position(position(1, 24, 12, 4));   // 0.750
  stats.set_position(position(2, 16, 12, 12));  // 0.550
  stats.set_position(position(3, 10, 0, 0));    // 1.000 from 10: not ranked, after the ranked
  const std::string t = selfplay_text_table(stats);
  const std::vector<std::string> lines = lines_of(t);
  ASSERT_GE(lines.size(), 7u) << t;
  EXPECT_TRUE(absl::StrContains(lines[0], "shrunk  shrunk 95%")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[2], "   1  1 ")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[3], "   2  0 ")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[4], "   3  2 ")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[5], "      3 ")) << t;
  const selfplay::Ranking r = stats.shrinkage();
  const selfplay::RankedPosition& best = r.positions[1];
  EXPECT_TRUE(absl::StrContains(lines[2], absl::StrFormat(" %.3f  %.3f-%.3f ", best.shrunk, best.lo, best.hi))) << t;
  EXPECT_TRUE(absl::StrContains(lines[2], absl::StrFormat(" %d-%d ", best.rank_lo, best.rank_hi))) << t;
  EXPECT_LT(best.shrunk, stats.find("1")->counts.score().value);  // the best pulled toward the mean
  EXPECT_TRUE(
      absl::StartsWith(lines[6], absl::StrFormat("shrunk: score pulled toward the positions' mean %.3f", r.mean)))
      << t;
  EXPECT_EQ(lines[7], "rank: by shrunk score, with its 95% interval; 1 position under 20 games unranked") << t;
  const std::string narrow = selfplay_text_table(stats, 80);
  for (const std::string& l : lines_of(narrow)) EXPECT_LE(l.size(), 80u) << narrow;
  EXPECT_TRUE(absl::StrContains(narrow, " shrunk")) << narrow;
  // Issue 36: the legend promised the rank's interval where the narrow table had left it out.
  ASSERT_FALSE(absl::StrContains(narrow, "rank 95%")) << narrow;
  EXPECT_FALSE(absl::StrContains(narrow, "with its 95% interval")) << narrow;
  EXPECT_TRUE(absl::StrContains(narrow, "its 95% interval: in the CSV and JSON")) << narrow;
}

// Issue 21: at 80 columns the notes under the table fit too (the uncounted games' note was about
// 120 columns, the ranking's over 80 with 10 or more positions unranked); wrapped at their
// words, none lost. Without a width (piped --format text) they stay one line each.
TEST(SelfPlayTextTable, NotesUnderTheTableFitTheWidth) {
  selfplay::SelfPlayStats stats;
  for (int sp = 0; sp < 3; ++sp) stats.set_position(position(sp, 10 + sp, 10, 10));  // ranked
  for (int sp = 3; sp < 15; ++sp) stats.set_position(position(sp, 2, 1, 1, sp != 14));
  selfplay::PositionStats uncounted = position(15, 1, 0, 0);
  uncounted.uncounted = 3;
  stats.set_position(uncounted);
  const std::string full = selfplay_text_table(stats), narrow = selfplay_text_table(stats, 80);
  const auto words = [](const std::string& t) {
    return std::vector<std::string>(absl::StrSplit(t, absl::ByAnyChar(" \n"), absl::SkipEmpty()));
  };
  const std::vector<std::string> full_lines = lines_of(full);
  const std::string uncounted_note = "3 games not counted: an engine failed before both engines had played a move";
  ASSERT_TRUE(std::any_of(full_lines.begin(), full_lines.end(), [&](const std::string& l) {
    return absl::StartsWith(l, uncounted_note) && l.size() > 80;
  })) << full;
  ASSERT_TRUE(absl::StrContains(full, "; 13 positions under 20 games unranked\n")) << full;
  for (const std::string& l : lines_of(narrow)) EXPECT_LE(l.size(), 80u) << l << "\n" << narrow;
  // The table itself lost columns; the notes lost nothing (but the rank's interval, which the
  // narrow table no longer shows: its legend says where it is instead).
  const size_t at_full = full.find("\n1 of 16 positions are incomplete"),
               at_narrow = narrow.find("\n1 of 16 positions are incomplete");
  ASSERT_NE(at_full, std::string::npos) << full;
  ASSERT_NE(at_narrow, std::string::npos) << narrow;
  const std::string notes_narrow = narrow.substr(at_narrow);
  const auto flat = [&](const std::string& t) { return absl::StrJoin(words(t), " "); };
  EXPECT_EQ(absl::StrReplaceAll(flat(notes_narrow), {{" (its 95% interval: in the CSV and JSON, or a wider terminal)",
                                                      ", with its 95% interval"}}),
            flat(full.substr(at_full)))
      << narrow;
  EXPECT_TRUE(absl::StrContains(notes_narrow, "\n  ")) << narrow;  // a continuation, indented
}

TEST(SelfPlayTextTable, IncompleteAndGamelessPositionsAreMarkedAndLast) {
  selfplay::SelfPlayStats stats;
  stats.set_position(position(4, 0, 0, 0, false));
  stats.set_position(position(5, 1, 1, 0, false));
  stats.set_position(position(6, 0, 2, 0));
  const std::string t = selfplay_text_table(stats);
  const std::vector<std::string> lines = lines_of(t);
  ASSERT_EQ(lines.size(), 9u) << t;  // and the ranking and chi-square lines
  EXPECT_TRUE(absl::StartsWith(lines[2], "      5 ")) << t;
  EXPECT_TRUE(absl::EndsWith(lines[2], "incomplete")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[3], "      6 ")) << t;
  EXPECT_FALSE(absl::StrContains(lines[3], "incomplete")) << t;
  EXPECT_TRUE(absl::StartsWith(lines[4], "      4 ")) << t;
  EXPECT_TRUE(absl::StrContains(lines[4], " -  ")) << t;  // no games: no score
  EXPECT_TRUE(absl::EndsWith(lines[4], "incomplete")) << t;
  EXPECT_EQ(lines[5], "2 of 3 positions are incomplete (games so far)");
}

TEST(SelfPlayStatsPartial, CompleteColumnAndFieldOnlyWhenAsked) {
  selfplay::SelfPlayStats stats;
  stats.set_position(position(7, 1, 0, 1));
  stats.set_position(position(8, 0, 0, 0, false));
  EXPECT_FALSE(stats.total().complete);
  const std::string plain = stats.to_csv();
  EXPECT_FALSE(absl::StrContains(plain, "complete")) << plain;
  const std::vector<std::string> csv = lines_of(stats.to_csv(true));
  ASSERT_EQ(csv.size(), 4u);
  EXPECT_TRUE(absl::EndsWith(csv[0], ",complete")) << csv[0];
  EXPECT_TRUE(absl::StartsWith(csv[1], "7,") && absl::EndsWith(csv[1], ",true")) << csv[1];
  EXPECT_TRUE(absl::StartsWith(csv[2], "8,") && absl::EndsWith(csv[2], ",false")) << csv[2];
  EXPECT_TRUE(absl::StartsWith(csv[3], "all,") && absl::EndsWith(csv[3], ",false")) << csv[3];
  // Without the column each row is the same but for it.
  const std::vector<std::string> before = lines_of(plain);
  for (size_t i = 1; i < csv.size(); ++i) EXPECT_EQ(csv[i].substr(0, csv[i].rfind(',')), before[i]);
  EXPECT_FALSE(absl::StrContains(stats.to_json(), "complete"));
  const std::string json = stats.to_json({}, true);
  EXPECT_TRUE(absl::StrContains(json, "\"rank_hi\": null, \"complete\": false, \"games\": 0")) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"total\": {\"complete\": false, \"games\": 2")) << json;
}

TEST(SelfPlayStatsPartial, PositionsWithoutGamesRankLast) {
  selfplay::SelfPlayStats stats;
  stats.set_position(position(1, 0, 0, 0, false));
  stats.set_position(position(2, 0, 0, 3));
  stats.set_position(position(3, 0, 0, 0, false));
  stats.set_position(position(4, 3, 0, 0));
  EXPECT_EQ(stats.ranking(), (std::vector<std::string>{"4", "2", "1", "3"}));
}

}  // namespace
}  // namespace c960::cli
