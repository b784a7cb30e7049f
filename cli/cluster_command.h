// What the cluster commands (submit, status, watch, results, cancel) share besides the Client:
// the --coordinator option, and how a failed call is reported.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/command.h"

namespace c960::cli {

OptionSpec coordinator_option();
// --coordinator, else $C960_COORDINATOR, else the default (resolve_coordinator).
std::string coordinator_address(const ParsedArgs& args);

// Fails with what went wrong in a call to the coordinator, and the exit code exit_code_for()
// gives its status.
int rpc_fail(const Io& io, absl::string_view command, const Client& client, const absl::Status& status);

}  // namespace c960::cli
