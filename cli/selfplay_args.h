// The options that define a self-play spec, shared by `c960 selfplay` (local) and
// `c960 submit selfplay` (cluster), so both accept and check them alike.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "selfplay/spec.h"

namespace c960::cli {

// --sps, --games-per-position, --engine, --option, --nodes/--depth/--movetime, --random-plies,
// --seed and the rest of the spec's options (not the local run's --threads, --out, ...).
std::vector<OptionSpec> selfplay_spec_options();

// The positions --sps, --fen, --epd or --dfrc (with --random N) name; the default is all 960.
absl::StatusOr<std::vector<selfplay::StartPosition>> positions_from_args(const ParsedArgs& p, uint64_t seed);
// Today's date (UTC) as a PGN Date tag, "YYYY.MM.DD".
std::string today_utc();

// Builds and validates the spec (its date today's); every error names its option.
absl::StatusOr<selfplay::SelfPlaySpec> selfplay_spec_from_args(const ParsedArgs& p);

}  // namespace c960::cli
