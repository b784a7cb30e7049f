// Self-play statistics: per start position and for the whole job, White's results, score with
// a 95% confidence interval, the Elo difference with its interval, draw rate, game length,
// terminations and duplicate games. Figures count distinct games that are evidence about their
// position: a repeat of an earlier game, or an engine failure before the engines played
// (is_evidence), is reported and not counted again.
//
// The interval. A game scores 1, 1/2 or 0 for White; with true probabilities (W, D, L) the mean
// is p = W + D/2 and a game's variance is p(1-p) - D/4. We take the hull of two intervals, one
// formula without special cases, so the interval moves continuously with the counts (40 draws of
// 40 give [0.456, 0.544], 39 draws and a win [0.462, 0.564]):
//  - a score (Wilson-type) interval: every p with n (s - p)^2 <= z^2 V(p), where the variance is
//    taken at the hypothesised p, V(p) = p(1-p) - min(d/n, 2p, 2-2p)/4: the observed draw rate,
//    capped by the largest draw rate that mean p allows. V is piecewise quadratic, so the
//    endpoints are roots of three quadratics. Without draws this is Wilson's interval.
//  - an Agresti-Coull-type interval: z^2/2 pseudo-wins and z^2/2 pseudo-losses are added, then
//    mean +- z sqrt(variance / n'). Without draws this is Agresti and Coull's interval.
// Why both: near 0 and 1 the counts are skewed and the score interval alone under-covers (e.g.
// 92.5% for W, D, L = 0, .05, .95 at n = 20), while the pseudo-counts alone pull the centre too far
// towards 1/2 for draw-heavy mixes (92.5% for .75, .25, 0 at n = 22). Their hull covers the mean
// at least 93% of the time at every n >= 20 on a 0.05 grid of (W, D, L); the exact coverage and a
// simulation are in tests/stats_test.cpp. Elo(p) = -400 log10(1/p - 1), infinite at p = 0 or 1.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "selfplay/game.h"
#include "selfplay/positions.h"
#include "selfplay/spec.h"

namespace c960::selfplay {

constexpr double kZ95 = 1.959963984540054;

struct Interval {
  double value = 0, lo = 0, hi = 0;
};

// Counts of White's results; the derived figures are NaN when there are no games.
struct ResultCounts {
  int64_t white_wins = 0, draws = 0, black_wins = 0;
  int64_t games() const { return white_wins + draws + black_wins; }
  Interval score(double z = kZ95) const;
  Interval elo(double z = kZ95) const;  // from the score interval
  double draw_rate() const;
};

double elo_from_score(double p);
// The Elo differences of a score interval's value and ends.
Interval elo_of(const Interval& score);

// The interval of ResultCounts::score for counts that may be fractional (the effective number of
// related games, selfplay/lines.h): the same formula.
Interval score_interval(double white_wins, double draws, double black_wins, double z = kZ95);
// The score interval of counts as if from `effective` independent games (the counts scaled;
// NaN or not below the games: the counts' own interval).
Interval effective_score(const ResultCounts& counts, double effective, double z = kZ95);

// One position's lines (games grouped by their opening, selfplay/lines.h): each line's counts
// of distinct evidence games, by the line's hash.
using Lines = std::map<uint64_t, ResultCounts>;

// The number formats of the tables: CSV (empty for NaN, "inf"/"-inf"), JSON (null for NaN and
// infinities), a JSON string, and metadata as a JSON object (numbers unquoted).
std::string csv_number(double x, int decimals);
// RFC 4180: a field with a comma, a quote or a line break quoted, its quotes doubled.
std::string csv_field(absl::string_view s);
std::string json_number(double x, int decimals);
std::string json_string(absl::string_view s);
std::string metadata_json(const std::vector<MetadataValue>& metadata);

// Whether a game is evidence about its start position. Not when an engine failed (an illegal
// move, a crash, a hang, bad output or no start) before both engines had played a move of their
// own from it: the position had no part in how such a game ended, and nothing can check it (a
// worker could claim one for any position). Such games are reported (terminations, PGN, the
// `uncounted` figure) but not counted in the results, scores and tests.
bool is_evidence(Termination termination, int plies, int opening_plies);
bool is_evidence(const GameRecord& game);

struct PositionStats {
  std::string id;   // the position's id: its number for the 960 ("518"), see StartPosition
  int sp = -1;      // the Chess960 start position number, else -1
  std::string fen;  // X-FEN
  // Of the distinct games that are evidence (is_evidence): a game that repeats an earlier one
  // of the position move for move adds nothing, and is counted in `duplicates` instead.
  ResultCounts counts;
  int64_t total_plies = 0;  // of every game played
  int64_t duplicates = 0;   // evidence games whose moves an earlier game of this position had
  int64_t uncounted = 0;    // games played that are not evidence (in terminations and plies only)
  std::array<int64_t, size_t(Termination::kCount)> terminations{};
  std::set<uint64_t> game_hashes;
  // The distinct evidence games by line (selfplay/lines.h); empty with games when the figures
  // came from elsewhere without them (a cluster job's results).
  Lines lines;
  // Every planned game counted; false for a cluster job's position with games outstanding (a
  // cancelled, failed or running job's partial results).
  bool complete = true;

  void add(const GameRecord& game);
  int64_t played() const { return counts.games() + duplicates + uncounted; }
  double mean_plies() const;  // over every game played
};

// A 64-bit hash of a game's start and moves, for counting duplicates.
uint64_t game_hash(const GameRecord& game);

struct Ranking;
struct Relatedness;

class SelfPlayStats {
 public:
  void add(const StartPosition& position, const GameRecord& game);
  // Chess960 start position sp.
  void add(int sp, const GameRecord& game);
  // The rows in table order: positions whose ids are numbers (the 960, DFRC pairs, book line
  // numbers) ascending, then the others in the order they were first added.
  std::vector<const PositionStats*> rows() const;
  const PositionStats* find(absl::string_view id) const;
  // A position's figures counted elsewhere (the coordinator keeps them as games settle): replaces
  // what add() gathered for p.id (p carries its id, sp and fen).
  void set_position(PositionStats p);
  // The whole job: complete when every position is.
  PositionStats total() const;
  // Scores shrunk toward the distribution of all positions' scores, with rank intervals (see
  // selfplay/ranking.h), in the order of rows().
  Ranking shrinkage() const;
  // How related each position's games are (selfplay/lines.h), in the order of rows().
  Relatedness relatedness() const;
  // Position ids in the order the table lists them: the ranked positions (kMinGamesToRank games
  // or more) by their shrunk score, best for White first; then the others with games by score
  // (then by the interval's lower bound); then those without games, each in table order.
  std::vector<std::string> ranking() const;

  // The CSV table: header "sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,
  // elo,elo_lo,elo_hi,draw_rate,mean_plies,duplicates,uncounted,shrunk,shrunk_lo,shrunk_hi,rank_lo,
  // rank_hi,rank" then one column per termination (shrunk..rank empty for a position not ranked),
  // one row per position (column sp: its id, quoted as RFC 4180 says where needed) and a last
  // row with sp "all" for the whole job. complete_column adds a last column "complete"
  // (true/false; the 'all' row: whether every position is).
  std::string to_csv(bool complete_column = false) const;
  // {"metadata": {...}, "positions": [...], "total": {...}, "ranking": [ids], "shrinkage": {...},
  // "mirror_pairs": {...}};
  // metadata first when given (see metadata_values); "ranking" has the ranked positions only, and
  // "shrinkage" the model's figures (min_games, ranked, mean, tau, with intervals), then
  // "mirror_pairs": each Chess960 position against its mirror image (selfplay/mirror.h).
  // complete_field adds "complete": true|false after each position's rank and first in the total.
  std::string to_json(const std::vector<MetadataValue>& metadata = {}, bool complete_field = false) const;
  // An adaptive run (selfplay/adaptive.h): to_csv adds columns
  // "anytime_lo,anytime_hi,verdict,rule,engine" after "rank" (the first three empty on the 'all'
  // row, whose games were not drawn from one position; rule, describe(rule), and engine the same
  // on every row, so that a report of the CSV can name them), to_json "anytime_lo", "anytime_hi"
  // and "verdict" after each position's "rank". `cap` is the spec's games_per_position; `engine`
  // the spec's (builtin, or the engine's path or name).
  void set_adaptive(const AdaptiveRule& rule, int cap, std::string engine = "") {
    adaptive_ = rule;
    cap_ = cap;
    engine_ = std::move(engine);
  }
  const AdaptiveRule& adaptive() const { return adaptive_; }
  const std::string& engine() const { return engine_; }
  // A position's anytime interval and verdict under the rule.
  AnytimeInterval anytime(const PositionStats& p) const;
  Verdict verdict_of(const PositionStats& p) const;
  Verdict verdict_of(const PositionStats& p, const AnytimeInterval& interval) const;

 private:
  std::vector<PositionStats> positions_;  // in the order first added
  AdaptiveRule adaptive_;
  int cap_ = 0;
  std::string engine_;
  std::map<std::string, size_t, std::less<>> index_;
};

}  // namespace c960::selfplay
