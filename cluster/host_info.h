// What a machine can say of itself for provenance: a file's SHA-256 (an engine binary, an
// opening book) and the CPU model. Used by `c960 selfplay`'s metadata and by workers at Hello.
#pragma once

#include <optional>
#include <string>

namespace c960::cluster {

// The lower-case hex SHA-256 of a file's bytes; nullopt when it cannot be read.
std::optional<std::string> file_sha256(const std::string& path);
// /proc/cpuinfo's first "model name", else "unknown".
std::string cpu_model();

}  // namespace c960::cluster
