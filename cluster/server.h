// The server side: how the coordinator's gRPC server listens (credentials, keepalive, message
// limits) and who may call it, in one place next to the client side (channel.h).
//
// Authentication and authorization happen in one place, the CallAuthenticator below: gRPC runs it
// on every call of a TLS server before the call reaches a service (it sees the method in the
// ":path" header, so it authorizes too). Which credential wins: a bearer token when the call
// carries one, else the client certificate (mTLS), else none (UNAUTHENTICATED).
//
// The services learn who called from the same authenticator (caller_of), not from properties
// the processor adds to the AuthContext: in gRPC 1.51 (Debian's) the processor is handed the
// connection's AuthContext, shared by every call on that connection, so properties added there
// pile up, race between concurrent calls and would give a call the first caller's identity.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include <grpcpp/grpcpp.h>
#include <grpcpp/security/auth_metadata_processor.h>

#include "absl/status/status.h"
#include "cluster/auth.h"
#include "cluster/tls.h"

namespace c960::cluster {

struct ServerOptions {
  std::string listen;                  // HOST:PORT; port 0 picks a free port
  std::optional<ServerTls> tls;        // nullopt: plaintext
  std::shared_ptr<TokenTable> tokens;  // null: no tokens (needs tls otherwise)
  // A standby coordinator's server: a token not in `tokens` is let in unidentified (to the
  // standby's NOT_LEADER answer) instead of refused, since it may be a worker's credential that
  // the leader issued and keeps in the store, which a standby has not read (CallAuthenticator).
  bool standby = false;
};

// Whether callers are authenticated at all: tokens, or required client certificates.
bool authenticates(const ServerOptions& options);

class CallAuthenticator;

// Adds the listening port (with credentials and, when it authenticates, the CallAuthenticator),
// keepalive, message limits and SO_REUSEPORT off to `builder`; *port receives the port once the
// server is built and started (0 if it could not listen). Returns the authenticator, null when
// the server authenticates nobody: give it to the services (caller_of).
std::shared_ptr<const CallAuthenticator> configure_server(const ServerOptions& options, grpc::ServerBuilder* builder,
                                                          int* port);

// The caller of a call that reached a service: `auth`'s answer, or Caller::local() when `auth`
// is null (a server that authenticates nobody).
Caller caller_of(const CallAuthenticator* auth, const grpc::ServerContextBase& ctx);
// auth->still_authorized(ctx), or true when `auth` is null.
bool still_authorized(const CallAuthenticator* auth, const grpc::ServerContextBase& ctx);

// Establishes the caller of every call (token, else client certificate) and refuses those the
// permission table (cluster/auth.h) does not allow: UNAUTHENTICATED, PERMISSION_DENIED.
class CallAuthenticator final : public grpc::AuthMetadataProcessor {
 public:
  // `tokens` null: no tokens. `client_certificates`: the server requires verified client
  // certificates, so a call without a token may be authenticated by its certificate.
  // `standby`: a well-formed bearer token that is not in `tokens` is let in with no caller
  // rather than refused UNAUTHENTICATED; the server must then answer every call without
  // serving anything (a standby's StandbyService), so that a worker whose credential only the
  // leader knows moves on to the leader instead of stopping.
  CallAuthenticator(std::shared_ptr<const TokenTable> tokens, bool client_certificates, bool standby = false)
      : tokens_(std::move(tokens)), client_certificates_(client_certificates), standby_(standby) {}
  // Quick (a hash and a map lookup): runs on gRPC's own thread.
  bool IsBlocking() const override { return false; }
  grpc::Status Process(const InputMetadata& auth_metadata, grpc::AuthContext* context,
                       OutputMetadata* consumed_auth_metadata, OutputMetadata* response_metadata) override;

  // What Process decides for a call of `method` with this `authorization` header and verified
  // client certificate (nullopt: none), without gRPC's types: authorize()'s answer.
  absl::StatusOr<std::optional<Caller>> decide(absl::string_view method, std::optional<absl::string_view> authorization,
                                               std::optional<absl::string_view> certificate_pem) const;
  // Who made a call that Process let in: the same credential, looked up again. A token revoked
  // by a reload in between still names its caller (TokenTable::find_recent): the call was
  // authorized before the reload.
  Caller caller_of(const grpc::ServerContextBase& ctx) const;
  // Whether a long call (a watch stream) may go on: its token is still in the current set (not
  // revoked or removed by a reload since it began). Certificate callers: true.
  bool still_authorized(const grpc::ServerContextBase& ctx) const;

 private:
  // `recent`: also the tokens of the set before the last reload.
  absl::StatusOr<Caller> identify(std::optional<absl::string_view> authorization,
                                  std::optional<absl::string_view> certificate_pem, bool recent = false) const;
  // caller_from_certificate, remembered: a connection's calls all carry the same certificate.
  absl::StatusOr<Caller> certificate_caller(absl::string_view pem) const;

  std::shared_ptr<const TokenTable> tokens_;
  bool client_certificates_;
  bool standby_;
  mutable std::mutex certificates_mu_;
  mutable std::map<std::string, absl::StatusOr<Caller>, std::less<>> certificates_;
};

// Listen addresses. Loopback: every address HOST resolves to is 127.0.0.0/8 or ::1 (or a unix
// socket). 0.0.0.0, [::], other addresses and names that resolve to any of them are not.
bool is_loopback_listen(const std::string& listen);
// Fails with "address in use" when another socket listens on HOST:PORT (gRPC would only fail
// later with a vague message, or share the port); port 0 is always free.
absl::Status check_listen_address_free(const std::string& listen);

}  // namespace c960::cluster
