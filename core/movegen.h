// Legal move generation with check and pin masks: every move it yields is legal, none is
// made and taken back to test it.
#pragma once

#include <cstdint>

#include "core/position.h"

namespace c960 {

// Legal positions have at most 218 moves; the parser also accepts impossible ones (nine queens
// and more), which reach 270, so leave room.
constexpr int MAX_MOVES = 320;

struct MoveList {
  Move moves[MAX_MOVES];
  int count = 0;

  const Move* begin() const { return moves; }
  const Move* end() const { return moves + count; }
  int size() const { return count; }
  bool contains(Move m) const {
    for (Move x : *this)
      if (x == m) return true;
    return false;
  }
};

void generate_legal(const Position& pos, MoveList& list);
// The number of legal moves, counted from target sets without making a move list.
int count_legal(const Position& pos);
bool has_legal_move(const Position& pos);

}  // namespace c960
