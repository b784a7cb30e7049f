// How the cluster commands show jobs: state names, numbers and times as people read them, the
// lines of `c960 watch` (fitted to a terminal's width), the table and JSON of `c960 status`, the
// description of `c960 status JOB`, and the best and worst positions of a self-play job.
// Pure functions of the job and a clock value, so that every output is testable without a
// coordinator.
#pragma once

#include <cstdint>
#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "c960/v1/cluster.pb.h"
#include "cluster/job_json.h"
#include "cluster/results_export.h"
#include "cluster/text_wrap.h"
#include "selfplay/match.h"
#include "selfplay/ranking.h"
#include "selfplay/stats.h"

namespace c960::cli {

using cluster::state_name;

// "1234567" -> "1,234,567" (decimal digits only; anything else is returned as it is).
std::string group_thousands(absl::string_view digits);
// Three significant digits and an SI prefix: 950 -> "950", 24123456789012 -> "24.1T".
std::string si_number(double value);
// Seconds as h:mm:ss ("0:00:05", "27:03:04" is never shown: from one day on "3d 04h"); "?"
// when negative or not finite.
std::string format_duration(double seconds);
using cluster::iso8601_utc;
// "perft d5" or "selfplay".
std::string job_kind(const v1::Job& job);
using cluster::job_elapsed_seconds;
using cluster::job_fraction;

// The columns of the terminal (cluster/text_wrap.h).
using cluster::kDefaultTerminalWidth;
using cluster::kMinTerminalWidth;
using cluster::terminal_width;

// The rate of a counter (games done) over a window of recent changes, and an ETA from it that
// counts down between changes instead of climbing, as a rate measured up to `now` would while a
// unit is being played.
class RateWindow {
 public:
  explicit RateWindow(int64_t window_ms) : window_ms_(window_ms) {}
  // The counter's value seen at `t_ms`; only changes are kept.
  void add(int64_t t_ms, double count);
  // Per second, between the oldest kept change and the newest; -1 until there are two.
  double rate() const;
  // Seconds until `remaining` more at rate(), counted from the newest change to `now_ms`; -1
  // when unknown.
  double eta_seconds(double remaining, int64_t now_ms) const;

 private:
  int64_t window_ms_;
  std::deque<std::pair<int64_t, double>> samples_;
};

// The best and worst positions of a self-play job so far: the ranked ones (selfplay/ranking.h:
// kMinGamesToRank games or more) by their shrunk score, best for White first; `best` and `worst`
// never share a position (with fewer than six ranked, fewer are shown). Nothing is listed until
// positions are ranked: a list of 2-game positions is luck.
struct LeaderEntry {
  int start_position = 0;
  std::string id;                // its id, for positions beyond the 960
  double score = 0;              // White's, shrunk
  int rank_lo = 0, rank_hi = 0;  // the rank's 95% interval (0: not simulated)
  int64_t games = 0;
};
struct Leaders {
  std::vector<LeaderEntry> best, worst;
  int64_t games = 0;       // of every position
  int64_t most_games = 0;  // of any one position
  int64_t min_games = selfplay::kMinGamesToRank;
  // A match job (results with MatchCounts): its pairs so far instead of positions by score.
  bool match = false;
  selfplay::Pentanomial pairs{};
  bool any() const { return !best.empty(); }
};
// A match's line: "A: score 0.431 [0.380, 0.482], Elo -48 [-84, -13], LOS 0.4% (40 pairs)".
std::string match_line(const Leaders& leaders);
inline constexpr int kLeadersShown = 3;  // at most, in each list
Leaders leaders_of(const std::vector<v1::ResultChunk>& chunks);
// "#518 RNBQKBNR 0.55 (rank 1-12, n=40)"
std::string leader_text(const LeaderEntry& e);
// Why nothing is listed: "no games yet", or "not ranked yet: 20 games a position (most so far: 6)".
std::string leaders_missing(const Leaders& leaders);
// "best: #518 ... (rank 1-12, n=40), #12 ...; worst: ..." (no width limit), or leaders_missing.
std::string leaders_line(const Leaders& leaders);

// What `c960 watch` knows besides the job.
struct WatchView {
  double eta_seconds = -2;  // its own estimate (RateWindow); -2: the job's, -1: unknown
  double rate = -1;         // its own games per second; -1: the job's
  Leaders leaders;          // self-play
  std::string connection;   // "reconnecting to HOST:PORT... (since 12 s)"; "" while connected
};
// The block `c960 watch` redraws on a terminal `width` columns wide: always the same number of
// lines for a job kind (perft 3, self-play 5), each shorter than `width`, fields dropped or
// shortened in order of importance (state, progress, ETA and units go last).
std::vector<std::string> watch_lines(const v1::Job& job, const WatchView& view, int64_t now_unix_ms, int width);
// The same as plain text for output that is not a terminal (a log), leaders excluded: the fields
// in lines of at most 80 columns (never broken; continuation lines indented 2), then the notice
// wrapped at its words on lines of its own; no trailing newline.
std::string watch_plain_line(const v1::Job& job, const WatchView& view, int64_t now_unix_ms);
// `c960 workers`'s table (cli/cmd_workers.cpp): a row a worker; at `width` > 0 (a terminal's
// columns) WHY, ENGINES, VERSION and OWNER, in this order, leave the row for indented, wrapped
// lines under it while the rows are wider than `width`.
std::string workers_table(const v1::ListWorkersResponse& resp, int width);
// The ANSI text that replaces a block of `previous_lines` lines drawn before (0: the first
// drawing) with `lines`, leaving the cursor at the end of the last.
std::string redraw_block(int previous_lines, const std::vector<std::string>& lines);

// The job's spec, request id, times, progress and any mismatches or unit failures, each on lines
// of at most `width` columns (a word longer than that aside): the first line is "job ID
// STATE"; a line holds "DONE/TOTAL units" (the progress breaks only between its fields).
std::string job_description(const v1::Job& job, int64_t now_unix_ms, int width = kDefaultTerminalWidth);

// `c960 status`: a header and a row per job in aligned columns (ID, KIND, STATE, DONE, UNITS,
// AGE since submit, DURATION of a finished job), then "ID: notice" for each running job that
// waits for something (Job.notice).
std::string status_table(const std::vector<v1::Job>& jobs, int64_t now_unix_ms);
// The jobs' JSON (cluster/job_json.h), shared with the coordinator's /api/v2/jobs.
using cluster::job_json;
using cluster::jobs_json;

// A self-play job's statistics from its results (cluster/results_export.h, shared with the
// coordinator's downloads): what `c960 results` and `c960 report JOB` show.
using cluster::selfplay_stats_from_results;
// A match job's: cluster/results_export.h.
using cluster::match_stats_from_results;

}  // namespace c960::cli
