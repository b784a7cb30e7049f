#include "core/bitboard.h"

#include <array>
#include <cstddef>
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

// The magic-indexed tables, filled when magic lookups are first needed (find_magics).
Bitboard RookTable[0x19000];
Bitboard BishopTable[0x1480];

// The empty-board ray from each square in each direction, rook directions first (north, east,
// south, west), then bishop ones (north-east, south-east, south-west, north-west).
constexpr int kDirections[8][2] = {{0, 1}, {1, 0}, {0, -1}, {-1, 0}, {1, 1}, {1, -1}, {-1, -1}, {-1, 1}};
struct RayTable {
  Bitboard ray[8][SQUARE_NB];
  constexpr RayTable() : ray{} {
    for (int d = 0; d < 8; ++d)
      for (int s = 0; s < SQUARE_NB; ++s)
        for (int f = file_of(Square(s)) + kDirections[d][0], r = rank_of(Square(s)) + kDirections[d][1];
             f >= 0 && f < 8 && r >= 0 && r < 8; f += kDirections[d][0], r += kDirections[d][1])
          ray[d][s] |= square_bb(make_square(File(f), Rank(r)));
  }
};
constexpr RayTable kRays{};

// Slider attacks from the rays: each ray stops at its first blocker, the nearest set square
// (the lowest for directions that raise the square index, the highest for the others). Equal to
// sliding_attack_reference (sliders_test checks the tables built from it) and cheap enough for
// the compiler to fill the PEXT tables with it (about 30 operations a set; GCC allows 2^25).
constexpr Bitboard ray_attacks(PieceType pt, Square s, Bitboard occ) {
  Bitboard attacks = 0;
  const int first = pt == ROOK ? 0 : 4;
  for (int d = first; d < first + 4; ++d) {
    const Bitboard ray = kRays.ray[d][s], blockers = ray & occ;
    if (!blockers) {
      attacks |= ray;
      continue;
    }
    const bool up = kDirections[d][1] > 0 || (kDirections[d][1] == 0 && kDirections[d][0] > 0);
    attacks |= ray ^ kRays.ray[d][up ? __builtin_ctzll(blockers) : 63 - __builtin_clzll(blockers)];
  }
  return attacks;
}

// The squares whose occupancy matters to a slider on s: its empty-board attacks without the
// board's edges (a piece there never changes the attack set).
constexpr Bitboard relevant_mask(PieceType pt, Square s) {
  const Bitboard edges =
      ((rank_bb(RANK_1) | rank_bb(RANK_8)) & ~rank_bb(s)) | ((file_bb(FILE_A) | file_bb(FILE_H)) & ~file_bb(s));
  return ray_attacks(pt, s, 0) & ~edges;
}

// The PEXT-indexed tables, made by the compiler: the squares' blocks one after the other (a1
// first), each of 2^popcount(mask) sets, the k-th that of the k-th subset of the mask in the
// Carry-Rippler enumeration's increasing order, i.e. the subset whose pext() is k. Read-only
// data in the binary: nothing to compute or write at start-up, and the pages a process never
// reads are never loaded.
template <PieceType Pt, size_t N>
constexpr std::array<Bitboard, N> pext_table() {
  std::array<Bitboard, N> table{};
  size_t size = 0;
  for (int s = 0; s < SQUARE_NB; ++s) {
    const Bitboard mask = relevant_mask(Pt, Square(s));
    Bitboard b = 0;
    do {
      table[size++] = ray_attacks(Pt, Square(s), b);
      b = (b - mask) & mask;
    } while (b);
  }
  return table;
}
constexpr size_t table_size(PieceType pt) {
  size_t size = 0;
  for (int s = 0; s < SQUARE_NB; ++s) size += size_t(1) << popcount(relevant_mask(pt, Square(s)));
  return size;
}
static_assert(table_size(ROOK) == 0x19000 && table_size(BISHOP) == 0x1480);
alignas(64) constexpr std::array<Bitboard, 0x19000> kRookPextTable = pext_table<ROOK, 0x19000>();
alignas(64) constexpr std::array<Bitboard, 0x1480> kBishopPextTable = pext_table<BISHOP, 0x1480>();

// Seeds known to find all magics quickly (one per rank), as in Stockfish.
constexpr uint64_t kMagicSeeds[RANK_NB] = {728, 10316, 55013, 32803, 12281, 15100, 16645, 255};

// Sets each square's mask, shift and table pointers (the blocks laid out as in pext_table).
void layout(PieceType pt, Bitboard table[], const Bitboard pext_table[], Magic magics[]) {
  size_t offset = 0;
  for (int i = 0; i < SQUARE_NB; ++i) {
    Magic& m = magics[i];
    m.mask = relevant_mask(pt, Square(i));
    m.shift = unsigned(64 - popcount(m.mask));
    m.attacks = table + offset;
    m.pext_attacks = pext_table + offset;
    offset += size_t(1) << popcount(m.mask);
  }
}

// Searches the magic numbers and fills the magic-indexed tables from the PEXT ones. The search
// takes tens of milliseconds, so a process that uses PEXT defers it until magic lookups are
// first needed; it writes nothing the PEXT lookups read.
void init_magics(Magic magics[]) {
  Bitboard occupancy[4096];
  int epoch[4096] = {}, cnt = 0;
  for (int i = 0; i < SQUARE_NB; ++i) {
    Magic& m = magics[i];
    Bitboard b = 0;
    int size = 0;
    do {
      occupancy[size++] = b;
      b = (b - m.mask) & m.mask;
    } while (b);

    Prng rng(kMagicSeeds[rank_of(Square(i))]);
    for (int i2 = 0; i2 < size;) {
      for (m.magic = 0; popcount((m.magic * m.mask) >> 56) < 6;) m.magic = rng.sparse_rand();
      // A magic is good when every occupancy maps to an index holding its own attack set
      // (constructive collisions allowed). epoch[] avoids clearing the table per attempt.
      for (++cnt, i2 = 0; i2 < size; ++i2) {
        const unsigned idx = m.magic_index(occupancy[i2]);
        if (epoch[idx] < cnt) {
          epoch[idx] = cnt;
          m.attacks[idx] = m.pext_attacks[i2];
        } else if (m.attacks[idx] != m.pext_attacks[i2]) {
          break;
        }
      }
    }
  }
}

std::once_flag magics_found;
void find_magics() {
  init_magics(RookMagics);
  init_magics(BishopMagics);
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
    layout(ROOK, RookTable, kRookPextTable.data(), RookMagics);
    layout(BISHOP, BishopTable, kBishopPextTable.data(), BishopMagics);
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
