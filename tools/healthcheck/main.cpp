// c960-healthcheck: asks a gRPC server's standard health service (grpc.health.v1.Health/Check)
// whether it is serving, like grpc_health_probe; the container images' HEALTHCHECK runs it
// against the coordinator.
//   c960-healthcheck [--addr HOST:PORT] [--service NAME] [--timeout SECONDS]
// Exit status: 0 serving, 1 not serving or unreachable, 2 bad usage.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "cluster/address.h"
#include "cluster/channel.h"
#include "cluster/config.h"
#include "cluster/text_wrap.h"
#include "core/version.h"
#include "tools/healthcheck/health.grpc.pb.h"

namespace {

constexpr int kExitServing = 0;
constexpr int kExitNotServing = 1;
constexpr int kExitUsage = 2;
constexpr const char* kDefaultAddress = c960::cluster::kDefaultCoordinator;
constexpr double kDefaultTimeoutSeconds = 5;
constexpr double kMaxTimeoutSeconds = 3600;

// The help, wrapped to the terminal's width (cluster/text_wrap.h).
void usage(FILE* out) {
  namespace cluster = c960::cluster;
  const size_t width = size_t(cluster::stdout_columns());
  constexpr size_t kColumn = 23;
  std::string s = cluster::help_usage(
      "c960-healthcheck [--addr HOST:PORT] [--service NAME] [--timeout SECONDS] "
      "[--tls-ca FILE [--tls-cert FILE --tls-key FILE]]",
      width);
  s += "\n";
  s += cluster::wrap_text(
      "Asks a gRPC server's health service (grpc.health.v1.Health/Check) whether it is serving.\n"
      "Exit status: 0 serving, 1 not serving or unreachable, 2 bad usage.",
      width);
  s += "\noptions:\n";
  const std::pair<const char*, std::string> options[] = {
      {"--addr HOST:PORT", absl::StrCat("the server (default ", kDefaultAddress, ", or $C960_COORDINATOR)")},
      {"--service NAME", "the service to ask about (default: the empty name, the whole server)"},
      {"--timeout SECONDS",
       absl::StrCat("deadline of the call (default ", kDefaultTimeoutSeconds, ", at most ", kMaxTimeoutSeconds, ")")},
      {"--tls-ca FILE", "the coordinator serves TLS signed by this CA [env C960_TLS_CA]"},
      {"--tls-cert FILE", "client certificate, where the coordinator requires one [env C960_TLS_CERT]"},
      {"--tls-key FILE", "its key [env C960_TLS_KEY]"},
      {"--version", "print the version"},
      {"--help", "show this help"},
  };
  for (const auto& [left, help] : options) s += cluster::help_option(left, help, kColumn, width);
  std::fputs(s.c_str(), out);
}

const char* status_name(grpc::health::v1::HealthCheckResponse::ServingStatus s) {
  switch (s) {
    case grpc::health::v1::HealthCheckResponse::SERVING: return "SERVING";
    case grpc::health::v1::HealthCheckResponse::NOT_SERVING: return "NOT_SERVING";
    case grpc::health::v1::HealthCheckResponse::SERVICE_UNKNOWN: return "SERVICE_UNKNOWN";
    default: return "UNKNOWN";
  }
}

}  // namespace

int main(int argc, char** argv) {
  const char* env_addr = std::getenv("C960_COORDINATOR");
  std::string addr = env_addr && *env_addr ? env_addr : kDefaultAddress;
  std::string addr_flag = env_addr && *env_addr ? "$C960_COORDINATOR" : "--addr";
  std::string service;
  double timeout = kDefaultTimeoutSeconds;
  c960::cluster::ClientSecurityFlags security;
  for (auto [var, field] : {std::pair{"C960_TLS_CA", &security.tls_ca}, std::pair{"C960_TLS_CERT", &security.tls_cert},
                            std::pair{"C960_TLS_KEY", &security.tls_key}})
    if (const char* v = std::getenv(var); v && *v) *field = v;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    // Accepts "--opt value" and "--opt=value".
    std::string_view name = arg, value;
    bool has_value = false;
    if (const size_t eq = arg.find('='); arg.substr(0, 2) == "--" && eq != std::string_view::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    if (name == "--help" || name == "-h") {
      usage(stdout);
      return kExitServing;
    }
    if (name == "--version") {
      std::printf("c960-healthcheck %.*s\n", int(c960::version().size()), c960::version().data());
      return kExitServing;
    }
    if (name != "--addr" && name != "--service" && name != "--timeout" && name != "--tls-ca" && name != "--tls-cert" &&
        name != "--tls-key") {
      std::fprintf(stderr, "c960-healthcheck: unknown option '%.*s'\n", int(arg.size()), arg.data());
      usage(stderr);
      return kExitUsage;
    }
    if (!has_value) {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "c960-healthcheck: %.*s needs a value\n", int(name.size()), name.data());
        return kExitUsage;
      }
      value = argv[++i];
    }
    if (name == "--addr") {
      addr = std::string(value);
      addr_flag = "--addr";
    } else if (name == "--service") {
      service = std::string(value);
    } else if (name == "--tls-ca") {
      security.tls_ca = std::string(value);
    } else if (name == "--tls-cert") {
      security.tls_cert = std::string(value);
    } else if (name == "--tls-key") {
      security.tls_key = std::string(value);
    } else {
      const std::string text(value);
      char* end = nullptr;
      timeout = std::strtod(text.c_str(), &end);
      if (text.empty() || *end != '\0' || !(timeout > 0) || timeout > kMaxTimeoutSeconds) {
        std::fprintf(stderr, "c960-healthcheck: --timeout: '%s' is not a number of seconds in (0, %g]\n", text.c_str(),
                     kMaxTimeoutSeconds);
        return kExitUsage;
      }
    }
  }

  // The same address check and channel set-up as the workers' and the c960 tool's.
  const absl::StatusOr<std::string> checked = c960::cluster::check_address(addr_flag, addr, {.unix_socket = true});
  if (!checked.ok()) {
    std::fprintf(stderr, "c960-healthcheck: %s\n", std::string(checked.status().message()).c_str());
    return kExitUsage;
  }
  addr = *checked;
  absl::StatusOr<c960::cluster::ChannelOptions> channel = c960::cluster::client_channel_options(addr, security);
  if (!channel.ok()) {
    std::fprintf(stderr, "c960-healthcheck: %s\n", std::string(channel.status().message()).c_str());
    return kExitUsage;
  }
  auto stub = grpc::health::v1::Health::NewStub(c960::cluster::make_channel(*channel));
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::duration_cast<std::chrono::system_clock::duration>(
                                                          std::chrono::duration<double>(timeout)));
  grpc::health::v1::HealthCheckRequest request;
  request.set_service(service);
  grpc::health::v1::HealthCheckResponse response;
  const grpc::Status status = stub->Check(&ctx, request, &response);
  if (!status.ok()) {
    std::fprintf(stderr, "c960-healthcheck: %s: %s (code %d)\n", addr.c_str(), status.error_message().c_str(),
                 int(status.error_code()));
    return kExitNotServing;
  }
  std::printf("%s\n", status_name(response.status()));
  return response.status() == grpc::health::v1::HealthCheckResponse::SERVING ? kExitServing : kExitNotServing;
}
