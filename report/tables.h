// The report's input as plain data: a self-play table (White's results per position) or a perft
// table (node counts per position and depth), and the CSV forms that `c960 selfplay --format csv`
// and `c960 perft --table` write. Parse errors name the line and the column.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/perft.h"
#include "report/stats.h"
#include "selfplay/sprt.h"
#include "selfplay/stats.h"

namespace c960::report {

// A position's identity: the id the table gives it (a start position number "518", or any other
// key such as an EPD line's), its FEN, and its Chess960 number when the FEN is a Chess960 start
// position (or, without a FEN, when the id is a number 0..959); -1 otherwise.
struct PositionKey {
  std::string id;
  std::string fen;
  int sp = -1;
};

struct SelfPlayRow {
  PositionKey key;
  selfplay::ResultCounts counts;
  double mean_plies = kNaN;  // NaN when the table has none
  int64_t duplicates = 0;
  int64_t uncounted = 0;              // games played that are not evidence (selfplay::is_evidence)
  std::vector<int64_t> terminations;  // one per SelfPlayTable::termination_names, over every game played
  // An adaptive run's (SelfPlayTable::adaptive): the anytime 95% interval for White's score and
  // the verdict (selfplay::verdict_name: "narrow", "inside", "above", "below", "cap", or "open"
  // while the position plays on).
  double anytime_lo = kNaN, anytime_hi = kNaN;
  std::string verdict;
  // Related games (selfplay/lines.h): the lines the position's games follow (-1 when not known)
  // and their effective number (NaN when not known: the games are taken as independent).
  int64_t lines = -1;
  double effective_games = kNaN;
  // Every game played: distinct evidence games, repeats and games that are not evidence.
  int64_t played() const { return counts.games() + duplicates + uncounted; }
};

struct SelfPlayTable {
  std::vector<SelfPlayRow> rows;
  std::vector<std::string> termination_names;
  // An adaptive run (selfplay/adaptive.h): the rows have anytime intervals and verdicts. The
  // rule (selfplay::describe) and the engine when known (a CSV's "rule" and "engine" columns;
  // older CSVs lack them).
  bool adaptive = false;
  std::string adaptive_rule, engine;
  // How related the games are: selfplay::Relatedness::note() when the table came from a run's
  // games; empty for a CSV (whose rows carry only "lines" and "effective_games", when they do).
  std::string related_note;
  // Whether every row with games has its effective number of games.
  bool effective_known() const;
};

struct PerftRow {
  PositionKey key;
  int depth = 0;
  NodeCount nodes = 0;
};

struct PerftTable {
  std::vector<PerftRow> rows;  // at most one per (id, depth)
};

// Key/value lines for the metadata section (engine, options, limits, seed, version, dates, ...).
using Metadata = std::vector<std::pair<std::string, std::string>>;

// A two-engine match, position by position (selfplay/match.h), from A's side: the pentanomial
// counts of its pairs (A's points in a colour-reversed pair: LL 0, LD 1/2, DD or WL 1, WD 3/2,
// WW 2) and A's wins, draws and losses over the paired games counted.
struct MatchRow {
  PositionKey key;
  selfplay::Pentanomial penta{};
  int64_t wins = 0, draws = 0, losses = 0;
  int64_t duplicates = 0, unpaired = 0;  // pairs repeated move for move; games without a partner
  int64_t pairs() const { return penta[0] + penta[1] + penta[2] + penta[3] + penta[4]; }
};

struct MatchTable {
  std::vector<MatchRow> rows;
  std::string engine_a, engine_b;  // empty when the input does not name them
  // From a match's JSON only: the SPRT it ran (disabled when none) and its metadata.
  selfplay::SprtRule sprt;
  Metadata metadata;
};

// The table of `c960 selfplay --format csv`: header "sp,fen,games,white_wins,draws,black_wins,..."
// (columns found by name; after "rank" come the terminations; "lines" and "effective_games" are
// read when there: without them every game is taken as independent; an adaptive run's "rule" and
// "engine", when there, must be the same on every row), one row per position, and a last
// row "all" whose counts must equal the rows' sums. Derived columns (score, intervals, Elo) are
// not read: the report computes them from the counts.
absl::StatusOr<SelfPlayTable> parse_selfplay_csv(absl::string_view text);

// The table of `c960 perft --table`: header "sp,fen,depth,nodes". Tables of several depths may be
// concatenated (repeated headers are skipped); a divide table ("sp,fen,depth,move,nodes") is
// summed over its moves.
absl::StatusOr<PerftTable> parse_perft_csv(absl::string_view text);

// The table of `c960 selfplay --engine A --opponent B --format csv` (selfplay::MatchStats::to_csv):
// header "sp,fen,pairs,ll,ld,dd_wl,wd,ww,games,wins,draws,losses,...,duplicates,unpaired" (and,
// when there, "engine_a,engine_b": the same on every row), one row per position, and a last row
// "all" whose counts must equal the rows' sums. Each row must add
// up: pairs = ll + ld + dd_wl + wd + ww, games = wins + draws + losses = 2 pairs, and A's points
// (wins + draws / 2) = ld / 2 + dd_wl + 3 wd / 2 + 2 ww. Derived columns (score, Elo, p, favours)
// are not read: the report computes them from the counts.
absl::StatusOr<MatchTable> parse_match_csv(absl::string_view text);

// The JSON of the same match (`--format json`, selfplay::MatchStats::to_json): the counts of
// each position as in the CSV (the same checks), the engines' names, the SPRT's rule (the
// report computes its log-likelihood ratio from the counts) and the metadata. Errors name the
// line and the field ("positions[3].pentanomial").
absl::StatusOr<MatchTable> parse_match_json(absl::string_view text);

enum class TableKind { kSelfPlay, kPerft, kMatch };
// Which table a CSV holds, from its header; an error names what was expected.
absl::StatusOr<TableKind> detect_table_kind(absl::string_view text);

// The rows of a SelfPlayStats (a local run or a job's results), for report_from_data.
SelfPlayTable selfplay_table_from_stats(const selfplay::SelfPlayStats& stats);

}  // namespace c960::report
