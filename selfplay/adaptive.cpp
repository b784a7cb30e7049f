#include "selfplay/adaptive.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace c960::selfplay {
namespace {

const std::array<double, kBetGrid>& bet_grid() {
  static const std::array<double, kBetGrid> grid = [] {
    std::array<double, kBetGrid> g{};
    for (int k = 0; k < kBetGrid; ++k)
      g[size_t(k)] = kMinBet * std::pow(kMaxBet / kMinBet, double(k) / double(kBetGrid - 1));
    return g;
  }();
  return grid;
}

// log of the "above m" half of the mixture (equal weights), after w, d, l results of 1, 1/2, 0.
// Decreasing in m.
double log_capital_above(double w, double d, double l, double m) {
  double terms[kBetGrid];
  double top = -std::numeric_limits<double>::infinity();
  const std::array<double, kBetGrid>& grid = bet_grid();
  for (size_t k = 0; k < grid.size(); ++k) {
    const double f = grid[k];
    const double t = w * std::log1p(f * (1 - m) / m) + d * std::log1p(f * (0.5 - m) / m) + l * std::log1p(-f);
    terms[k] = t;
    top = std::max(top, t);
  }
  double sum = 0;
  for (double t : terms) sum += std::exp(t - top);
  return top + std::log(sum / double(kBetGrid));
}

// The lowest mean the sequence keeps: below it the "above" half has reached 2/alpha.
double lower_end(double w, double d, double l, double alpha) {
  const double n = w + d + l;
  const double mean = (w + 0.5 * d) / n;
  if (mean <= 0) return 0;
  const double threshold = std::log(2 / alpha);
  constexpr double kTiny = 1e-12;
  if (log_capital_above(w, d, l, kTiny) < threshold) return 0;
  double rejected = kTiny, kept = mean;  // at the mean itself every bet has lost (Jensen)
  for (int it = 0; it < 60 && kept - rejected > 1e-10; ++it) {
    const double mid = 0.5 * (rejected + kept);
    (log_capital_above(w, d, l, mid) >= threshold ? rejected : kept) = mid;
  }
  return rejected;  // the interval is closed towards the kept side: round outwards
}

}  // namespace

absl::Status AdaptiveRule::validate(int cap) const {
  const auto bad = [](absl::string_view field, auto... why) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", why...));
  };
  if (!(target_width >= 0) || target_width >= 1)
    return bad("target_width", target_width, " is not in ", kMinTargetWidth, "..1 (0: off)");
  if (target_width > 0 && target_width < kMinTargetWidth)
    return bad("target_width", target_width, " is below ", kMinTargetWidth);
  if (!(band_lo >= 0 && band_hi <= 1 && band_lo <= band_hi) && !(band_lo == 0 && band_hi == 0))
    return bad("band", band_lo, ":", band_hi, " is not within 0..1 with LO below HI");
  if (band_hi > band_lo && target_width > 0) return bad("band", "give a band or a target width, not both");
  if (!enabled()) return absl::OkStatus();
  if (band_hi > band_lo && band_hi - band_lo < kMinTargetWidth) return bad("band", "narrower than ", kMinTargetWidth);
  if (batch < kMinAdaptiveBatch || batch > kMaxAdaptiveBatch)
    return bad("batch", batch, " is not in ", kMinAdaptiveBatch, "..", kMaxAdaptiveBatch);
  if (batch > cap) return bad("batch", batch, " is more than games_per_position (", cap, ", the cap)");
  return absl::OkStatus();
}

absl::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kOpen: return "open";
    case Verdict::kNarrow: return "narrow";
    case Verdict::kInside: return "inside";
    case Verdict::kAbove: return "above";
    case Verdict::kBelow: return "below";
    case Verdict::kCap: return "cap";
  }
  return "?";
}

AnytimeInterval anytime_interval(int64_t white_wins, int64_t draws, int64_t black_wins, double alpha) {
  if (white_wins + draws + black_wins <= 0) return {0, 1};
  const double w = double(white_wins), d = double(draws), l = double(black_wins);
  // The "below m" half is the "above" half of the colours reversed: x -> 1 - x, m -> 1 - m.
  return {lower_end(w, d, l, alpha), 1 - lower_end(l, d, w, alpha)};
}

Verdict verdict(const AdaptiveRule& rule, const AnytimeInterval& interval, int64_t played, int64_t cap) {
  if (rule.band()) {
    if (interval.lo > rule.band_hi) return Verdict::kAbove;
    if (interval.hi < rule.band_lo) return Verdict::kBelow;
    if (interval.lo >= rule.band_lo && interval.hi <= rule.band_hi) return Verdict::kInside;
  } else if (rule.target_width > 0 && interval.width() <= rule.target_width) {
    return Verdict::kNarrow;
  }
  return played >= cap ? Verdict::kCap : Verdict::kOpen;
}

int64_t next_look(const AdaptiveRule& rule, int64_t played, int64_t cap) {
  return std::min(cap, played + int64_t(rule.batch));
}

double need(const AdaptiveRule& rule, const AnytimeInterval& interval) {
  const double scale = rule.band() ? rule.band_hi - rule.band_lo : rule.target_width;
  return scale > 0 ? interval.width() / scale : interval.width();
}

std::string describe(const AdaptiveRule& rule) {
  if (!rule.enabled()) return "fixed count";
  return rule.band() ? absl::StrFormat("band %g:%g, batch %d", rule.band_lo, rule.band_hi, rule.batch)
                     : absl::StrFormat("target width %g, batch %d", rule.target_width, rule.batch);
}

absl::Status parse_band(absl::string_view field, absl::string_view text, AdaptiveRule* rule) {
  const auto bad = [&] {
    return absl::InvalidArgumentError(absl::StrCat(field, ": '", text.substr(0, 40),
                                                   "' is not LO:HI or CENTRE+-HALF (e.g. 0.47:0.53 or 0.50+-0.03)"));
  };
  double a = 0, b = 0;
  for (absl::string_view sep : {"+-", "\xc2\xb1"}) {  // +- or ±
    const size_t at = text.find(sep);
    if (at == absl::string_view::npos) continue;
    if (!absl::SimpleAtod(text.substr(0, at), &a) || !absl::SimpleAtod(text.substr(at + sep.size()), &b) || !(b > 0))
      return bad();
    rule->band_lo = a - b;
    rule->band_hi = a + b;
    return absl::OkStatus();
  }
  const size_t colon = text.find(':');
  if (colon == absl::string_view::npos || !absl::SimpleAtod(text.substr(0, colon), &a) ||
      !absl::SimpleAtod(text.substr(colon + 1), &b) || !(a < b))
    return bad();
  rule->band_lo = a;
  rule->band_hi = b;
  return absl::OkStatus();
}

}  // namespace c960::selfplay
