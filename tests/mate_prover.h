// A brute-force mate prover, independent of the engine's search: full-width, no pruning, no
// evaluation. Used to build and to check the mate test suite.
#pragma once

#include "core/movegen.h"
#include "core/position.h"

namespace c960::test {

// True if the side to move can force mate within n of its moves (n >= 1).
inline bool forced_mate(Position& pos, int n);

// True if after the attacker's move m the defender is mated or every reply allows mate in n-1.
inline bool move_forces_mate(Position& pos, Move m, int n) {
  StateInfo st;
  // Mate in 1 must give check: skip the rest cheaply.
  if (n == 1 && !pos.gives_check(m)) return false;
  pos.do_move(m, st);
  bool ok;
  MoveList replies;
  generate_legal(pos, replies);
  if (replies.size() == 0)
    ok = pos.in_check();
  else if (n == 1)
    ok = false;
  else {
    ok = true;
    for (Move r : replies) {
      StateInfo st2;
      pos.do_move(r, st2);
      const bool mate = forced_mate(pos, n - 1);
      pos.undo_move(r);
      if (!mate) {
        ok = false;
        break;
      }
    }
  }
  pos.undo_move(m);
  return ok;
}

inline bool forced_mate(Position& pos, int n) {
  MoveList list;
  generate_legal(pos, list);
  for (Move m : list)
    if (move_forces_mate(pos, m, n)) return true;
  return false;
}

}  // namespace c960::test
