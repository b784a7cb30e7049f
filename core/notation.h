// Move notation: UCI (king takes rook, or the classical king-to-g1 form) and SAN.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/position.h"

namespace c960 {

enum class CastlingNotation {
  kKingTakesRook,   // Chess960 UCI: e1h1, f1g1 (start position 601's short castle)
  kKingDestination  // classical UCI: e1g1; falls back to king takes rook when king stays put
};

std::string to_uci(Move m, CastlingNotation cn = CastlingNotation::kKingTakesRook);
// Accepts both castling conventions; the move must be legal in pos.
absl::StatusOr<Move> parse_uci(const Position& pos, absl::string_view uci);

// SAN with check and mate suffixes. m must be legal in pos.
std::string to_san(const Position& pos, Move m);
// Accepts canonical SAN and forgiving variants: 0-0, extra disambiguation, missing 'x' or '=',
// trailing +, #, ! and ?.
absl::StatusOr<Move> parse_san(const Position& pos, absl::string_view san);

}  // namespace c960
