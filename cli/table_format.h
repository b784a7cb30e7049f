// Result tables: for people (aligned text, sorted, thousands separators) and for programs (CSV and
// JSON, unchanged so that scripts keep working). Pure functions, rows in and text out, shared by
// `c960 results` and meant for `c960 selfplay` and `c960 perft --table`.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cluster/results_export.h"
#include "cluster/text_wrap.h"
#include "core/perft.h"
#include "selfplay/evaluation.h"
#include "selfplay/ranking.h"
#include "selfplay/spec.h"
#include "selfplay/stats.h"

namespace c960::cli {

enum class OutputFormat { kText, kCsv, kJson };

// --format's value when given ("text", "csv" or "json"; anything else is INVALID_ARGUMENT naming
// --format), else text for a terminal and CSV for anything else (a pipe or a file: what scripts
// read, as before the text table existed).
absl::StatusOr<OutputFormat> output_format(const std::optional<std::string>& flag, bool to_terminal);

// "1,234,567".
std::string with_thousands(NodeCount n);
// "1 game", "2 games": a count with its noun in the number it needs.
std::string counted(int64_t n, absl::string_view singular, absl::string_view plural);

// Columns of text, each aligned to its widest cell (header included), two spaces apart, no
// trailing spaces; a row shorter than the header leaves the rest blank.
struct TextColumn {
  std::string header;
  bool right = false;  // numbers: right-aligned
};
std::string render_columns(const std::vector<TextColumn>& columns, const std::vector<std::vector<std::string>>& rows);

// One root of a perft table, and its CSV and JSON (cluster/results_export.h, shared with the
// coordinator's downloads).
using cluster::perft_csv;
using cluster::perft_json;
using cluster::PerftRow;
// Text: a header, the roots by start position (roots given as FEN after them, in the given order),
// each with its back rank (selfplay::position_label), node counts right-aligned with thousands
// separators, and a last row "total"; with divide, a row per first move under its root. Roots not
// complete are marked "incomplete" (their counts so far) and counted in a line below.
std::string perft_text_table(const std::vector<PerftRow>& rows, bool divide);

// Text: the evaluations in the given order, each with its position (number and back rank),
// engine, depth reached, nodes, score ("+0.35", "mate 3", "mated 2"), best move and the PV's
// first plies.
std::string evaluation_text_table(const std::vector<selfplay::EvalRow>& rows);

// Text: a header, the 'all' row (the whole job), then the positions in SelfPlayStats::ranking's
// order (the ranked by their shrunk score, best for White first, then the others), each with its
// rank (blank when not ranked), id and back rank; games and results right-aligned, score and Elo
// with their 95% intervals aligned ("0.512 [0.489, 0.535]", "+8 [-7, +24]"), the shrunk score and
// its interval ("0.530-0.571"), the rank's 95% interval ("1-12"), draw rate, mean plies and
// duplicates. Terminations are in the CSV
// and JSON only. Positions not complete (PositionStats::complete) are marked "incomplete" and
// counted in a line below, then the ranking_note and the position_matters_line. `width` > 0 (a
// terminal's columns): the columns that matter least are left out until the table fits (Elo,
// plies, draw rate, duplicates, the rank interval, the shrunk score's interval, back rank, the
// shrunk score), and the notes under it are wrapped to the width.
std::string selfplay_text_table(const selfplay::SelfPlayStats& stats, int width = 0);
// How the positions are ranked (the shrinkage model's mean and true spread, how many are not
// ranked), or why none is; "" with fewer than two positions. It mentions the rank's 95% interval
// as in the table only when `rank_column` (the table shows the column) and the ranks have one.
std::string ranking_note(const selfplay::Ranking& ranking, bool rank_column = true);
// "Does the start position matter? chi-square X, D df, p = P": Pearson's test of homogeneity of
// the positions' win/draw/loss counts (report/stats.h), "" with fewer than two positions with
// games; a second line when expected counts are small.
std::string position_matters_line(const selfplay::SelfPlayStats& stats);
// The columns of this process's stdout when it is a terminal, else $COLUMNS, else 80.
using cluster::stdout_columns;

}  // namespace c960::cli
