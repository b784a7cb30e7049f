#include "core/notation.h"

#include "core/movegen.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

using test::pos_of;

std::string san_of(const std::string& fen, const std::string& uci) {
  const Position pos = pos_of(fen);
  absl::StatusOr<Move> m = parse_uci(pos, uci);
  EXPECT_TRUE(m.ok()) << uci << ": " << m.status().message();
  return m.ok() ? to_san(pos, *m) : "";
}

TEST(Notation, SanCastling) {
  EXPECT_EQ(san_of("rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1", "f1g1"), "O-O");
  EXPECT_EQ(san_of("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "e1a1"), "O-O-O");
  EXPECT_EQ(san_of("2k5/8/8/8/8/8/8/R1K5 w A - 0 1", "c1a1"), "O-O-O");
  EXPECT_EQ(san_of("3k4/8/8/8/8/8/8/R1K5 w A - 0 1", "c1a1"), "O-O-O+");  // the rook lands on d1
}

TEST(Notation, SanPiecesCapturesPromotionsChecks) {
  EXPECT_EQ(san_of("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "g1f3"), "Nf3");
  EXPECT_EQ(san_of("rnbqkbnr/ppp1pppp/8/3p4/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2", "e4d5"), "exd5");
  EXPECT_EQ(san_of("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", "b7b8q"), "b8=Q+");
  EXPECT_EQ(san_of("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1", "b7b8n"), "b8=N");
  EXPECT_EQ(san_of("6k1/5ppp/8/8/8/8/8/R5K1 w - - 0 1", "a1a8"), "Ra8#");
  EXPECT_EQ(san_of("4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2", "e5d6"), "exd6");
}

TEST(Notation, SanDisambiguation) {
  EXPECT_EQ(san_of("4k3/8/8/8/8/8/4K3/R6R w - - 0 1", "a1d1"), "Rad1");
  EXPECT_EQ(san_of("4k3/8/8/8/8/8/8/R3K2R w - - 0 1", "a1d1"), "Rd1");  // h1 is blocked by the king
  EXPECT_EQ(san_of("4k3/8/8/8/8/R7/8/R3K3 w - - 0 1", "a1a2"), "R1a2");
  EXPECT_EQ(san_of("6k1/8/8/8/Q6Q/8/8/Q3K3 w - - 0 1", "a4d4"), "Qa4d4");  // file and rank both shared
  EXPECT_EQ(san_of("6k1/8/8/8/Q6Q/8/8/Q3K3 w - - 0 1", "a4d1"), "Q4d1");
}

TEST(Notation, ParseSanVariants) {
  const Position pos = pos_of("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  EXPECT_EQ(to_uci(*parse_san(pos, "O-O")), "e1h1");
  EXPECT_EQ(to_uci(*parse_san(pos, "0-0-0")), "e1a1");
  EXPECT_EQ(to_uci(*parse_san(pos, "Rb1")), "a1b1");
  EXPECT_EQ(to_uci(*parse_san(pos, "Ra1b1")), "a1b1");  // over-disambiguated is fine
  EXPECT_EQ(to_uci(*parse_san(pos, "Rf1")), "h1f1");
  EXPECT_EQ(parse_san(pos, "Qd1").status().code(), absl::StatusCode::kInvalidArgument);  // no queen
  EXPECT_FALSE(parse_san(pos, "").ok());
  EXPECT_FALSE(parse_san(pos, "Z").ok());
  EXPECT_FALSE(parse_san(pos, "e9").ok());
  const Position promo = pos_of("4k3/1P6/8/8/8/8/8/4K3 w - - 0 1");
  EXPECT_EQ(to_uci(*parse_san(promo, "b8=N")), "b7b8n");
  EXPECT_EQ(to_uci(*parse_san(promo, "b8Q+")), "b7b8q");
  EXPECT_FALSE(parse_san(promo, "b8").ok());  // promotion piece missing
}

TEST(Notation, AmbiguousSanIsAnError) {
  const Position pos = pos_of("4k3/8/8/8/8/8/4K3/R6R w - - 0 1");
  absl::StatusOr<Move> m = parse_san(pos, "Rd1");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(std::string(m.status().message()).find("ambiguous"), std::string::npos);
}

TEST(Notation, UciErrors) {
  const Position pos = pos_of("r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1");
  for (const char* bad : {"", "e2", "e2e4", "e1e3", "zz99", "a1a2x", "e1h1q"})
    EXPECT_FALSE(parse_uci(pos, bad).ok()) << bad;
  EXPECT_NE(std::string(parse_uci(pos, "zz99").status().message()).find("not UCI"), std::string::npos);
  EXPECT_NE(std::string(parse_uci(pos, "e1e3").status().message()).find("not legal"), std::string::npos);
  EXPECT_EQ(to_uci(Move::none()), "0000");
}

}  // namespace
}  // namespace c960
