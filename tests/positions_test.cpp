// Positions self-play starts from beyond the 960: DFRC pairs, FENs and opening books.
#include "selfplay/positions.h"

#include <gtest/gtest.h>

#include "core/startpos.h"
#include "selfplay/spec.h"
#include "selfplay/stats.h"

namespace c960::selfplay {
namespace {

TEST(Positions, DfrcPairsOnTheDiagonalAreTheStartPositions) {
  for (int sp : {0, 518, 959}) {
    const StartPosition p = *dfrc_position(sp * 961);
    EXPECT_EQ(p.fen, *startpos_fen(sp, true)) << sp;
    EXPECT_EQ(p.sp, sp);
    // The same games as start position sp: the seed comes from the position, not its name.
    EXPECT_EQ(position_key(p), position_key(*chess960_position(sp)));
  }
}

TEST(Positions, DfrcPairHasEachSidesOwnBackRank) {
  // White: start position 518 (RNBQKBNR); Black: start position 0 (BBQNNRKR).
  const StartPosition p = *dfrc_position(518 * 960 + 0);
  EXPECT_EQ(p.id, "497280");
  EXPECT_EQ(p.sp, -1);
  EXPECT_EQ(p.fen, "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAhf - 0 1");
  EXPECT_EQ(position_label(p.fen), "RNBQKBNR/bbqnnrkr");
  EXPECT_EQ(position_label(*startpos_fen(518)), "RNBQKBNR");
  EXPECT_FALSE(dfrc_position(kDfrcPairs).ok());
  EXPECT_FALSE(dfrc_position(-1).ok());
}

TEST(Positions, FenPositionsAreCheckedAndNormalised) {
  const StartPosition p = *fen_position("a", "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq e3 0 1");
  EXPECT_EQ(p.kind, PositionKind::kFen);
  EXPECT_EQ(p.sp, -1);
  EXPECT_EQ(xfen_of(p).substr(0, 8), "rnbqkbnr");
  // The classical start in X-FEN is start position 518 whatever it is called.
  EXPECT_EQ(fen_position("x", *startpos_fen(518))->sp, 518);
  EXPECT_NE(position_key(p), position_key(*chess960_position(518)));
  // Mate: nothing to play.
  const absl::StatusOr<StartPosition> mate = fen_position("m", "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
  ASSERT_FALSE(mate.ok());
  EXPECT_NE(mate.status().message().find("checkmate"), absl::string_view::npos);
  EXPECT_FALSE(fen_position("all", *startpos_fen(0)).ok());
  EXPECT_FALSE(fen_position("", *startpos_fen(0)).ok());
  EXPECT_FALSE(fen_position("x", "not a fen").ok());
}

TEST(Positions, OpeningBookTakesEpdAndFenLines) {
  const std::string book =
      "# a comment\n"
      "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id \"open; game\"; c0 \"x\";\n"
      "\n"
      "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2\n"
      "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2 ;D1 29\n";
  const absl::StatusOr<std::vector<StartPosition>> p = parse_opening_book(book);
  ASSERT_TRUE(p.ok()) << p.status();
  ASSERT_EQ(p->size(), 3u);
  EXPECT_EQ((*p)[0].id, "open; game");
  EXPECT_EQ((*p)[1].id, "4");  // no id: the line number
  EXPECT_EQ((*p)[2].id, "5");
  EXPECT_EQ((*p)[1].fen, (*p)[2].fen);
  // A FEN cut short after its castling field (as Stockfish takes it): en passant and clocks
  // default; the same position as the full FEN.
  const absl::StatusOr<std::vector<StartPosition>> short_fen =
      parse_opening_book("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf\n");
  ASSERT_TRUE(short_fen.ok()) << short_fen.status();
  EXPECT_EQ(short_fen->front().fen, *startpos_fen(0, true));
  EXPECT_EQ(short_fen->front().sp, 0);
}

TEST(Positions, OpeningBookErrorsNameTheLine) {
  const auto error = [](const std::string& text) { return std::string(parse_opening_book(text).status().message()); };
  EXPECT_EQ(error("\n\nfoo bar\n").substr(0, 8), "line 3: ");
  EXPECT_NE(error("8/8/8/8/8/8/8/8 w - - id \"x\";\n").find("line 1"), std::string::npos);
  const std::string dup = *startpos_fen(0) + " id \"a\";\n" + *startpos_fen(1) + " id \"a\";\n";
  EXPECT_NE(error(dup).find("line 2: id 'a' is also the id of line 1"), std::string::npos);
  EXPECT_FALSE(parse_opening_book("# only a comment\n\n").ok());
}

TEST(Positions, StatsRowsAreKeyedByIdInNumberOrderThenFirstSeen) {
  SelfPlayStats st;
  GameRecord g;
  g.result = GameResult::kDraw;
  g.start_fen = "x";
  st.add(*fen_position("b", *startpos_fen(3)), g);
  st.add(*dfrc_position(1000), g);
  st.add(*fen_position("a", *startpos_fen(4)), g);
  st.add(*dfrc_position(20), g);
  std::vector<std::string> ids;
  for (const PositionStats* r : st.rows()) ids.push_back(r->id);
  EXPECT_EQ(ids, (std::vector<std::string>{"20", "1000", "b", "a"}));
  const std::string csv = st.to_csv();
  EXPECT_NE(csv.find("\nb,"), std::string::npos);
  EXPECT_NE(st.to_json().find("\"id\": \"a\", \"sp\": null"), std::string::npos);
}

}  // namespace
}  // namespace c960::selfplay
