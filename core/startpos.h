// Chess960 start positions by the standard (Scharnagl) numbering: 0 = BBQNNRKR,
// 518 = RNBQKBNR, 959 = RKRNNQBB.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960 {

constexpr int kStartPositions = 960;

// The white back rank, a to h, in upper case ("RNBQKBNR"). n must be in 0..959.
absl::StatusOr<std::string> backrank_of(int n);
// Checks the eight pieces and the Chess960 rules, then returns the number.
absl::StatusOr<int> number_of_backrank(absl::string_view backrank);
// The number of a FEN's start position: both back ranks mirrored, pawns on their second ranks,
// nothing else, and full castling rights.
absl::StatusOr<int> number_of_fen(absl::string_view fen);
// The FEN of start position n, X-FEN (KQkq) or Shredder-FEN (HAha).
absl::StatusOr<std::string> startpos_fen(int n, bool shredder = false);
// The canonical list of the 960: a CSV with header "sp,backrank,xfen,shredder_fen" and one row a
// position, 0 to 959 (`c960 startpos --all`; shipped as data/chess960-positions.csv).
std::string startpos_list_csv();
// Double Fischer Random (White's and Black's back ranks chosen independently): pair number
// w * 960 + b has White's back rank of start position w and Black's of start position b, so pair
// n * 961 is Chess960 start position n. Castling rights are full, on each side's own rooks.
constexpr int kDfrcPairs = kStartPositions * kStartPositions;
absl::StatusOr<std::string> dfrc_fen(int pair, bool shredder = false);
// A uniformly random start position number, reproducible from the seed.
int random_startpos(uint64_t seed);
// "0-9,518,601" -> the numbers, ascending and without duplicates. Each must be in 0..959.
absl::StatusOr<std::vector<int>> parse_sp_ranges(absl::string_view spec);
// The same for numbers in 0..limit-1, at most max_count of them; errors call them `what` (e.g.
// "DFRC pairs").
absl::StatusOr<std::vector<int>> parse_number_ranges(absl::string_view spec, int limit, absl::string_view what,
                                                     size_t max_count = SIZE_MAX);

}  // namespace c960
