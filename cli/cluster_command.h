// What the cluster commands (submit, status, watch, results, cancel) share besides the Client:
// the options that say how to reach the coordinator (--coordinator, TLS, token), and how a
// failed call is reported.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cluster/channel.h"

namespace c960::cli {

OptionSpec coordinator_option();
// `own` options followed by those of every cluster command: --coordinator, --tls-ca, --tls-cert,
// --tls-key, --token-file.
std::vector<OptionSpec> with_cluster_options(std::vector<OptionSpec> own);
// Whether `name` is one of those (e.g. "tls-ca").
bool is_cluster_option(absl::string_view name);
// --coordinator, else $C960_COORDINATOR, else the default (resolve_coordinator).
std::string coordinator_address(const ParsedArgs& args);
// The address and the security options (flags, else $C960_TLS_CA, $C960_TLS_CERT, $C960_TLS_KEY,
// and $C960_TOKEN for the token itself), files read and checked. Errors name the option: exit 2.
absl::StatusOr<cluster::ChannelOptions> connection_options(const ParsedArgs& args);

// The RPC method a command's calls need permission for (cluster/auth.h's table), "" if none.
absl::string_view method_of_command(absl::string_view command);

// Fails with what went wrong in a call to the coordinator, and the exit code exit_code_for()
// gives its status. A refused token or role says which role the command needs.
int rpc_fail(const Io& io, absl::string_view command, const Client& client, const absl::Status& status);
// A coordinator's message about a request field ("split_depth: 5 is not in 0..3") in the words of
// the command line ("--split-depth: 5 is not in 0..3"); other messages as they are.
std::string in_cli_words(absl::string_view command, absl::string_view message);

}  // namespace c960::cli
