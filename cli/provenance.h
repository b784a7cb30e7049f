// Where a local run's figures came from, for its JSON metadata: the engine binary's SHA-256, the
// opening book's and the host's CPU model (issue 20: provenance).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "cluster/host_info.h"
#include "selfplay/spec.h"

namespace c960::cli {

// cluster/host_info.h
using cluster::cpu_model;
using cluster::file_sha256;

// A program named as it would be run: a path as it is, a bare name searched in $PATH.
std::optional<std::string> find_program(const std::string& name);

// The run's provenance as metadata values: engine_sha256 and opponent_sha256 (UCI engines), book_sha256 (with
// --epd FILE), cpu. Not the threads: a run's files are the same whatever --threads (and
// --resume with other threads ends as an uninterrupted run's, byte for byte).
std::vector<selfplay::MetadataValue> provenance(const selfplay::SelfPlaySpec& spec, const std::string& book_path);

}  // namespace c960::cli
