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
  // Set when the entry is malformed ("line 7: 'D1' is not a depth ..."): its expected counts are
  // not to be trusted, and the entry is a bad position as an illegal FEN is.
  std::string error;
};

// Every entry of a suite in either format (auto-detected per line); '#' starts a comment line. A
// malformed line is an entry of its own with `error` set (naming the line), and a malformed
// "perft" line marks its block's entry, so that one bad line costs one entry, not the suite.
// The FENs are not checked here: callers report bad ones per case.
std::vector<PerftCase> parse_perft_suite_entries(absl::string_view text);
// The same, failing on the first malformed entry (suites that must be whole: the tests' data).
absl::StatusOr<std::vector<PerftCase>> parse_perft_suite(absl::string_view text);

}  // namespace c960
