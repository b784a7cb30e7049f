#include "cluster/channel.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "cluster/auth.h"
#include "cluster/config.h"

namespace c960::cluster {

std::shared_ptr<grpc::Channel> make_channel(const ChannelOptions& options) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(kMaxMessageBytes);
  args.SetMaxSendMessageSize(kMaxMessageBytes);
  // gRPC's own reconnect backoff grows to two minutes; cap it like ours so a restarted
  // coordinator gets its clients back within seconds.
  args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, int(kBackoffInitialMs));
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, int(kBackoffInitialMs));
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, int(kBackoffMaxMs));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, int(kClientKeepaliveTimeMs));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, int(kKeepaliveTimeoutMs));
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);  // keep pinging an idle connection
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (options.tls) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = options.tls->ca_pem;
    ssl.pem_private_key = options.tls->key_pem;
    ssl.pem_cert_chain = options.tls->cert_pem;
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_name);
      args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, options.tls_name);
    }
    // gRPC sends call credentials only on a secure channel, so a token never travels in clear.
    if (!options.token.empty())
      creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(options.token));
  }
  return grpc::CreateCustomChannel(options.address, creds, args);
}

absl::StatusOr<ChannelOptions> client_channel_options(std::string address, const ClientSecurityFlags& flags) {
  ChannelOptions out;
  out.address = std::move(address);
  if (!flags.tls_ca.empty() || !flags.tls_cert.empty() || !flags.tls_key.empty()) {
    absl::StatusOr<ClientTls> tls = load_client_tls(flags.tls_ca, flags.tls_cert, flags.tls_key);
    if (!tls.ok()) return tls.status();
    out.tls = std::move(*tls);
  }
  std::string source = "$C960_TOKEN";
  std::string token = flags.token;
  if (!flags.token_file.empty()) {
    source = absl::StrCat("--token-file: '", flags.token_file, "'");
    std::ifstream in(flags.token_file, std::ios::binary);
    if (!in)
      return absl::InvalidArgumentError(
          absl::StrCat("--token-file: cannot read '", flags.token_file, "': ", std::strerror(errno)));
    std::stringstream ss;
    ss << in.rdbuf();
    token = ss.str();
  }
  token = std::string(absl::StripAsciiWhitespace(token));
  if (token.empty()) {
    if (!flags.token_file.empty()) return absl::InvalidArgumentError(absl::StrCat(source, " holds no token"));
    return out;
  }
  if (!valid_token_text(token))
    return absl::InvalidArgumentError(
        absl::StrCat(source,
                     ": not a token (one line of printable characters without spaces, as c960 token new "
                     "prints it)"));
  if (!out.tls)
    return absl::InvalidArgumentError(
        absl::StrCat("a token (", flags.token_file.empty() ? "$C960_TOKEN" : "--token-file",
                     ") needs TLS, or it would travel in clear: give the coordinator's CA with --tls-ca FILE (or "
                     "C960_TLS_CA)"));
  out.token = std::move(token);
  return out;
}

}  // namespace c960::cluster
