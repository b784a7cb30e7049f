// Computing one unit, apart from any networking.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "core/perft.h"

namespace c960::cluster {

// INVALID_ARGUMENT for a spec this worker cannot compute (unknown kind, bad FEN or depth);
// FAILED_PRECONDITION when this machine cannot (a self-play engine that does not start here),
// which the worker reports as a unit failure. hash (perft) may be null; it may be shared by
// concurrent calls. Self-play players are kept per thread and reused while the job stays the same.
// engines: the engine names this worker offers, and the binaries they stand for ("builtin" is
// always offered). A perft unit's zobrist_seed selects the key set its hash entries use.
absl::StatusOr<v1::UnitResult> compute_unit(const v1::UnitSpec& spec, PerftHash* hash,
                                            const std::map<std::string, std::string>& engines = {});

}  // namespace c960::cluster
