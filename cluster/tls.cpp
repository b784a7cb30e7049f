#include "cluster/tls.h"

#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <memory>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sstream>
#include <sys/socket.h>
#include <sys/time.h>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/address.h"
#include "cluster/config.h"

namespace c960::cluster {
namespace {

// One connection attempt of the probe, and its TLS handshake, take at most this long.
constexpr int kProbeTimeoutMs = 2000;

struct Free {
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(SSL_CTX* p) const { SSL_CTX_free(p); }
  void operator()(SSL* p) const { SSL_free(p); }
};
template <typename T>
using Owned = std::unique_ptr<T, Free>;

absl::Status flag_error(absl::string_view flag, const std::string& problem) {
  return absl::InvalidArgumentError(absl::StrCat("--", flag, ": ", problem));
}

absl::StatusOr<std::string> read_pem_file(absl::string_view flag, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return flag_error(flag, absl::StrCat("cannot read '", path, "': ", std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Never asks for a pass phrase on the terminal: an encrypted key is an error at start instead.
int no_password(char*, int, int, void*) { return -1; }

std::vector<Owned<X509>> certificates_in(absl::string_view pem) {
  std::vector<Owned<X509>> out;
  Owned<BIO> bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
  while (X509* x = PEM_read_bio_X509(bio.get(), nullptr, no_password, nullptr)) out.emplace_back(x);
  ERR_clear_error();  // the loop ends on "no start line", which is not an error
  return out;
}

std::string time_text(const ASN1_TIME* t) {
  Owned<BIO> bio(BIO_new(BIO_s_mem()));
  ASN1_TIME_print(bio.get(), t);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, size_t(n));
}

// "" when the certificate is valid now, else why not.
std::string validity_problem(X509* cert) {
  if (X509_cmp_current_time(X509_get0_notAfter(cert)) < 0)
    return absl::StrCat("expired on ", time_text(X509_get0_notAfter(cert)));
  if (X509_cmp_current_time(X509_get0_notBefore(cert)) > 0)
    return absl::StrCat("is not valid before ", time_text(X509_get0_notBefore(cert)), " (check the clock)");
  return "";
}

// Reads `path` for `flag`: at least one certificate, the first one valid now.
absl::StatusOr<std::string> load_certificates(absl::string_view flag, const std::string& path, bool is_ca) {
  absl::StatusOr<std::string> pem = read_pem_file(flag, path);
  if (!pem.ok()) return pem.status();
  std::vector<Owned<X509>> certs = certificates_in(*pem);
  if (certs.empty()) return flag_error(flag, absl::StrCat("'", path, "' holds no PEM certificate"));
  if (const std::string p = validity_problem(certs[0].get()); !p.empty())
    return flag_error(flag, absl::StrCat(is_ca ? "the CA certificate" : "the certificate", " in '", path, "' ", p));
  return pem;
}

// Reads the key in `key_path` and checks that it belongs to the first certificate of `cert_pem`.
absl::StatusOr<std::string> load_key(absl::string_view key_flag, const std::string& key_path,
                                     absl::string_view cert_flag, const std::string& cert_path,
                                     const std::string& cert_pem) {
  absl::StatusOr<std::string> pem = read_pem_file(key_flag, key_path);
  if (!pem.ok()) return pem.status();
  Owned<BIO> bio(BIO_new_mem_buf(pem->data(), int(pem->size())));
  Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(bio.get(), nullptr, no_password, nullptr));
  ERR_clear_error();
  if (!key)
    return flag_error(
        key_flag, absl::StrCat("'", key_path, "' holds no PEM private key (or an encrypted one, which is not used)"));
  std::vector<Owned<X509>> certs = certificates_in(cert_pem);
  if (certs.empty() || X509_check_private_key(certs[0].get(), key.get()) != 1) {
    ERR_clear_error();
    return flag_error(key_flag, absl::StrCat("the key in '", key_path, "' does not belong to the certificate in --",
                                             cert_flag, " '", cert_path, "'"));
  }
  return pem;
}

std::string utf8_entry(X509_NAME* name, int index) {
  ASN1_STRING* data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, index));
  unsigned char* utf8 = nullptr;
  const int n = ASN1_STRING_to_UTF8(&utf8, data);
  if (n < 0) return "";
  std::string out(reinterpret_cast<char*>(utf8), size_t(n));
  OPENSSL_free(utf8);
  return out;
}

// ---------------------------------------------------------------------------------------------
// The connection probe

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

// A TCP connection within kProbeTimeoutMs, or the errno of the last attempt (negated).
int connect_tcp(const HostPort& hp, std::string* error) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (const int rc = getaddrinfo(hp.host.c_str(), hp.port.c_str(), &hints, &res); rc != 0) {
    *error = absl::StrCat("cannot resolve '", hp.host, "': ", gai_strerror(rc));
    return -1;
  }
  int last_errno = 0;
  for (addrinfo* ai = res; ai; ai = ai->ai_next) {
    const int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (fd < 0) continue;
    int rc = connect(fd, ai->ai_addr, ai->ai_addrlen);
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd, POLLOUT, 0};
      rc = poll(&p, 1, kProbeTimeoutMs);
      if (rc == 0) {
        errno = ETIMEDOUT;
        rc = -1;
      } else if (rc > 0) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
        errno = err;
        rc = err == 0 ? 0 : -1;
      }
    }
    if (rc == 0) {
      freeaddrinfo(res);
      fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
      timeval tv{kProbeTimeoutMs / 1000, (kProbeTimeoutMs % 1000) * 1000};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
      return fd;
    }
    last_errno = errno;
    close(fd);
  }
  freeaddrinfo(res);
  const std::string where = absl::StrCat(hp.host, ":", hp.port);
  if (last_errno == ECONNREFUSED)
    *error = absl::StrCat("nothing listens on ", where, " (connection refused): is the coordinator running there?");
  else if (last_errno == ETIMEDOUT)
    *error = absl::StrCat("no answer from ", where, " within ", kProbeTimeoutMs / 1000,
                          " s: a wrong host, or a firewall in between?");
  else
    *error = absl::StrCat("cannot connect to ", where, ": ", std::strerror(last_errno));
  return -1;
}

// While alive, a write to a socket the peer closed fails with EPIPE instead of killing the
// process with SIGPIPE (OpenSSL writes with plain write()); a SIGPIPE raised meanwhile is consumed.
class NoSigpipe {
 public:
  NoSigpipe() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~NoSigpipe() {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_, nullptr, &zero) > 0) {}
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  NoSigpipe(const NoSigpipe&) = delete;
  NoSigpipe& operator=(const NoSigpipe&) = delete;

 private:
  sigset_t pipe_, old_;
};

bool is_ip_literal(const std::string& host) {
  addrinfo hints{};
  hints.ai_flags = AI_NUMERICHOST;
  addrinfo* res = nullptr;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0) return false;
  freeaddrinfo(res);
  return true;
}

bool add_pem_certificates(X509_STORE* store, absl::string_view pem) {
  bool any = false;
  for (Owned<X509>& c : certificates_in(pem)) any |= X509_STORE_add_cert(store, c.get()) == 1;
  return any;
}

// The OpenSSL reason of the last error on this thread, 0 if none.
int last_ssl_reason() {
  const unsigned long e = ERR_peek_last_error();
  return e == 0 ? 0 : ERR_GET_REASON(e);
}

bool is_alert(int reason) { return reason >= SSL_AD_REASON_OFFSET && reason < SSL_AD_REASON_OFFSET + 256; }

// The host names and addresses a certificate is made for: its subjectAltName's DNS names and IP
// addresses, in its order ("coordinator, localhost, 127.0.0.1, ::1"); without any, its CN, which
// clients no longer match against ("" when it has neither).
std::string certificate_hosts(X509* cert) {
  std::vector<std::string> names;
  GENERAL_NAMES* sans = static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  for (int i = 0; sans && i < sk_GENERAL_NAME_num(sans); ++i) {
    const GENERAL_NAME* n = sk_GENERAL_NAME_value(sans, i);
    if (n->type == GEN_DNS) {
      const ASN1_IA5STRING* dns = n->d.dNSName;
      names.emplace_back(reinterpret_cast<const char*>(ASN1_STRING_get0_data(dns)), size_t(ASN1_STRING_length(dns)));
    } else if (n->type == GEN_IPADD) {
      const ASN1_OCTET_STRING* ip = n->d.iPAddress;
      const int len = ASN1_STRING_length(ip);
      char text[INET6_ADDRSTRLEN] = {};
      if ((len == 4 || len == 16) &&
          inet_ntop(len == 4 ? AF_INET : AF_INET6, ASN1_STRING_get0_data(ip), text, sizeof text))
        names.emplace_back(text);
    }
  }
  GENERAL_NAMES_free(sans);
  if (!names.empty()) return absl::StrJoin(names, ", ");
  X509_NAME* subject = X509_get_subject_name(cert);
  const int cn = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  return cn < 0 ? "" : absl::StrCat("no subjectAltName, only the CN ", utf8_entry(subject, cn));
}

std::string verify_problem(long result, X509* peer, const HostPort& hp) {
  const std::string expiry = peer ? time_text(X509_get0_notAfter(peer)) : "";
  switch (result) {
    case X509_V_ERR_CERT_HAS_EXPIRED:
      return absl::StrCat("the coordinator's certificate expired", expiry.empty() ? "" : " on " + expiry,
                          ": give it a new one (--tls-cert, --tls-key)");
    case X509_V_ERR_CERT_NOT_YET_VALID:
      return "the coordinator's certificate is not valid yet: check the clocks of both machines";
    case X509_V_ERR_HOSTNAME_MISMATCH:
    case X509_V_ERR_IP_ADDRESS_MISMATCH: {
      const std::string names = peer ? certificate_hosts(peer) : "";
      return absl::StrCat("the coordinator's certificate is not made for '", hp.host, "': ",
                          names.empty() ? "(openssl x509 -in FILE -noout -ext subjectAltName shows what it names)"
                                        : absl::StrCat("it names ", names),
                          "; connect by a name or address it names, or give the coordinator a certificate that also "
                          "names '",
                          hp.host, "' (deploy/make-secrets.sh DIR --hosts ", hp.host, ")");
    }
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY:
    case X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT:
    case X509_V_ERR_DEPTH_ZERO_SELF_SIGNED_CERT:
    case X509_V_ERR_SELF_SIGNED_CERT_IN_CHAIN:
    case X509_V_ERR_UNABLE_TO_VERIFY_LEAF_SIGNATURE:
    case X509_V_ERR_CERT_SIGNATURE_FAILURE:
      return "the coordinator's certificate is not signed by the CA in --tls-ca (C960_TLS_CA): give the CA that "
             "signed it";
    default:
      return absl::StrCat("the coordinator's certificate does not verify: ", X509_verify_cert_error_string(result));
  }
}

std::string client_certificate_problem(bool sent_certificate) {
  if (!sent_certificate)
    return "the coordinator requires a client certificate (it runs with --tls-client-ca): give --tls-cert and "
           "--tls-key (C960_TLS_CERT, C960_TLS_KEY)";
  return "the coordinator refused our client certificate (--tls-cert): it is not signed by the CA the coordinator "
         "trusts (its --tls-client-ca), or it expired";
}

// Called by OpenSSL when the server asks for a client certificate: notes that it did.
int note_certificate_request(SSL* ssl, void*) {
  *static_cast<bool*>(SSL_get_app_data(ssl)) = true;
  return 1;
}

// Whether the server goes on talking after the handshake: the HTTP/2 preface and an empty
// SETTINGS frame are sent, and a gRPC server answers with its own SETTINGS. A server that
// refused our client certificate closes the connection instead (gRPC sends no alert).
bool answers_http2(SSL* ssl) {
  static const char kPreface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0";
  if (SSL_write(ssl, kPreface, sizeof kPreface - 1) <= 0) return false;
  char byte;
  return SSL_read(ssl, &byte, 1) > 0;
}

}  // namespace

absl::StatusOr<ServerTls> load_server_tls(const std::string& cert_file, const std::string& key_file,
                                          const std::string& client_ca_file) {
  ServerTls out;
  absl::StatusOr<std::string> cert = load_certificates("tls-cert", cert_file, false);
  if (!cert.ok()) return cert.status();
  absl::StatusOr<std::string> key = load_key("tls-key", key_file, "tls-cert", cert_file, *cert);
  if (!key.ok()) return key.status();
  out.cert_pem = std::move(*cert);
  out.key_pem = std::move(*key);
  if (!client_ca_file.empty()) {
    absl::StatusOr<std::string> ca = load_certificates("tls-client-ca", client_ca_file, true);
    if (!ca.ok()) return ca.status();
    out.client_ca_pem = std::move(*ca);
  }
  return out;
}

absl::StatusOr<ClientTls> load_client_tls(const std::string& ca_file, const std::string& cert_file,
                                          const std::string& key_file) {
  if (ca_file.empty()) return flag_error("tls-ca", "needed for TLS: the CA that signed the coordinator's certificate");
  if (cert_file.empty() != key_file.empty())
    return flag_error(cert_file.empty() ? "tls-key" : "tls-cert",
                      cert_file.empty() ? "needs --tls-cert (a client certificate and its key go together)"
                                        : "needs --tls-key (a client certificate and its key go together)");
  ClientTls out;
  absl::StatusOr<std::string> ca = load_certificates("tls-ca", ca_file, true);
  if (!ca.ok()) return ca.status();
  out.ca_pem = std::move(*ca);
  if (!cert_file.empty()) {
    absl::StatusOr<std::string> cert = load_certificates("tls-cert", cert_file, false);
    if (!cert.ok()) return cert.status();
    absl::StatusOr<std::string> key = load_key("tls-key", key_file, "tls-cert", cert_file, *cert);
    if (!key.ok()) return key.status();
    out.cert_pem = std::move(*cert);
    out.key_pem = std::move(*key);
  }
  return out;
}

absl::StatusOr<Caller> caller_from_certificate(absl::string_view pem) {
  std::vector<Owned<X509>> certs = certificates_in(pem);
  if (certs.empty()) return absl::UnauthenticatedError("no client certificate");
  X509_NAME* subject = X509_get_subject_name(certs[0].get());
  const int cn_index = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
  const std::string cn = cn_index < 0 ? "" : utf8_entry(subject, cn_index);
  if (!valid_caller_name(cn))
    return absl::UnauthenticatedError(
        absl::StrCat("the client certificate's CN '", cn, "' is not a name (1..64 characters of A-Z a-z 0-9 . _ -)"));
  std::optional<Role> role;
  for (int i = X509_NAME_get_index_by_NID(subject, NID_organizationalUnitName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_organizationalUnitName, i)) {
    const std::optional<Role> r = parse_role(utf8_entry(subject, i));
    if (!r) continue;
    if (role && *role != *r)
      return absl::UnauthenticatedError(absl::StrCat("the client certificate of '", cn, "' names two roles (OU)"));
    role = r;
  }
  if (!role)
    return absl::UnauthenticatedError(absl::StrCat("the client certificate of '", cn,
                                                   "' names no role: its subject needs OU=admin, submit, read or "
                                                   "worker (or send a token)"));
  // The owner behind a worker certificate is its subject's organisation (O), when it has one.
  std::string owner;
  if (const int o = X509_NAME_get_index_by_NID(subject, NID_organizationName, -1); o >= 0) {
    owner = utf8_entry(subject, o);
    if (!valid_caller_name(owner))
      return absl::UnauthenticatedError(absl::StrCat("the client certificate of '", cn, "' names an organisation (O) '",
                                                     owner.substr(0, 80),
                                                     "' that is not a name (1..64 characters of A-Z a-z 0-9 . _ -)"));
  }
  return Caller{cn, *role, true, 0, std::move(owner)};
}

ConnectionProblem diagnose_connection(absl::string_view address, const ClientTls* tls) {
  const std::optional<HostPort> hp = split_host_port(std::string_view(address.data(), address.size()));
  if (!hp) return {};
  const NoSigpipe no_sigpipe;
  std::string error;
  const Fd fd(connect_tcp(*hp, &error));
  if (fd.get() < 0) return {error, false};

  Owned<SSL_CTX> ctx(SSL_CTX_new(TLS_client_method()));
  if (!ctx) return {};
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  const bool sends_certificate = tls && !tls->cert_pem.empty();
  // The handshake goes on whatever the server's certificate (SSL_VERIFY_NONE); OpenSSL still
  // verifies it against the CA and the host, and SSL_get_verify_result tells the outcome.
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  if (tls) {
    add_pem_certificates(SSL_CTX_get_cert_store(ctx.get()), tls->ca_pem);
    if (sends_certificate) {
      std::vector<Owned<X509>> certs = certificates_in(tls->cert_pem);
      Owned<BIO> kb(BIO_new_mem_buf(tls->key_pem.data(), int(tls->key_pem.size())));
      Owned<EVP_PKEY> key(PEM_read_bio_PrivateKey(kb.get(), nullptr, no_password, nullptr));
      if (!certs.empty() && key) {
        SSL_CTX_use_certificate(ctx.get(), certs[0].get());
        SSL_CTX_use_PrivateKey(ctx.get(), key.get());
      }
    }
  }
  bool certificate_requested = false;
  SSL_CTX_set_cert_cb(ctx.get(), note_certificate_request, nullptr);
  Owned<SSL> ssl(SSL_new(ctx.get()));
  if (!ssl) return {};
  SSL_set_app_data(ssl.get(), &certificate_requested);
  static const unsigned char kAlpn[] = {2, 'h', '2'};  // gRPC servers insist on HTTP/2
  SSL_set_alpn_protos(ssl.get(), kAlpn, sizeof kAlpn);
  if (is_ip_literal(hp->host)) {
    X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl.get()), hp->host.c_str());
  } else {
    SSL_set_tlsext_host_name(ssl.get(), hp->host.c_str());
    SSL_set1_host(ssl.get(), hp->host.c_str());
  }
  SSL_set_fd(ssl.get(), fd.get());
  ERR_clear_error();
  const int rc = SSL_connect(ssl.get());
  const int reason = last_ssl_reason();
  Owned<X509> peer(SSL_get1_peer_certificate(ssl.get()));
  const long verify = SSL_get_verify_result(ssl.get());
  ERR_clear_error();
  // A TLS server answers a handshake with a certificate or an alert; a plaintext one with
  // something that is no TLS record, or by closing.
  const bool speaks_tls = rc == 1 || peer || is_alert(reason);
  const std::string where = absl::StrCat(hp->host, ":", hp->port);
  if (!tls) {
    if (!speaks_tls) return {};
    return {absl::StrCat("the coordinator at ", where,
                         " serves TLS: give the CA that signed its certificate with --tls-ca FILE (or C960_TLS_CA)"),
            true};
  }
  if (!speaks_tls)
    return {absl::StrCat("the coordinator at ", where,
                         " does not speak TLS (it runs without --tls-cert): start it with TLS, or connect without "
                         "--tls-ca (C960_TLS_CA)"),
            true};
  if (peer && verify != X509_V_OK) return {verify_problem(verify, peer.get(), *hp), true};
  if (rc != 1)
    return certificate_requested && is_alert(reason)
               ? ConnectionProblem{client_certificate_problem(sends_certificate), true}
               : ConnectionProblem{};
  // With TLS 1.3 the server checks a client certificate after the client's side of the handshake
  // is done: a refusal shows on the first exchange.
  const bool refused = certificate_requested && !answers_http2(ssl.get());
  ERR_clear_error();
  return refused ? ConnectionProblem{client_certificate_problem(sends_certificate), true} : ConnectionProblem{};
}

}  // namespace c960::cluster
