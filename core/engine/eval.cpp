#include "core/engine/eval.h"

#include <algorithm>

namespace c960::engine {
namespace {

// A middlegame and an endgame value, blended by the game phase.
struct Score {
  int mg = 0, eg = 0;
  constexpr Score() = default;
  constexpr Score(int m, int e) : mg(m), eg(e) {}
  constexpr Score operator+(Score o) const { return {mg + o.mg, eg + o.eg}; }
  constexpr Score operator-(Score o) const { return {mg - o.mg, eg - o.eg}; }
  constexpr Score operator*(int k) const { return {mg * k, eg * k}; }
  constexpr Score& operator+=(Score o) { return *this = *this + o; }
  constexpr Score& operator-=(Score o) { return *this = *this - o; }
};

// Material (values as in PeSTO's tuned tables).
constexpr Score kMaterial[PIECE_TYPE_NB] = {{}, {82, 94}, {337, 281}, {365, 297}, {477, 512}, {1025, 936}, {}, {}};
// Phase weight of each piece type: 24 with all pieces on the board, 0 with pawns and kings only.
constexpr int kPhaseWeight[PIECE_TYPE_NB] = {0, 0, 1, 1, 2, 4, 0, 0};
constexpr int kMaxPhase = 24;

// Piece-square tables from White's view, built from distance to the centre and rank: the
// Chess960 start squares vary, so hand-tuned classical tables (which reward e.g. a king on g1)
// would mislead. Black reads them rank-flipped.
struct Psqt {
  Score v[PIECE_TYPE_NB][SQUARE_NB];
  constexpr Psqt() : v() {
    constexpr int kPawnMg[RANK_NB] = {0, 0, 2, 8, 14, 24, 40, 0};
    constexpr int kPawnEg[RANK_NB] = {0, 0, 4, 10, 20, 35, 60, 0};
    for (int s = 0; s < SQUARE_NB; ++s) {
      const int f = s & 7, r = s >> 3;
      const int fd = std::min(f, 7 - f), rd = std::min(r, 7 - r);  // 0 at the edge, 3 in the centre
      const int centre = fd + rd;                                  // 0..6
      v[PAWN][s] = {kPawnMg[r] + (fd == 3 && (r == 3 || r == 4) ? 10 : 0), kPawnEg[r]};
      v[KNIGHT][s] = {centre * 8 - 24, centre * 6 - 18};
      v[BISHOP][s] = {centre * 4 - 12, centre * 4 - 12};
      v[ROOK][s] = {(r == 6 ? 20 : 0) + fd * 2, r == 6 ? 15 : 0};
      v[QUEEN][s] = {centre * 2 - 6, centre * 4 - 12};
      // The king hides on its back rank early and walks to the centre late.
      v[KING][s] = {-r * 20 - fd * 8, centre * 10 - 30};
    }
  }
};
constexpr Psqt kPst{};

// Mobility per reachable square, counted around a typical number so that it stays small.
constexpr Score kMobilityWeight[PIECE_TYPE_NB] = {{}, {}, {4, 4}, {5, 5}, {2, 4}, {1, 2}, {}, {}};
constexpr int kMobilityCentre[PIECE_TYPE_NB] = {0, 0, 4, 6, 7, 13, 0, 0};

// King safety: attack units of pieces hitting the king zone, turned into a growing penalty.
constexpr int kAttackUnits[PIECE_TYPE_NB] = {0, 0, 2, 2, 3, 5, 0, 0};
constexpr int kSafetyTable[16] = {0, 0, 5, 12, 22, 35, 50, 70, 95, 120, 150, 185, 220, 260, 300, 340};
constexpr Score kShieldPawn = {10, 0};

constexpr Score kDoubled = {-10, -20};
constexpr Score kIsolated = {-10, -15};
constexpr Score kPassed[RANK_NB] = {{}, {5, 10}, {8, 15}, {12, 30}, {25, 55}, {45, 95}, {70, 140}, {}};
constexpr Score kBishopPair = {30, 50};
constexpr Score kTempo = {10, 0};

Bitboard forward_files(Color c, Square s) {
  // Every square ahead of s (from c's view) on its file and the adjacent ones.
  Bitboard files = file_bb(s) | shift<EAST>(file_bb(s)) | shift<WEST>(file_bb(s));
  Bitboard ahead = 0;
  for (int r = rank_of(s) + (c == WHITE ? 1 : -1); r >= 0 && r < 8; r += (c == WHITE ? 1 : -1))
    ahead |= rank_bb(Rank(r));
  return files & ahead;
}

template <Color Us>
Score evaluate_side(const Position& pos, const EvalTerms& terms, int& phase) {
  constexpr Color Them = ~Us;
  Score s;
  const Bitboard occ = pos.pieces();
  const Bitboard ourPawns = pos.pieces(Us, PAWN), theirPawns = pos.pieces(Them, PAWN);
  const Bitboard theirPawnAttacks = pawn_attacks_bb<Them>(theirPawns);
  const Square theirKing = pos.king_square(Them);
  const Bitboard theirZone = king_attacks(theirKing) | square_bb(theirKing);
  int attackUnits = 0, attackers = 0;

  for (PieceType pt = PAWN; pt <= KING; ++pt) {
    Bitboard b = pos.pieces(Us, pt);
    while (b) {
      const Square sq = pop_lsb(b);
      const Square rel = relative_square(Us, sq);
      s += kMaterial[pt] + kPst.v[pt][rel];
      phase += kPhaseWeight[pt];
      if (pt == PAWN || pt == KING) continue;
      const Bitboard att = attacks_bb(pt, sq, occ);
      if (terms.mobility) {
        const int mob = popcount(att & ~pos.pieces(Us) & ~theirPawnAttacks);
        s += kMobilityWeight[pt] * (mob - kMobilityCentre[pt]);
      }
      if (att & theirZone) {
        attackUnits += kAttackUnits[pt] * popcount(att & theirZone);
        ++attackers;
      }
    }
  }
  if (more_than_one(pos.pieces(Us, BISHOP))) s += kBishopPair;

  if (terms.king_safety) {
    // One lone attacker is rarely dangerous; scale by the number of attackers.
    if (attackers >= 2) s += Score{kSafetyTable[std::min(attackUnits, 15)] * std::min(attackers, 4) / 4, 0};
    const Square ksq = pos.king_square(Us);
    Bitboard near = 0;  // the two ranks in front of the king
    for (int d = 1; d <= 2; ++d) {
      const int r = Us == WHITE ? rank_of(ksq) + d : rank_of(ksq) - d;
      if (r >= 0 && r < 8) near |= rank_bb(Rank(r));
    }
    const Bitboard front = forward_files(Us, ksq) & near;
    s += kShieldPawn * std::min(popcount(front & ourPawns), 3);
  }

  if (terms.pawn_structure) {
    Bitboard b = ourPawns;
    while (b) {
      const Square sq = pop_lsb(b);
      const Bitboard adjacent = shift<EAST>(file_bb(sq)) | shift<WEST>(file_bb(sq));
      if (!(adjacent & ourPawns)) s += kIsolated;
      if (forward_files(Us, sq) & file_bb(sq) & ourPawns) s += kDoubled;
      if (!(forward_files(Us, sq) & theirPawns)) s += kPassed[relative_rank(Us, sq)];
    }
  }
  return s;
}

}  // namespace

Value evaluate(const Position& pos, const EvalTerms& terms) {
  int phase = 0;
  Score s = evaluate_side<WHITE>(pos, terms, phase) - evaluate_side<BLACK>(pos, terms, phase);
  if (pos.side_to_move() == BLACK) s = Score{} - s;
  s += kTempo;
  phase = std::min(phase, kMaxPhase);
  return (s.mg * phase + s.eg * (kMaxPhase - phase)) / kMaxPhase;
}

}  // namespace c960::engine
