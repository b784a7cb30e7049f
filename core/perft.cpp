#include "perft.h"

#include <algorithm>

#include "movegen.h"

namespace c960 {

std::string to_string(NodeCount n) {
  if (n == 0) return "0";
  std::string s;
  while (n) {
    s += char('0' + int(n % 10));
    n /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

uint64_t perft(Position& pos, int depth) {
  if (depth <= 0) return 1;
  // Bulk counting: the last ply is counted from target sets, never made.
  if (depth == 1) return uint64_t(count_legal(pos));
  MoveList list;
  generate_legal(pos, list);
  uint64_t nodes = 0;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    nodes += perft(pos, depth - 1);
    pos.undo_move(m);
  }
  return nodes;
}

std::vector<DivideEntry> divide(Position& pos, int depth) {
  MoveList list;
  generate_legal(pos, list);
  std::vector<DivideEntry> out;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    out.push_back({m, perft(pos, depth - 1)});
    pos.undo_move(m);
  }
  return out;
}

}  // namespace c960
