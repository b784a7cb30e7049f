// The coordinator's HTTP side without sockets: one request in, one response out. The server
// (http_server.h; http_wire.h parses and writes the bytes) calls respond(); tests call handle(),
// the same with a paged answer's pages joined, as the gRPC services are thin adapters over
// Coordinator.
//
// What it serves is one table, routes() (docs/operations.md lists it): each row a method, a path
// pattern, the handler and the gRPC method the row mirrors. match() picks the row (std::regex_match
// over the whole decoded path, the first row of the method wins) for the server and tests alike.
//
// The big answers (the workers listing, a job's results as JSON, the results downloads) are
// paged: HttpResponse::pages makes the rest of the answer a page at a time, as the server can
// send it (cluster/config.h, kHttpPageBytes). Each answer after the authorization check names its
// principal (the caller's identity, else the client's address), and a request whose principal
// already has too many unsent answer bytes is refused 429 (HttpRequest::budget, the server's).
//   /healthz, /readyz          open to all: alive; ready (store loaded, not draining) or 503
//   /login (GET form, POST)    open: a token in, a session out (http_sessions.h): the cookie
//                              __Host-c960_session (Secure, HttpOnly, SameSite=Strict) holds the
//                              session's id, never the token; a POST another site's page sent is
//                              refused (Sec-Fetch-Site, Origin)
//   /logout (POST)             ends the session in the coordinator and clears the cookie; the same rule
//   /                          the dashboard: jobs with progress, workers        (ListJobs)
//   /jobs/ID                   one job, live: the heatmap, or perft counts       (GetJob)
//   /assets/NAME               the pages' JavaScript and CSS, compiled in        (ListJobs)
//   /metrics                   Prometheus text format (metrics.h)                (ListWorkers)
//   /api/v1/jobs, /api/v2/jobs (ListJobs), /api/v1/jobs/ID, /api/v2/jobs/ID (GetJob),
//   /api/v1/jobs/ID/results[?divide=1] (GetResults), /api/v1/workers (ListWorkers): JSON
//   /api/v1/jobs/ID/results.csv, .json, .pgn[?divide=1&partial=1] (GetResults): the files
//   `c960 results JOB --format csv|json [--divide] [--partial]` and `--pgn` write, byte for byte
//   POST /api/v1/jobs/ID/cancel (CancelJob): the page's cancel button; same-origin only (CSRF)
// Without authentication, a Host that does not name this coordinator is 421 (but for health).
//
// Sessions: the login form is the one place a browser sends a token. The coordinator keeps the
// session (SessionTable: only the SHA-256 of its id, and the token's token_hash()); every request
// with the session cookie is the session looked up, then its token looked up again in the live
// token table, so a token removed from --tokens or revoked (SIGHUP) leaves its sessions no power
// from the next request on, and they are ended. A cookie this coordinator did not make (a token,
// any other text) is 401, never read as a token; the old c960_token cookie is no credential. The
// login exists only with tokens, which need TLS (main.cpp refuses --tokens without it): the cookie
// is always Secure and __Host- (this host only, Path=/). Without tokens there is no login, no
// session and no cookie (client certificates are sent by the browser with every request).
//
// Who may see what is decided in one place, before any handler runs: the row's gRPC method and
// cluster/auth.h's permission table, as on the gRPC side (401 when there is no caller or it is
// unknown, 403 naming the roles allowed). A submit token sees and cancels its own jobs only (the
// Coordinator filters by caller); /metrics mirrors ListWorkers (cluster-wide figures: read or
// admin). Without tokens or client certificates, the coordinator authenticates nobody and listens
// on loopback only (or with --insecure), as on its gRPC side.
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "cluster/auth.h"
#include "coordinator/clock.h"
#include "coordinator/coordinator.h"
#include "coordinator/http_sessions.h"
#include "coordinator/metrics.h"
#include "coordinator/store.h"

namespace c960::cluster {

class AnswerBudget;

struct HttpRequest {
  std::string method = "GET";
  std::string host;            // the Host header ("" when absent)
  std::string origin;          // the Origin header ("" when absent)
  std::string fetch_site;      // the Sec-Fetch-Site header ("" when absent)
  std::string requested_with;  // the X-Requested-With header: the dashboard's fetches send kDashboardRequest
  std::string path = "/";      // decoded, without the query
  std::multimap<std::string, std::string> query;  // decoded query parameters
  std::vector<std::string> authorization;         // every Authorization header
  std::string cookie;                             // the Cookie header
  std::string content_type;
  std::string body;
  std::optional<std::string> client_certificate_pem;  // verified by the TLS handshake
  // The connection's own end: the address (IPv4, or IPv6 without brackets) and port it came in on.
  std::string local_address;
  int local_port = 0;
  std::string peer_address;  // the client's address (the principal of who is not authenticated)
  // The server's account of unsent answer bytes per principal; null: no limit (tests).
  const AnswerBudget* budget = nullptr;
};

// The rest of a big answer, made a page at a time on a request thread, as the server can send it.
class AnswerPages {
 public:
  virtual ~AnswerPages() = default;
  // Appends the next page (about kHttpPageBytes) to *out; false once the answer is complete (the
  // last bytes may come with it), or when it cannot go on (*error set: the server then ends the
  // connection without the answer's end, so that the client sees it cut short).
  virtual bool next(std::string* out, absl::Status* error) = 0;
  // About how many bytes it holds to make the pages still to come (counted as unsent).
  virtual size_t held_bytes() const = 0;
};

// What the server lets one principal have waiting in unsent answers.
class AnswerBudget {
 public:
  virtual ~AnswerBudget() = default;
  // nullopt: it may ask; else why not (the limit and its figure).
  virtual std::optional<std::string> refuse(const std::string& principal) const = 0;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;                    // the whole answer, or the first part of a paged one
  std::shared_ptr<AnswerPages> pages;  // null: `body` is the whole answer
  // Whose answer it is, for the limits on unsent bytes ("" before the authorization check: the
  // server takes the client's address).
  std::string principal;

  std::string header(const std::string& name) const;  // "" when absent (tests)
};

struct HttpOptions {
  std::shared_ptr<const TokenTable> tokens;  // null: no tokens, no login (and no sessions)
  bool client_certificates = false;          // verified client certificates name their holders
  bool tls = false;                          // served over HTTPS (cookies are Secure)
  // --http-listen's host ("127.0.0.1", "::1", "localhost", "0.0.0.0"). Without authentication,
  // a request's Host must name this coordinator (else 421, so that another site's name resolved to
  // this address, DNS rebinding, gets nothing): this host, the address the connection came in on,
  // and localhost, 127.0.0.1 and [::1] when either is loopback; each with the connection's port
  // (or without one when it is the scheme's default). /healthz and /readyz answer any Host; a
  // request without Host is served. The same names are the origins a browser's form or fetch may
  // come from (the same-site check); with authentication that is the Host's own origin.
  std::string listen_host;
  // The sessions' clock (null: the system's) and limits (defaults: cluster/config.h).
  const Clock* clock = nullptr;
  SessionLimits sessions;
};

// The session cookie: its value a session's id. "__Host-": browsers keep it only if it came over
// HTTPS (or from http://localhost) with Secure and Path=/ and no Domain, and let no other host,
// nor a subdomain, set one of that name. It lives as long as a session may (SessionLimits).
inline constexpr char kSessionCookie[] = "__Host-c960_session";
// The cookie that held the token itself before sessions: no credential any more; a login, a
// logout and a 401 clear it where a browser still sends it.
inline constexpr char kLegacyLoginCookie[] = "c960_token";
// What the dashboard's state-changing fetches send as X-Requested-With: a header a page of another
// site cannot add without a CORS preflight, which this server never grants.
inline constexpr char kDashboardRequest[] = "c960-dashboard";

class HttpApi {
 public:
  // All must outlive the HttpApi. `metrics` may be null (no /metrics, no request counts).
  HttpApi(Coordinator* coordinator, Store* store, Metrics* metrics, HttpOptions options);

  // The answer, its pages joined (tests).
  HttpResponse handle(const HttpRequest& req) const;
  // The answer as the server sends it: a big one paged.
  HttpResponse respond(const HttpRequest& req) const;

  // /readyz answers 200 only while ready: from the store's load to the start of the drain.
  void set_ready(bool ready) { ready_ = ready; }
  // A standby (another coordinator leads; the one behind this HttpApi is not loaded): every
  // request but /healthz is answered 503 naming the leader ("" while none is known), /readyz
  // included, so that load balancers and Kubernetes send nothing here.
  void set_standby(bool standby, const std::string& leader = "");

  enum class Handler {
    kHealthz,
    kReadyz,
    kLoginForm,
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
    kApiCancel,
    kResultsCsv,
    kResultsJson,
    kResultsPgn,
  };
  // One row of the routing table.
  struct Route {
    const char* method;   // "GET" (HEAD is served as GET) or "POST"
    const char* pattern;  // ECMAScript regex over the whole decoded path; group 1, if any: the job or asset
    Handler handler;
    const char* name;  // the "handler" label of c960_http_requests_total
    // The gRPC method whose permission (cluster/auth.h) the row takes; nullptr: open to all.
    const char* rpc;
    int version = 1;  // of the jobs API: 1 protobuf's JSON mapping (the dashboard's), 2 cluster/job_json.h
  };
  static const std::vector<Route>& routes();
  // The label value of requests no row serves.
  static constexpr char kNotFoundName[] = "not_found";

  // The row `method` and `path` take (nullptr: none) and its argument.
  struct Match {
    const Route* route = nullptr;
    std::string arg;
  };
  static Match match(const std::string& method, const std::string& path);

  // The server's entry points: a request a row matched (its group 1 in `arg`), and one no row
  // matched (404, or 405 with Allow when another method's row has the path). handle() is match()
  // and one of the two.
  HttpResponse serve(const Route& route, const std::string& arg, const HttpRequest& req) const;
  HttpResponse unrouted(const HttpRequest& req) const;

 private:
  bool authenticates() const { return options_.tokens || options_.client_certificates; }
  // The one check: the row's gRPC method and the caller's role. nullopt: go on, with *caller set;
  // else the refusal (401 or 403).
  std::optional<HttpResponse> authorize(const HttpRequest& req, const Route& route, Caller* caller) const;
  // Who the request's credentials name: a bearer token, else the session cookie, else a client
  // certificate; UNAUTHENTICATED saying why not.
  absl::StatusOr<Caller> identify(const HttpRequest& req) const;
  // Who the session `id` acts for: its token's caller in the live token table now. A session
  // whose token the table no longer holds is ended (with every other of that token). Needs
  // sessions_ (tokens).
  absl::StatusOr<Caller> by_session(const std::string& id) const;
  // The cookies an answer sets: the session cookie (empty `id`: cleared), and the old cookie
  // cleared when the request has one.
  void set_cookies(const HttpRequest& req, const std::string& id, HttpResponse* resp) const;
  HttpResponse dispatch(const HttpRequest& req, const Route& route, const std::string& arg) const;
  // The row's handler, for an authorized caller.
  HttpResponse handler(const HttpRequest& req, const Route& route, const std::string& arg, const Caller& caller) const;
  // Without authentication, the HOST:PORT names of this coordinator (see HttpOptions::listen_host).
  std::vector<std::string> own_hosts(const HttpRequest& req) const;
  // The 421 answer to a request whose Host is not one of own_hosts(); nullopt: it is, or there is
  // authentication.
  std::optional<HttpResponse> misdirected(const HttpRequest& req) const;
  // The origins a state-changing request from a browser may come from.
  std::vector<std::string> own_origins(const HttpRequest& req) const;
  // Headers every answer carries, and the request counted.
  HttpResponse finish(HttpResponse resp, const char* name, bool asset) const;

  HttpResponse login(const HttpRequest& req) const;
  HttpResponse logout(const HttpRequest& req) const;
  HttpResponse page(const Route& route, const std::string& job, const Caller& caller) const;
  HttpResponse metrics() const;
  HttpResponse api_jobs(const HttpRequest& req, const Caller& caller, int version) const;
  HttpResponse api_job(const std::string& id, const Caller& caller, int version) const;
  HttpResponse api_results(const HttpRequest& req, const std::string& id, const Caller& caller) const;
  HttpResponse api_workers(const HttpRequest& req, const Caller& caller) const;
  HttpResponse api_cancel(const HttpRequest& req, const std::string& id, const Caller& caller) const;
  // results.csv, .json, .pgn: the files `c960 results` writes (cluster/results_export.h).
  HttpResponse download(const HttpRequest& req, const std::string& id, const Caller& caller, Handler handler) const;

  Coordinator* coordinator_;
  Store* store_;
  Metrics* metrics_;
  HttpOptions options_;
  std::atomic<bool> ready_{false};
  std::atomic<bool> standby_{false};
  mutable std::mutex standby_mu_;
  std::string leader_;  // while standby (under standby_mu_)
  // With tokens: the sessions, and the token table's generation they were last checked against
  // (a reload's or a new issued credential's: see by_session).
  std::unique_ptr<SessionTable> sessions_;
  mutable std::atomic<uint64_t> sessions_checked_{0};
};

// Helpers, public for tests.
// application/x-www-form-urlencoded (and query strings): '+' is a space, %XX a byte.
std::multimap<std::string, std::string> parse_form(const std::string& body);
// The value of cookie `name` in a Cookie header, or nullopt.
std::optional<std::string> cookie_value(const std::string& header, const std::string& name);
// A job's results as the API's JSON (see docs/operations.md), whole, or in pages.
std::string results_json(const std::string& job_id, const std::vector<v1::ResultChunk>& chunks);
std::shared_ptr<AnswerPages> results_json_pages(const std::string& job_id, std::vector<v1::ResultChunk> chunks);
// Hands out a text made whole a page at a time (held_bytes: what is left of it).
std::shared_ptr<AnswerPages> text_pages(std::string text);
// A paged answer's whole text (tests); false with *error when the pages stopped on an error.
bool join_pages(HttpResponse* resp, absl::Status* error = nullptr);

}  // namespace c960::cluster
