// Jobs as clean JSON, one form for every reader: `c960 status --format json` and the
// coordinator's /api/v2/jobs. Stable keys: numbers as numbers, node counts as decimal strings
// (they may pass 2^53), states in words, times as ISO-8601 UTC, null where a key does not apply.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "c960/v1/cluster.pb.h"

namespace c960::cluster {

// "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED"; "UNSPECIFIED" for anything else.
const char* state_name(v1::JobState state);
// "2026-11-30T16:22:12.345Z"; "" for 0 (not set).
std::string iso8601_utc(int64_t unix_ms);
// Units (perft) or games (self-play) done, 0..1.
double job_fraction(const v1::Job& job);
// How long the job ran: until it finished, or until `now_unix_ms` while it runs; -1 when unknown.
double job_elapsed_seconds(const v1::Job& job, int64_t now_unix_ms);

// One job as a JSON object (keys: id, kind, depth, state, fraction_done, units_done,
// units_total, nodes_done, nodes_per_second, games_done, games_total, games_per_second,
// eta_seconds, workers, created, finished, age_seconds, duration_seconds, request_id, owner,
// result_mismatches, unit_failures, notice).
std::string job_json(const v1::Job& job, int64_t now_unix_ms);
// An array of job_json objects, one a line.
std::string jobs_json(const std::vector<v1::Job>& jobs, int64_t now_unix_ms);

}  // namespace c960::cluster
