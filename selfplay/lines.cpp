#include "selfplay/lines.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace c960::selfplay {

uint64_t line_hash(const GameRecord& game) {
  // FNV-1a over the start FEN and the first kLinePlies raw moves.
  uint64_t h = 0xcbf29ce484222325ULL;
  const auto byte = [&h](uint8_t b) { h = (h ^ b) * 0x100000001b3ULL; };
  for (char c : game.start_fen) byte(uint8_t(c));
  for (size_t i = 0; i < game.moves.size() && i < size_t(kLinePlies); ++i) {
    byte(uint8_t(game.moves[i].raw()));
    byte(uint8_t(game.moves[i].raw() >> 8));
  }
  return h;
}

LineGroups line_groups(const Lines& lines) {
  LineGroups groups;
  for (const auto& [hash, c] : lines)
    if (c.games() > 0) ++groups[{c.white_wins, c.draws, c.black_wins}];
  return groups;
}

namespace {

// n and the sum of the squared line sizes (integers: exact in any order).
std::pair<double, double> sizes(const LineGroups& groups) {
  double n = 0, sum_sq = 0;
  for (const auto& [c, lines] : groups) {
    const double k = double(c[0] + c[1] + c[2]);
    n += double(lines) * k;
    sum_sq += double(lines) * k * k;
  }
  return {n, sum_sq};
}

double design_effect(const LineGroups& groups, double rho) {
  const auto [n, sum_sq] = sizes(groups);
  return n > 0 ? 1 + (sum_sq / n - 1) * rho : 1.0;
}

}  // namespace

double design_effect(const Lines& lines, double rho) { return design_effect(line_groups(lines), rho); }

Relatedness relatedness(const std::vector<const Lines*>& positions, const std::vector<ResultCounts>& games) {
  Relatedness r;
  std::vector<LineGroups> groups;
  groups.reserve(positions.size());
  for (const Lines* lines : positions) groups.push_back(line_groups(*lines));
  // One-way analysis of variance by line within position, pooled over positions. A line of k
  // games with W wins, D draws: score sum s = W + D/2, sum of squares W + D/4.
  double ssw = 0, ssb = 0, df_w = 0, df_b = 0, n0_num = 0;
  for (size_t i = 0; i < groups.size(); ++i) {
    r.with_games += games[i].games() > 0;
    if (groups[i].empty()) {
      r.unrecorded += games[i].games() > 0;
      continue;
    }
    double s = 0, between = 0, count = 0;
    for (const auto& [c, lines] : groups[i]) {
      const double m = double(lines), k = double(c[0] + c[1] + c[2]);
      const double sc = double(c[0]) + 0.5 * double(c[1]), sq = double(c[0]) + 0.25 * double(c[1]);
      s += m * sc;
      between += m * sc * sc / k;
      ssw += m * (sq - sc * sc / k);
      count += m;
      if (k >= 2) r.shared_lines += lines;
    }
    const auto [n, sum_sq] = sizes(groups[i]);
    ssb += between - s * s / n;
    df_w += n - count;
    df_b += count - 1;
    n0_num += n - sum_sq / n;
  }
  r.recorded = r.unrecorded == 0;
  if (r.shared_lines >= kMinSharedLinesToEstimate && df_w > 0 && df_b > 0) {
    const double msw = ssw / df_w, msb = ssb / df_b, n0 = n0_num / df_b;
    const double denominator = msb + (n0 - 1) * msw;
    r.rho = denominator > 0 ? std::clamp((msb - msw) / denominator, 0.0, 1.0) : 1.0;
    r.estimated = denominator > 0;
  }
  for (size_t i = 0; i < groups.size(); ++i) {
    const int64_t n = games[i].games();
    int64_t largest = 0, count = 0;
    for (const auto& [c, lines] : groups[i]) {
      largest = std::max(largest, c[0] + c[1] + c[2]);
      count += lines;
    }
    r.lines.push_back(count);
    r.largest.push_back(largest);
    r.effective.push_back(groups[i].empty() ? double(n) : double(n) / design_effect(groups[i], r.rho));
    r.mostly_one_line.push_back(n >= kMinGamesForLineWarning && double(largest) > kMostlyOneLineShare * double(n));
  }
  return r;
}

int64_t Relatedness::mostly_one_line_count() const {
  return std::count(mostly_one_line.begin(), mostly_one_line.end(), true);
}

std::string Relatedness::note() const {
  std::string out;
  if (unrecorded > 0)
    out = absl::StrCat(
        "Related games: the openings of ",
        unrecorded == with_games ? "the games" : absl::StrCat(unrecorded, " of ", with_games, " positions' games"),
        " were not recorded; their games are taken as independent (effective games = games).\n");
  if (shared_lines == 0) return out;
  const int64_t mostly = mostly_one_line_count();
  if (mostly > 0) {
    // The worst position: its largest line against its games.
    size_t worst = 0;
    double share = -1;
    for (size_t i = 0; i < largest.size(); ++i) {
      const double n = effective[i] > 0 && lines[i] > 0 ? double(largest[i]) : 0;
      if (mostly_one_line[i] && n > share) share = n, worst = i;
    }
    absl::StrAppend(&out, "WARNING: ", mostly == 1 ? "1 position's games" : absl::StrCat(mostly, " positions' games"),
                    " mostly follow one line (largest: ", largest[worst], " games sharing their first ", kLinePlies,
                    " plies); such games are not independent: give --random-plies K or a book for varied openings.\n");
  }
  absl::StrAppend(&out, "Related games: ", shared_lines, shared_lines == 1 ? " line holds" : " lines hold",
                  " two games or more (games sharing their first ", kLinePlies, " plies); ",
                  estimated ? absl::StrFormat("their games' correlation is estimated at %.2f", rho)
                            : std::string("too few to estimate how related their games are, so they are taken as "
                                          "related as copies (correlation 1)"),
                  "; intervals and tests use the effective number of games.\n");
  return out;
}

}  // namespace c960::selfplay
