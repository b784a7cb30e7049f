// Static evaluation for the built-in engine: a tapered (middlegame/endgame) sum of material,
// piece-square tables, mobility, king safety and pawn structure.
#pragma once

#include "core/position.h"

namespace c960::engine {

using Value = int;

constexpr Value VALUE_ZERO = 0;
constexpr Value VALUE_DRAW = 0;
constexpr Value VALUE_MATE = 32000;
constexpr Value VALUE_INFINITE = 32001;
constexpr Value VALUE_NONE = 32002;
constexpr int MAX_PLY = 128;
// Scores beyond this are "mate in N": VALUE_MATE - plies to mate.
constexpr Value VALUE_MATE_IN_MAX_PLY = VALUE_MATE - MAX_PLY;

constexpr Value mate_in(int ply) { return VALUE_MATE - ply; }
constexpr Value mated_in(int ply) { return -VALUE_MATE + ply; }
constexpr bool is_mate_score(Value v) { return v >= VALUE_MATE_IN_MAX_PLY || v <= -VALUE_MATE_IN_MAX_PLY; }

// Middlegame values, used for move ordering (MVV-LVA) and pruning margins.
constexpr Value kPieceValue[PIECE_TYPE_NB] = {0, 100, 320, 330, 500, 950, 0, 0};

// Which evaluation terms are on; all by default. The benchmark turns terms off one by one to
// measure what each pays.
struct EvalTerms {
  bool mobility = true;
  bool king_safety = true;
  bool pawn_structure = true;
};

// The score of pos for the side to move, in centipawns. Never a mate score.
Value evaluate(const Position& pos, const EvalTerms& terms = {});

}  // namespace c960::engine
