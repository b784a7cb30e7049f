// The sequential probability ratio test of a two-engine match (selfplay/match.h) on its
// pentanomial pair counts, as fastchess and Fishtest run it: a generalized SPRT whose
// log-likelihood ratio is Van den Bergh's. For each hypothesis, the distribution of the five pair
// scores closest to the observed one (maximum likelihood) among those whose mean (logistic: the
// score of elo0 or elo1) or normalized mean ((mu - 1/2) / sigma, normalized: from nelo0 or nelo1)
// the hypothesis gives; LLR = N sum p_i log(p1_i / p0_i). Stop for H1 at log((1 - beta) / alpha),
// for H0 at log(beta / (1 - alpha)).
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace c960::selfplay {

// A's points in a pair, in half points: 0 (LL), 1 (LD), 2 (WL or DD), 3 (WD), 4 (WW).
inline constexpr int kPentanomialCells = 5;
using Pentanomial = std::array<int64_t, kPentanomialCells>;

// Normalized bounds at or beyond this (in nElo, either sign) are refused: see SprtRule::validate.
inline constexpr double kMaxNormalizedElo = 231.6;

struct SprtRule {
  double elo0 = 0, elo1 = 0;  // elo0 < elo1; logistic Elo, or normalized Elo
  double alpha = 0.05, beta = 0.05;
  bool normalized = false;
  bool enabled() const { return elo1 > elo0; }
  double lower() const;  // log(beta / (1 - alpha))
  double upper() const;  // log((1 - beta) / alpha)
  absl::Status validate() const;
};
// "elo0=0,elo1=10[,alpha=0.05][,beta=0.05][,model=logistic|normalized]"; INVALID_ARGUMENT
// naming `field` and the part.
absl::Status parse_sprt(absl::string_view field, absl::string_view text, SprtRule* rule);
std::string describe(const SprtRule& rule);

enum class SprtResult { kContinue, kH0, kH1 };
absl::string_view sprt_result_name(SprtResult r);  // "continue", "H0", "H1"
// 0 without pairs; NaN where a hypothesis cannot be reached by any distribution of pair scores
// (as Fishtest refuses one; validate() keeps normalized bounds where that cannot happen at the
// start); sprt_result of NaN is kContinue.
double sprt_llr(const SprtRule& rule, const Pentanomial& penta);
SprtResult sprt_result(const SprtRule& rule, double llr);

}  // namespace c960::selfplay
