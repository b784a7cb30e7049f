// Perft suites: EPD lines ("FEN ;D1 20 ;D2 400") and blocks ("id x" / "epd FEN" / "perft d n").
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960 {

struct PerftCase {
  std::string id;  // from an "id" line, else "line N"
  std::string fen;
  int line = 0;                                    // 1-based line of the FEN in the input
  std::vector<std::pair<int, uint64_t>> expected;  // (depth, nodes), in input order
};

// Parses either format (auto-detected per line); '#' starts a comment line. Errors name the line.
// The FENs are not checked here: callers report bad ones per case.
absl::StatusOr<std::vector<PerftCase>> parse_perft_suite(absl::string_view text);

}  // namespace c960
