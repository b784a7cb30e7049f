// The options that define an evaluation (positions, engines and their options, the limit), shared
// by `c960 evaluate` (a local run: engines by path) and `c960 submit evaluation` (a job: engines
// by the names workers offer).
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "cli/args.h"
#include "selfplay/evaluation.h"

namespace c960::cli {

std::vector<OptionSpec> evaluation_spec_options();
// The spec the options give, validated; errors name the option (--engine, --option, --depth,
// --nodes, --sps, --hash, --engine-timeout, --multipv). `job`: engines are names, not paths.
absl::StatusOr<selfplay::EvalSpec> evaluation_spec_from_args(const ParsedArgs& p, bool job);

}  // namespace c960::cli
