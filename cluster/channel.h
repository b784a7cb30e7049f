// The client side of every connection to the coordinator (workers and the c960 tool): one
// place that sets credentials (TLS, bearer token), keepalive, message limits and reconnect
// backoff, so all clients behave alike.
#pragma once

#include <memory>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "cluster/tls.h"

namespace c960::cluster {

struct ChannelOptions {
  std::string address;           // HOST:PORT of the coordinator
  std::optional<ClientTls> tls;  // nullopt: plaintext
  std::string token;             // sent as "authorization: Bearer TOKEN" on every call; only with tls
  // The name the server's certificate is checked against, where the address is one of several
  // IPs a name resolved to (CoordinatorSet); empty: the address's own host.
  std::string tls_name;
};

// One channel to options.address, which must be a single address (CoordinatorSet makes one for
// each of several).
std::shared_ptr<grpc::Channel> make_channel(const ChannelOptions& options);

// How a client was told to connect: the files of its flags (--tls-ca, --tls-cert, --tls-key,
// --token-file), with the environment's values where a flag was not given (C960_TLS_CA, ...;
// C960_TOKEN holds the token itself, not a file).
struct ClientSecurityFlags {
  std::string tls_ca, tls_cert, tls_key, token_file;
  std::string token;  // from $C960_TOKEN when --token-file is not given
};
// Reads and checks the files; TLS is on when any TLS flag is given (then --tls-ca is needed).
// A token without TLS is refused: it would travel in clear. Errors name the flag.
absl::StatusOr<ChannelOptions> client_channel_options(std::string address, const ClientSecurityFlags& flags);

}  // namespace c960::cluster
