#include "cli/cluster_command.h"

#include <cstdlib>
#include <optional>

#include "absl/strings/str_cat.h"

namespace c960::cli {

OptionSpec coordinator_option() {
  return {"coordinator", Arity::kOne, "HOST:PORT",
          absl::StrCat("the coordinator (default $C960_COORDINATOR, else ", cluster::kDefaultCoordinator, ")")};
}

std::string coordinator_address(const ParsedArgs& args) {
  return resolve_coordinator(
      args.has("coordinator") ? std::optional<std::string>(args.get("coordinator")) : std::nullopt,
      std::getenv("C960_COORDINATOR"));
}

int rpc_fail(const Io& io, absl::string_view command, const Client& client, const absl::Status& status) {
  const std::string problem =
      status.code() == absl::StatusCode::kUnavailable
          ? absl::StrCat("cannot reach the coordinator at ", client.address(), ": ", status.message())
          : absl::StrCat(status.message(), " (status ", int(status.code()), ")");
  return fail(io, command, problem, exit_code_for(status.code()));
}

}  // namespace c960::cli
