// How the cluster commands show jobs: state names, the one-line progress, the description of
// `c960 status JOB`, and the leading and trailing positions of a self-play job.
#pragma once

#include <string>
#include <vector>

#include "c960/v1/cluster.pb.h"

namespace c960::cli {

const char* state_name(v1::JobState state);
// "ID [####....] 40.0% 4/10 units, N nodes, R Mnps, ETA Ts, W/A workers, STATE" (perft) or
// "ID 40.0% G/T games, R games/min, U/V units, ETA Ts, W/A workers, STATE" (self-play).
std::string progress_line(const v1::Job& job);
// The job's spec, request id, progress and any mismatches or unit failures, a line each.
std::string job_description(const v1::Job& job);
// "leading 518 0.750 (8), ...; trailing ..." over the positions with games so far, in the order
// of SelfPlayStats::ranking (score, then the interval's lower bound).
std::string leaders_line(const std::vector<v1::ResultChunk>& chunks);

}  // namespace c960::cli
