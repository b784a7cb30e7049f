// Two engines, position by position: colour-reversed game pairs from one opening (game 2k has
// the first engine, "A", White; game 2k+1 the second, "B"), counted as pentanomial pairs from
// A's side (its points in the pair: 0, 1/2, 1, 3/2, 2), as cutechess-cli, fastchess, OpenBench
// and Fishtest count them; A's score with its interval, Elo, normalized Elo and LOS from the
// pairs' variance (which colour reversal makes smaller than the games'); a generalized SPRT
// (logistic or normalized Elo bounds, as fastchess gives them); and per position, whether it
// favours one engine (A's pair score against 1/2, Holm and Benjamini-Hochberg over the
// positions, by the exact sign test on the pairs each engine won), and whether the engines'
// difference depends on the position at all.
//
// The SPRT's log-likelihood ratio is Van den Bergh's: for each hypothesis, the distribution of
// the five pair scores closest to the observed one (maximum likelihood) among those whose mean
// (logistic: the score of elo0 or elo1) or normalized mean ((mu - 1/2) / sigma, normalized:
// from nelo0 or nelo1) the hypothesis gives; LLR = N sum p_i log(p1_i / p0_i). Stop for H1 at
// log((1 - beta) / alpha), for H0 at log(beta / (1 - alpha)).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "selfplay/game.h"
#include "selfplay/positions.h"
#include "selfplay/spec.h"
#include "selfplay/sprt.h"

namespace c960::selfplay {

struct MatchFigures {
  int64_t pairs = 0;
  double score = 0, score_lo = 0, score_hi = 0;  // A's mean score a game, 95% interval
  double elo = 0, elo_lo = 0, elo_hi = 0;        // logistic Elo of A over B
  double nelo = 0;                               // normalized Elo (pentanomial)
  double los = 0;                                // P(A is stronger): normal approximation (see below)
  double p = 0;                                  // two-sided, H0: score 1/2 (see below)
  // The sign test on the pairs either engine won (more than 1 of the pair's 2 points), tied
  // pairs left out: exact binomial, two-sided; valid at any count (the per-position test).
  int64_t a_pairs = 0, b_pairs = 0;
  double sign_p = 1;
};
// NaN figures without pairs. The interval, LOS and p are the pair scores' normal ones, as
// fastchess and OpenBench give them. With every pair alike there is no spread to measure (the
// normal interval would be a point, LOS 100% and p 0): then p is the exact sign test's, LOS its
// one-sided counterpart (1 - 2^-n with n pairs won), and the interval's end towards 1/2 the sign
// test's exact bound, so that the three agree (2 pairs won: 0.158..1, LOS 75%, p 0.5); see
// match.cpp.
MatchFigures match_figures(const Pentanomial& penta);

// Across positions (each one's pentanomial, in table order): per position the sign test's p
// (NaN without pairs) and its Holm and Benjamini-Hochberg adjustments over the positions; and
// whether the engines' difference depends on the position: the positions' mean pair scores
// against the match's, with the match's pair variance pooled (the variance when the position
// does not matter), sum n_k (mu_k - mu)^2 / var against chi-square with (positions with pairs) - 1
// degrees of freedom (dof 0 and p NaN when that is not computable).
struct MatchTests {
  std::vector<double> p, holm, bh;
  double chi_square = 0, heterogeneity_p = 1;
  int dof = 0;
};
MatchTests match_tests(const std::vector<Pentanomial>& positions);

// "A" or "B" for a position whose Holm-adjusted sign test is below 0.05 (by its score), else "".
std::string match_favours(const MatchFigures& f, double holm);

struct MatchPositionStats {
  std::string id;
  int sp = -1;
  std::string fen;
  Pentanomial penta{};
  int64_t wins = 0, draws = 0, losses = 0;  // A's, over the paired games counted
  int64_t duplicates = 0;                   // pairs that repeat an earlier pair of the position move for move
  int64_t unpaired = 0;                     // games whose partner is missing or not evidence (not counted)
  std::set<uint64_t> pair_hashes;
  // The pairs' lines: a pair's line is the lines (selfplay/lines.h: first kLinePlies plies) of
  // both its games; each line's pentanomial counts by its hash. Empty when not recorded (a
  // cluster job's results carry no lines of pairs).
  std::map<uint64_t, Pentanomial> lines;
  int64_t pairs() const;
};

// How related a match's pairs are: as selfplay/lines.h for games, with pair scores (0, 1/4, 1/2,
// 3/4, 1) in place of game scores. The intraclass correlation rho of the pairs of one line, from
// a one-way analysis of variance of the pair scores by line within position over all positions
// when at least kMinSharedLinesToEstimate lines hold two pairs or more, else taken as 1; a
// position's effective pairs are its pairs / (1 + (m - 1) rho), m = sum n_c^2 / n. Not used by
// the match's figures yet (a cluster job's results carry no lines of pairs, and its figures must
// equal a local run's): the text output says how many pairs the figures would count.
struct MatchRelatedness {
  double rho = 1;
  bool estimated = false;
  int64_t shared_lines = 0;          // lines holding two pairs or more, over all positions
  int64_t pairs = 0;                 // over the positions whose lines were recorded
  double effective = 0;              // their effective pairs
  int64_t unrecorded = 0;            // positions with pairs whose lines were not recorded
  std::vector<double> effective_of;  // per position (its pairs when not recorded)
  // A paragraph for the text output ("" when no two pairs of a position share a line).
  std::string note() const;
};
MatchRelatedness match_relatedness(const std::vector<const MatchPositionStats*>& positions);

class MatchStats {
 public:
  // engines: A's and B's names for the outputs.
  MatchStats(std::string a, std::string b) : a_(std::move(a)), b_(std::move(b)) {}
  // Both games of pair k of a position (game 2k with A White, 2k+1 with B White); either may be
  // missing (null) in a partial run.
  void add_pair(const StartPosition& position, const GameRecord* a_white, const GameRecord* b_white);
  // A position's figures as counted elsewhere (a cluster job's, over the same pairs): replaces
  // the position's row, or adds it after the others. pair_hashes are not needed.
  void set_position(MatchPositionStats position);
  void set_sprt(const SprtRule& rule) { sprt_ = rule; }
  std::vector<const MatchPositionStats*> rows() const;
  Pentanomial total() const;
  MatchRelatedness relatedness() const { return match_relatedness(rows()); }
  double llr() const { return sprt_llr(sprt_, total()); }
  // CSV: "sp,fen,pairs,ll,ld,dd_wl,wd,ww,games,wins,draws,losses,score,score_lo,score_hi,elo,
  // elo_lo,elo_hi,nelo,los,p,p_holm,p_bh,favours,duplicates,unpaired,engine_a,engine_b" (wins,
  // draws and losses A's; p: the sign test's, adjusted by Holm and Benjamini-Hochberg over the
  // positions; favours: A, B or empty, by Holm at 5%; the engines' names the same on every row, so
  // that a report of the CSV can name them), then the row 'all' (p: the normal approximation's,
  // no adjustment, no favours).
  std::string to_csv() const;
  // {"metadata", "engines": {"a", "b"}, "positions": [...], "total": {...}, "heterogeneity":
  // {chi_square, dof, p}, "sprt": {...} (when set)}.
  std::string to_json(const std::vector<MetadataValue>& metadata = {}) const;
  // A table for a terminal: the totals first (with MatchRelatedness::note), then one row a
  // position.
  std::string to_text() const;

 private:
  MatchTests tests() const;
  std::string a_, b_;
  SprtRule sprt_;
  std::vector<MatchPositionStats> positions_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace c960::selfplay
