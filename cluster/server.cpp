#include "cluster/server.h"

#include <netdb.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <netinet/in.h>
#include <sys/socket.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/address.h"
#include "cluster/config.h"

namespace c960::cluster {
namespace {

// Certificates remembered by the authenticator at most; beyond, it starts again.
constexpr size_t kMaxRememberedCertificates = 4096;

absl::string_view view(const grpc::string_ref& s) { return {s.data(), s.size()}; }

std::optional<absl::string_view> find(const grpc::AuthMetadataProcessor::InputMetadata& md, absl::string_view key) {
  auto it = md.find(grpc::string_ref(key.data(), key.size()));
  if (it == md.end()) return std::nullopt;
  return view(it->second);
}

bool is_loopback(const sockaddr* sa) {
  if (sa->sa_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in*>(sa)->sin_addr.s_addr) >> 24) == 127;
  if (sa->sa_family == AF_INET6) {
    const in6_addr& a = reinterpret_cast<const sockaddr_in6*>(sa)->sin6_addr;
    if (IN6_IS_ADDR_LOOPBACK(&a)) return true;
    return IN6_IS_ADDR_V4MAPPED(&a) && a.s6_addr[12] == 127;
  }
  return false;
}

// The addresses a listen address binds, as gRPC would resolve them (AI_PASSIVE: an empty host is
// every interface).
addrinfo* resolve_listen(const HostPort& hp) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* res = nullptr;
  const std::string host = hp.host.empty() || hp.host == "*" ? "" : hp.host;
  if (getaddrinfo(host.empty() ? nullptr : host.c_str(), hp.port.c_str(), &hints, &res) != 0) return nullptr;
  return res;
}

}  // namespace

bool authenticates(const ServerOptions& options) {
  return options.tls && (options.tokens || !options.tls->client_ca_pem.empty());
}

std::shared_ptr<const CallAuthenticator> configure_server(const ServerOptions& options, grpc::ServerBuilder* builder,
                                                          int* port) {
  std::shared_ptr<CallAuthenticator> auth;
  std::shared_ptr<grpc::ServerCredentials> creds;
  if (options.tls) {
    grpc::SslServerCredentialsOptions ssl(options.tls->client_ca_pem.empty()
                                              ? GRPC_SSL_DONT_REQUEST_CLIENT_CERTIFICATE
                                              : GRPC_SSL_REQUEST_AND_REQUIRE_CLIENT_CERTIFICATE_AND_VERIFY);
    ssl.pem_root_certs = options.tls->client_ca_pem;
    ssl.pem_key_cert_pairs.push_back({options.tls->key_pem, options.tls->cert_pem});
    creds = grpc::SslServerCredentials(ssl);
    if (authenticates(options)) {
      auth = std::make_shared<CallAuthenticator>(options.tokens, !options.tls->client_ca_pem.empty(), options.standby);
      creds->SetAuthMetadataProcessor(auth);
    }
  } else {
    creds = grpc::InsecureServerCredentials();
  }
  builder->AddListeningPort(options.listen, creds, port);
  builder->SetMaxReceiveMessageSize(kMaxMessageBytes);
  builder->SetMaxSendMessageSize(kMaxMessageBytes);
  // A second coordinator on a busy port must fail, not share it and split the clients.
  builder->AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, int(kServerKeepaliveTimeMs));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, int(kKeepaliveTimeoutMs));
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MIN_RECV_PING_INTERVAL_WITHOUT_DATA_MS, int(kMinClientPingIntervalMs));
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  return auth;
}

Caller caller_of(const CallAuthenticator* auth, const grpc::ServerContextBase& ctx) {
  return auth ? auth->caller_of(ctx) : Caller::local();
}

absl::StatusOr<Caller> CallAuthenticator::certificate_caller(absl::string_view pem) const {
  {
    std::lock_guard lock(certificates_mu_);
    if (auto it = certificates_.find(pem); it != certificates_.end()) return it->second;
  }
  absl::StatusOr<Caller> c = caller_from_certificate(pem);
  std::lock_guard lock(certificates_mu_);
  if (certificates_.size() >= kMaxRememberedCertificates) certificates_.clear();
  certificates_.emplace(std::string(pem), c);
  return c;
}

absl::StatusOr<Caller> CallAuthenticator::identify(std::optional<absl::string_view> authorization,
                                                   std::optional<absl::string_view> certificate_pem,
                                                   bool recent) const {
  if (authorization) {
    absl::string_view token = *authorization;
    if (token.size() < 7 || !absl::EqualsIgnoreCase(token.substr(0, 7), "bearer "))
      return absl::UnauthenticatedError("the authorization header is not 'Bearer TOKEN'");
    token = absl::StripAsciiWhitespace(token.substr(7));
    if (!tokens_)
      return absl::UnauthenticatedError(
          "this coordinator takes no tokens (no --tokens): authenticate with a client certificate");
    if (std::optional<Caller> c = recent ? tokens_->find_recent(token) : tokens_->find(token)) return *c;
    return absl::UnauthenticatedError("unknown token (revoked, or not in the coordinator's --tokens file)");
  }
  if (client_certificates_) {
    if (!certificate_pem) return absl::UnauthenticatedError("no client certificate");
    return certificate_caller(*certificate_pem);
  }
  return absl::UnauthenticatedError("no token: give one with --token-file FILE or C960_TOKEN");
}

absl::StatusOr<std::optional<Caller>> CallAuthenticator::decide(
    absl::string_view method, std::optional<absl::string_view> authorization,
    std::optional<absl::string_view> certificate_pem) const {
  absl::StatusOr<Caller> caller = identify(authorization, certificate_pem);
  // A standby knows the tokens file but not the credentials the leader issued (kept in its
  // store): a token it does not know goes through unidentified, to be told NOT_LEADER.
  if (standby_ && !caller.ok() && authorization && tokens_) {
    absl::string_view token = *authorization;
    if (token.size() >= 7 && absl::EqualsIgnoreCase(token.substr(0, 7), "bearer ") &&
        !tokens_->find(absl::StripAsciiWhitespace(token.substr(7))))
      return std::optional<Caller>();
  }
  return authorize(method, caller);
}

grpc::Status CallAuthenticator::Process(const InputMetadata& md, grpc::AuthContext* context, OutputMetadata*,
                                        OutputMetadata*) {
  // One token per call: with two, the service's caller_of might read the other one.
  if (md.count(grpc::string_ref("authorization")) > 1)
    return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "more than one authorization header");
  const std::optional<absl::string_view> authorization = find(md, "authorization");
  std::optional<absl::string_view> pem;
  std::vector<grpc::string_ref> certs;  // owns nothing: the text lives in the connection's context
  if (!authorization && client_certificates_) {
    certs = context->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (!certs.empty()) pem = view(certs.front());
  }
  absl::StatusOr<std::optional<Caller>> decision = decide(find(md, ":path").value_or(""), authorization, pem);
  if (!decision.ok())
    return grpc::Status(grpc::StatusCode(int(decision.status().code())), std::string(decision.status().message()));
  // Nothing is written into `context` (see the header), and the authorization header stays: the
  // services' caller_of reads it again.
  return grpc::Status::OK;
}

Caller CallAuthenticator::caller_of(const grpc::ServerContextBase& ctx) const {
  const std::multimap<grpc::string_ref, grpc::string_ref>& md = ctx.client_metadata();
  std::optional<absl::string_view> authorization;
  if (auto it = md.find("authorization"); it != md.end()) authorization = view(it->second);
  std::optional<absl::string_view> pem;
  std::vector<grpc::string_ref> certs;
  std::shared_ptr<const grpc::AuthContext> auth_context;
  if (!authorization && client_certificates_) {
    auth_context = ctx.auth_context();
    certs = auth_context->FindPropertyValues(GRPC_X509_PEM_CERT_PROPERTY_NAME);
    if (!certs.empty()) pem = view(certs.front());
  }
  absl::StatusOr<Caller> c = identify(authorization, pem, true);
  if (c.ok()) return *c;
  // Only a call without credentials reaches a service unidentified: an open method (health),
  // or a token revoked by two reloads since Process let the call in. It gets the role that
  // may do nothing in JobService, and no name.
  return Caller{"", Role::kWorker, true};
}

bool CallAuthenticator::still_authorized(const grpc::ServerContextBase& ctx) const {
  const std::multimap<grpc::string_ref, grpc::string_ref>& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return true;  // a certificate (or nobody: an open method)
  return identify(view(it->second), std::nullopt, false).ok();
}

bool still_authorized(const CallAuthenticator* auth, const grpc::ServerContextBase& ctx) {
  return auth == nullptr || auth->still_authorized(ctx);
}

bool is_loopback_listen(const std::string& listen) {
  if (listen.rfind("unix:", 0) == 0 || listen.rfind("unix-abstract:", 0) == 0) return true;
  const std::optional<HostPort> hp = split_host_port(listen);
  if (!hp || hp->host.empty()) return false;
  addrinfo* res = resolve_listen(*hp);
  if (!res) return false;
  bool all = true;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) all &= is_loopback(ai->ai_addr);
  freeaddrinfo(res);
  return all;
}

absl::Status check_listen_address_free(const std::string& listen) {
  const std::optional<HostPort> hp = split_host_port(listen);
  if (!hp || hp->port == "0") return absl::OkStatus();
  addrinfo* res = resolve_listen(*hp);
  if (!res) return absl::OkStatus();  // gRPC says what is wrong with the address
  absl::Status out;
  for (addrinfo* ai = res; ai && out.ok(); ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    // As gRPC binds: SO_REUSEADDR lets a port in TIME_WAIT be taken again, never a listening one.
    const int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno == EADDRINUSE)
      out = absl::FailedPreconditionError(absl::StrCat("--listen: address in use: ", listen,
                                                       " (another coordinator, or another program, listens there)"));
    close(fd);
  }
  freeaddrinfo(res);
  return out;
}

}  // namespace c960::cluster
