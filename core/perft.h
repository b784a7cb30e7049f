// Perft: the number of leaf nodes of the legal move tree to a given depth.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "position.h"

namespace c960 {

// Sums over many positions, or very deep ones, can pass 2^64.
using NodeCount = unsigned __int128;
std::string to_string(NodeCount n);

// Single-threaded, no hash table; depth 0 is 1.
uint64_t perft(Position& pos, int depth);

struct DivideEntry {
  Move move;
  uint64_t nodes;
};
// Perft of each legal move at depth - 1, in generation order. depth must be >= 1.
std::vector<DivideEntry> divide(Position& pos, int depth);

}  // namespace c960
