// Command lines of the daemons (c960-coordinator, c960-worker). Their flags are absl flags
// (ABSL_FLAG in their main.cpp), but the command line is read here rather than by
// absl::ParseCommandLine, so that both daemons behave like the c960 tool:
//  - the documented spelling uses dashes (--port-file); absl's underscores are accepted too;
//  - --help / -h print the daemon's own flags (never absl's internals) and exit 0, --version
//    prints the version and exits 0;
//  - an unknown flag, a bad value or a stray argument is a usage error: a message naming it on
//    stderr and exit code 2 (absl would exit 1);
//  - a flag may take its default from an environment variable (e.g. C960_TLS_CA), which the
//    command line overrides;
//  - a list flag (std::vector<std::string>) may be repeated: `--engine a=/x --engine b=/y` gives
//    both (absl would keep the last); commas separate items too.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace c960::cluster {

struct FlagDoc {
  absl::string_view name;      // absl name, with underscores: "port_file"
  absl::string_view metavar;   // "FILE"; empty for a boolean flag
  absl::string_view env = {};  // environment variable giving the default, if any
};

struct DaemonCommand {
  absl::string_view name;      // "c960-coordinator"
  absl::string_view usage;     // "c960-coordinator [--listen HOST:PORT] ..."
  absl::string_view summary;   // a paragraph
  absl::string_view version;   // printed by --version
  std::vector<FlagDoc> flags;  // every flag of the daemon, in the order --help lists them
};

// Parses argv into the daemon's absl flags. Returns the exit code to leave with (0 after --help
// or --version, 2 after a usage error, with the message printed), or nullopt to go on.
std::optional<int> parse_daemon_flags(int argc, char** argv, const DaemonCommand& cmd);

// The --help text, wrapped to `width` columns (cluster/text_wrap.h; 0: a line per paragraph
// and flag); --help prints it at the terminal's width (stdout_columns).
std::string daemon_help(const DaemonCommand& cmd, int width = 0);

// The names of the absl flags defined in the project's own sources (not absl's internals), so
// that tests can check that DaemonCommand::flags documents every one of them.
std::vector<std::string> own_flag_names();

}  // namespace c960::cluster
