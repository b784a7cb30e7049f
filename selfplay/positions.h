// The positions self-play games start from: the 960 Chess960 start positions, Double Fischer
// Random pairs (each side's back rank chosen independently), or any legal position given as a
// FEN or read from an opening book (EPD or FEN lines). Each has an id that names it in results.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960::selfplay {

enum class PositionKind : uint8_t { kChess960, kDfrc, kFen };

// Ids: 1..kMaxPositionIdLength printable ASCII characters, unique within a spec, not "all" (the
// name of the total row).
inline constexpr size_t kMaxPositionIdLength = 64;
inline constexpr size_t kMaxPositionFenLength = 256;

struct StartPosition {
  PositionKind kind = PositionKind::kChess960;
  // Chess960: the start position number ("518"); DFRC: the pair number; FEN: the id opcode of
  // its book line, else the line number, or its place among the FENs given ("1", "2", ...).
  std::string id;
  std::string fen;  // Shredder-FEN, as Position prints it
  // kChess960: the start position; kDfrc: the pair number; kFen: -1.
  int number = -1;
  // The Chess960 start position this FEN is exactly (clocks included), else -1. Games from it are
  // those of that start position whatever the position is called (see position_key).
  int sp = -1;
};

// Chess960 start position sp (0..959).
absl::StatusOr<StartPosition> chess960_position(int sp);
// Double Fischer Random pair w * 960 + b (0..921599).
absl::StatusOr<StartPosition> dfrc_position(int pair);
// Any position games can be played from: a legal FEN (FEN, X-FEN or Shredder-FEN) whose game is
// not over yet. INVALID_ARGUMENT naming the problem (the caller adds where it came from).
absl::StatusOr<StartPosition> fen_position(std::string id, absl::string_view fen);
// An id as kMaxPositionIdLength says; INVALID_ARGUMENT naming the problem.
absl::Status check_position_id(absl::string_view id);

// The number a position's game seeds are made from: the start position number for a Chess960
// start position (so that games from it are the same however it was named), else a 64-bit hash
// of its Shredder-FEN with the top bit set (never a start position's number). Pure: the same on
// every machine.
uint64_t position_key(const StartPosition& p);

// An opening book as cutechess-cli and fastchess take it: one position per line, EPD (four FEN
// fields, then opcodes such as `id "name";`) or FEN (six fields; anything after a ';' is ignored,
// so perft suites serve too). Blank lines and lines starting with '#' are skipped. Ids come from
// the id opcode, else the line number. Errors name the line.
absl::StatusOr<std::vector<StartPosition>> parse_opening_book(absl::string_view text);

// The X-FEN of a position (for tables): plain KQkq where the rooks allow it.
std::string xfen_of(const StartPosition& p);
// What a table shows of a position (any FEN dialect) at a glance: the back rank of a Chess960
// start position ("RNBQKBNR"), both back ranks of a DFRC start ("RNBQKBNR/rnbqkbrn"), else the
// FEN's placement field.
std::string position_label(absl::string_view fen);

}  // namespace c960::selfplay
