// The coordinator's HTTP listener (--http-listen) in front of HttpApi.
//
// Connections are its own: one event-loop thread (epoll) accepts them, enforces the connection
// limits, does the TLS handshakes and reads each request whole, head and body, under total
// deadlines (a client trickling bytes is cut at the deadline, not kept by per-read timeouts). The
// loop parses each head once (http_wire.h: refusals such as 400, 414, 431, 413 answered and the
// connection closed) and hands the complete request to a small pool of request threads
// (/healthz and /readyz to a thread of their own), which route it with HttpApi::respond and
// serialize the answer into a buffer; the loop sends it and keeps the connection for the next
// request. Only one thread at a time touches a connection. Range and If-Range are never read:
// every answer is its page once, never a multipart one per range; gzip is the only coding.
//
// A big answer comes in pages (HttpResponse::pages), sent chunked: the next page is made on a
// request thread only once the connection has sent the one before, so a reader that does not
// read holds one page and no thread. Unsent answer bytes (with what a paged answer holds for its
// rest) are counted per connection, per principal and in all: over max_queued_bytes a new request
// is 503, over max_queued_bytes_per_principal a principal's new request is 429, both with
// Retry-After.
//
// A connection over the connection limits is still let in, kHttpHealthConnections at once, for
// one /healthz or /readyz; any other request on it is answered 503. With that many in, a new one
// takes the place of the oldest whose request has not come whole, or that is closing (closed at
// once), so that connections opened over the limits again and again cannot keep a probe out.
//
// With TLS it serves HTTPS with the gRPC side's certificate and key (TLS 1.2 or later) and, with
// a client CA, requires and verifies client certificates as the gRPC side does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "cluster/config.h"
#include "cluster/tls.h"
#include "coordinator/http_api.h"
#include "coordinator/metrics.h"

namespace c960::cluster {

// The limits and deadlines (defaults and their meaning: cluster/config.h).
struct HttpServerOptions {
  int max_connections = kHttpMaxConnections;                        // --http-max-connections
  int max_connections_per_address = kHttpMaxConnectionsPerAddress;  // --http-max-connections-per-address
  int health_connections = kHttpHealthConnections;                  // over those: for one /healthz or /readyz each
  size_t max_head_bytes = kMaxHttpHeadBytes;
  size_t max_body_bytes = kMaxHttpBodyBytes;
  size_t max_queued_bytes = kHttpMaxQueuedBytes;
  size_t max_queued_bytes_per_principal = kHttpMaxQueuedBytesPerPrincipal;
  int send_buffer_bytes = kHttpSendBufferBytes;  // 0: the kernel's autotuning
  int64_t header_timeout_ms = kHttpHeaderTimeoutMs;
  int64_t body_timeout_ms = kHttpBodyTimeoutMs;
  int64_t write_timeout_ms = kHttpWriteTimeoutMs;
  int64_t idle_timeout_ms = kHttpIdleTimeoutMs;
  int64_t linger_ms = kHttpLingerMs;
  int threads = kHttpThreads;
  Metrics* metrics = nullptr;  // null: not counted (connections, refusals, timeouts)
};

class HttpServer {
 public:
  // Listens on `listen` (HOST:PORT, port 0: any free port) and serves `api` on its own threads
  // until stop(). `tls` null: plain HTTP. Errors name --http-listen (or the option's flag) and
  // the problem.
  static absl::StatusOr<std::unique_ptr<HttpServer>> start(const std::string& listen, const ServerTls* tls,
                                                           const HttpApi* api, const HttpServerOptions& options = {});
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const;
  // Stops accepting, closes idle connections, lets requests being handled and responses being
  // written finish (kHttpStopGraceMs at most for the writing), and joins every thread.
  void stop();

  // What the loop counted since the start (tests; the same as the metrics).
  struct Counts {
    int64_t accepted = 0;  // connections admitted
    // Over --http-max-connections, over --http-max-connections-per-address (those let in for
    // health included: refused any other request).
    int64_t refused = 0;
    int64_t refused_per_address = 0;
    int64_t timed_out = 0;              // cut at a deadline (handshake, head, body, write)
    int64_t evicted = 0;                // let in for health, closed for a newer one
    int64_t open = 0;                   // admitted and not yet closed
    int64_t queued_bytes = 0;           // of answers, not yet sent (with what paged answers hold)
    int64_t refused_queued = 0;         // requests answered 503 over max_queued_bytes
    int64_t refused_principal = 0;      // requests answered 429 over max_queued_bytes_per_principal
    int64_t answered = 0;               // requests HttpApi answered
    int64_t pages = 0;                  // pages of paged answers made (after each answer's first)
    int64_t most_connection_bytes = 0;  // the most one connection had counted at once
  };
  // The unsent bytes counted against one principal now (tests).
  int64_t principal_bytes(const std::string& principal) const;
  Counts counts() const;

  class Impl;

 private:
  HttpServer() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace c960::cluster
