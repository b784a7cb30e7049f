#include "core/startpos.h"

#include <algorithm>
#include <charconv>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/position.h"
#include "core/prng.h"

namespace c960 {
namespace {

// The ten placements of two knights on five empty squares, in Scharnagl order.
constexpr int kKnightTable[10][2] = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {1, 2}, {1, 3}, {1, 4}, {2, 3}, {2, 4}, {3, 4}};

// Index of `file` among the files of `rank` that are still '.', or -1.
int empty_index(const std::string& rank, int file) {
  if (rank[file] != '.') return -1;
  return int(std::count(rank.begin(), rank.begin() + file, '.'));
}

void place_nth_empty(std::string& rank, int n, char piece) {
  for (char& c : rank)
    if (c == '.' && n-- == 0) {
      c = piece;
      return;
    }
}

}  // namespace

absl::StatusOr<std::string> backrank_of(int n) {
  if (n < 0 || n >= kStartPositions)
    return absl::InvalidArgumentError(absl::StrCat("start position number ", n, " is out of range 0..959"));
  std::string rank(8, '.');
  rank[2 * (n % 4) + 1] = 'B';  // light-squared bishop: b, d, f, h
  n /= 4;
  rank[2 * (n % 4)] = 'B';  // dark-squared bishop: a, c, e, g
  n /= 4;
  place_nth_empty(rank, n % 6, 'Q');
  n /= 6;
  // Place the second knight first, so the first knight's index still counts the same empties.
  place_nth_empty(rank, kKnightTable[n][1], 'N');
  place_nth_empty(rank, kKnightTable[n][0], 'N');
  place_nth_empty(rank, 0, 'R');
  place_nth_empty(rank, 0, 'K');
  place_nth_empty(rank, 0, 'R');
  return rank;
}

absl::StatusOr<int> number_of_backrank(absl::string_view input) {
  const std::string rank = absl::AsciiStrToUpper(input);
  if (rank.size() != 8)
    return absl::InvalidArgumentError(absl::StrCat("back rank '", input, "' has ", rank.size(), " pieces; expected 8"));
  for (char c : rank)
    if (absl::string_view("KQRBN").find(c) == absl::string_view::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("back rank '", input, "' has '", std::string(1, c), "'; only K, Q, R, B, N are allowed"));
  const auto count = [&](char c) { return int(std::count(rank.begin(), rank.end(), c)); };
  if (count('K') != 1 || count('Q') != 1 || count('R') != 2 || count('B') != 2 || count('N') != 2)
    return absl::InvalidArgumentError(
        absl::StrCat("back rank '", input, "' must have exactly one K, one Q, two R, two B and two N"));
  const size_t b1 = rank.find('B'), b2 = rank.find('B', b1 + 1);
  if ((b1 + b2) % 2 == 0)
    return absl::InvalidArgumentError(
        absl::StrCat("back rank '", input, "' has both bishops on squares of one colour"));
  const size_t r1 = rank.find('R'), r2 = rank.find('R', r1 + 1), k = rank.find('K');
  if (k < r1 || k > r2)
    return absl::InvalidArgumentError(absl::StrCat("back rank '", input, "' does not have the king between the rooks"));

  const int light = int(b1 % 2 == 1 ? b1 : b2), dark = int(b1 % 2 == 0 ? b1 : b2);
  std::string rest(8, '.');
  rest[light] = rest[dark] = 'B';
  const int q = empty_index(rest, int(rank.find('Q')));
  rest[rank.find('Q')] = 'Q';
  const size_t n1 = rank.find('N'), n2 = rank.find('N', n1 + 1);
  const int i1 = empty_index(rest, int(n1)), i2 = empty_index(rest, int(n2));
  int kn = 0;
  while (kKnightTable[kn][0] != i1 || kKnightTable[kn][1] != i2) ++kn;
  return ((kn * 6 + q) * 4 + dark / 2) * 4 + (light - 1) / 2;
}

absl::StatusOr<std::string> startpos_fen(int n, bool shredder) {
  absl::StatusOr<std::string> rank = backrank_of(n);
  if (!rank.ok()) return rank.status();
  std::string castling = "KQkq";
  if (shredder) {
    const size_t r1 = rank->find('R'), r2 = rank->find('R', r1 + 1);
    castling = {char('A' + r2), char('A' + r1), char('a' + r2), char('a' + r1)};
  }
  return absl::StrCat(absl::AsciiStrToLower(*rank), "/pppppppp/8/8/8/8/PPPPPPPP/", *rank, " w ", castling, " - 0 1");
}

std::string startpos_list_csv() {
  std::string out = "sp,backrank,xfen,shredder_fen\n";
  for (int n = 0; n < kStartPositions; ++n)
    absl::StrAppend(&out, n, ",", *backrank_of(n), ",", *startpos_fen(n), ",", *startpos_fen(n, true), "\n");
  return out;
}

absl::StatusOr<int> number_of_fen(absl::string_view fen) {
  absl::StatusOr<Position> pos = Position::from_fen(fen);
  if (!pos.ok()) return pos.status();
  std::string rank;
  for (File f = FILE_A; f <= FILE_H; ++f) rank += piece_char(pos->piece_on(make_square(f, RANK_1)));
  absl::StatusOr<int> n = number_of_backrank(rank);
  if (!n.ok()) return n.status();
  // Compare with the canonical FEN, clocks aside: anything else on the board is not a start.
  const std::string want = *startpos_fen(*n);
  const std::string got = pos->fen();
  if (got.substr(0, got.rfind(' ', got.rfind(' ') - 1)) != want.substr(0, want.rfind(' ', want.rfind(' ') - 1)))
    return absl::InvalidArgumentError(
        absl::StrCat("'", fen, "' is not a Chess960 start position (expected ", want, ")"));
  return *n;
}

absl::StatusOr<std::string> dfrc_fen(int pair, bool shredder) {
  if (pair < 0 || pair >= kDfrcPairs)
    return absl::InvalidArgumentError(absl::StrCat("DFRC pair ", pair, " is out of range 0..", kDfrcPairs - 1));
  const std::string white = *backrank_of(pair / kStartPositions), black = *backrank_of(pair % kStartPositions);
  std::string castling = "KQkq";  // each side has only its two rooks: X-FEN's KQkq names them
  if (shredder) {
    const size_t w1 = white.find('R'), w2 = white.find('R', w1 + 1);
    const size_t b1 = black.find('R'), b2 = black.find('R', b1 + 1);
    castling = {char('A' + w2), char('A' + w1), char('a' + b2), char('a' + b1)};
  }
  return absl::StrCat(absl::AsciiStrToLower(black), "/pppppppp/8/8/8/8/PPPPPPPP/", white, " w ", castling, " - 0 1");
}

int random_startpos(uint64_t seed) { return int(Prng(seed).below(kStartPositions)); }

absl::StatusOr<std::vector<int>> parse_sp_ranges(absl::string_view spec) {
  return parse_number_ranges(spec, kStartPositions, "start positions");
}

absl::StatusOr<std::vector<int>> parse_number_ranges(absl::string_view spec, int limit, absl::string_view what,
                                                     size_t max_count) {
  const auto parse = [limit](absl::string_view s, int& out) {
    s = absl::StripAsciiWhitespace(s);
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc() && p == s.data() + s.size() && out >= 0 && out < limit;
  };
  std::set<int> out;
  if (absl::StripAsciiWhitespace(spec).empty())
    return absl::InvalidArgumentError(absl::StrCat(what, ": the list is empty"));
  for (absl::string_view part : absl::StrSplit(spec, ',')) {
    int lo = 0, hi = 0;
    const size_t dash = part.find('-');
    const bool ok = dash == absl::string_view::npos
                        ? parse(part, lo) && parse(part, hi)
                        : parse(part.substr(0, dash), lo) && parse(part.substr(dash + 1), hi);
    if (!ok)
      return absl::InvalidArgumentError(
          absl::StrCat(what, ": '", part, "' is not a number or range within 0..", limit - 1));
    if (lo > hi) return absl::InvalidArgumentError(absl::StrCat(what, ": range '", part, "' runs backwards"));
    // Checked before the range is expanded, so that a huge range costs nothing.
    if (size_t(hi - lo) >= max_count) return absl::InvalidArgumentError(absl::StrCat(what, ": more than ", max_count));
    for (int i = lo; i <= hi; ++i) out.insert(i);
    if (out.size() > max_count) return absl::InvalidArgumentError(absl::StrCat(what, ": more than ", max_count));
  }
  return std::vector<int>(out.begin(), out.end());
}

}  // namespace c960
