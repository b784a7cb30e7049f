// Adaptive allocation: a self-play run that plays each position until its White score is known
// well enough (an interval narrower than a target width) or a question about it is decided (is
// it inside a band such as 0.50 +- 0.03), instead of a fixed count, with intervals that stay
// valid however often they are looked at and wherever the run stops.
//
// The anytime interval (a confidence sequence). A game scores x = 1, 1/2 or 0 for White. For a
// hypothesised mean m, a bettor who stakes a fixed fraction of his capital on each game's
// x - m, Π(1 + λ(x_i - m)), plays a fair game when m is the true mean, whatever the draw rate:
// his capital is a nonnegative martingale, so by Ville's inequality the chance that it ever
// reaches 1/α is at most α. We mix a grid of bets (kBetGrid fractions, equal weights; the bet on
// "above m" is λ = f/m, on "below m" λ = -f/(1-m)) and drop m once either half of the mixture
// reaches 2/α: P(the true mean is ever dropped, at any number of games) <= α. Each bet is a
// product over games, so the capital and the interval depend only on the counts (W, D, L), not
// on the order the games came in: a cluster and a local run agree. Bets that grow fastest are
// those near (p - m)/variance, so draws, which shrink the variance, narrow the interval as they
// should. (Waudby-Smith and Ramdas, "Estimating means of bounded random variables by betting",
// JRSS B 2024, section 5: a mixture of constant bets.)
//
// The price of looking at any time: at the same games the anytime interval is wider than the
// fixed-count one (about 1.8 times at 1,000 games; figures in docs/selfplay.md). A run that never
// looks before the end is better served by a fixed count.
//
// The rule. Each position plays `batch` games, then, after every further batch, looks at its
// anytime interval over the distinct games that are evidence (stats.h): it stops when the
// interval is narrower than target_width, or (band mode) lies inside [band_lo, band_hi] or
// wholly above or below it, or when it reaches the spec's games_per_position (the cap). Each
// position's stop depends on its own games only, which depend only on (spec, position, index):
// the games a run plays are the same whatever the order results come back in, on one machine or
// many, interrupted and resumed or not.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace c960::selfplay {

// Defaults and limits of the rule, in one place (spec.cpp's validate, the CLI options).
inline constexpr int kDefaultAdaptiveBatch = 20;
inline constexpr int kMinAdaptiveBatch = 2;
inline constexpr int kMaxAdaptiveBatch = 100'000;
inline constexpr double kMinTargetWidth = 0.001;
inline constexpr double kDefaultAnytimeAlpha = 0.05;
// Bet fractions of the mixture: geometric from kMinBet to kMaxBet.
inline constexpr int kBetGrid = 40;
inline constexpr double kMinBet = 1.0 / 4096, kMaxBet = 0.75;

// The batch when none is given: kDefaultAdaptiveBatch, or the cap if less (at least
// kMinAdaptiveBatch, so that validate() names a cap below it).
inline int default_batch(int cap) {
  return cap < kDefaultAdaptiveBatch ? std::max(kMinAdaptiveBatch, cap) : kDefaultAdaptiveBatch;
}

struct AdaptiveRule {
  double target_width = 0;            // > 0: stop a position once its interval is narrower
  double band_lo = 0, band_hi = 0;    // band_hi > band_lo: stop once the interval is inside or outside
  int batch = kDefaultAdaptiveBatch;  // games per step, the first step included
  bool enabled() const { return target_width > 0 || band_hi > band_lo; }
  bool band() const { return band_hi > band_lo; }
  // INVALID_ARGUMENT naming the field (target_width, band, batch); `cap` is games_per_position.
  absl::Status validate(int cap) const;
};

// Why a position stopped, or kOpen while it plays on.
enum class Verdict { kOpen, kNarrow, kInside, kAbove, kBelow, kCap };
// "open", "narrow", "inside", "above", "below", "cap" (CSV, JSON, the report).
absl::string_view verdict_name(Verdict v);

struct AnytimeInterval {
  double lo = 0, hi = 1;
  double width() const { return hi - lo; }
};

// The (1 - alpha) confidence sequence's interval for White's mean score after these counts of
// White's wins, draws and losses; [0, 1] without games. Holds for every number of games at once.
AnytimeInterval anytime_interval(int64_t white_wins, int64_t draws, int64_t black_wins,
                                 double alpha = kDefaultAnytimeAlpha);

// The verdict on a position that has played `played` of at most `cap` games, at one of its looks
// (played a multiple of the batch, or the cap), with this interval over its evidence games.
Verdict verdict(const AdaptiveRule& rule, const AnytimeInterval& interval, int64_t played, int64_t cap);

// The games a position plays in all after its look at `played` games found it open: one batch
// more, at most the cap.
int64_t next_look(const AdaptiveRule& rule, int64_t played, int64_t cap);

// How much a position still needs games, for the order new work is handed out in: the widest
// interval first, by its width over the target width (band mode: over the band's width).
double need(const AdaptiveRule& rule, const AnytimeInterval& interval);

// "--target-width 0.02" or "--band 0.47:0.53" and the batch, for logs and the PGN Event tag.
std::string describe(const AdaptiveRule& rule);

// Parses a band: "LO:HI" or "CENTRE+-HALF" ("0.50+-0.03", also with ±). INVALID_ARGUMENT naming
// `field` otherwise.
absl::Status parse_band(absl::string_view field, absl::string_view text, AdaptiveRule* rule);

}  // namespace c960::selfplay
