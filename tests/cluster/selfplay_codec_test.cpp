// The coding of stored games' moves (coordinator/selfplay_codec.h): random legal games from
// every start position and from positions made for the special moves come back as they went in,
// in little more than the information their moves carry; damaged bytes are refused, whatever
// they are, and never decode to something that does not encode back to them.
#include "coordinator/selfplay_codec.h"

#include <cmath>
#include <gtest/gtest.h>

#include "absl/strings/escaping.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/prng.h"
#include "core/startpos.h"

namespace c960::cluster {
namespace {

Position position(const std::string& fen) {
  absl::StatusOr<Position> p = Position::from_fen(fen);
  EXPECT_TRUE(p.ok()) << fen << ": " << p.status();
  return p.ok() ? *p : Position();
}

Position start_position(int sp) { return position(*startpos_fen(sp, true)); }

std::vector<Move> uci_moves(const Position& start, const std::vector<std::string>& ucis) {
  Position pos = start;
  std::vector<StateInfo> states(ucis.size());
  std::vector<Move> out;
  for (size_t i = 0; i < ucis.size(); ++i) {
    absl::StatusOr<Move> m = parse_uci(pos, ucis[i]);
    EXPECT_TRUE(m.ok()) << m.status();
    if (!m.ok()) return out;
    out.push_back(*m);
    pos.do_move(*m, states[i]);
  }
  return out;
}

// What the random games went through, so that the test knows it covered the special cases.
struct Seen {
  int castling = 0, promotion = 0, en_passant = 0, forced = 0, mates = 0;
  double bits = 0;  // the information the moves carry: the sum of log2(legal moves)
};

// Uniformly random legal moves until no move is legal or `max_plies`.
std::vector<Move> random_game(const Position& start, Prng& rng, int max_plies, Seen* seen) {
  Position pos = start;
  std::vector<StateInfo> states = std::vector<StateInfo>(size_t(max_plies));
  std::vector<Move> moves;
  seen->bits = 0;
  for (int i = 0; i < max_plies; ++i) {
    MoveList legal;
    generate_legal(pos, legal);
    if (legal.size() == 0) {
      seen->mates += pos.in_check();
      break;
    }
    seen->bits += std::log2(double(legal.size()));
    seen->forced += legal.size() == 1;
    const Move m = legal.moves[rng.below(uint64_t(legal.size()))];
    seen->castling += m.kind() == CASTLING;
    seen->promotion += m.kind() == PROMOTION;
    seen->en_passant += m.kind() == EN_PASSANT;
    moves.push_back(m);
    pos.do_move(m, states[size_t(i)]);
  }
  return moves;
}

// The bytes of the ply count.
size_t count_bytes(size_t plies) { return plies < 128 ? 1 : plies < 16384 ? 2 : 3; }

void expect_round_trip(const Position& start, const std::vector<Move>& moves, const Seen& seen) {
  absl::StatusOr<std::string> coded = encode_moves(start, moves);
  ASSERT_TRUE(coded.ok()) << coded.status();
  absl::StatusOr<std::vector<Move>> back = decode_moves(start, *coded, int(moves.size()));
  ASSERT_TRUE(back.ok()) << start.fen() << ": " << back.status();
  EXPECT_EQ(*back, moves) << start.fen();
  // Near the information bound: a chunk of 128 bits wastes less than a digit, the last one a byte.
  const double rank_bytes = double(coded->size() - count_bytes(moves.size()));
  EXPECT_GE(rank_bytes, std::ceil(seen.bits / 8 - 1e-9)) << start.fen();
  EXPECT_LE(rank_bytes, std::ceil(seen.bits / 8) + 1 + std::floor(seen.bits / 119)) << start.fen();
  if (!moves.empty()) {
    EXPECT_FALSE(decode_moves(start, *coded, int(moves.size()) - 1).ok()) << "beyond max plies";
  }
}

TEST(MoveCodingTest, RandomGamesFromEveryStartPositionComeBack) {
  Prng rng(7);
  Seen all;
  double bits = 0, bytes = 0, plies = 0;
  for (int sp = 0; sp < 960; ++sp) {
    const Position start = start_position(sp);
    Seen seen;
    const std::vector<Move> moves = random_game(start, rng, 400, &seen);
    expect_round_trip(start, moves, seen);
    all.castling += seen.castling;
    all.promotion += seen.promotion;
    all.en_passant += seen.en_passant;
    all.forced += seen.forced;
    all.mates += seen.mates;
    bits += seen.bits;
    plies += double(moves.size());
    bytes += double(encode_moves(start, moves)->size());
  }
  // Chess960 castling (king takes rook), promotions, en passant and forced moves all came by.
  EXPECT_GT(all.castling, 0);
  EXPECT_GT(all.promotion, 0);
  EXPECT_GT(all.en_passant, 0);
  EXPECT_GT(all.forced, 0);
  EXPECT_GT(all.mates, 0);
  // About 5 bits a ply, not 16.
  EXPECT_LT(bytes * 8 / plies, 6.0) << bits / plies << " bits of information a ply";
}

TEST(MoveCodingTest, GamesFromPositionsOfTheSpecialMovesComeBack) {
  const char* fens[] = {
      "4k3/1P6/8/8/8/8/6p1/4K3 w - - 0 1",                              // promotions both ways
      "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3",  // en passant
      "1r2k1r1/pppppppp/8/8/8/8/PPPPPPPP/1R2K1R1 w GBgb - 0 1",         // Chess960 castling
      "rk5r/8/8/8/8/8/8/RK5R w HAha - 0 1",                             // castling, king on b
      "k7/8/8/8/8/8/1r6/K7 w - - 0 1",                                  // one legal move
      "7k/8/8/8/8/8/8/4K3 w - - 0 1",                                   // kings alone
  };
  Prng rng(11);
  for (const char* fen : fens) {
    const Position start = position(fen);
    for (int game = 0; game < 50; ++game) {
      Seen seen;
      expect_round_trip(start, random_game(start, rng, 1 + int(rng.below(120)), &seen), seen);
    }
  }
}

TEST(MoveCodingTest, KnownGamesTakeTheBytesWorkedOutByHand) {
  const Position classical = start_position(518);
  // No moves: the count alone.
  EXPECT_EQ(*encode_moves(classical, {}), std::string("\x00", 1));
  // 1. e4: 1 ply, and rank 13 of the 20 moves by code (b1a3 b1c3 g1f3 g1h3 a2a3 a2a4 ... e2e3
  // e2e4): the chunk's radix is 20, so one byte.
  EXPECT_EQ(*encode_moves(classical, uci_moves(classical, {"e2e4"})), "\x01\x0d");
  // 1. e4 e5: black's e7e5 is rank 8 of 20 (the a..d pawns' eight moves first); 13 + 8 * 20 =
  // 173 < 400: two bytes.
  EXPECT_EQ(*encode_moves(classical, uci_moves(classical, {"e2e4", "e7e5"})), std::string("\x02\xad\x00", 3));
  // A forced move costs nothing: Kxb2 is White's only move.
  const Position forced = position("k7/8/8/8/8/8/1r6/K7 w - - 0 1");
  EXPECT_EQ(*encode_moves(forced, uci_moves(forced, {"a1b2"})), "\x01");
  // 128 plies take two bytes of count.
  Prng rng(3);
  Seen seen;
  const std::vector<Move> long_game = random_game(classical, rng, 128, &seen);
  ASSERT_EQ(long_game.size(), 128u);
  EXPECT_EQ(encode_moves(classical, long_game)->substr(0, 2), "\x80\x01");
}

TEST(MoveCodingTest, MovesThatAreNotLegalAreNotEncoded) {
  const Position classical = start_position(518);
  const Move e2e5 = Move(SQ_E2, SQ_E5);
  EXPECT_EQ(encode_moves(classical, {e2e5}).status().code(), absl::StatusCode::kInternal);
  std::vector<Move> two = uci_moves(classical, {"e2e4"});
  two.push_back(two[0]);  // e2e4 again, for Black
  EXPECT_EQ(encode_moves(classical, two).status().code(), absl::StatusCode::kInternal);
}

TEST(MoveCodingTest, DamagedBytesAreRefused) {
  const Position classical = start_position(518);
  const auto refused = [&](const std::string& bytes, int max_plies = 100, const Position* start = nullptr) {
    absl::StatusOr<std::vector<Move>> m = decode_moves(start ? *start : classical, bytes, max_plies);
    EXPECT_EQ(m.status().code(), absl::StatusCode::kInternal) << absl::CEscape(bytes);
    return std::string(m.status().message());
  };
  EXPECT_NE(refused("").find("ply count"), std::string::npos);
  EXPECT_NE(refused("\x80").find("ply count"), std::string::npos);
  EXPECT_NE(refused(std::string("\x81\x00", 2)).find("superfluous"), std::string::npos);
  EXPECT_NE(refused("\xff\xff\xff\x01").find("ply count"), std::string::npos);
  EXPECT_NE(refused("\x65", 100).find("101 plies"), std::string::npos);                      // the job's limit
  EXPECT_NE(refused("\x01").find("end before"), std::string::npos);                          // too few bytes
  EXPECT_NE(refused("\x02\x0d").find("last chunk"), std::string::npos);                      // a byte short
  EXPECT_NE(refused("\x01\x14").find("more than"), std::string::npos);                       // rank 20 of 20
  EXPECT_NE(refused(std::string("\x01\x0d\x00", 3)).find("last chunk"), std::string::npos);  // a byte too many
  EXPECT_NE(refused(std::string("\x00\x00", 2)).find("left over"), std::string::npos);
  const Position mated = position("k7/1Q6/1K6/8/8/8/8/8 b - - 0 1");
  EXPECT_NE(refused("\x01", 100, &mated).find("no legal move"), std::string::npos);
  // A game of several chunks, cut short or lengthened by a byte.
  Prng rng(5);
  Seen seen;
  const std::vector<Move> moves = random_game(classical, rng, 150, &seen);
  const std::string good = *encode_moves(classical, moves);
  ASSERT_GT(good.size(), 40u) << "several chunks";
  ASSERT_TRUE(decode_moves(classical, good, 150).ok());
  refused(good.substr(0, good.size() - 1), 150);
  refused(good + '\x00', 150);
  refused(good + '\x01', 150);
  // Schemas 4-5: whole codes only.
  EXPECT_FALSE(decode_move_codes("abc").ok());
  EXPECT_EQ(*decode_move_codes(encode_move_codes(moves)), moves);
}

// Random bytes, and valid codings with a byte changed, cut or added: an error or a game of
// legal moves that encodes back to the same bytes; never a crash (the sanitizer build runs this).
TEST(MoveCodingTest, AnyBytesDecodeToAnErrorOrToTheGameTheyEncode) {
  Prng rng(13);
  std::vector<Position> starts;
  for (int sp : {0, 518, 959, 100}) starts.push_back(start_position(sp));
  starts.push_back(position("4k3/1P6/8/8/8/8/6p1/4K3 w - - 0 1"));
  starts.push_back(position("k7/8/8/8/8/8/1r6/K7 w - - 0 1"));
  int decoded = 0;
  const auto check = [&](const Position& start, const std::string& bytes, int max_plies) {
    absl::StatusOr<std::vector<Move>> m = decode_moves(start, bytes, max_plies);
    if (!m.ok()) {
      EXPECT_EQ(m.status().code(), absl::StatusCode::kInternal);
      return;
    }
    ++decoded;
    EXPECT_LE(m->size(), size_t(max_plies));
    absl::StatusOr<std::string> again = encode_moves(start, *m);
    ASSERT_TRUE(again.ok()) << again.status();
    EXPECT_EQ(*again, bytes) << "not canonical: " << absl::CEscape(bytes);
  };
  for (int i = 0; i < 20000; ++i) {
    const Position& start = starts[rng.below(starts.size())];
    std::string bytes(rng.below(40), '\0');
    for (char& c : bytes) c = char(rng.rand64());
    // A small count now and then, so that some bytes decode.
    if (!bytes.empty() && rng.below(2)) bytes[0] = char(rng.below(24));
    check(start, bytes, int(rng.below(200)));
  }
  for (int i = 0; i < 2000; ++i) {
    const Position& start = starts[rng.below(starts.size())];
    Seen seen;
    std::string bytes = *encode_moves(start, random_game(start, rng, int(rng.below(160)), &seen));
    const size_t at = rng.below(bytes.size() + 1);
    switch (rng.below(3)) {
      case 0:
        if (at < bytes.size()) bytes[at] = char(rng.rand64());
        break;
      case 1: bytes.erase(at, 1); break;
      default: bytes.insert(at, 1, char(rng.rand64())); break;
    }
    check(start, bytes, 200);
  }
  EXPECT_GT(decoded, 100) << "the fuzzing reached past the count";
}

}  // namespace
}  // namespace c960::cluster
