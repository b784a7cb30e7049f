// The coordinator's HTTP side without sockets: one request in, one response out. The server
// (http_server.h, over cpp-httplib) only converts requests and responses; tests call handle()
// directly, as the gRPC services are thin adapters over Coordinator.
//
// What it serves (docs/operations.md):
//   /healthz, /readyz          open to all: alive; ready (store loaded, not draining) or 503
//   /login (GET form, POST)    open: a token in, an HttpOnly Secure SameSite=Strict cookie out
//   /logout (POST)             clears the cookie
//   /                          the dashboard: jobs with progress, workers
//   /jobs/ID                   one job, live: the self-play heatmap, or perft counts and divide
//   /assets/NAME               the pages' JavaScript and CSS, compiled into the binary
//   /metrics                   Prometheus text format (metrics.h)
//   /api/v1/jobs[?page_size=N&page_token=T], /api/v1/jobs/ID, /api/v1/jobs/ID/results[?divide=1],
//   /api/v1/workers[?include_lost=1]: read-only JSON mirroring the JobService messages
//
// Who may see what is decided in one place, authorize(), before any handler runs: with tokens or
// client certificates, every path but the open ones needs a caller of role read or admin (401
// when there is none or it is unknown, 403 for another role); without either, the coordinator
// authenticates nobody and listens on loopback only (or with --insecure), as on its gRPC side.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cluster/auth.h"
#include "coordinator/coordinator.h"
#include "coordinator/metrics.h"
#include "coordinator/store.h"

namespace c960::cluster {

struct HttpRequest {
  std::string method = "GET";
  std::string path = "/";                         // decoded, without the query
  std::multimap<std::string, std::string> query;  // decoded query parameters
  std::vector<std::string> authorization;         // every Authorization header
  std::string cookie;                             // the Cookie header
  std::string content_type;
  std::string body;
  std::optional<std::string> client_certificate_pem;  // verified by the TLS handshake
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;

  std::string header(const std::string& name) const;  // "" when absent (tests)
};

struct HttpOptions {
  std::shared_ptr<const TokenTable> tokens;  // null: no tokens
  bool client_certificates = false;          // verified client certificates name their holders
  bool tls = false;                          // served over HTTPS (cookies are Secure)
};

// The login cookie's name and lifetime.
inline constexpr char kLoginCookie[] = "c960_token";
inline constexpr int64_t kLoginCookieSeconds = 12 * 3600;

class HttpApi {
 public:
  // All must outlive the HttpApi. `metrics` may be null (no /metrics, no request counts).
  HttpApi(Coordinator* coordinator, Store* store, Metrics* metrics, HttpOptions options);

  HttpResponse handle(const HttpRequest& req) const;

  // /readyz answers 200 only while ready: from the store's load to the start of the drain.
  void set_ready(bool ready) { ready_ = ready; }

  // The handlers, a fixed set (also the values of the "handler" label of the request counter).
  enum class Handler {
    kHealthz,
    kReadyz,
    kLogin,
    kLogout,
    kDashboard,
    kJobPage,
    kAsset,
    kMetrics,
    kApiJobs,
    kApiJob,
    kApiResults,
    kApiWorkers,
    kNotFound
  };
  static const char* handler_name(Handler h);
  struct Route {
    Handler handler = Handler::kNotFound;
    std::string arg;  // the job id or the asset's name
    int version = 1;  // of the jobs API: 1 protobuf's JSON mapping (the dashboard's), 2 cluster/job_json.h
  };
  static Route route(const std::string& path);

 private:
  bool authenticates() const { return options_.tokens || options_.client_certificates; }
  // The one check. nullopt: go on, with *caller set; else the refusal (401 or 403).
  std::optional<HttpResponse> authorize(const HttpRequest& req, const Route& route, Caller* caller) const;
  // Who the request's credentials name: a bearer token, else the login cookie, else a client
  // certificate; UNAUTHENTICATED saying why not.
  absl::StatusOr<Caller> identify(const HttpRequest& req) const;
  HttpResponse dispatch(const HttpRequest& req, const Route& route) const;

  HttpResponse login(const HttpRequest& req) const;
  HttpResponse logout() const;
  HttpResponse page(const Route& route, const Caller& caller) const;
  HttpResponse metrics() const;
  HttpResponse api_jobs(const HttpRequest& req, const Caller& caller, int version) const;
  HttpResponse api_job(const std::string& id, const Caller& caller, int version) const;
  HttpResponse api_results(const HttpRequest& req, const std::string& id, const Caller& caller) const;
  HttpResponse api_workers(const HttpRequest& req, const Caller& caller) const;

  Coordinator* coordinator_;
  Store* store_;
  Metrics* metrics_;
  HttpOptions options_;
  std::atomic<bool> ready_{false};
};

// Helpers, public for tests.
// application/x-www-form-urlencoded (and query strings): '+' is a space, %XX a byte.
std::multimap<std::string, std::string> parse_form(const std::string& body);
// The value of cookie `name` in a Cookie header, or nullopt.
std::optional<std::string> cookie_value(const std::string& header, const std::string& name);
// A job's results as the API's JSON (see docs/operations.md).
std::string results_json(const std::string& job_id, const std::vector<v1::ResultChunk>& chunks);

}  // namespace c960::cluster
