#include "coordinator/http_server.h"

#include <httplib.h>

#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cluster/config.h"

namespace c960::cluster {
namespace {

// The PEM text of the client certificate the TLS handshake verified, if any.
std::optional<std::string> peer_certificate(const SSL* ssl) {
  if (!ssl) return std::nullopt;
  X509* cert = SSL_get1_peer_certificate(ssl);
  if (!cert) return std::nullopt;
  std::optional<std::string> out;
  if (BIO* bio = BIO_new(BIO_s_mem())) {
    if (PEM_write_bio_X509(bio, cert) == 1) {
      char* data = nullptr;
      const long n = BIO_get_mem_data(bio, &data);
      if (n > 0) out = std::string(data, size_t(n));
    }
    BIO_free(bio);
  }
  X509_free(cert);
  return out;
}

// Reads every certificate of a PEM text.
std::vector<X509*> read_certificates(const std::string& pem) {
  std::vector<X509*> out;
  BIO* bio = BIO_new_mem_buf(pem.data(), int(pem.size()));
  if (!bio) return out;
  while (X509* c = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) out.push_back(c);
  ERR_clear_error();  // the end of the text reads as an error
  BIO_free(bio);
  return out;
}

// The SSL context from the PEM texts that load_server_tls read and checked.
bool setup_tls(SSL_CTX& ctx, const ServerTls& tls) {
  SSL_CTX_set_min_proto_version(&ctx, TLS1_2_VERSION);
  SSL_CTX_set_options(&ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
  std::vector<X509*> chain = read_certificates(tls.cert_pem);
  bool ok = !chain.empty() && SSL_CTX_use_certificate(&ctx, chain[0]) == 1;
  for (size_t i = 1; ok && i < chain.size(); ++i) ok = SSL_CTX_add1_chain_cert(&ctx, chain[i]) == 1;
  for (X509* c : chain) X509_free(c);
  if (!ok) return false;
  BIO* bio = BIO_new_mem_buf(tls.key_pem.data(), int(tls.key_pem.size()));
  EVP_PKEY* key = bio ? PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr) : nullptr;
  if (bio) BIO_free(bio);
  ok = key && SSL_CTX_use_PrivateKey(&ctx, key) == 1 && SSL_CTX_check_private_key(&ctx) == 1;
  if (key) EVP_PKEY_free(key);
  if (!ok) return false;
  if (!tls.client_ca_pem.empty()) {
    // As on the gRPC side: every connection needs a certificate this CA signed.
    X509_STORE* store = SSL_CTX_get_cert_store(&ctx);
    STACK_OF(X509_NAME)* names = sk_X509_NAME_new_null();
    std::vector<X509*> cas = read_certificates(tls.client_ca_pem);
    for (X509* c : cas) {
      ok = ok && X509_STORE_add_cert(store, c) == 1;
      if (names) sk_X509_NAME_push(names, X509_NAME_dup(X509_get_subject_name(c)));
      X509_free(c);
    }
    if (names) SSL_CTX_set_client_CA_list(&ctx, names);
    SSL_CTX_set_verify(&ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    ok = ok && !cas.empty();
  }
  return ok;
}

}  // namespace

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::start(const std::string& listen, const ServerTls* tls,
                                                              const HttpApi* api) {
  const std::optional<HostPort> hp = split_host_port(listen);
  int port = 0;
  if (!hp || hp->host.empty() || !absl::SimpleAtoi(hp->port, &port) || port < 0 || port > 65535)
    return absl::InvalidArgumentError(absl::StrCat("--http-listen: '", listen, "' is not HOST:PORT"));
  std::unique_ptr<HttpServer> s(new HttpServer);
  if (tls) {
    ServerTls copy = *tls;
    s->server_ = std::make_unique<httplib::SSLServer>([copy](SSL_CTX& ctx) { return setup_tls(ctx, copy); });
  } else {
    s->server_ = std::make_unique<httplib::Server>();
  }
  if (!s->server_->is_valid())
    return absl::InvalidArgumentError("--http-listen: the TLS certificate or key did not load");
  httplib::Server& srv = *s->server_;
  srv.new_task_queue = [] { return new httplib::ThreadPool(kHttpThreads); };
  srv.set_payload_max_length(kMaxHttpBodyBytes);
  srv.set_keep_alive_timeout(kHttpKeepAliveSeconds);
  srv.set_read_timeout(kHttpReadTimeoutSeconds);
  srv.set_write_timeout(kHttpReadTimeoutSeconds);
  // SO_REUSEADDR only: httplib's default also sets SO_REUSEPORT, which would let a second
  // coordinator share the port (the gRPC side refuses that too).
  srv.set_socket_options([](socket_t sock) {
    const int one = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  });
  // Every request goes to the HttpApi: it authorizes, routes and answers.
  srv.set_pre_routing_handler([api](const httplib::Request& in, httplib::Response& out) {
    HttpRequest req;
    req.method = in.method;
    req.path = in.path;
    for (const auto& [k, v] : in.params) req.query.emplace(k, v);
    for (size_t i = 0, n = in.get_header_value_count("Authorization"); i < n; ++i)
      req.authorization.push_back(in.get_header_value("Authorization", i));
    req.cookie = in.get_header_value("Cookie");
    req.content_type = in.get_header_value("Content-Type");
    req.body = in.body;
#ifdef CPPHTTPLIB_OPENSSL_SUPPORT
    req.client_certificate_pem = peer_certificate(in.ssl);
#endif
    // httplib parses a form body into params too: only the query string's belong there.
    if (in.method == "POST") req.query.clear();
    HttpResponse resp = api->handle(req);
    out.status = resp.status;
    for (const auto& [k, v] : resp.headers) out.set_header(k, v);
    out.set_content(std::move(resp.body), resp.content_type);
    return httplib::Server::HandlerResponse::Handled;
  });
  const bool bound = port == 0 ? (port = srv.bind_to_any_port(hp->host)) > 0 : srv.bind_to_port(hp->host, port);
  if (!bound)
    return absl::FailedPreconditionError(absl::StrCat("--http-listen: cannot listen on ", listen,
                                                      " (address in use, or not an address of this machine)"));
  s->port_ = port;
  s->thread_ = std::thread([&srv] { srv.listen_after_bind(); });
  return s;
}

HttpServer::~HttpServer() { stop(); }

void HttpServer::stop() {
  if (server_) server_->stop();
  if (thread_.joinable()) thread_.join();
}

}  // namespace c960::cluster
