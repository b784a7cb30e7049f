#include "cli/cluster_command.h"

#include <cstdlib>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/address.h"
#include "cluster/auth.h"

namespace c960::cli {
namespace {

std::string option_or_env(const ParsedArgs& args, const std::string& option, const char* env) {
  if (args.has(option)) return args.get(option);
  const char* v = std::getenv(env);
  return v ? v : "";
}

// The call each cluster command makes (its first, for status: ListJobs and GetJob need the same
// roles), so that a refusal can name the roles that may make it.
constexpr std::pair<absl::string_view, absl::string_view> kCommandMethods[] = {
    {"submit", "/c960.v1.JobService/SubmitJob"},    {"status", "/c960.v1.JobService/ListJobs"},
    {"watch", "/c960.v1.JobService/WatchJob"},      {"results", "/c960.v1.JobService/GetResults"},
    {"cancel", "/c960.v1.JobService/CancelJob"},    {"workers", "/c960.v1.JobService/ListWorkers"},
    {"admin", "/c960.v1.AdminService/BackupStore"},
};

// The coordinator names the request field it refuses ("split_depth: 5 is not in 0..3"); the
// user typed an option. Longest field names first where one is a prefix of another.
constexpr std::pair<absl::string_view, absl::string_view> kFieldOptions[] = {
    {"store_games_sample", "--store-games sample:N"},
    {"store_games", "--store-games"},
    {"split_depth", "--split-depth"},
    {"start_positions", "--sps"},
    {"fens", "--fen"},
    {"positions", "--fen/--epd"},
    {"dfrc_pairs", "--dfrc"},
    {"games_per_position", "--games-per-position"},
    {"games_per_unit", "--games-per-unit"},
    {"engine_timeout_ms", "--engine-timeout"},
    {"engine", "--engine"},
    {"options", "--option"},
    {"nodes", "--nodes"},
    {"depth", "--depth"},
    {"movetime_ms", "--movetime"},
    {"random_plies", "--random-plies"},
    {"seed", "--seed"},
    {"node_jitter_percent", "--node-jitter"},
    {"sample_margin_cp", "--sample-margin"},
    {"max_plies", "--max-plies"},
    {"draw_moves", "--draw-moves"},
    {"draw_score_cp", "--draw-score"},
    {"draw_min_ply", "--draw-min-ply"},
    {"resign_moves", "--resign-moves"},
    {"resign_score_cp", "--resign-score"},
    {"hash_mb", "--hash"},
    {"verify", "--verify"},
    {"request_id", "--request-id"},
    {"job_id", "JOB"},
};

}  // namespace

std::string in_cli_words(absl::string_view command, absl::string_view message) {
  for (const auto& [field, option] : kFieldOptions) {
    if (!absl::StartsWith(message, field) || message.size() <= field.size() || message[field.size()] != ':') continue;
    std::string out = absl::StrCat(option, message.substr(field.size()));
    // Cluster perft jobs stop at kMaxPerftDepth (a unit's count and the plan's size stay bounded);
    // the local command goes deeper.
    if (command == "submit" && field == "depth" && absl::StrContains(message, "is not in 1.."))
      absl::StrAppend(&out, " for a cluster perft job (c960 perft computes deeper ones on one machine)");
    // "... units is more than N; raise games_per_unit": the advice too.
    for (const auto& [f, o] : kFieldOptions)
      if (const size_t at = out.find(absl::StrCat("raise ", f)); at != std::string::npos)
        out.replace(at + 6, f.size(), std::string(o));
    return out;
  }
  return std::string(message);
}

OptionSpec coordinator_option() {
  return {"coordinator", Arity::kOne, "HOST:PORT",
          absl::StrCat("the coordinator (default $C960_COORDINATOR, else ", cluster::kDefaultCoordinator,
                       "); a leader and its standbys as HOST:PORT,HOST:PORT (calls follow the leader)")};
}

std::vector<OptionSpec> with_cluster_options(std::vector<OptionSpec> own) {
  own.push_back(coordinator_option());
  own.push_back({"tls-ca", Arity::kOne, "FILE",
                 "connect with TLS, trusting the coordinator's certificate if this PEM CA signed it (default "
                 "$C960_TLS_CA)"});
  own.push_back({"tls-cert", Arity::kOne, "FILE",
                 "PEM client certificate, for a coordinator that requires one (default $C960_TLS_CERT)"});
  own.push_back({"tls-key", Arity::kOne, "FILE", "the PEM private key of --tls-cert (default $C960_TLS_KEY)"});
  own.push_back({"token-file", Arity::kOne, "FILE",
                 "file holding the token to send (default: the token itself from $C960_TOKEN); needs TLS"});
  return own;
}

bool is_cluster_option(absl::string_view name) {
  for (const OptionSpec& o : with_cluster_options({}))
    if (o.name == name) return true;
  return false;
}

std::string coordinator_address(const ParsedArgs& args) {
  return resolve_coordinator(
      args.has("coordinator") ? std::optional<std::string>(args.get("coordinator")) : std::nullopt,
      std::getenv("C960_COORDINATOR"));
}

absl::StatusOr<cluster::ChannelOptions> connection_options(const ParsedArgs& args) {
  cluster::ClientSecurityFlags flags;
  flags.tls_ca = option_or_env(args, "tls-ca", "C960_TLS_CA");
  flags.tls_cert = option_or_env(args, "tls-cert", "C960_TLS_CERT");
  flags.tls_key = option_or_env(args, "tls-key", "C960_TLS_KEY");
  flags.token_file = args.get("token-file");
  if (flags.token_file.empty())
    if (const char* t = std::getenv("C960_TOKEN")) flags.token = t;
  // Checked before the files: the address is what a user gets wrong first.
  const bool from_env = !args.has("coordinator") && std::getenv("C960_COORDINATOR") && *std::getenv("C960_COORDINATOR");
  absl::StatusOr<std::string> address =
      cluster::check_address_list(from_env ? "$C960_COORDINATOR" : "--coordinator", coordinator_address(args),
                                  {.default_port = true, .unix_socket = true});
  if (!address.ok()) return address.status();
  return cluster::client_channel_options(*address, flags);
}

absl::string_view method_of_command(absl::string_view command) {
  for (const auto& [name, method] : kCommandMethods)
    if (name == command) return method;
  return "";
}

int rpc_fail(const Io& io, absl::string_view command, const Client& client, const absl::Status& status) {
  const absl::string_view method = method_of_command(command);
  const std::string needs =
      method.empty() ? "" : absl::StrCat("c960 ", command, " needs a token of role ", cluster::roles_allowed(method));
  std::string problem;
  switch (status.code()) {
    case absl::StatusCode::kUnavailable:
      problem = absl::StrCat("cannot reach the coordinator at ", client.address(), ": ", status.message());
      break;
    case absl::StatusCode::kUnauthenticated:
      problem = absl::StrCat("the coordinator does not know who we are: ", status.message(), ". ", needs,
                             " (--token-file FILE or C960_TOKEN; c960 token new makes one)");
      break;
    case absl::StatusCode::kPermissionDenied:
      problem = absl::StrCat("the coordinator refused: ", status.message(), method.empty() ? "" : " (", needs,
                             method.empty() ? "" : ")");
      break;
    // The exit code tells a refused request (2) from a failed one (1); the message says why.
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kAlreadyExists:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange: problem = in_cli_words(command, status.message()); break;
    case absl::StatusCode::kResourceExhausted:
      problem = absl::StrCat(in_cli_words(command, status.message()), " (a limit of the coordinator)");
      break;
    default:
      problem = absl::StrCat(status.message(), " (", absl::StatusCodeToString(status.code()), " at the coordinator)");
  }
  return fail(io, command, problem, exit_code_for(status.code()));
}

}  // namespace c960::cli
