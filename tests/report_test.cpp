// Reports: CSV tables in (errors naming line and column), the analysis of a table, and the HTML
// out (self-contained, deterministic, with the numbers of the table).
#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "core/startpos.h"
#include "gtest/gtest.h"
#include "report/analysis.h"
#include "report/json.h"
#include "report/tables.h"
#include "selfplay/mirror.h"
#include "tests/process.h"
#include "tests/test_paths.h"

namespace c960::report {
namespace {

using selfplay::GameRecord;
using selfplay::GameResult;
using selfplay::Termination;

GameRecord game(GameResult r, Termination t, int plies, uint16_t first_move) {
  GameRecord g;
  g.start_fen = "x";
  g.result = r;
  g.termination = t;
  for (int i = 0; i < plies; ++i) g.moves.push_back(Move(uint16_t(first_move + i)));
  return g;
}

// A table as c960 selfplay writes it, with the given (w, d, l) per start position.
std::string selfplay_csv(const std::vector<std::array<int, 4>>& sp_w_d_l) {
  selfplay::SelfPlayStats st;
  uint16_t move = 1;
  for (const auto& [sp, w, d, l] : sp_w_d_l) {
    for (int i = 0; i < w; ++i) st.add(sp, game(GameResult::kWhiteWins, Termination::kCheckmate, 40, move++));
    for (int i = 0; i < d; ++i) st.add(sp, game(GameResult::kDraw, Termination::kStalemate, 60, move++));
    for (int i = 0; i < l; ++i) st.add(sp, game(GameResult::kBlackWins, Termination::kAdjudicatedResign, 80, move++));
  }
  return st.to_csv();
}

// Replaces one field (0-based column) of one line (0 = header) of a CSV.
std::string with_field(const std::string& csv, size_t index, size_t column, const std::string& value) {
  std::vector<std::string> lines = absl::StrSplit(csv, '\n');
  std::vector<std::string> fields = absl::StrSplit(lines[index], ',');
  fields[column] = value;
  lines[index] = absl::StrJoin(fields, ",");
  return absl::StrJoin(lines, "\n");
}

// Replaces one line of a CSV (0 = header).
std::string with_line(const std::string& csv, size_t index, const std::string& line) {
  std::vector<std::string> lines = absl::StrSplit(csv, '\n');
  lines[index] = line;
  return absl::StrJoin(lines, "\n");
}

TEST(ReportTables, SelfPlayCsvRoundTrip) {
  const std::string csv = selfplay_csv({{518, 3, 2, 1}, {0, 0, 1, 3}, {959, 2, 0, 0}});
  absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rows.size(), 3u);
  const SelfPlayRow& r0 = t->rows[0];  // ascending sp
  EXPECT_EQ(r0.key.id, "0");
  EXPECT_EQ(r0.key.sp, 0);
  EXPECT_EQ(r0.key.fen, *startpos_fen(0));
  EXPECT_EQ(r0.counts.draws, 1);
  EXPECT_EQ(r0.counts.black_wins, 3);
  EXPECT_NEAR(r0.mean_plies, (60 + 3 * 80) / 4.0, 0.05);
  EXPECT_EQ(t->rows[1].key.sp, 518);
  EXPECT_EQ(t->rows[1].counts.white_wins, 3);
  ASSERT_EQ(t->termination_names.size(), size_t(Termination::kCount));
  EXPECT_EQ(t->termination_names[0], "checkmate");
  EXPECT_EQ(t->rows[1].terminations[size_t(Termination::kCheckmate)], 3);
  EXPECT_EQ(detect_table_kind(csv).value(), TableKind::kSelfPlay);

  // The same rows from the statistics directly.
  selfplay::SelfPlayStats st;
  st.add(7, game(GameResult::kDraw, Termination::kStalemate, 10, 1));
  const SelfPlayTable direct = selfplay_table_from_stats(st);
  ASSERT_EQ(direct.rows.size(), 1u);
  EXPECT_EQ(direct.rows[0].key.sp, 7);
  EXPECT_EQ(direct.rows[0].counts.draws, 1);
}

TEST(ReportTables, PositionsBeyondThe960AndQuotedFields) {
  // Another id with a non-start FEN (an EPD opening); a quoted id with a comma.
  const std::string csv =
      "sp,fen,games,white_wins,draws,black_wins\n"
      "\"book, line 3\",rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2,2,1,1,0\n"
      "17,,1,0,0,1\n"
      "99999," +
      *startpos_fen(518) + ",3,1,1,1\r\n";
  absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->rows[0].key.id, "book, line 3");
  EXPECT_EQ(t->rows[0].key.sp, -1);
  EXPECT_EQ(t->rows[1].key.sp, 17);   // a number without FEN
  EXPECT_EQ(t->rows[2].key.sp, 518);  // the FEN decides
  EXPECT_EQ(t->rows[2].counts.black_wins, 1);
}

// The CSV of an adaptive run (anytime_lo, anytime_hi, verdict after rank) and of c960 results
// --partial (complete last): those columns are not terminations.
TEST(ReportTables, AdaptiveAndPartialColumnsAreNotTerminations) {
  selfplay::SelfPlayStats st;
  selfplay::AdaptiveRule rule;
  rule.target_width = 0.5;
  st.set_adaptive(rule, 40);
  for (int i = 0; i < 6; ++i) st.add(518, game(GameResult::kWhiteWins, Termination::kCheckmate, 40, i));
  for (const std::string& csv : {st.to_csv(false), st.to_csv(true)}) {
    ASSERT_NE(csv.find(",verdict,"), std::string::npos);
    absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(csv);
    ASSERT_TRUE(t.ok()) << t.status() << "\n" << csv;
    ASSERT_EQ(t->termination_names.size(), size_t(Termination::kCount));
    EXPECT_EQ(t->termination_names[0], "checkmate");
    EXPECT_EQ(t->rows[0].terminations[size_t(Termination::kCheckmate)], 6);
  }
}

TEST(ReportTables, SelfPlayErrorsNameLineAndColumn) {
  const std::string good = selfplay_csv({{1, 1, 1, 1}, {2, 2, 0, 0}});
  const std::vector<std::string> lines = absl::StrSplit(good, '\n');
  const std::string fen1 = *startpos_fen(1);
  struct Case {
    std::string csv, message;
  };
  const Case cases[] = {
      {with_field(good, 1, 3, "x"), "line 2, column 4 (white_wins): 'x' is not a whole number"},
      {with_field(good, 1, 3, "-1"), "line 2, column 4 (white_wins)"},
      {with_field(good, 1, 2, "4"), "line 2, column 3 (games): 4 games, but white_wins + draws + black_wins = 3"},
      {with_field(good, 2, 13, "abc"), "line 3, column 14 (mean_plies): 'abc' is not a non-negative number"},
      {with_field(good, 2, 24, "3"), "line 3, column 25 (checkmate): '3' is not a whole number in 0..2"},
      {with_field(good, 1, 17, "99"), "line 2, column 18 (effective_games): 99 is more than the"},
      {with_line(good, 2, lines[1]), "line 3: position '1' appears twice (also line 2)"},
      {with_line(good, 2, "01," + lines[1].substr(2)), "line 3: start position 1 appears twice (also line 2)"},
      {with_line(good, 1, "1,x,3"), "line 2: 3 columns, but the header has"},
      {with_line(good, 3, absl::StrReplaceAll(lines[3], {{"all,,5,3,", "all,,5,4,"}})),
       "line 4, column 4 (white_wins): the 'all' row says 4 but the positions add up to 3"},
      {"sp,fen,games,white_wins,draws\n1,,1,1,0\n", "line 1: the header has no column 'black_wins'"},
      {"sp,fen,games,white_wins,draws,black_wins\n\"1,,1,1,0,0\n", "line 2: a quoted field is not closed"},
      {"sp,fen,games,white_wins,draws,black_wins\n\"1\"x,,1,1,0,0\n", "line 2, column 1: text after a closing quote"},
      {"sp,fen,games,white_wins,draws,black_wins\n", "the table has no positions"},
      {"", "the table is empty"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(c.csv);
    ASSERT_FALSE(t.ok()) << c.csv;
    EXPECT_EQ(t.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(t.status().message().find(c.message), std::string::npos)
        << t.status().message() << "\nwanted: " << c.message;
  }
  absl::StatusOr<TableKind> kind = detect_table_kind("a,b\n1,2\n");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.status().message().find("line 1: header 'a,b' is not a self-play table"), std::string::npos)
      << kind.status();
}

TEST(ReportTables, PerftTablesOfSeveralDepthsAndDivides) {
  const std::string f518 = *startpos_fen(518), f0 = *startpos_fen(0);
  const std::string csv =
      absl::StrCat("sp,fen,depth,nodes\n518,", f518, ",1,20\n0,", f0, ",1,21\n", "sp,fen,depth,nodes\n518,", f518,
                   ",2,400\n0,", f0, ",2,528\n", "518,", f518, ",30,1267650600228229401496703205376\n");  // 2^100
  absl::StatusOr<PerftTable> t = parse_perft_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rows.size(), 5u);
  EXPECT_EQ(t->rows[4].nodes, NodeCount(1) << 100);
  EXPECT_EQ(t->rows[1].key.sp, 0);
  const PerftAnalysis a = analyse_perft(*t);
  EXPECT_EQ(a.depths, (std::vector<int>{1, 2, 30}));
  EXPECT_EQ(a.total.at(2), NodeCount(928));
  EXPECT_EQ(a.count.at(30), 1);
  EXPECT_EQ(detect_table_kind(csv).value(), TableKind::kPerft);

  // A divide table sums its moves.
  absl::StatusOr<PerftTable> divide = parse_perft_csv(absl::StrCat(
      "sp,fen,depth,move,nodes\n518,", f518, ",2,a2a3,20\n518,", f518, ",2,b2b3,20\n0,", f0, ",2,a2a3,19\n"));
  ASSERT_TRUE(divide.ok()) << divide.status();
  ASSERT_EQ(divide->rows.size(), 2u);
  EXPECT_EQ(divide->rows[0].nodes, NodeCount(40));

  const struct {
    std::string csv, message;
  } bad[] = {
      {absl::StrCat("sp,fen,depth,nodes\n518,", f518, ",1,20\n518,", f518, ",1,20\n"),
       "line 3: position '518' at this depth appears twice (also line 2)"},
      {absl::StrCat("sp,fen,depth,nodes\n518,", f518, ",1,2x\n"), "line 2, column 4 (nodes): '2x' is not a node count"},
      {absl::StrCat("sp,fen,depth,nodes\n518,", f518, ",1,340282366920938463463374607431768211456\n"),  // 2^128
       "line 2, column 4 (nodes)"},
      {absl::StrCat("sp,fen,depth,nodes\n518,", f518, ",65,1\n"),
       "line 2, column 3 (depth): '65' is not a whole number in 0..64"},
      {absl::StrCat("sp,fen,depth,move,nodes\n518,", f518, ",2,a2a3,20\n518,", f518, ",2,a2a3,20\n"),
       "line 3: move 'a2a3' of position '518' at depth 2 appears twice (also line 2)"},
      {"sp,fen,nodes\n1,,1\n", "line 1: the header has no column 'depth'"},
  };
  for (const auto& c : bad) {
    absl::StatusOr<PerftTable> r = parse_perft_csv(c.csv);
    ASSERT_FALSE(r.ok()) << c.csv;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos)
        << r.status().message() << "\nwanted: " << c.message;
  }
}

TEST(ReportAnalysis, SelfPlayFiguresAgreeWithTheirDefinitions) {
  // Position 3 is strongly White's, the others balanced; 6 games each.
  std::vector<std::array<int, 4>> rows;
  for (int sp = 0; sp < 40; ++sp)
    rows.push_back(sp == 3 ? std::array<int, 4>{sp, 6, 0, 0} : std::array<int, 4>{sp, 2, 2, 2});
  const SelfPlayTable t = *parse_selfplay_csv(selfplay_csv(rows));
  const SelfPlayAnalysis a = analyse_selfplay(t, nullptr, {});
  EXPECT_EQ(a.total.games(), 240);
  EXPECT_NEAR(a.win, (6 + 39 * 2) / 240.0, 1e-15);
  EXPECT_NEAR(a.draw, 78 / 240.0, 1e-15);
  ASSERT_EQ(a.by_score.size(), 40u);
  EXPECT_EQ(t.rows[a.by_score[0]].key.sp, 3);
  for (size_t i = 1; i < a.by_score.size(); ++i)
    EXPECT_GE(a.positions[a.by_score[i - 1]].score.value, a.positions[a.by_score[i]].score.value);
  // The homogeneity test is the one of the W/D/L table.
  std::vector<std::vector<int64_t>> wdl;
  for (const SelfPlayRow& r : t.rows) wdl.push_back({r.counts.white_wins, r.counts.draws, r.counts.black_wins});
  EXPECT_DOUBLE_EQ(a.homogeneity.statistic, chi_square_homogeneity(wdl).statistic);
  EXPECT_EQ(a.homogeneity.dof, 39 * 2);
  EXPECT_GT(a.permutations, 0);
  // One odd position among 39 identical ones: the table as a whole is less varied than chance
  // makes tables (p near 1), though position 3 alone is not.
  EXPECT_GT(a.permutation_p, 0.5);
  // Position 3 against the pooled probabilities, exactly; Holm multiplies by at most 40.
  const PositionResult& p3 = a.positions[3];
  EXPECT_DOUBLE_EQ(p3.p, points_test_p(6, 12, a.win, a.draw, a.loss));
  EXPECT_NEAR(p3.p_holm, std::min(1.0, 40 * p3.p), 1e-12);  // the smallest p-value
  EXPECT_GE(p3.q_bh, p3.p);
  // The histogram: one bin per possible score (13 values for 6 games); observed counts the
  // positions, expected sums each position's probabilities (so also 40).
  ASSERT_EQ(a.histogram.observed.size(), 13u);
  double observed = 0, expected = 0;
  for (double x : a.histogram.observed) observed += x;
  for (double x : a.histogram.expected) expected += x;
  EXPECT_EQ(observed, 40);
  EXPECT_NEAR(expected, 40, 1e-9);
  EXPECT_EQ(a.histogram.observed[12], 1);  // position 3 scored 1
  EXPECT_EQ(a.histogram.observed[6], 39);  // the rest 1/2
  // Spread: 39 at 1/2 and one at 1.
  const double mean = (39 * 0.5 + 1) / 40;
  EXPECT_NEAR(a.observed_sd, std::sqrt((39 * std::pow(0.5 - mean, 2) + std::pow(1 - mean, 2)) / 39), 1e-12);
  // The groups pool Chess960 positions by the king's file and so on.
  ASSERT_FALSE(a.groups.empty());
  EXPECT_EQ(a.groups[0].factor, "king's file");
  int64_t pooled = 0;
  for (const auto& [label, c] : a.groups[0].groups) pooled += c.games();
  EXPECT_EQ(pooled, 240);
}

TEST(ReportAnalysis, PositionsThatDifferAreFound) {
  std::vector<std::array<int, 4>> rows;
  for (int sp = 0; sp < 40; ++sp)
    rows.push_back(sp < 20 ? std::array<int, 4>{sp, 40, 10, 10} : std::array<int, 4>{sp, 10, 10, 40});
  const SelfPlayAnalysis a = analyse_selfplay(*parse_selfplay_csv(selfplay_csv(rows)), nullptr, {});
  EXPECT_LT(a.homogeneity.p_value, 1e-6);
  EXPECT_LT(a.permutation_p, 0.01);
  EXPECT_NEAR(a.permutation_p, 1.0 / (a.permutations + 1), 1e-12);  // no permutation came close
  EXPECT_GT(a.excess_sd, 0.1);
}

// A position's counts scaled to its effective number of games, rounded by largest remainders.
TEST(ReportAnalysis, EffectiveCountsScaleAndRound) {
  using C = selfplay::ResultCounts;
  const auto same = [](const C& a, const C& b) {
    return a.white_wins == b.white_wins && a.draws == b.draws && a.black_wins == b.black_wins;
  };
  EXPECT_TRUE(same(effective_counts({10, 5, 5}, 4.0), {2, 1, 1}));
  EXPECT_TRUE(same(effective_counts({7, 0, 3}, 2.4), {1, 0, 1}));  // 1.4, 0, 0.6: the 0.6 rounds up
  EXPECT_TRUE(same(effective_counts({7, 0, 3}, 0.3), {1, 0, 0}));  // one game at least
  EXPECT_TRUE(same(effective_counts({7, 0, 3}, std::nan("")), {7, 0, 3}));
  EXPECT_TRUE(same(effective_counts({7, 0, 3}, 10.0), {7, 0, 3}));
}

TEST(ReportAnalysis, ReferenceComparison) {
  std::vector<std::array<int, 4>> rows, other;
  for (int sp = 100; sp < 130; ++sp) rows.push_back({sp, sp % 7, 3, 6 - sp % 7});
  const SelfPlayTable t = *parse_selfplay_csv(selfplay_csv(rows));
  // Against itself: perfect agreement.
  const SelfPlayAnalysis same = analyse_selfplay(t, &t, {});
  ASSERT_TRUE(same.reference);
  EXPECT_EQ(same.reference->points.size(), 30u);
  EXPECT_NEAR(same.reference->pearson, 1, 1e-12);
  EXPECT_NEAR(same.reference->spearman, 1, 1e-12);
  EXPECT_EQ(same.reference->disagreements, 0);
  // A reference with one position reversed on many games, and one position missing.
  for (int sp = 100; sp < 129; ++sp)
    other.push_back(sp == 101 ? std::array<int, 4>{sp, 0, 0, 60} : std::array<int, 4>{sp, sp % 7, 3, 6 - sp % 7});
  const SelfPlayTable r = *parse_selfplay_csv(selfplay_csv(other));
  const SelfPlayAnalysis a = analyse_selfplay(t, &r, {});
  EXPECT_EQ(a.reference->points.size(), 29u);
  EXPECT_EQ(a.reference->disagreements, 1);
  std::vector<double> x, y;
  for (const ReferencePoint& p : a.reference->points) {
    x.push_back(p.score.value);
    y.push_back(p.reference_score.value);
    if (p.disagree) {
      EXPECT_EQ(t.rows[p.row].key.sp, 101);
    }
  }
  EXPECT_DOUBLE_EQ(a.reference->pearson, pearson(x, y));
  EXPECT_LT(a.reference->pearson_lo, a.reference->pearson);
  EXPECT_GT(a.reference->pearson_hi, a.reference->pearson);
}

TEST(ReportHtml, SelfContainedDeterministicAndWithTheTablesNumbers) {
  std::vector<std::array<int, 4>> rows;
  for (int sp = 0; sp < 960; sp += 3) rows.push_back({sp, sp % 4, 1, 1});
  const std::string csv = selfplay_csv(rows);
  ReportOptions o;
  o.metadata = {{"engine", "builtin <b>"}, {"seed", "1"}};
  o.reference_csv = csv;
  o.reference_name = "same.csv";
  absl::StatusOr<std::string> html = report_from_csv(csv, o);
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(*html, *report_from_csv(csv, o));  // same input, same file
  // Nothing loaded from elsewhere; everything inline.
  for (const char* forbidden : {"<script src", "<link", "src=\"http", "href=\"http", "@import"})
    EXPECT_EQ(html->find(forbidden), std::string::npos) << forbidden;
  EXPECT_NE(html->find("Content-Security-Policy"), std::string::npos);
  EXPECT_NE(html->find("Chart.js v3.9.1"), std::string::npos);
  EXPECT_NE(html->find("C960Heatmap"), std::string::npos);
  // One heatmap row per position, with its tooltip lines.
  size_t cells = 0;
  for (size_t at = html->find("{\"sp\":"); at != std::string::npos; at = html->find("{\"sp\":", at + 1)) ++cells;
  EXPECT_EQ(cells, rows.size());
  EXPECT_NE(html->find("{\"sp\":519,"), std::string::npos);  // 519 = 3 * 173
  EXPECT_EQ(html->find("{\"sp\":518,"), std::string::npos);
  EXPECT_NE(html->find(absl::StrCat("\"3 ", *backrank_of(3), "\",\"games 5 (W 3, D 1, L 1)\"")), std::string::npos);
  // Metadata escaped; sections present.
  EXPECT_NE(html->find("builtin &lt;b&gt;"), std::string::npos);
  for (const char* id : {"id=\"tests\"", "id=\"heatmap\"", "id=\"histogram\"", "id=\"extremes\"", "id=\"reference\"",
                         "id=\"scatter\"", "id=\"positions\"", "id=\"metadata\"", "id=\"methods\""})
    EXPECT_NE(html->find(id), std::string::npos) << id;
  EXPECT_NE(html->find("Holm"), std::string::npos);
  EXPECT_NE(html->find("Benjamini"), std::string::npos);

  // Errors: the table's, and the reference's named as such.
  absl::StatusOr<std::string> bad = report_from_csv(with_line(csv, 2, "x"), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3"), std::string::npos) << bad.status();
  ReportOptions bad_ref;
  bad_ref.reference_csv = "sp,fen,depth,nodes\n1,,1,20\n";
  bad = report_from_csv(csv, bad_ref);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message().rfind("reference table: ", 0), 0u) << bad.status();
}

// The page's text, tags left out: what a reader sees.
std::string visible_text(const std::string& html) {
  std::string out;
  bool tag = false;
  const size_t body = html.find("<body>"), script = html.find("<script", body);
  for (size_t i = body; i < script; ++i) {
    if (html[i] == '<') tag = true;
    if (!tag) out += html[i];
    if (html[i] == '>') tag = false;
  }
  return out;
}

// Related games: 40 positions of 1000 games each, every position's games in 2 lines of 500 copies
// (effective games 2), White winning them all in even positions and losing them all in odd ones.
// Taken as independent, every test says p < 1e-300; taken as what they are worth (2 games a
// position), the chi-square gives about 1e-4 and no position differs alone. The report says so.
TEST(ReportAnalysis, RelatedGamesDoNotMakeTinyPValues) {
  SelfPlayTable t;
  for (int sp = 0; sp < 40; ++sp) {
    SelfPlayRow r;
    r.key = {absl::StrCat(sp), "", sp};
    r.counts = sp % 2 ? selfplay::ResultCounts{0, 0, 1000} : selfplay::ResultCounts{1000, 0, 0};
    r.lines = 2;
    r.effective_games = 2;
    t.rows.push_back(r);
  }
  SelfPlayTable independent = t;
  for (SelfPlayRow& r : independent.rows) r.lines = -1, r.effective_games = kNaN;

  const SelfPlayAnalysis raw = analyse_selfplay(independent, nullptr, {1, 200});
  EXPECT_FALSE(raw.tests_effective);
  EXPECT_LT(raw.homogeneity.p_value, 1e-300);
  EXPECT_EQ(raw.significant_holm, 40);

  const SelfPlayAnalysis a = analyse_selfplay(t, nullptr, {1, 200});
  EXPECT_TRUE(a.tests_effective);
  EXPECT_EQ(a.tested_games, 80);
  EXPECT_NEAR(a.homogeneity.statistic, 80, 1e-9);  // 40 x 2 table of 80 games, perfectly split
  EXPECT_EQ(a.homogeneity.dof, 39);
  EXPECT_GT(a.homogeneity.p_value, 1e-6);
  EXPECT_LT(a.homogeneity.p_value, 1e-2);
  EXPECT_EQ(a.permutations, 200);
  EXPECT_EQ(a.significant_holm, 0);  // 2 wins of 2 at 1/2: p = 1/2
  EXPECT_NEAR(a.positions[0].p, 0.5, 1e-9);
  // The bishops' files split the even and odd positions: real evidence, but not p < 1e-300.
  for (const GroupSummary& g : a.groups) EXPECT_GT(g.test.p_value, 1e-30) << g.factor;
  // The sampling noise is that of 2 games: nothing is left over for real differences beyond it.
  EXPECT_NEAR(a.noise_sd, std::sqrt(0.25 / 2), 1e-9);

  absl::StatusOr<std::string> html = report_from_data(t, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->find("1e-300"), std::string::npos);
  EXPECT_NE(visible_text(*html).find(" games count as 80; the counts scaled and rounded"), std::string::npos);
  absl::StatusOr<std::string> raw_html = report_from_data(independent, {});
  ASSERT_TRUE(raw_html.ok());
  EXPECT_NE(raw_html->find("1e-300"), std::string::npos);
  EXPECT_NE(visible_text(*raw_html).find("by every test here"), std::string::npos);
}

// Issue 20: the best and worst lists were by the raw score, at any number of games; issue 21: every
// report showed a stray R"( and ) around its Methods.
// The heatmap's colour scale is White's score: it stops at 0 and 1 however lopsided the table.
TEST(ReportHtml, HeatmapScaleStaysInsideZeroToOne) {
  std::string csv = "sp,fen,games,white_wins,draws,black_wins\n";
  for (int sp = 0; sp < 40; ++sp) {
    const int w = sp % 4 ? 24 : 0;  // three in four score 0.98, the others 0.5: deviations up to 0.36
    absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",24,", w, ",", 24 - w, ",0\n");
  }
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const size_t at = html->find("\"domain\":[");
  ASSERT_NE(at, std::string::npos);
  const size_t open = at + std::string("\"domain\":[").size();
  const std::vector<std::string> ends = absl::StrSplit(html->substr(open, html->find(']', open) - open), ',');
  ASSERT_EQ(ends.size(), 3u);
  const double lo = std::stod(ends[0]), mid = std::stod(ends[1]), hi = std::stod(ends[2]);
  EXPECT_GE(lo, 0);
  EXPECT_LT(lo, mid);
  EXPECT_LE(mid, hi);
  EXPECT_LE(hi, 1.0);
  EXPECT_GT(mid, 0.85);
  EXPECT_LT(lo, 0.6);  // the low half is not squeezed by the cap on the high one
}

// The heatmap's domain [low, middle, high] as the page's data gives it.
std::vector<double> heatmap_domain(const std::string& html) {
  const size_t at = html.find("\"domain\":[");
  if (at == std::string::npos) return {};
  const size_t open = at + std::string("\"domain\":[").size();
  std::vector<double> out;
  for (absl::string_view x : absl::StrSplit(html.substr(open, html.find(']', open) - open), ','))
    out.push_back(std::stod(std::string(x)));
  return out;
}

// Issue 36: scores within 0.50..0.60 (as the published tables' are) fell into three bars 0.05 wide,
// and the heatmap's colour scale stopped at the 95th percentile of the deviations (0.595 here),
// so the best positions shared one colour.
TEST(ReportHtml, HistogramBinsAndHeatmapScaleFollowTheScores) {
  std::string csv = "sp,fen,games,white_wins,draws,black_wins\n";
  double top = 0;
  for (int sp = 0; sp < 960; ++sp) {
    const int w = 60 + sp % 21;  // scores (w + 40) / 200: 0.500 to 0.600
    top = std::max(top, (w + 40) / 200.0);
    absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",200,", w, ",80,", 120 - w, "\n");
  }
  const SelfPlayTable t = *parse_selfplay_csv(csv);
  const SelfPlayAnalysis a = analyse_selfplay(t, nullptr, {1, 100});
  const Histogram& h = a.histogram;
  ASSERT_GE(h.edges.size(), 21u);
  int bars = 0;
  double observed = 0, expected = 0;
  for (size_t b = 0; b + 1 < h.edges.size(); ++b) {
    EXPECT_LE(h.edges[b + 1] - h.edges[b], 0.01 + 1e-12) << b;
    bars += h.observed[b] > 0;
    observed += h.observed[b];
    expected += h.expected[b];
  }
  EXPECT_GE(bars, 10);
  EXPECT_EQ(observed, 960);
  EXPECT_NEAR(expected, 960, 1e-6);
  EXPECT_LE(h.edges.front(), 0.5);
  EXPECT_GE(h.edges.back(), top);
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::vector<double> domain = heatmap_domain(*html);
  ASSERT_EQ(domain.size(), 3u);
  EXPECT_GE(domain[2], top - 1e-9);
  EXPECT_LE(domain[0], 0.5 + 1e-9);
}

// Issue 36: "p = < 1e-300", and the permutation test's floor 1 / (permutations + 1) shown as an
// estimate ("p = 0.010") beside it.
TEST(ReportHtml, PValuesAtTheirLimitsSayWhatTheyAre) {
  std::string csv = "sp,fen,games,white_wins,draws,black_wins\n";
  for (int sp = 0; sp < 40; ++sp)
    absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",100,", sp % 2 ? "100,0,0" : "0,0,100", "\n");
  ReportOptions o;
  o.permutations = 100;
  absl::StatusOr<std::string> html = report_from_csv(csv, o);
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string text = visible_text(*html);
  EXPECT_EQ(text.find("p = &lt;"), std::string::npos);
  EXPECT_NE(text.find("p &lt; 1e-300"), std::string::npos);
  EXPECT_EQ(text.find("p = 0.010"), std::string::npos);
  EXPECT_NE(text.find("p &le; 0.0099 (none of the 100 permutations"), std::string::npos);
}

TEST(ReportHtml, BestAndWorstAreRankedByTheShrunkScoreFromEnoughGames) {
  std::string csv = "sp,fen,games,white_wins,draws,black_wins\n";
  for (int sp = 0; sp < 12; ++sp) {
    const int w = 10 + sp, d = 14, l = 40 - w - d;
    absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",", 40, ",", w, ",", d, ",", l, "\n");
  }
  absl::StrAppend(&csv, 12, ",", *startpos_fen(12), ",6,6,0,0\n");  // 1.000 from 6 games
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string text = visible_text(*html);
  EXPECT_EQ(text.find("R\"("), std::string::npos);
  EXPECT_EQ(text.find(")\""), std::string::npos);
  const size_t best = html->find("<table class=\"positions\" id=\"best\">"), worst = html->find("id=\"worst\"", best),
               end = html->find("</section>", worst);
  ASSERT_NE(best, std::string::npos);
  const std::string best_table = html->substr(best, worst - best), worst_table = html->substr(worst, end - worst);
  // Position 11 has the most wins: first; 12 (6 games) on neither list; 0 last.
  EXPECT_NE(best_table.find("<tr><td>1</td><td>11</td>"), std::string::npos) << best_table;
  EXPECT_NE(worst_table.find("<tr><td>12</td><td>0</td>"), std::string::npos) << worst_table;
  EXPECT_EQ((best_table + worst_table).find("<td>12</td><td class=\"br\">"), std::string::npos);
  EXPECT_NE(text.find("12 of 13 positions have 20 games or more and are ranked"), std::string::npos) << text;
  // Fewer games: no lists, and the page says why.
  std::string few = "sp,fen,games,white_wins,draws,black_wins\n";
  for (int sp = 0; sp < 5; ++sp)
    absl::StrAppend(&few, sp, ",", *startpos_fen(sp), ",4,", sp % 3, ",", 4 - sp % 3, ",0\n");
  html = report_from_csv(few, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->find("id=\"best\""), std::string::npos);
  EXPECT_NE(visible_text(*html).find("Not ranked: a ranking needs at least 3 positions with 20 games or more"),
            std::string::npos);
}

// Mirror pairs: compared once both sides have 20 games, the pair that differs first, with the
// overall test; with fewer games the section says so.
TEST(ReportHtml, MirrorPairsAreComparedFromEnoughGames) {
  std::string csv = "sp,fen,games,white_wins,draws,black_wins\n";
  const auto row = [&](int sp, int w, int d, int l) {
    absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",", w + d + l, ",", w, ",", d, ",", l, "\n");
  };
  row(518, 30, 10, 0);   // 0.875
  row(534, 10, 10, 20);  // 0.375
  row(0, 10, 20, 10);
  row(selfplay::mirror_of(0), 11, 18, 11);
  row(1, 10, 10, 10);  // its mirror has no games: not listed
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string text = visible_text(*html);
  EXPECT_NE(text.find("2 of 480 pairs of a position and its mirror image compared: some pairs differ"),
            std::string::npos)
      << text;
  const size_t table = html->find("id=\"mirror-pairs\"");
  ASSERT_NE(table, std::string::npos);
  const size_t first = html->find("<tr><td>518 ", table), second = html->find("<tr><td>0 ", table);
  ASSERT_NE(first, std::string::npos);
  EXPECT_LT(first, second);  // smallest p first
  EXPECT_NE(html->find("+0.500 [+0.", first), std::string::npos);
  EXPECT_NE(text.find("Mirror pairs: each of the 480 pairs"), std::string::npos);  // in Methods
  std::string few = "sp,fen,games,white_wins,draws,black_wins\n";
  absl::StrAppend(&few, 518, ",", *startpos_fen(518), ",4,1,2,1\n", 534, ",", *startpos_fen(534), ",4,1,2,1\n");
  html = report_from_csv(few, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_EQ(html->find("id=\"mirror-pairs\""), std::string::npos);
  EXPECT_NE(visible_text(*html).find("Not compared: 1 pair(s) of a position and its mirror image have games"),
            std::string::npos);
}

TEST(ReportHtml, PerftReportShowsCountsAndGrowth) {
  std::string csv = "sp,fen,depth,nodes\n";
  for (int sp : {0, 518, 959})
    for (int d = 1; d <= 2; ++d)
      absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",", d, ",", d == 1 ? 20 : 400 + sp, "\n");
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("\"depth 2: 918 nodes\""), std::string::npos);
  EXPECT_NE(html->find("2\u202f677"), std::string::npos);  // 400 + 918 + 1359 at depth 2, digits grouped
  EXPECT_NE(html->find("id=\"growth-chart\""), std::string::npos);
  EXPECT_NE(html->find("&times;"), std::string::npos);
}

TEST(ReportHtml, SpecMetadata) {
  selfplay::SelfPlaySpec spec;
  spec.engine = "/usr/games/stockfish";
  spec.options = {{"Threads", "1"}, {"Hash", "16"}};
  spec.limits.depth = 9;
  spec.seed = 42;
  spec.adjudication.resign_moves = 4;
  spec.adjudication.resign_score_cp = 600;
  const Metadata m = spec_metadata(spec);
  const auto value = [&](const std::string& key) {
    for (const auto& [k, v] : m)
      if (k == key) return v;
    return std::string("(missing)");
  };
  EXPECT_EQ(value("engine"), "/usr/games/stockfish");
  EXPECT_EQ(value("engine options"), "Threads=1, Hash=16");
  EXPECT_EQ(value("limit per move"), "depth 9");
  EXPECT_EQ(value("seed"), "42");
  EXPECT_EQ(value("adjudication"), "no draw adjudication; resign after 4 moves beyond 600 cp");
}

// --- adaptive runs and two-engine matches (issue 20) ---

const std::string kDataDir = std::string(c960::test::data_dir()) + "/report/";

// A CSV file as rows of named fields, read here with no help from report/ (quotes not needed: the
// fixtures' ids are numbers and their FENs have no commas).
struct RawCsv {
  std::vector<std::string> names;
  std::vector<std::vector<std::string>> rows;
  std::string get(size_t row, const std::string& name) const {
    const size_t i = size_t(std::find(names.begin(), names.end(), name) - names.begin());
    return i < names.size() ? rows[row][i] : "";
  }
  int64_t num(size_t row, const std::string& name) const { return std::stoll(get(row, name)); }
};

RawCsv read_raw(const std::string& text) {
  RawCsv c;
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipEmpty());
  c.names = absl::StrSplit(lines[0], ',');
  for (size_t i = 1; i < lines.size(); ++i) c.rows.push_back(absl::StrSplit(lines[i], ','));
  return c;
}

// As the report groups digits: narrow no-break spaces between groups of three.
std::string grouped_digits(int64_t n) {
  const std::string d = absl::StrCat(n);
  std::string out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i && (d.size() - i) % 3 == 0) out += "\u202f";
    out += d[i];
  }
  return out;
}

std::string fixture(const std::string& name) { return test::slurp(kDataDir + name); }

TEST(ReportAdaptive, SectionFromARealBandRun) {
  const std::string csv = fixture("adaptive-band.csv");
  ASSERT_FALSE(csv.empty()) << "tests/data/report/adaptive-band.csv (see make.sh)";
  const RawCsv raw = read_raw(csv);
  ASSERT_EQ(raw.get(raw.rows.size() - 1, "sp"), "all");
  // The figures, from the CSV's own columns.
  std::map<std::string, int> verdicts;
  std::vector<int64_t> played;
  for (size_t i = 0; i + 1 < raw.rows.size(); ++i) {
    ++verdicts[raw.get(i, "verdict")];
    played.push_back(raw.num(i, "games") + raw.num(i, "duplicates") + raw.num(i, "uncounted"));
  }
  ASSERT_GE(verdicts.size(), 2u) << "the fixture should reach more than one verdict";
  int64_t total = 0;
  for (int64_t n : played) total += n;
  std::vector<int64_t> sorted = played;
  std::sort(sorted.begin(), sorted.end());

  absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_TRUE(t->adaptive);
  EXPECT_EQ(t->adaptive_rule, "");  // a CSV does not record it
  const SelfPlayAnalysis a = analyse_selfplay(*t, nullptr, {});
  const AdaptiveSummary s = summarise_adaptive(*t, a);
  EXPECT_EQ(s.mode, "band");
  EXPECT_EQ(s.played, total);
  EXPECT_EQ(s.min_played, sorted.front());
  EXPECT_EQ(s.max_played, sorted.back());
  // The anytime intervals are wider than the fixed-count ones.
  EXPECT_GT(s.median_width_ratio, 1.2);

  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string text = visible_text(*html);
  EXPECT_NE(html->find("<section id=\"adaptive\"><h2>Adaptive allocation</h2>"), std::string::npos);
  EXPECT_NE(text.find("The rule is not recorded in the table; its verdicts say it was a band"), std::string::npos);
  // The band's edges as the decided positions bound them (the fixture's band is 0.42:0.58).
  double lo_at_most = 1, lo_above = 0, hi_at_least = 0;
  for (size_t i = 0; i + 1 < raw.rows.size(); ++i) {
    const double lo = std::stod(raw.get(i, "anytime_lo")), hi = std::stod(raw.get(i, "anytime_hi"));
    if (raw.get(i, "verdict") == "inside")
      lo_at_most = std::min(lo_at_most, lo), hi_at_least = std::max(hi_at_least, hi);
    if (raw.get(i, "verdict") == "below") lo_above = std::max(lo_above, hi);
  }
  ASSERT_TRUE(lo_above < 0.42 && 0.42 <= lo_at_most && hi_at_least <= 0.58);
  EXPECT_NE(text.find(absl::StrFormat("its lower edge between %.3f and %.3f and its upper edge at least %.3f", lo_above,
                                      lo_at_most, hi_at_least)),
            std::string::npos);
  for (const auto& [v, n] : verdicts)
    EXPECT_NE(html->find(absl::StrCat("<tr data-verdict=\"", v, "\"><td class=\"text\">", v, "</td><td>", n, "</td>")),
              std::string::npos)
        << v << " " << n;
  EXPECT_NE(html->find(absl::StrCat("<th>in all</th><td>", grouped_digits(total), "</td>")), std::string::npos);
  EXPECT_NE(html->find(absl::StrCat("<th>most a position</th><td>", grouped_digits(sorted.back()), "</td>")),
            std::string::npos);
  EXPECT_NE(text.find("valid"), std::string::npos);
  // Each position's anytime interval as the CSV gives it, in the table, decided positions first.
  const size_t table = html->find("id=\"anytime\"");
  ASSERT_NE(table, std::string::npos);
  std::vector<std::pair<size_t, std::string>> at;  // where each row is, and its verdict
  for (size_t i = 0; i + 1 < raw.rows.size(); ++i) {
    const std::string interval =
        absl::StrFormat("%.3f&ndash;%.3f", std::stod(raw.get(i, "anytime_lo")), std::stod(raw.get(i, "anytime_hi")));
    const size_t row = html->find(absl::StrCat("<tr><td>", raw.get(i, "sp"), "</td>"), table);
    ASSERT_NE(row, std::string::npos) << raw.get(i, "sp");
    const size_t end = html->find("</tr>", row);
    EXPECT_NE(html->substr(row, end - row).find(interval), std::string::npos) << interval;
    at.emplace_back(row, raw.get(i, "verdict"));
  }
  std::sort(at.begin(), at.end());
  const auto rank = [](const std::string& v) {
    return std::find(std::begin(kVerdictOrder), std::end(kVerdictOrder), v) - std::begin(kVerdictOrder);
  };
  for (size_t i = 1; i < at.size(); ++i) EXPECT_LE(rank(at[i - 1].second), rank(at[i].second)) << i;

  // Not in a report of a plain table.
  absl::StatusOr<std::string> plain = report_from_csv(fixture("selfplay-seed1.csv"), {});
  ASSERT_TRUE(plain.ok());
  EXPECT_EQ(plain->find("id=\"adaptive\""), std::string::npos);
}

TEST(ReportAdaptive, KnownRuleAndBadColumns) {
  // A table from statistics that carry the rule (a job's report) names it.
  selfplay::SelfPlayStats st;
  selfplay::AdaptiveRule rule;
  rule.target_width = 0.9;
  rule.batch = 10;
  st.set_adaptive(rule, 40);
  for (int sp : {3, 4, 5})
    for (int i = 0; i < 10; ++i)
      st.add(sp, game(i % 2 ? GameResult::kWhiteWins : GameResult::kDraw, Termination::kCheckmate, 40,
                      uint16_t(100 * sp + i)));
  const SelfPlayTable t = selfplay_table_from_stats(st);
  ASSERT_TRUE(t.adaptive);
  absl::StatusOr<std::string> html = report_from_data(t, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find(absl::StrCat("<b>", selfplay::describe(rule), "</b>")), std::string::npos);
  const selfplay::AnytimeInterval want = selfplay::anytime_interval(5, 5, 0);
  EXPECT_NE(html->find(absl::StrFormat("%.3f&ndash;%.3f", want.lo, want.hi)), std::string::npos);

  const std::string csv = st.to_csv();
  ASSERT_TRUE(parse_selfplay_csv(csv).ok());
  const RawCsv raw = read_raw(csv);
  const auto column = [&](const std::string& n) {
    return size_t(std::find(raw.names.begin(), raw.names.end(), n) - raw.names.begin());
  };
  struct Case {
    std::string csv, message;
  };
  const std::vector<Case> cases = {
      {with_field(csv, 2, column("verdict"), "maybe"),
       absl::StrCat("line 3, column ", column("verdict") + 1, " (verdict): 'maybe' is not open, narrow")},
      {with_field(csv, 1, column("anytime_lo"), "1.5"),
       absl::StrCat("line 2, column ", column("anytime_lo") + 1, " (anytime_lo): '1.5' is not a score in 0..1")},
      {with_field(csv, 1, column("anytime_hi"), ""),
       absl::StrCat("line 2, column ", column("anytime_hi") + 1, " (anytime_hi)")},
      {with_field(csv, 3, column("anytime_hi"), "0.01"),
       absl::StrCat("line 4, column ", column("anytime_hi") + 1, " (anytime_hi): 0.01 is below anytime_lo")},
      // One run has one rule: a target width's verdict and a band's cannot both be there.
      {with_field(csv, 3, column("verdict"), "inside"),
       absl::StrCat("line 4, column ", column("verdict") + 1, " (verdict): 'inside' is a band's verdict, but line 2")},
  };
  for (const Case& c : cases) {
    absl::StatusOr<SelfPlayTable> bad = parse_selfplay_csv(c.csv);
    ASSERT_FALSE(bad.ok()) << c.message;
    EXPECT_NE(bad.status().message().find(c.message), std::string::npos) << bad.status() << "\nexpected: " << c.message;
  }
}

// The CSV of an adaptive run names its rule and engine (the same on every row), and a report of
// the CSV says them; a row that names another is refused.
TEST(ReportAdaptive, TheCsvNamesItsRuleAndEngine) {
  selfplay::SelfPlayStats st;
  selfplay::AdaptiveRule rule;
  ASSERT_TRUE(selfplay::parse_band("--band", "0.50+-0.03", &rule).ok());
  st.set_adaptive(rule, 40, "/usr/games/stockfish, patched");
  for (int sp : {3, 4, 5})
    for (int i = 0; i < 10; ++i)
      st.add(sp, game(i % 2 ? GameResult::kWhiteWins : GameResult::kDraw, Termination::kCheckmate, 40,
                      uint16_t(100 * sp + i)));
  const std::string csv = st.to_csv();
  ASSERT_NE(csv.find(",verdict,rule,engine,"), std::string::npos) << csv;
  absl::StatusOr<SelfPlayTable> t = parse_selfplay_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status();
  EXPECT_EQ(t->adaptive_rule, selfplay::describe(rule));
  EXPECT_EQ(t->engine, "/usr/games/stockfish, patched");
  EXPECT_EQ(t->termination_names.size(), size_t(Termination::kCount));
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("<b>band 0.47:0.53, batch 20</b>"), std::string::npos);
  EXPECT_NE(html->find("Engine: <b>/usr/games/stockfish, patched</b>"), std::string::npos);
  EXPECT_EQ(html->find("The rule is not recorded"), std::string::npos);
  // One run has one rule: a row that says another is refused, naming it.
  const std::vector<std::string> lines = absl::StrSplit(csv, '\n');
  std::string other = csv;
  absl::StrReplaceAll({{lines[2], absl::StrReplaceAll(lines[2], {{"band 0.47:0.53", "band 0.4:0.6"}})}}, &other);
  absl::StatusOr<SelfPlayTable> bad = parse_selfplay_csv(other);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("line 3, column"), std::string::npos) << bad.status();
  EXPECT_NE(bad.status().message().find("(rule): 'band 0.4:0.6, batch 20' differs from line 2's"), std::string::npos)
      << bad.status();
}

// A's points in a pair of each pentanomial cell, and the games that make it (a DD/WL pair is
// written as two draws).
constexpr double kPairScore[5] = {0, 0.25, 0.5, 0.75, 1};

// A match CSV in the shape MatchStats::to_csv writes, from pentanomial counts per start
// position; derived columns left empty (the report does not read them).
std::string match_csv(const std::vector<std::pair<int, std::array<int64_t, 5>>>& rows) {
  std::string out =
      "sp,fen,pairs,ll,ld,dd_wl,wd,ww,games,wins,draws,losses,score,score_lo,score_hi,elo,elo_lo,elo_hi,nelo,los,p,"
      "p_holm,p_bh,favours,duplicates,unpaired\n";
  std::array<int64_t, 5> sum{};
  int64_t sw = 0, sd = 0, sl = 0;
  for (const auto& [sp, c] : rows) {
    const int64_t w = c[3] + 2 * c[4], d = c[1] + 2 * c[2] + c[3], l = 2 * c[0] + c[1];
    const int64_t pairs = c[0] + c[1] + c[2] + c[3] + c[4];
    absl::StrAppend(&out, sp, ",", *startpos_fen(sp), ",", pairs, ",", absl::StrJoin(c, ","), ",", 2 * pairs, ",", w,
                    ",", d, ",", l, ",,,,,,,,,,,,,0,0\n");
    for (size_t i = 0; i < 5; ++i) sum[i] += c[i];
    sw += w, sd += d, sl += l;
  }
  const int64_t pairs = sum[0] + sum[1] + sum[2] + sum[3] + sum[4];
  absl::StrAppend(&out, "all,,", pairs, ",", absl::StrJoin(sum, ","), ",", 2 * pairs, ",", sw, ",", sd, ",", sl,
                  ",,,,,,,,,,,,,0,0\n");
  return out;
}

// "+12.3" / "&minus;4.5", as the match report writes Elo.
std::string signed_html(double x) {
  const std::string d = absl::StrFormat("%.1f", std::abs(x));
  return d == "0.0" ? d : absl::StrCat(x < 0 ? "&minus;" : "+", d);
}

// The sign test, Holm and the heterogeneity chi-square, computed here from the counts.
double binomial_two_sided(int64_t k, int64_t n) {
  double tail = 0;
  for (int64_t i = 0; i <= std::min(k, n - k); ++i)
    tail += std::exp(std::lgamma(double(n) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(n - i) + 1)) /
            std::pow(2.0, double(n));
  return std::min(1.0, 2 * tail);
}

TEST(ReportMatch, FiguresAndPositionsThatFavourAnEngine) {
  // Position 0 favours A (25 pairs won, none lost), 1 favours B, the rest are even.
  std::vector<std::pair<int, std::array<int64_t, 5>>> rows = {{0, {0, 0, 5, 10, 15}}, {1, {14, 11, 5, 0, 0}}};
  for (int sp = 2; sp < 12; ++sp) rows.push_back({sp, {2, 3, 10 + sp % 3, 3, 2}});
  const std::string csv = match_csv(rows);
  ASSERT_EQ(detect_table_kind(csv).value(), TableKind::kMatch);
  absl::StatusOr<MatchTable> t = parse_match_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status();
  ASSERT_EQ(t->rows.size(), rows.size());
  EXPECT_EQ(t->rows[1].key.sp, 1);
  EXPECT_EQ(t->rows[1].penta[0], 14);

  // Totals, from the counts.
  std::array<int64_t, 5> sum{};
  for (const auto& [sp, c] : rows)
    for (size_t i = 0; i < 5; ++i) sum[i] += c[i];
  int64_t pairs = 0;
  double mu = 0, var = 0;
  for (size_t i = 0; i < 5; ++i) pairs += sum[i], mu += double(sum[i]) * kPairScore[i];
  mu /= double(pairs);
  for (size_t i = 0; i < 5; ++i) var += double(sum[i]) / double(pairs) * (kPairScore[i] - mu) * (kPairScore[i] - mu);
  const double elo = -400 * std::log10(1 / mu - 1);
  // Heterogeneity: sum n_k (mu_k - mu)^2 / var over positions.
  double chi = 0;
  for (const auto& [sp, c] : rows) {
    double n = 0, m = 0;
    for (size_t i = 0; i < 5; ++i) n += double(c[i]), m += double(c[i]) * kPairScore[i];
    chi += n * (m / n - mu) * (m / n - mu) / var;
  }
  // Holm over 12 positions: the smallest p times 12 (each extreme position: 25 of 25 pairs).
  const double p_extreme = binomial_two_sided(0, 25);

  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string text = visible_text(*html);
  EXPECT_NE(html->find("<title>c960 match report</title>"), std::string::npos);
  EXPECT_NE(text.find("Engine A is the one of --engine, B the one of --opponent (the table does not name them)"),
            std::string::npos)
      << text.substr(0, 400);
  EXPECT_NE(html->find(absl::StrCat("id=\"pairs\">", pairs, "<")), std::string::npos);
  EXPECT_NE(html->find(absl::StrFormat("id=\"match-score\">%.3f<", mu)), std::string::npos);
  EXPECT_NE(html->find(absl::StrCat("id=\"match-elo\">", signed_html(elo), "<")), std::string::npos)
      << signed_html(elo);
  EXPECT_NE(html->find(absl::StrFormat("95%%: %.3f&ndash;%.3f",
                                       std::max(0.0, mu - 1.959963984540054 * std::sqrt(var / double(pairs))),
                                       mu + 1.959963984540054 * std::sqrt(var / double(pairs)))),
            std::string::npos);
  EXPECT_NE(html->find(absl::StrFormat("&chi;&sup2; = %.1f on %d degrees of freedom", chi, int(rows.size()) - 1)),
            std::string::npos);
  EXPECT_NE(text.find("1 favour A and 1 favour B after Holm's correction"), std::string::npos);
  // The favouring positions' table: 0 and 1 with their Holm p, the even ones not listed.
  const size_t fav = html->find("id=\"favouring\"");
  ASSERT_NE(fav, std::string::npos);
  const std::string fav_table = html->substr(fav, html->find("</table>", fav) - fav);
  EXPECT_NE(fav_table.find("<tr><td>0</td>"), std::string::npos);
  EXPECT_NE(fav_table.find("<tr><td>1</td>"), std::string::npos);
  EXPECT_EQ(fav_table.find("<tr><td>5</td>"), std::string::npos);
  EXPECT_NE(fav_table.find(absl::StrFormat("%.1e", std::min(1.0, 12 * p_extreme))), std::string::npos) << fav_table;
  EXPECT_NE(fav_table.find("<td class=\"text\">A</td>"), std::string::npos);
  EXPECT_NE(fav_table.find("<td class=\"text\">B</td>"), std::string::npos);
  // Pentanomial totals and the heatmap of A's score.
  for (size_t i = 0; i < 5; ++i) EXPECT_NE(html->find(absl::StrCat("<td>", sum[i], "</td>")), std::string::npos) << i;
  EXPECT_NE(html->find("\"legend\":\"A's score\""), std::string::npos);
  EXPECT_NE(html->find(absl::StrFormat("{\"sp\":0,\"value\":%.6g,", (5 * 0.5 + 10 * 0.75 + 15) / 30)),
            std::string::npos);
  EXPECT_NE(html->find("Not recorded: a CSV has no SPRT"), std::string::npos);
  for (const char* id : {"id=\"summary\"", "id=\"pentanomial\"", "id=\"favours\"", "id=\"heatmap\"", "id=\"positions\"",
                         "id=\"metadata\"", "id=\"methods\""})
    EXPECT_NE(html->find(id), std::string::npos) << id;
  // No adaptive or self-play sections.
  EXPECT_EQ(html->find("id=\"adaptive\""), std::string::npos);
  EXPECT_EQ(html->find("id=\"mirrors\""), std::string::npos);
}

TEST(ReportMatch, RealMatchFixture) {
  const std::string csv = fixture("match-builtin-stockfish.csv");
  ASSERT_FALSE(csv.empty()) << "tests/data/report/match-builtin-stockfish.csv (see make.sh)";
  const RawCsv raw = read_raw(csv);
  const size_t last = raw.rows.size() - 1;
  ASSERT_EQ(raw.get(last, "sp"), "all");
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  // The totals as the CSV's 'all' row gives them, at the report's precision.
  EXPECT_NE(html->find(absl::StrCat("id=\"pairs\">", grouped_digits(raw.num(last, "pairs")), "<")), std::string::npos);
  EXPECT_NE(html->find(absl::StrFormat("id=\"match-score\">%.3f<", std::stod(raw.get(last, "score")))),
            std::string::npos);
  // Positions that favour an engine: as many as the CSV's favours column has.
  int a = 0, b = 0, bh = 0;
  for (size_t i = 0; i < last; ++i) {
    a += raw.get(i, "favours") == "A";
    b += raw.get(i, "favours") == "B";
    bh += std::stod(raw.get(i, "p_bh")) < 0.05;
  }
  const std::string text = visible_text(*html);
  EXPECT_NE(text.find(absl::StrCat(a, " favour A and ", b, " favour B after Holm's correction (family-wise error 5%); ",
                                   bh, " differ after Benjamini")),
            std::string::npos);
  // One heatmap cell per position.
  size_t cells = 0;
  for (size_t at = html->find("{\"sp\":"); at != std::string::npos; at = html->find("{\"sp\":", at + 1)) ++cells;
  EXPECT_EQ(cells, last);
}

// A match's CSV names its engines (engine_a, engine_b on every row), and a report of the CSV says
// them; a CSV without the columns (older runs) says it does not name them.
TEST(ReportMatch, TheCsvNamesItsEngines) {
  selfplay::MatchStats m("builtin", "/usr/games/stockfish");
  selfplay::MatchPositionStats p;
  p.id = "518";
  p.sp = 518;
  p.fen = *startpos_fen(518);
  p.penta = {1, 2, 3, 2, 1};
  // As match_csv below: wins wd + 2 ww, draws ld + 2 dd_wl + wd, losses 2 ll + ld.
  p.wins = 2 + 2 * 1, p.draws = 2 + 2 * 3 + 2, p.losses = 2 * 1 + 2;
  m.set_position(p);
  const std::string csv = m.to_csv();
  ASSERT_NE(csv.find(",unpaired,engine_a,engine_b\n"), std::string::npos) << csv;
  absl::StatusOr<MatchTable> t = parse_match_csv(csv);
  ASSERT_TRUE(t.ok()) << t.status() << "\n" << csv;
  EXPECT_EQ(t->engine_a, "builtin");
  EXPECT_EQ(t->engine_b, "/usr/games/stockfish");
  absl::StatusOr<std::string> html = report_from_csv(csv, {});
  ASSERT_TRUE(html.ok()) << html.status();
  EXPECT_NE(html->find("Engine <b>A</b>: builtin; engine <b>B</b>: /usr/games/stockfish."), std::string::npos);
  EXPECT_NE(html->find("<title>c960 match report: builtin vs /usr/games/stockfish</title>"), std::string::npos);
  // Without the columns: A and B, and the report says the table does not name them.
  absl::StatusOr<std::string> old = report_from_csv(match_csv({{518, {1, 2, 3, 2, 1}}}), {});
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_NE(old->find("the table does not name them"), std::string::npos);
  // One match has one pair of engines.
  const std::string other = csv.substr(0, csv.size() - std::string("/usr/games/stockfish\n").size()) + "stockfish-17\n";
  absl::StatusOr<MatchTable> bad = parse_match_csv(other);
  ASSERT_FALSE(bad.ok()) << other;
  EXPECT_NE(bad.status().message().find("(engine_b): 'stockfish-17' differs from line 2's '/usr/games/stockfish'"),
            std::string::npos)
      << bad.status();
}

TEST(ReportMatch, MalformedTablesAreRefusedNamingLineAndField) {
  const std::string good = match_csv({{0, {1, 2, 3, 2, 1}}, {1, {0, 1, 4, 1, 0}}});
  ASSERT_TRUE(parse_match_csv(good).ok());
  struct Case {
    std::string csv, message;
  };
  const std::vector<Case> cases = {
      {with_field(good, 2, 6, "x"), "line 3, column 7 (wd): 'x' is not a whole number"},
      {with_field(good, 1, 3, "2"), "line 2, column 3 (pairs): 9 pairs, but ll + ld + dd_wl + wd + ww = 10"},
      {with_field(good, 1, 8, "19"), "line 2, column 9 (games): 19 games, but wins + draws + losses = 18"},
      {with_field(with_field(good, 1, 9, "5"), 1, 10, "9"),
       "line 2, column 10 (wins): A's points from wins and draws (9.5) differ from the pairs' (9)"},
      {with_field(good, 2, 23, "C"), "line 3, column 24 (favours): 'C' is not A, B or empty"},
      {with_field(good, 3, 24, "3"),
       "line 4, column 25 (duplicates): the 'all' row says 3 but the positions add up to 0"},
      {with_line(good, 2, "1,x,1"), "line 3: 3 columns, but the header has 26"},
      {absl::StrReplaceAll(good, {{",dd_wl,", ",dd,"}}), "line 1: the header has no column 'dd_wl'"},
  };
  for (const Case& c : cases) {
    absl::StatusOr<std::string> bad = report_from_csv(c.csv, {});
    ASSERT_FALSE(bad.ok()) << c.message;
    EXPECT_NE(bad.status().message().find(c.message), std::string::npos) << bad.status() << "\nexpected: " << c.message;
  }
}

TEST(ReportJson, ValuesEscapesAndErrors) {
  absl::StatusOr<JsonValue> v = parse_json(
      "{\"a\": [1, -2.5e3, 0.125, true, false, null],\n \"s\": \"x\\\"\\\\\\n\\u00e9\\ud83d\\ude00\", \"o\": {}}");
  ASSERT_TRUE(v.ok()) << v.status();
  const JsonValue* a = v->find("a");
  ASSERT_NE(a, nullptr);
  ASSERT_EQ(a->items.size(), 6u);
  EXPECT_EQ(a->items[0].text, "1");
  EXPECT_EQ(a->items[1].text, "-2500");
  EXPECT_EQ(a->items[2].text, "0.125");
  EXPECT_TRUE(a->items[3].boolean);
  EXPECT_EQ(a->items[4].type, JsonValue::Type::kBool);
  EXPECT_FALSE(a->items[4].boolean);
  EXPECT_EQ(a->items[5].type, JsonValue::Type::kNull);
  EXPECT_EQ(v->find("s")->text, "x\"\\\n\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_EQ(v->find("o")->type, JsonValue::Type::kObject);
  for (const std::string text : {"[1, 2", "{\"a\": tru}", "[1] 2", "{\"a\" 1}"}) {
    absl::StatusOr<JsonValue> bad = parse_json(text);
    ASSERT_FALSE(bad.ok()) << text;
    EXPECT_NE(bad.status().message().find("not JSON: "), std::string::npos) << bad.status();
  }
}

TEST(ReportMatch, JsonWithEnginesAndSprt) {
  const std::string json = fixture("match-sprt.json");
  ASSERT_FALSE(json.empty()) << "tests/data/report/match-sprt.json (see make.sh)";
  absl::StatusOr<JsonValue> doc = parse_json(json);
  ASSERT_TRUE(doc.ok()) << doc.status();
  const JsonValue& sprt = *doc->find("sprt");
  const JsonValue& total = *doc->find("total");
  absl::StatusOr<std::string> html = report_from_csv(json, {});
  ASSERT_TRUE(html.ok()) << html.status();
  const std::string a = doc->find("engines")->find("a")->text, b = doc->find("engines")->find("b")->text;
  EXPECT_NE(html->find(absl::StrCat("<title>c960 match report: ", a, " vs ", b, "</title>")), std::string::npos);
  EXPECT_NE(html->find(absl::StrCat("Engine <b>A</b>: ", a, "; engine <b>B</b>: ", b)), std::string::npos);
  // The SPRT: the run's own log-likelihood ratio and result, recomputed by the report from the counts.
  const double llr = std::stod(sprt.find("llr")->text);
  const std::string result = sprt.find("result")->text;
  const std::string shown = result == "H1"   ? "<b>H1 accepted</b>"
                            : result == "H0" ? "<b>H0 accepted</b>"
                                             : "<b>Not decided</b>";
  const size_t at = html->find("id=\"sprt-result\"");
  ASSERT_NE(at, std::string::npos);
  const std::string line = html->substr(at, html->find("</p>", at) - at);
  EXPECT_NE(line.find(shown), std::string::npos) << line;
  const std::string llr_text = absl::StrFormat("%.3f", std::abs(llr));
  EXPECT_NE(line.find(absl::StrCat("Log-likelihood ratio <b>", llr < 0 ? "&minus;" : "+", llr_text, "</b>")),
            std::string::npos)
      << line << " (the run's LLR: " << llr << ")";
  EXPECT_NE(html->find(absl::StrFormat("id=\"match-score\">%.3f<", std::stod(total.find("score")->text))),
            std::string::npos);
  EXPECT_NE(html->find("<th>opponent_options</th><td>Skill Level=0</td>"), std::string::npos);  // the run's metadata

  // Errors name the field by its path.
  const size_t penta = json.find("\"pentanomial\": [");
  ASSERT_NE(penta, std::string::npos);
  std::string broken = json;
  broken.replace(penta, std::string("\"pentanomial\": [").size(), "\"pentanomial\": [7, ");
  absl::StatusOr<std::string> bad = report_from_csv(broken, {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("positions[0].pentanomial: needs five counts"), std::string::npos)
      << bad.status();
  bad = report_from_csv(absl::StrReplaceAll(json, {{"\"model\": \"logistic\"", "\"model\": \"probit\""}}), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("sprt.model: not \"logistic\" or \"normalized\""), std::string::npos)
      << bad.status();
  // A self-play run's JSON has positions and a total too, but no engines.
  selfplay::SelfPlayStats st;
  st.add(518, game(GameResult::kDraw, Termination::kStalemate, 60, 1));
  bad = report_from_csv(st.to_json(), {});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("the document: not a match's JSON"), std::string::npos) << bad.status();
}

}  // namespace
}  // namespace c960::report
