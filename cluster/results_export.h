// A job's results as files for programs: the CSV and JSON that `c960 results JOB --format
// csv|json` writes, and what the coordinator's downloads (/api/v1/jobs/ID/results.csv, .json)
// serve, the same bytes. Pure functions, results in and text out; shared here (not in cli/) so
// that the coordinator, which does not depend on the c960 tool, writes them too.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "core/perft.h"
#include "selfplay/match.h"
#include "selfplay/spec.h"
#include "selfplay/stats.h"

namespace c960::cluster {

// One root of a perft table.
struct PerftRow {
  int sp = -1;  // the Chess960 start position, else -1 (a root given as FEN)
  std::string fen;
  int depth = 0;
  NodeCount nodes = 0;  // so far, where not complete
  bool complete = true;
  std::vector<std::pair<std::string, NodeCount>> divide;  // first move (UCI) and the count below it
};

// CSV: "sp,fen,depth,nodes" (with divide: "sp,fen,depth,move,nodes", a row per first move), rows
// in the given order; complete_column adds a last column "complete" (true/false).
std::string perft_csv(const std::vector<PerftRow>& rows, bool divide, bool complete_column = false);
// JSON: {"metadata": {...}, "positions": [{"sp": N|null, "fen": ..., "depth": D, "nodes": N,
// ["divide": {move: nodes, ...},] ["complete": bool]}, ...]}; counts as exact integers, even
// beyond 2^53. No "metadata" key when there is none.
std::string perft_json(const std::vector<PerftRow>& rows, bool divide,
                       const std::vector<selfplay::MetadataValue>& metadata, bool complete_field = false);

// A position's lines from its result (SelfPlayPositionResult.lines), each under a number of
// its own (the figures depend only on their results: selfplay::line_groups); none (not recorded)
// unless they hold exactly its counted games.
selfplay::Lines result_lines(const v1::SelfPlayPositionResult& r);

// A self-play job's statistics from its results' per-position figures (the counts the
// coordinator keeps over every game, stored or not; a position's further chunks of games are
// skipped), with its adaptive rule where it has one: what `c960 results` and `c960 report JOB`
// show. `incomplete` and `positions` (optional) count the positions with games outstanding and
// all of them.
selfplay::SelfPlayStats selfplay_stats_from_results(const v1::Job& job, const std::vector<v1::ResultChunk>& chunks,
                                                    size_t* incomplete = nullptr, size_t* positions = nullptr);

// A match job's (SelfPlayJobSpec.opponent) statistics from the same chunks: the figures of
// 'c960 selfplay --opponent' over the pairs the coordinator counted, with the job's SPRT.
selfplay::MatchStats match_stats_from_results(const v1::Job& job, const std::vector<v1::ResultChunk>& chunks,
                                              size_t* incomplete = nullptr, size_t* positions = nullptr);

// What every job's JSON metadata starts with: this program's version, the job as the
// coordinator has it (id, state, times, failure, verify mode) and its workers' provenance
// ("worker_1", ... : Job.provenance).
std::vector<selfplay::MetadataValue> job_metadata(const v1::Job& job);

enum class ResultsFormat { kCsv, kJson };
// The job's results file as `c960 results JOB --format csv|json [--divide] [--partial]` writes it
// (with this program's version in the JSON's metadata). `chunks` as GetResults streams them with
// omit_games. FAILED_PRECONDITION, saying how far the job is, when a position is incomplete and
// not `partial`.
absl::StatusOr<std::string> results_file(const v1::Job& job, const std::vector<v1::ResultChunk>& chunks,
                                         ResultsFormat format, bool divide, bool partial);

}  // namespace c960::cluster
