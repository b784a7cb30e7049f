// TLS material and its checks, with OpenSSL: the PEM files of the coordinator and of its clients
// are read and checked once, at start, so that a wrong file is an error naming the flag and the
// problem instead of a handshake that fails on every connection later. Also: who a client
// certificate says its holder is, and a probe that tells a client why it cannot connect.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cluster/auth.h"

namespace c960::cluster {

// The coordinator's TLS (--tls-cert, --tls-key, --tls-client-ca), as PEM text.
struct ServerTls {
  std::string cert_pem;       // the certificate, optionally followed by its chain
  std::string key_pem;        // its private key
  std::string client_ca_pem;  // empty: no client certificates; else required and verified (mTLS)
};
// Reads and checks the files: each certificate parses, the key matches the certificate, the
// certificate is valid now (not expired, not yet valid), the CA file holds a certificate. Errors
// name the flag and the problem.
absl::StatusOr<ServerTls> load_server_tls(const std::string& cert_file, const std::string& key_file,
                                          const std::string& client_ca_file);

// A client's TLS (--tls-ca, and --tls-cert/--tls-key for mTLS), as PEM text.
struct ClientTls {
  std::string ca_pem;    // the CA that signed the coordinator's certificate
  std::string cert_pem;  // empty: no client certificate
  std::string key_pem;
};
absl::StatusOr<ClientTls> load_client_tls(const std::string& ca_file, const std::string& cert_file,
                                          const std::string& key_file);

// The caller a verified client certificate names: identity from its subject's common name (CN),
// role from its organizational unit (OU=admin|submit|read|worker). A certificate without exactly
// one role, or whose CN is not a valid name, names nobody (an error saying why).
absl::StatusOr<Caller> caller_from_certificate(absl::string_view pem);

// Why a client cannot connect to `address` (HOST:PORT), found by connecting with plain TCP and
// OpenSSL itself: nothing listening, a coordinator that serves TLS to a plaintext client (or the
// reverse), a certificate that is expired or not signed by `tls`'s CA or not made for HOST, a
// client certificate that is missing or refused. Each message says what to fix; empty when the
// probe finds nothing wrong (the caller then has only gRPC's own message). `tls` null: a
// plaintext client. Takes at most a few seconds.
struct ConnectionProblem {
  std::string message;
  // A misconfiguration (TLS or certificates) that trying again will not cure; not so for
  // "nothing listens" (the coordinator may be starting).
  bool lasting = false;
};
ConnectionProblem diagnose_connection(absl::string_view address, const ClientTls* tls);

}  // namespace c960::cluster
