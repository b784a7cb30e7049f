// Bitboards: square sets as 64-bit integers, attack tables and slider attacks.
#pragma once

#include <bit>
#include <string_view>

#include "core/types.h"

#if defined(__BMI2__)
#include <immintrin.h>
#endif

namespace c960 {

constexpr Bitboard kFileABB = 0x0101010101010101ULL;
constexpr Bitboard kRank1BB = 0xFFULL;
constexpr Bitboard file_bb(File f) { return kFileABB << f; }
constexpr Bitboard rank_bb(Rank r) { return kRank1BB << (8 * r); }
constexpr Bitboard file_bb(Square s) { return file_bb(file_of(s)); }
constexpr Bitboard rank_bb(Square s) { return rank_bb(rank_of(s)); }
constexpr Bitboard square_bb(Square s) { return Bitboard(1) << s; }
constexpr Bitboard kDarkSquares = 0xAA55AA55AA55AA55ULL;

constexpr bool more_than_one(Bitboard b) { return b & (b - 1); }
constexpr int popcount(Bitboard b) { return std::popcount(b); }
[[gnu::always_inline]] inline Square lsb(Bitboard b) {
  assert(b);
  return Square(__builtin_ctzll(b));  // b != 0: no test for zero, unlike std::countr_zero
}
inline Square msb(Bitboard b) {
  assert(b);
  return Square(63 - __builtin_clzll(b));
}
[[gnu::always_inline]] inline Square pop_lsb(Bitboard& b) {
  const Square s = lsb(b);
  b &= b - 1;
  return s;
}

template <Direction D>
constexpr Bitboard shift(Bitboard b) {
  constexpr Bitboard kNotA = ~file_bb(FILE_A), kNotH = ~file_bb(FILE_H);
  if constexpr (D == NORTH)
    return b << 8;
  else if constexpr (D == SOUTH)
    return b >> 8;
  else if constexpr (D == EAST)
    return (b & kNotH) << 1;
  else if constexpr (D == WEST)
    return (b & kNotA) >> 1;
  else if constexpr (D == NORTH_EAST)
    return (b & kNotH) << 9;
  else if constexpr (D == NORTH_WEST)
    return (b & kNotA) << 7;
  else if constexpr (D == SOUTH_EAST)
    return (b & kNotH) >> 7;
  else
    return (b & kNotA) >> 9;
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
constexpr int kKnightSteps[8][2] = {{1, 2}, {2, 1}, {2, -1}, {1, -2}, {-1, -2}, {-2, -1}, {-2, 1}, {-1, 2}};
constexpr int kKingSteps[8][2] = {{0, 1}, {1, 1}, {1, 0}, {1, -1}, {0, -1}, {-1, -1}, {-1, 0}, {-1, 1}};

struct StepTables {
  Bitboard knight[SQUARE_NB]{}, king[SQUARE_NB]{}, pawn[COLOR_NB][SQUARE_NB]{};
  constexpr StepTables() {
    for (int i = 0; i < SQUARE_NB; ++i) {
      const Square s = Square(i);
      knight[i] = step_attacks(s, kKnightSteps, 8);
      king[i] = step_attacks(s, kKingSteps, 8);
      pawn[WHITE][i] = pawn_attacks_bb<WHITE>(square_bb(s));
      pawn[BLACK][i] = pawn_attacks_bb<BLACK>(square_bb(s));
    }
  }
};
inline constexpr StepTables kSteps{};
}  // namespace detail

// Slider attack lookup, by one of two methods that read tables of the same attack sets:
// - Magic: index = (occupancy & mask) * magic >> shift. Any x86-64 (or other) CPU.
// - Pext: index = pext(occupancy, mask). Needs BMI2, and is slow on AMD before Zen 3, where
//   PEXT is microcoded.
// The method is chosen once per process from the CPU (see sliders()), so that one portable
// binary runs everywhere and is fast where PEXT is. The hot code (move generation and perft) is
// templated on the method and picks its instantiation once per call at its entry point, never
// per lookup; other code calls the plain rook_attacks(s, occ), which branches on the method.
enum class Sliders : uint8_t { Magic, Pext };

struct Magic {
  Bitboard mask;
  Bitboard magic;
  Bitboard* attacks;             // magic-indexed table
  const Bitboard* pext_attacks;  // pext-indexed table (read-only data, made at compile time)
  unsigned shift;

  [[gnu::always_inline]] unsigned magic_index(Bitboard occ) const { return unsigned(((occ & mask) * magic) >> shift); }
};

extern Magic RookMagics[SQUARE_NB];
extern Magic BishopMagics[SQUARE_NB];

// The hot path's view of the PEXT tables: just what a lookup reads, 16 bytes a square.
struct PextEntry {
  Bitboard mask;
  const Bitboard* attacks;
};
extern PextEntry RookPext[SQUARE_NB];
extern PextEntry BishopPext[SQUARE_NB];
extern Bitboard BetweenBB[SQUARE_NB][SQUARE_NB];
extern Bitboard RookRays[SQUARE_NB];    // rook attacks on an empty board
extern Bitboard BishopRays[SQUARE_NB];  // bishop attacks on an empty board
extern Bitboard LineBB[SQUARE_NB][SQUARE_NB];

namespace detail {
extern Sliders sliders;
// Whether a BMI2 CPU of this vendor (cpuid leaf 0 string) and family executes PEXT fast.
bool pext_is_fast(std::string_view vendor, unsigned family);
}  // namespace detail

// The method in use. At start-up: PEXT where the CPU has BMI2 and is not an AMD before Zen 3,
// else magic; the environment variable C960_SLIDERS=magic|pext|auto overrides the choice (pext
// only where the CPU has BMI2), so that the tests run the whole suite on either method.
inline Sliders sliders() { return detail::sliders; }
// Whether this CPU can execute PEXT at all (BMI2), and whether it is fast there.
bool cpu_has_pext();
bool cpu_has_fast_pext();
// Switches the method, e.g. for tests that compare both in one process. Not while other
// threads generate moves. Returns false (and changes nothing) for Pext where !cpu_has_pext().
bool set_sliders(Sliders method);
const char* to_string(Sliders method);

// The PEXT instruction. Portable builds (no -mbmi2) emit it through inline assembly, which the
// compiler accepts without BMI2 code generation, so that nothing else in the binary uses BMI2;
// it only runs where sliders() == Pext, i.e. on CPUs that have it.
[[gnu::always_inline]] inline Bitboard pext(Bitboard b, Bitboard mask) {
#if defined(__BMI2__)
  return _pext_u64(b, mask);
#elif defined(__x86_64__)
  Bitboard r;
  asm("pextq %2, %1, %0" : "=r"(r) : "r"(b), "rm"(mask));
  return r;
#else
  (void)b;
  (void)mask;
  __builtin_trap();  // cpu_has_pext() is false off x86-64, so this is never reached
#endif
}

constexpr Bitboard knight_attacks(Square s) { return detail::kSteps.knight[s]; }
constexpr Bitboard king_attacks(Square s) { return detail::kSteps.king[s]; }
constexpr Bitboard pawn_attacks(Color c, Square s) { return detail::kSteps.pawn[c][s]; }

// The hot code's lookups, always inlined (as pop_lsb): a profile-guided build left them, and
// perft's make functions, as calls in code its training ran little (hashed perft was then twice as
// slow; see core/perft_board.h). The magic tables are filled when the method is first set to
// Magic (at start-up or by set_sliders), so Magic lookups are valid once sliders() has been Magic.
template <Sliders S>
[[gnu::always_inline]] inline Bitboard bishop_attacks(Square s, Bitboard occ) {
  if constexpr (S == Sliders::Pext)
    return BishopPext[s].attacks[pext(occ, BishopPext[s].mask)];
  else
    return BishopMagics[s].attacks[BishopMagics[s].magic_index(occ)];
}
template <Sliders S>
[[gnu::always_inline]] inline Bitboard rook_attacks(Square s, Bitboard occ) {
  if constexpr (S == Sliders::Pext)
    return RookPext[s].attacks[pext(occ, RookPext[s].mask)];
  else
    return RookMagics[s].attacks[RookMagics[s].magic_index(occ)];
}
template <Sliders S>
[[gnu::always_inline]] inline Bitboard queen_attacks(Square s, Bitboard occ) {
  return bishop_attacks<S>(s, occ) | rook_attacks<S>(s, occ);
}

// Outside the hot code: one well-predicted branch on the method per lookup.
inline Bitboard bishop_attacks(Square s, Bitboard occ) {
  return sliders() == Sliders::Pext ? bishop_attacks<Sliders::Pext>(s, occ) : bishop_attacks<Sliders::Magic>(s, occ);
}
inline Bitboard rook_attacks(Square s, Bitboard occ) {
  return sliders() == Sliders::Pext ? rook_attacks<Sliders::Pext>(s, occ) : rook_attacks<Sliders::Magic>(s, occ);
}
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
// The result of one method, whichever the hot path uses (for tests). pext_attacks() only where
// cpu_has_pext().
Bitboard magic_attacks(PieceType pt, Square s, Bitboard occ);
Bitboard pext_attacks(PieceType pt, Square s, Bitboard occ);

}  // namespace c960
