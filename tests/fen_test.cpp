#include <string>
#include <vector>

#include "core/perft.h"
#include "core/startpos.h"
#include "core/suite.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

void expect_round_trip(const std::string& fen) {
  const Position pos = test::pos_of(fen);
  for (FenDialect d : {FenDialect::kXFen, FenDialect::kShredder}) {
    const std::string out = pos.fen(d);
    absl::StatusOr<Position> again = Position::from_fen(out);
    ASSERT_TRUE(again.ok()) << out << ": " << again.status().message();
    EXPECT_EQ(again->fen(d), out);
    EXPECT_EQ(again->fen(FenDialect::kXFen), pos.fen(FenDialect::kXFen));
    EXPECT_EQ(again->key(), pos.key());
  }
}

TEST(Fen, RoundTripsInEveryDialect_StartPositions) {
  for (int n = 0; n < kStartPositions; ++n) {
    expect_round_trip(*startpos_fen(n));
    // Plain, X-FEN and Shredder input give the same position.
    EXPECT_EQ(test::pos_of(*startpos_fen(n)).key(), test::pos_of(*startpos_fen(n, true)).key());
    EXPECT_EQ(test::pos_of(*startpos_fen(n, true)).fen(), *startpos_fen(n));
  }
}

TEST(Fen, RoundTripsInEveryDialect_Suites) {
  for (const char* file :
       {"chess960_midgame.epd", "chess960_edge_cases.epd", "shakmaty_tricky.perft", "standard.epd"}) {
    absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(test::read_data(file));
    ASSERT_TRUE(cases.ok());
    for (const PerftCase& c : *cases) expect_round_trip(c.fen);
  }
}

TEST(Fen, ExactOutput) {
  const std::string kiwi = "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1";
  EXPECT_EQ(test::pos_of(kiwi).fen(), kiwi);
  EXPECT_EQ(test::pos_of(kiwi).fen(FenDialect::kShredder),
            "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w HAha - 0 1");
  // X-FEN: a file letter where the castling rook is not the outermost one on its side.
  const Position p = test::pos_of("4k3/8/8/8/8/8/8/RR2K2R w BH - 0 1");
  EXPECT_EQ(p.fen(), "4k3/8/8/8/8/8/8/RR2K2R w KB - 0 1");
  EXPECT_EQ(p.fen(FenDialect::kShredder), "4k3/8/8/8/8/8/8/RR2K2R w HB - 0 1");
  // Four fields: clocks default to 0 1.
  EXPECT_EQ(test::pos_of("4k3/8/8/8/8/8/8/4K3 b - -").fen(), "4k3/8/8/8/8/8/8/4K3 b - - 0 1");
}

// Issue 21: Stockfish takes a FEN cut short after the side to move; so does c960, each missing
// field from the end defaulting (castling -, en passant -, halfmove 0, fullmove 1).
TEST(Fen, FieldsAfterTheSideToMoveMayBeLeftOff) {
  const std::string sp0 = "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR";
  EXPECT_EQ(test::pos_of(sp0 + " w KQkq").fen(), sp0 + " w KQkq - 0 1");  // 3 fields
  EXPECT_EQ(test::pos_of(sp0 + " w KQkq").castling_rights(), ANY_CASTLING);
  EXPECT_EQ(test::pos_of(sp0 + " b").fen(), sp0 + " b - - 0 1");  // 2 fields: no castling rights
  EXPECT_EQ(test::pos_of(sp0 + " b").castling_rights(), NO_CASTLING);
  EXPECT_EQ(test::pos_of(sp0 + " w HFhf - 7").fen(), sp0 + " w KQkq - 7 1");  // 5: fullmove 1
  EXPECT_EQ(test::pos_of(sp0 + " w HFhf - 7").rule50(), 7);
  // A 3-field position counts as the full FEN does.
  EXPECT_EQ(perft(test::pos_of(sp0 + " w KQkq"), 3), perft(test::pos_of(sp0 + " w KQkq - 0 1"), 3));
  // Given fields are still checked.
  EXPECT_FALSE(Position::from_fen(sp0 + " w KQkx").ok());
  EXPECT_FALSE(Position::from_fen(sp0 + " w KQkq - x").ok());
}

TEST(Fen, EnPassantIsKeptOnlyWhenAPawnCanTake) {
  EXPECT_EQ(test::pos_of("4k3/8/8/8/4P3/8/8/4K3 b - e3 0 1").ep_square(), SQ_NONE);
  EXPECT_EQ(test::pos_of("4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1").ep_square(), SQ_E3);
  EXPECT_EQ(test::pos_of("4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1").fen(), "4k3/8/8/8/3pP3/8/8/4K3 b - e3 0 1");
}

struct BadFen {
  const char* fen;
  const char* field;  // the field the error must name
};

TEST(Fen, BadInputIsRejectedWithTheFieldNamed) {
  const BadFen cases[] = {
      {"", "field count"},
      {"4k3/8/8/8/8/8/8/4K3", "field count"},  // placement alone
      {"4k3/8/8/8/8/8/8/4K3 w - - 0 1 1", "field count"},
      {"8/8/8/8/8/8/8/8 w - - 0", "piece placement"},  // 5 fields: fullmove 1, but no kings
      {"4k3/8/8/8/8/8/8/4K3 w - - 0 1 extra", "field count"},
      {"4k3/8/8/8/8/8/4K3 w - - 0 1", "piece placement"},      // 7 ranks
      {"4k3/8/8/8/8/8/8/4K3/8 w - - 0 1", "piece placement"},  // 9 ranks
      {"4k3/8/8/8/8/8/8/4K4 w - - 0 1", "piece placement"},    // 9 squares
      {"4k3/8/8/8/8/8/8/4K2 w - - 0 1", "piece placement"},    // 7 squares
      {"4k3/8/8/8/8/8/8/4K2X w - - 0 1", "piece placement"},   // bad letter
      {"4k3/8/8/8/8/8/8/4K02 w - - 0 1", "piece placement"},   // digit 0
      {"4k3/8/8/8/8/8/8/4K9 w - - 0 1", "piece placement"},    // digit 9
      {"8/8/8/8/8/8/8/4K3 w - - 0 1", "piece placement"},      // no black king
      {"4k3/8/8/8/8/8/8/4KK2 w - - 0 1", "piece placement"},   // two white kings
      {"4k3/8/8/8/8/8/8/P3K3 w - - 0 1", "piece placement"},   // pawn on rank 1
      {"3pk3/8/8/8/8/8/8/4K3 w - - 0 1", "piece placement"},   // pawn on rank 8
      {"4k3/8/8/8/8/8/8/4K3 x - - 0 1", "side to move"},
      {"4k3/8/8/8/8/8/8/4K3 W - - 0 1", "side to move"},
      {"4k3/4R3/8/8/8/8/8/4K3 w - - 0 1", "side to move"},  // black in check, white to move
      {"4k3/8/8/8/8/8/8/4K3 w K - 0 1", "castling"},        // no rook
      {"4k3/8/8/8/8/8/8/R3K3 w K - 0 1", "castling"},       // rook on the wrong side
      {"4k3/8/8/8/8/8/8/4K2R w A - 0 1", "castling"},       // no rook on a1
      {"4k3/8/8/8/8/8/4K3/7R w H - 0 1", "castling"},       // king off its rank
      {"4k3/8/8/8/8/8/8/4K2R w KH - 0 1", "castling"},      // same right twice
      {"4k3/8/8/8/8/8/8/4K2R w X - 0 1", "castling"},
      {"4k3/8/8/8/8/8/8/4K2R w KQkqK - 0 1", "castling"},
      {"4k3/8/8/8/8/8/8/4K3 w - e9 0 1", "en passant"},
      {"4k3/8/8/8/8/8/8/4K3 w - e3 0 1", "en passant"},      // wrong rank for white to move
      {"4k3/8/8/8/8/8/8/4K3 w - e6 0 1", "en passant"},      // no pawn on e5
      {"4k3/8/4p3/4p3/8/8/8/4K3 w - e6 0 1", "en passant"},  // e6 not empty
      {"4k3/8/8/8/8/8/8/4K3 w - - -1 1", "halfmove clock"},
      {"4k3/8/8/8/8/8/8/4K3 w - - x 1", "halfmove clock"},
      {"4k3/8/8/8/8/8/8/4K3 w - - 99999999999 1", "halfmove clock"},
      {"4k3/8/8/8/8/8/8/4K3 w - - 0 0", "fullmove number"},
      {"4k3/8/8/8/8/8/8/4K3 w - - 0 1x", "fullmove number"},
  };
  for (const BadFen& c : cases) {
    absl::StatusOr<Position> p = Position::from_fen(c.fen);
    ASSERT_FALSE(p.ok()) << "accepted: " << c.fen;
    EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(std::string(p.status().message()).find(c.field), std::string::npos)
        << c.fen << " -> " << p.status().message() << " (expected the field '" << c.field << "')";
  }
}

TEST(Fen, GarbageNeverCrashes) {
  // Mutations of a valid FEN: every one is either accepted (and then round-trips) or rejected.
  const std::string base = "r1k1r2q/p1ppp1pp/8/8/8/8/P1PPP1PP/R1K1R2Q w KQkq - 0 1";
  const std::string alphabet = "pnbrqkPNBRQK12345678/ -wbKQkqABCDEFGHabcdefgh09x";
  uint64_t seed = 12345;
  for (int i = 0; i < 20000; ++i) {
    std::string s = base;
    for (int k = 0; k < 1 + i % 4; ++k) {
      seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
      const size_t at = (seed >> 33) % s.size();
      const char ch = alphabet[(seed >> 17) % alphabet.size()];
      switch ((seed >> 7) % 3) {
        case 0: s[at] = ch; break;
        case 1: s.insert(s.begin() + at, ch); break;
        default: s.erase(at, 1); break;
      }
    }
    absl::StatusOr<Position> p = Position::from_fen(s);
    if (p.ok()) {
      EXPECT_EQ(p->key(), p->compute_key()) << s;
      EXPECT_TRUE(Position::from_fen(p->fen()).ok()) << s;
    }
  }
}

}  // namespace
}  // namespace c960
