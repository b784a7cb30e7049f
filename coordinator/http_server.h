// The coordinator's HTTP listener (--http-listen): cpp-httplib (Debian's libcpp-httplib) in
// front of HttpApi. Every request, whatever its path, goes to HttpApi::handle from httplib's
// pre-routing handler, so authorization stays in HttpApi's one place and httplib routes nothing.
// With TLS it serves HTTPS with the gRPC side's certificate and key (TLS 1.2 or later) and, with
// a client CA, requires and verifies client certificates as the gRPC side does.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "cluster/tls.h"
#include "coordinator/http_api.h"

namespace httplib {
class Server;
}

namespace c960::cluster {

class HttpServer {
 public:
  // Listens on `listen` (HOST:PORT, port 0: any free port) and serves `api` on its own threads
  // until stop(). `tls` null: plain HTTP. Errors name --http-listen and the problem.
  static absl::StatusOr<std::unique_ptr<HttpServer>> start(const std::string& listen, const ServerTls* tls,
                                                           const HttpApi* api);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }
  // Stops accepting and waits for the listener thread; requests in progress finish.
  void stop();

 private:
  HttpServer() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace c960::cluster
