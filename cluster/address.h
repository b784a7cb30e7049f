// HOST:PORT addresses: every flag that takes one (c960-coordinator --listen and --http-listen,
// c960-worker --coordinator, c960 --coordinator and $C960_COORDINATOR, c960-healthcheck --addr)
// is checked by check_address, so that all take and refuse the same addresses in the same words,
// before anything is opened or created.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960::cluster {

// "host:1" -> {"host", "1"}, "[::1]:1" -> {"::1", "1"}; nullopt for an address without a port or
// with a scheme ("unix:/path", "dns:///host:1"). Not a check: check_address is.
struct HostPort {
  std::string host, port;
};
std::optional<HostPort> split_host_port(std::string_view address);

// What a flag takes besides HOST:PORT with a port in 1..65535.
struct AddressRule {
  bool port_zero = false;     // port 0: pick a free port (the listening flags)
  bool default_port = false;  // no port: kDefaultPort (the coordinator's gRPC address)
  bool unix_socket = false;   // "unix:PATH" as it is (gRPC addresses)
};

// `value` of `flag` ("--listen", "$C960_COORDINATOR") checked: HOST:PORT with a host, and a port
// of digits in 1..65535 (0 too where the rule allows it); an IPv6 host in brackets ([::1]:7960);
// no scheme (http://, grpc://). Returns the address normalized ("host:port", "[v6]:port", the
// default port added where the rule gives one). INVALID_ARGUMENT naming the flag, the value and
// what is wrong with it, with the valid range of a port.
absl::StatusOr<std::string> check_address(absl::string_view flag, absl::string_view value, AddressRule rule);

// Several coordinators (a leader and its standbys), comma-separated, each as check_address checks
// it: "a:7960,b:7960". At most kMaxCoordinatorAddresses, none twice (after normalizing), no empty
// item. Returns the addresses normalized and joined by commas (one address: as check_address).
absl::StatusOr<std::string> check_address_list(absl::string_view flag, absl::string_view value, AddressRule rule);
// The addresses of a list check_address_list made (one address: itself).
std::vector<std::string> split_address_list(absl::string_view list);

}  // namespace c960::cluster
