#include "core/bitboard.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string_view>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

#include "core/prng.h"

namespace c960 {

Magic RookMagics[SQUARE_NB];
Magic BishopMagics[SQUARE_NB];
PextEntry RookPext[SQUARE_NB];
PextEntry BishopPext[SQUARE_NB];
namespace detail {
Sliders sliders = Sliders::Magic;
}  // namespace detail
Bitboard BetweenBB[SQUARE_NB][SQUARE_NB];
Bitboard RookRays[SQUARE_NB];
Bitboard BishopRays[SQUARE_NB];
Bitboard LineBB[SQUARE_NB][SQUARE_NB];

namespace {

Bitboard RookTable[0x19000];
Bitboard BishopTable[0x1480];
Bitboard RookPextTable[0x19000];
Bitboard BishopPextTable[0x1480];

// The empty-board ray from each square in each direction, rook directions first (north, east,
// south, west), then bishop ones (north-east, south-east, south-west, north-west).
constexpr int kDirections[8][2] = {{0, 1}, {1, 0}, {0, -1}, {-1, 0}, {1, 1}, {1, -1}, {-1, -1}, {-1, 1}};
Bitboard Rays[8][SQUARE_NB];

void init_rays() {
  for (int d = 0; d < 8; ++d)
    for (int s = 0; s < SQUARE_NB; ++s) {
      Bitboard ray = 0;
      for (int f = file_of(Square(s)) + kDirections[d][0], r = rank_of(Square(s)) + kDirections[d][1];
           f >= 0 && f < 8 && r >= 0 && r < 8; f += kDirections[d][0], r += kDirections[d][1])
        ray |= square_bb(make_square(File(f), Rank(r)));
      Rays[d][s] = ray;
    }
}

// Slider attacks from the rays: each ray stops at its first blocker, the nearest set square
// (the lowest for directions that raise the square index, the highest for the others). Equal to
// sliding_attack_reference (sliders_test checks the tables built from it) and much faster: the
// tables hold over 100,000 sets, built at every start.
Bitboard ray_attacks(PieceType pt, Square s, Bitboard occ) {
  Bitboard attacks = 0;
  const int first = pt == ROOK ? 0 : 4;
  for (int d = first; d < first + 4; ++d) {
    const Bitboard ray = Rays[d][s], blockers = ray & occ;
    if (!blockers) {
      attacks |= ray;
      continue;
    }
    const bool up = kDirections[d][1] > 0 || (kDirections[d][1] == 0 && kDirections[d][0] > 0);
    attacks |= ray ^ Rays[d][up ? lsb(blockers) : msb(blockers)];
  }
  return attacks;
}

// Seeds known to find all magics quickly (one per rank), as in Stockfish.
constexpr uint64_t kMagicSeeds[RANK_NB] = {728, 10316, 55013, 32803, 12281, 15100, 16645, 255};

// With `layout`, sets masks, shifts and table pointers and fills the PEXT-indexed tables; with
// `find_magics`, searches the magic numbers and fills the magic-indexed tables. The search takes
// tens of milliseconds, so a process that uses PEXT defers it until magic lookups are first
// needed; that later pass writes nothing the PEXT lookups read.
void init_magics(PieceType pt, Bitboard table[], Bitboard pext_table[], Magic magics[], bool layout, bool find_magics) {
  Bitboard occupancy[4096], reference[4096];
  int epoch[4096] = {}, cnt = 0;
  int size = 0;

  for (int i = 0; i < SQUARE_NB; ++i) {
    const Square s = Square(i);
    // Edges are not part of the mask: a piece there never changes the attack set.
    const Bitboard edges =
        ((rank_bb(RANK_1) | rank_bb(RANK_8)) & ~rank_bb(s)) | ((file_bb(FILE_A) | file_bb(FILE_H)) & ~file_bb(s));
    Magic& m = magics[s];
    if (layout) {
      m.mask = ray_attacks(pt, s, 0) & ~edges;
      m.shift = unsigned(64 - popcount(m.mask));
      m.attacks = s == SQ_A1 ? table : magics[s - 1].attacks + size;
      m.pext_attacks = s == SQ_A1 ? pext_table : magics[s - 1].pext_attacks + size;
    }

    // Carry-Rippler enumeration of every subset of the mask, in increasing order: the k-th
    // subset is the one whose pext() is k, so the PEXT table is filled without executing PEXT.
    Bitboard b = 0;
    size = 0;
    do {
      occupancy[size] = b;
      reference[size] = ray_attacks(pt, s, b);
      if (layout) m.pext_attacks[size] = reference[size];
      ++size;
      b = (b - m.mask) & m.mask;
    } while (b);

    if (!find_magics) continue;
    Prng rng(kMagicSeeds[rank_of(s)]);
    for (int i2 = 0; i2 < size;) {
      for (m.magic = 0; popcount((m.magic * m.mask) >> 56) < 6;) m.magic = rng.sparse_rand();
      // A magic is good when every occupancy maps to an index holding its own attack set
      // (constructive collisions allowed). epoch[] avoids clearing the table per attempt.
      for (++cnt, i2 = 0; i2 < size; ++i2) {
        const unsigned idx = m.magic_index(occupancy[i2]);
        if (epoch[idx] < cnt) {
          epoch[idx] = cnt;
          m.attacks[idx] = reference[i2];
        } else if (m.attacks[idx] != reference[i2]) {
          break;
        }
      }
    }
  }
}

std::once_flag magics_found;
void find_magics() {
  init_magics(ROOK, RookTable, RookPextTable, RookMagics, false, true);
  init_magics(BISHOP, BishopTable, BishopPextTable, BishopMagics, false, true);
}

}  // namespace

bool detail::pext_is_fast(std::string_view vendor, unsigned family) {
  // AMD (and Hygon, built on AMD's Zen 1) executes PEXT in microcode before Zen 3 (family 0x19):
  // hundreds of cycles where magics take a few.
  const bool amd = vendor == "AuthenticAMD" || vendor == "HygonGenuine";
  return !(amd && family < 0x19);
}

namespace {

struct CpuInfo {
  bool bmi2 = false;
  bool fast_pext = false;
};

CpuInfo read_cpu() {
  CpuInfo cpu;
#if defined(__x86_64__)
  unsigned eax, ebx, ecx, edx;
  if (__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) cpu.bmi2 = ebx & bit_BMI2;
  if (!cpu.bmi2 || !__get_cpuid(0, &eax, &ebx, &ecx, &edx)) return cpu;
  char vendor[13] = {};
  std::memcpy(vendor, &ebx, 4);
  std::memcpy(vendor + 4, &edx, 4);
  std::memcpy(vendor + 8, &ecx, 4);
  __get_cpuid(1, &eax, &ebx, &ecx, &edx);
  const unsigned base_family = (eax >> 8) & 0xF;
  const unsigned family = base_family == 0xF ? base_family + ((eax >> 20) & 0xFF) : base_family;
  cpu.fast_pext = detail::pext_is_fast(vendor, family);
#endif
  return cpu;
}

const CpuInfo& cpu() {
  static const CpuInfo info = read_cpu();
  return info;
}

Sliders choose_sliders() {
  Sliders method = cpu().fast_pext ? Sliders::Pext : Sliders::Magic;
  const char* env = std::getenv("C960_SLIDERS");
  const std::string_view want = env ? env : "";
  if (want == "magic") {
    method = Sliders::Magic;
  } else if (want == "pext") {
    if (cpu().bmi2)
      method = Sliders::Pext;
    else
      std::fprintf(stderr, "c960: C960_SLIDERS=pext: this CPU has no BMI2; using magic sliders\n");
  } else if (!want.empty() && want != "auto") {
    std::fprintf(stderr, "c960: C960_SLIDERS='%s' is not magic, pext or auto; choosing from the CPU\n", env);
  }
  return method;
}

struct Init {
  Init() {
    init_rays();
    init_magics(ROOK, RookTable, RookPextTable, RookMagics, true, false);
    init_magics(BISHOP, BishopTable, BishopPextTable, BishopMagics, true, false);
    for (int i = 0; i < SQUARE_NB; ++i) {
      RookPext[i] = {RookMagics[i].mask, RookMagics[i].pext_attacks};
      BishopPext[i] = {BishopMagics[i].mask, BishopMagics[i].pext_attacks};
    }
    set_sliders(choose_sliders());
    for (int a = 0; a < SQUARE_NB; ++a) {
      RookRays[a] = ray_attacks(ROOK, Square(a), 0);
      BishopRays[a] = ray_attacks(BISHOP, Square(a), 0);
    }
    // Squares not on a common line: BetweenBB holds just the second square, LineBB nothing.
    for (int a = 0; a < SQUARE_NB; ++a)
      for (int b = 0; b < SQUARE_NB; ++b) BetweenBB[a][b] = square_bb(Square(b));
    for (int a = 0; a < SQUARE_NB; ++a)
      for (PieceType pt : {BISHOP, ROOK}) {
        const Square s1 = Square(a);
        const Bitboard from_a = ray_attacks(pt, s1, 0);
        for (Bitboard line = from_a; line;) {
          const Square s2 = pop_lsb(line);
          LineBB[a][s2] = (from_a & ray_attacks(pt, s2, 0)) | square_bb(s1) | square_bb(s2);
          BetweenBB[a][s2] = (ray_attacks(pt, s1, square_bb(s2)) & ray_attacks(pt, s2, square_bb(s1))) | square_bb(s2);
        }
      }
  }
};
const Init init_;

}  // namespace

Bitboard sliding_attack_reference(PieceType pt, Square s, Bitboard occ) {
  static constexpr int kRookDirs[4][2] = {{0, 1}, {1, 0}, {0, -1}, {-1, 0}};
  static constexpr int kBishopDirs[4][2] = {{1, 1}, {1, -1}, {-1, -1}, {-1, 1}};
  Bitboard attacks = 0;
  for (PieceType t : {ROOK, BISHOP}) {
    if (pt != t && pt != QUEEN) continue;
    for (const auto& d : t == ROOK ? kRookDirs : kBishopDirs) {
      int f = file_of(s) + d[0], r = rank_of(s) + d[1];
      while (f >= 0 && f < 8 && r >= 0 && r < 8) {
        const Square to = make_square(File(f), Rank(r));
        attacks |= square_bb(to);
        if (occ & square_bb(to)) break;
        f += d[0];
        r += d[1];
      }
    }
  }
  return attacks;
}

bool cpu_has_pext() { return cpu().bmi2; }
bool cpu_has_fast_pext() { return cpu().bmi2 && cpu().fast_pext; }

bool set_sliders(Sliders method) {
  if (method == Sliders::Pext && !cpu_has_pext()) return false;
  if (method == Sliders::Magic) std::call_once(magics_found, find_magics);
  detail::sliders = method;
  return true;
}

const char* to_string(Sliders method) { return method == Sliders::Pext ? "pext" : "magic"; }

Bitboard magic_attacks(PieceType pt, Square s, Bitboard occ) {
  std::call_once(magics_found, find_magics);
  if (pt == QUEEN) return magic_attacks(ROOK, s, occ) | magic_attacks(BISHOP, s, occ);
  const Magic& m = pt == ROOK ? RookMagics[s] : BishopMagics[s];
  return m.attacks[m.magic_index(occ)];
}

Bitboard pext_attacks(PieceType pt, Square s, Bitboard occ) {
  if (pt == QUEEN) return pext_attacks(ROOK, s, occ) | pext_attacks(BISHOP, s, occ);
  const Magic& m = pt == ROOK ? RookMagics[s] : BishopMagics[s];
  return m.pext_attacks[pext(occ, m.mask)];
}

}  // namespace c960
