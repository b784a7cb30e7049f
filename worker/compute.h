// Computing one unit, apart from any networking.
#pragma once

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "core/perft.h"
#include "selfplay/uci_engine.h"

namespace c960::cluster {

// A UCI engine a worker offers: its binary, and what a job may set on it (the operator's
// policy: c960-worker --engine-option; default_engine_policy() otherwise).
struct EngineOffer {
  std::string path;
  selfplay::OptionPolicy policy;
  // Provenance, said at Hello: the binary's SHA-256 and the engine's UCI id name ("": unknown).
  std::string sha256, id_name;
};
// Hash 1..kDefaultEngineHashMaxMb and Threads 1..kDefaultEngineThreadsMax.
selfplay::OptionPolicy default_engine_policy();
// The built-in engine's: Hash 1..kDefaultBuiltinHashMaxMb (a job's hash_mb), nothing else.
selfplay::OptionPolicy default_builtin_policy();

// INVALID_ARGUMENT for a spec this worker cannot compute (unknown kind, bad FEN or depth);
// FAILED_PRECONDITION when this machine cannot (a self-play engine that does not start here),
// which the worker reports as a unit failure. hash (perft) may be null; it may be shared by
// concurrent calls. Self-play players are kept per thread and reused while the job stays the same.
// engines: the engine names this worker offers, the binaries they stand for and what a job may
// set on each ("builtin" is always offered; its entry, if any, has no path and bounds the job's
// hash_mb, else default_builtin_policy() does); a job's option outside its engine's policy fails
// the unit (FAILED_PRECONDITION naming the option) before the engine is started or a table is
// allocated. A perft unit's
// zobrist_seed selects the key set its hash entries use.
absl::StatusOr<v1::UnitResult> compute_unit(const v1::UnitSpec& spec, PerftHash* hash,
                                            const std::map<std::string, EngineOffer>& engines = {});

}  // namespace c960::cluster
