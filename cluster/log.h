// Log lines of the daemons: one line per event on stderr, with a UTC timestamp and a level,
// e.g. "2026-11-30T10:55:01.123Z INFO c960-coordinator: job job-3 succeeded".
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace c960::cluster {

enum class LogLevel { kInfo, kWarning, kError };

// The program name every line carries (set once, at start).
void set_log_program(absl::string_view name);
void log(LogLevel level, absl::string_view message);
inline void log_info(absl::string_view message) { log(LogLevel::kInfo, message); }
inline void log_warning(absl::string_view message) { log(LogLevel::kWarning, message); }
inline void log_error(absl::string_view message) { log(LogLevel::kError, message); }

}  // namespace c960::cluster
