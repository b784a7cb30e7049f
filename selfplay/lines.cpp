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

double design_effect(const Lines& lines, double rho) {
  double n = 0, sum_sq = 0;
  for (const auto& [hash, c] : lines) {
    const double k = double(c.games());
    n += k;
    sum_sq += k * k;
  }
  return n > 0 ? 1 + (sum_sq / n - 1) * rho : 1.0;
}

Relatedness relatedness(const std::vector<const Lines*>& positions, const std::vector<ResultCounts>& games) {
  Relatedness r;
  // One-way analysis of variance by line within position, pooled over positions.
  double ssw = 0, ssb = 0, df_w = 0, df_b = 0, n0_num = 0;
  for (size_t i = 0; i < positions.size(); ++i) {
    const Lines& lines = *positions[i];
    if (lines.empty()) {
      r.recorded = r.recorded && games[i].games() == 0;
      continue;
    }
    double n = 0, s = 0, sum_sq = 0, between = 0;
    for (const auto& [hash, c] : lines) {
      const double k = double(c.games()), sc = double(c.white_wins) + 0.5 * double(c.draws);
      const double sq = double(c.white_wins) + 0.25 * double(c.draws);  // the sum of the scores' squares
      if (k == 0) continue;
      n += k;
      s += sc;
      sum_sq += k * k;
      between += sc * sc / k;
      ssw += sq - sc * sc / k;
      r.shared_lines += c.games() >= 2;
    }
    if (n == 0) continue;
    ssb += between - s * s / n;
    df_w += n - double(lines.size());
    df_b += double(lines.size()) - 1;
    n0_num += n - sum_sq / n;
  }
  if (r.shared_lines >= kMinSharedLinesToEstimate && df_w > 0 && df_b > 0) {
    const double msw = ssw / df_w, msb = ssb / df_b, n0 = n0_num / df_b;
    const double denominator = msb + (n0 - 1) * msw;
    r.rho = denominator > 0 ? std::clamp((msb - msw) / denominator, 0.0, 1.0) : 1.0;
    r.estimated = denominator > 0;
  }
  for (size_t i = 0; i < positions.size(); ++i) {
    const Lines& lines = *positions[i];
    const int64_t n = games[i].games();
    int64_t largest = 0, count = 0;
    for (const auto& [hash, c] : lines) {
      largest = std::max(largest, c.games());
      count += c.games() > 0;
    }
    r.lines.push_back(count);
    r.largest.push_back(largest);
    r.effective.push_back(lines.empty() ? double(n) : double(n) / design_effect(lines, r.rho));
    r.mostly_one_line.push_back(n >= kMinGamesForLineWarning && double(largest) > kMostlyOneLineShare * double(n));
  }
  return r;
}

int64_t Relatedness::mostly_one_line_count() const {
  return std::count(mostly_one_line.begin(), mostly_one_line.end(), true);
}

std::string Relatedness::note() const {
  std::string out;
  if (!recorded)
    out = "Related games: the lines games follow were not recorded for some positions; their games are taken as "
          "independent.\n";
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
                  "; intervals use the effective number of games.\n");
  return out;
}

}  // namespace c960::selfplay
