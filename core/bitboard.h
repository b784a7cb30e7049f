// Bitboards: square sets as 64-bit integers, attack tables and slider attacks.
#pragma once

#include <bit>

#include "core/types.h"

#if defined(__BMI2__) && !defined(C960_NO_PEXT)
#include <immintrin.h>
#define C960_HAS_PEXT 1
#else
#define C960_HAS_PEXT 0
#endif

namespace c960 {

constexpr Bitboard FileABB = 0x0101010101010101ULL;
constexpr Bitboard Rank1BB = 0xFFULL;
constexpr Bitboard file_bb(File f) { return FileABB << f; }
constexpr Bitboard rank_bb(Rank r) { return Rank1BB << (8 * r); }
constexpr Bitboard file_bb(Square s) { return file_bb(file_of(s)); }
constexpr Bitboard rank_bb(Square s) { return rank_bb(rank_of(s)); }
constexpr Bitboard square_bb(Square s) { return Bitboard(1) << s; }
constexpr Bitboard DarkSquares = 0xAA55AA55AA55AA55ULL;

constexpr bool more_than_one(Bitboard b) { return b & (b - 1); }
constexpr int popcount(Bitboard b) { return std::popcount(b); }
inline Square lsb(Bitboard b) {
  assert(b);
  return Square(std::countr_zero(b));
}
inline Square msb(Bitboard b) {
  assert(b);
  return Square(63 - std::countl_zero(b));
}
inline Square pop_lsb(Bitboard& b) {
  const Square s = lsb(b);
  b &= b - 1;
  return s;
}

template <Direction D>
constexpr Bitboard shift(Bitboard b) {
  constexpr Bitboard NotA = ~file_bb(FILE_A), NotH = ~file_bb(FILE_H);
  if constexpr (D == NORTH)
    return b << 8;
  else if constexpr (D == SOUTH)
    return b >> 8;
  else if constexpr (D == EAST)
    return (b & NotH) << 1;
  else if constexpr (D == WEST)
    return (b & NotA) >> 1;
  else if constexpr (D == NORTH_EAST)
    return (b & NotH) << 9;
  else if constexpr (D == NORTH_WEST)
    return (b & NotA) << 7;
  else if constexpr (D == SOUTH_EAST)
    return (b & NotH) >> 7;
  else
    return (b & NotA) >> 9;
}

template <Color C>
constexpr Bitboard pawn_attacks_bb(Bitboard b) {
  return C == WHITE ? shift<NORTH_WEST>(b) | shift<NORTH_EAST>(b) : shift<SOUTH_WEST>(b) | shift<SOUTH_EAST>(b);
}

namespace detail {
// Attacks of a step piece from s, built from the listed square steps without wrapping.
constexpr Bitboard step_attacks(Square s, const int (*steps)[2], int n) {
  Bitboard b = 0;
  for (int i = 0; i < n; ++i) {
    const int f = file_of(s) + steps[i][0], r = rank_of(s) + steps[i][1];
    if (f >= 0 && f < 8 && r >= 0 && r < 8) b |= square_bb(make_square(File(f), Rank(r)));
  }
  return b;
}
constexpr int KnightSteps[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
constexpr int KingSteps[8][2] = {{0, 1}, {1, 1}, {1, 0}, {1, -1}, {0, -1}, {-1, -1}, {-1, 0}, {-1, 1}};

struct StepTables {
  Bitboard knight[SQUARE_NB]{}, king[SQUARE_NB]{}, pawn[COLOR_NB][SQUARE_NB]{};
  constexpr StepTables() {
    for (int i = 0; i < SQUARE_NB; ++i) {
      const Square s = Square(i);
      knight[i] = step_attacks(s, KnightSteps, 8);
      king[i] = step_attacks(s, KingSteps, 8);
      pawn[WHITE][i] = pawn_attacks_bb<WHITE>(square_bb(s));
      pawn[BLACK][i] = pawn_attacks_bb<BLACK>(square_bb(s));
    }
  }
};
inline constexpr StepTables Steps{};
}  // namespace detail

// Slider attack lookup. Index is pext(occupancy, mask) where BMI2 is available, otherwise the
// magic multiply; both tables are always built so that tests can compare them.
struct Magic {
  Bitboard mask;
  Bitboard magic;
  Bitboard* attacks;       // magic-indexed table
  Bitboard* pext_attacks;  // pext-indexed table
  unsigned shift;

  unsigned magic_index(Bitboard occ) const { return unsigned(((occ & mask) * magic) >> shift); }
#if C960_HAS_PEXT
  unsigned pext_index(Bitboard occ) const { return unsigned(_pext_u64(occ, mask)); }
#endif
};

extern Magic RookMagics[SQUARE_NB];
extern Magic BishopMagics[SQUARE_NB];

#if C960_HAS_PEXT
// The hot path's view of the PEXT tables: just what a lookup reads, 16 bytes a square.
struct PextEntry {
  Bitboard mask;
  const Bitboard* attacks;
};
extern PextEntry RookPext[SQUARE_NB];
extern PextEntry BishopPext[SQUARE_NB];
#endif
extern Bitboard BetweenBB[SQUARE_NB][SQUARE_NB];
extern Bitboard RookRays[SQUARE_NB];    // rook attacks on an empty board
extern Bitboard BishopRays[SQUARE_NB];  // bishop attacks on an empty board
extern Bitboard LineBB[SQUARE_NB][SQUARE_NB];

constexpr Bitboard knight_attacks(Square s) { return detail::Steps.knight[s]; }
constexpr Bitboard king_attacks(Square s) { return detail::Steps.king[s]; }
constexpr Bitboard pawn_attacks(Color c, Square s) { return detail::Steps.pawn[c][s]; }

#if C960_HAS_PEXT
inline Bitboard bishop_attacks(Square s, Bitboard occ) {
  return BishopPext[s].attacks[_pext_u64(occ, BishopPext[s].mask)];
}
inline Bitboard rook_attacks(Square s, Bitboard occ) { return RookPext[s].attacks[_pext_u64(occ, RookPext[s].mask)]; }
#else
inline Bitboard bishop_attacks(Square s, Bitboard occ) {
  return BishopMagics[s].attacks[BishopMagics[s].magic_index(occ)];
}
inline Bitboard rook_attacks(Square s, Bitboard occ) { return RookMagics[s].attacks[RookMagics[s].magic_index(occ)]; }
#endif
inline Bitboard queen_attacks(Square s, Bitboard occ) { return bishop_attacks(s, occ) | rook_attacks(s, occ); }

// Attacks of a non-pawn piece type from s given the occupancy.
inline Bitboard attacks_bb(PieceType pt, Square s, Bitboard occ) {
  switch (pt) {
    case KNIGHT: return knight_attacks(s);
    case BISHOP: return bishop_attacks(s, occ);
    case ROOK: return rook_attacks(s, occ);
    case QUEEN: return queen_attacks(s, occ);
    case KING: return king_attacks(s);
    default: return 0;
  }
}

// Squares strictly between a and b (empty if not on a line), plus b itself: so that "block or
// capture the checker" is one mask.
inline Bitboard between_bb(Square a, Square b) { return BetweenBB[a][b]; }
// The whole line through a and b, edge to edge (empty if not aligned).
inline Bitboard line_bb(Square a, Square b) { return LineBB[a][b]; }
inline bool aligned(Square a, Square b, Square c) { return line_bb(a, b) & square_bb(c); }

// Slow ray-walking reference, used to build the tables and to test them.
Bitboard sliding_attack_reference(PieceType pt, Square s, Bitboard occ);
// The magic-multiply result, whichever method the hot path uses (for tests).
Bitboard magic_attacks(PieceType pt, Square s, Bitboard occ);
#if C960_HAS_PEXT
Bitboard pext_attacks(PieceType pt, Square s, Bitboard occ);
#endif

}  // namespace c960
