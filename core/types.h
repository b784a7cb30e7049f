// Basic chess types shared by every part of c960: colours, pieces, squares, moves.
#pragma once

#include <cassert>
#include <cstdint>

namespace c960 {

using Bitboard = uint64_t;
using Key = uint64_t;

enum Color : uint8_t { WHITE, BLACK, COLOR_NB = 2 };

enum PieceType : uint8_t { NO_PIECE_TYPE, PAWN, KNIGHT, BISHOP, ROOK, QUEEN, KING, ALL_PIECES = 0, PIECE_TYPE_NB = 8 };

// Colour in bit 3, type in bits 0..2, so type_of/color_of are one mask or shift.
enum Piece : uint8_t {
  NO_PIECE,
  W_PAWN = PAWN,
  W_KNIGHT,
  W_BISHOP,
  W_ROOK,
  W_QUEEN,
  W_KING,
  B_PAWN = PAWN + 8,
  B_KNIGHT,
  B_BISHOP,
  B_ROOK,
  B_QUEEN,
  B_KING,
  PIECE_NB = 16
};

// clang-format off
enum Square : uint8_t {
  SQ_A1, SQ_B1, SQ_C1, SQ_D1, SQ_E1, SQ_F1, SQ_G1, SQ_H1,
  SQ_A2, SQ_B2, SQ_C2, SQ_D2, SQ_E2, SQ_F2, SQ_G2, SQ_H2,
  SQ_A3, SQ_B3, SQ_C3, SQ_D3, SQ_E3, SQ_F3, SQ_G3, SQ_H3,
  SQ_A4, SQ_B4, SQ_C4, SQ_D4, SQ_E4, SQ_F4, SQ_G4, SQ_H4,
  SQ_A5, SQ_B5, SQ_C5, SQ_D5, SQ_E5, SQ_F5, SQ_G5, SQ_H5,
  SQ_A6, SQ_B6, SQ_C6, SQ_D6, SQ_E6, SQ_F6, SQ_G6, SQ_H6,
  SQ_A7, SQ_B7, SQ_C7, SQ_D7, SQ_E7, SQ_F7, SQ_G7, SQ_H7,
  SQ_A8, SQ_B8, SQ_C8, SQ_D8, SQ_E8, SQ_F8, SQ_G8, SQ_H8,
  SQ_NONE,
  SQUARE_NB = 64
};
// clang-format on

enum File : uint8_t { FILE_A, FILE_B, FILE_C, FILE_D, FILE_E, FILE_F, FILE_G, FILE_H, FILE_NB };
enum Rank : uint8_t { RANK_1, RANK_2, RANK_3, RANK_4, RANK_5, RANK_6, RANK_7, RANK_8, RANK_NB };

enum Direction : int8_t {
  NORTH = 8,
  EAST = 1,
  SOUTH = -NORTH,
  WEST = -EAST,
  NORTH_EAST = NORTH + EAST,
  SOUTH_EAST = SOUTH + EAST,
  SOUTH_WEST = SOUTH + WEST,
  NORTH_WEST = NORTH + WEST
};

enum CastlingSide : uint8_t { KING_SIDE, QUEEN_SIDE, CASTLING_SIDE_NB };

// One bit per (colour, side); index = 2 * colour + side, as castling_index() computes.
enum CastlingRights : uint8_t {
  NO_CASTLING = 0,
  WHITE_OO = 1,
  WHITE_OOO = 2,
  BLACK_OO = 4,
  BLACK_OOO = 8,
  WHITE_CASTLING = WHITE_OO | WHITE_OOO,
  BLACK_CASTLING = BLACK_OO | BLACK_OOO,
  ANY_CASTLING = WHITE_CASTLING | BLACK_CASTLING,
  CASTLING_RIGHT_NB = 16
};

constexpr Color operator~(Color c) { return Color(c ^ BLACK); }

constexpr Square make_square(File f, Rank r) { return Square((r << 3) + f); }
constexpr File file_of(Square s) { return File(s & 7); }
constexpr Rank rank_of(Square s) { return Rank(s >> 3); }
constexpr bool is_ok(Square s) { return s <= SQ_H8; }
constexpr Square flip_rank(Square s) { return Square(s ^ SQ_A8); }
// The square as seen from c's side: rank 1 is c's home rank.
constexpr Square relative_square(Color c, Square s) { return Square(s ^ (c * 56)); }
constexpr Rank relative_rank(Color c, Rank r) { return Rank(r ^ (c * 7)); }
constexpr Rank relative_rank(Color c, Square s) { return relative_rank(c, rank_of(s)); }
constexpr Direction pawn_push(Color c) { return c == WHITE ? NORTH : SOUTH; }

constexpr Square operator+(Square s, Direction d) { return Square(int(s) + int(d)); }
constexpr Square operator-(Square s, Direction d) { return Square(int(s) - int(d)); }
constexpr Square& operator++(Square& s) { return s = Square(int(s) + 1); }
constexpr File& operator++(File& f) { return f = File(int(f) + 1); }
constexpr Rank& operator++(Rank& r) { return r = Rank(int(r) + 1); }
constexpr Rank& operator--(Rank& r) { return r = Rank(int(r) - 1); }
constexpr PieceType& operator++(PieceType& p) { return p = PieceType(int(p) + 1); }

constexpr Piece make_piece(Color c, PieceType pt) { return Piece((c << 3) + pt); }
constexpr PieceType type_of(Piece p) { return PieceType(p & 7); }
constexpr Color color_of(Piece p) { return Color(p >> 3); }

constexpr CastlingRights operator|(CastlingRights a, CastlingRights b) { return CastlingRights(int(a) | int(b)); }
constexpr CastlingRights operator&(CastlingRights a, CastlingRights b) { return CastlingRights(int(a) & int(b)); }
constexpr CastlingRights operator~(CastlingRights a) { return CastlingRights(~int(a) & ANY_CASTLING); }
constexpr CastlingRights& operator|=(CastlingRights& a, CastlingRights b) { return a = a | b; }
constexpr CastlingRights& operator&=(CastlingRights& a, CastlingRights b) { return a = a & b; }
constexpr int castling_index(Color c, CastlingSide s) { return 2 * c + s; }
constexpr CastlingRights castling_right(Color c, CastlingSide s) { return CastlingRights(1 << castling_index(c, s)); }

// A move in 16 bits:
//   bits  0- 5  destination square
//   bits  6-11  origin square
//   bits 12-13  promotion piece type - KNIGHT (only read for PROMOTION)
//   bits 14-15  kind: NORMAL, PROMOTION, EN_PASSANT, CASTLING
// A castle is encoded as "king takes own rook": origin is the king's square, destination the
// castling rook's square. That one encoding covers every Chess960 case, including those where
// king or rook do not move.
// Move::none() (a1a1) and Move::null() (b1b1) can never be legal: no legal move has from == to.
enum MoveKind : uint16_t { NORMAL = 0, PROMOTION = 1 << 14, EN_PASSANT = 2 << 14, CASTLING = 3 << 14 };

class Move {
 public:
  Move() = default;
  constexpr explicit Move(uint16_t d) : data_(d) {}
  constexpr Move(Square from, Square to) : data_(uint16_t((from << 6) + to)) {}

  template <MoveKind K>
  static constexpr Move make(Square from, Square to, PieceType promo = KNIGHT) {
    return Move(uint16_t(K + ((promo - KNIGHT) << 12) + (from << 6) + to));
  }
  static constexpr Move none() { return Move(0); }
  static constexpr Move null() { return Move(uint16_t((SQ_B1 << 6) + SQ_B1)); }

  constexpr Square from_sq() const { return Square((data_ >> 6) & 0x3F); }
  constexpr Square to_sq() const { return Square(data_ & 0x3F); }
  constexpr MoveKind kind() const { return MoveKind(data_ & (3 << 14)); }
  constexpr PieceType promotion_type() const { return PieceType(((data_ >> 12) & 3) + KNIGHT); }
  constexpr bool is_ok() const { return from_sq() != to_sq(); }
  constexpr uint16_t raw() const { return data_; }

  constexpr bool operator==(const Move& m) const { return data_ == m.data_; }
  constexpr bool operator!=(const Move& m) const { return data_ != m.data_; }
  constexpr explicit operator bool() const { return data_ != 0; }

 private:
  uint16_t data_ = 0;
};

}  // namespace c960
