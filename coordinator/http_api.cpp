#include "coordinator/http_api.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <google/protobuf/util/json_util.h>
#include <regex>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/job_json.h"
#include "cluster/log.h"
#include "cluster/results_export.h"
#include "cluster/selfplay_proto.h"
#include "cluster/tls.h"
#include "cluster/u128.h"
#include "coordinator/dashboard_assets.h"
#include "coordinator/validation.h"
#include "core/perft.h"
#include "core/version.h"
#include "report/assets.h"
#include "report/report.h"
#include "selfplay/lines.h"
#include "selfplay/ranking.h"
#include "selfplay/stats.h"

namespace c960::cluster {
namespace {

using Handler = HttpApi::Handler;
using Route = HttpApi::Route;

// The gRPC methods the rows mirror (cluster/auth.h decides who may call them).
constexpr char kListJobsRpc[] = "/c960.v1.JobService/ListJobs";
constexpr char kGetJobRpc[] = "/c960.v1.JobService/GetJob";
constexpr char kResultsRpc[] = "/c960.v1.JobService/GetResults";
constexpr char kWorkersRpc[] = "/c960.v1.JobService/ListWorkers";
constexpr char kCancelRpc[] = "/c960.v1.JobService/CancelJob";
// Logging in is for whoever may see the dashboard; /metrics has cluster-wide figures (every job,
// every worker), for whoever may list the workers.
constexpr const char* kDashboardRpc = kListJobsRpc;
constexpr const char* kMetricsRpc = kWorkersRpc;

// Pages run only the coordinator's own scripts and styles; nothing is framed or fetched from
// elsewhere. Scripts set styles through the CSSOM (element.style), which 'self' allows.
constexpr char kPagePolicy[] =
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "form-action 'self'; frame-ancestors 'none'; base-uri 'none'";
// The login page has no script and one inline style sheet.
constexpr char kLoginPolicy[] =
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; "
    "base-uri 'none'";

HttpResponse text(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.body = std::move(body);
  return r;
}

HttpResponse json(int status, std::string body) {
  HttpResponse r;
  r.status = status;
  r.content_type = "application/json";
  r.body = std::move(body);
  return r;
}

bool is_api(Handler h) {
  return h == Handler::kApiJobs || h == Handler::kApiJob || h == Handler::kApiResults || h == Handler::kApiWorkers ||
         h == Handler::kApiCancel || h == Handler::kResultsCsv || h == Handler::kResultsJson ||
         h == Handler::kResultsPgn;
}
bool is_page(Handler h) { return h == Handler::kDashboard || h == Handler::kJobPage; }

int http_status(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kOk: return 200;
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
    case absl::StatusCode::kFailedPrecondition: return 400;
    case absl::StatusCode::kUnauthenticated: return 401;
    case absl::StatusCode::kPermissionDenied: return 403;
    case absl::StatusCode::kNotFound: return 404;
    case absl::StatusCode::kResourceExhausted: return 429;
    case absl::StatusCode::kUnavailable: return 503;
    default: return 500;
  }
}

// The API's error answer; `status` overrides the usual HTTP status of the code.
HttpResponse api_error(const absl::Status& s, int status = 0) {
  if (status == 0) status = http_status(s.code());
  return json(status, absl::StrCat("{\"error\":{\"code\":", status,
                                   ",\"status\":", json_quote(absl::StatusCodeToString(s.code())),
                                   ",\"message\":", json_quote(s.message()), "}}\n"));
}

std::string proto_json(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(m, &out, o).ok()) return "{}";
  return out + "\n";
}

std::string json_number(double x) {
  if (!std::isfinite(x)) return "null";
  return absl::StrFormat("%.6g", x);
}

// A local path to go to after logging in: "/..." but not "//host" (no open redirect).
std::string safe_next(const std::string& next) {
  if (next.empty() || next[0] != '/' || absl::StartsWith(next, "//") || absl::StrContains(next, "\\")) return "/";
  for (char c : next)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) return "/";
  return next;
}

// Set-Cookie for the session cookie: `id`, or cleared when empty. The attributes "__Host-" needs
// (Secure, Path=/, no Domain) whether or not this is HTTPS: the login exists only with tokens,
// which need TLS.
std::string session_cookie(const std::string& id, int64_t max_age_s) {
  return absl::StrCat(kSessionCookie, "=", id, "; Path=/; Max-Age=", id.empty() ? 0 : max_age_s,
                      "; Secure; HttpOnly; SameSite=Strict");
}

// Set-Cookie that clears the old token cookie (as it was set: Path=/, no Domain).
std::string legacy_cookie_cleared(bool secure) {
  return absl::StrCat(kLegacyLoginCookie, "=; Path=/; Max-Age=0; HttpOnly;", secure ? " Secure;" : "",
                      " SameSite=Strict");
}

// "2 hours", "30 minutes", "45 seconds": a limit for a person to read.
std::string duration_text(int64_t ms) {
  const auto unit = [](int64_t n, const char* name) { return absl::StrCat(n, " ", name, n == 1 ? "" : "s"); };
  if (ms >= 3'600'000 && ms % 3'600'000 == 0) return unit(ms / 3'600'000, "hour");
  if (ms >= 60'000 && ms % 60'000 == 0) return unit(ms / 60'000, "minute");
  return unit(ms / 1000, "second");
}

// The login form; `message` says why it is shown again; `limits` the sessions' lifetimes.
HttpResponse login_page(int status, const std::string& next, const std::string& message, const SessionLimits& limits) {
  HttpResponse r;
  r.status = status;
  r.content_type = "text/html; charset=utf-8";
  r.headers.emplace_back("Content-Security-Policy", kLoginPolicy);
  r.body = absl::StrCat(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><link rel=\"icon\" href=\"data:,\">"
      "<title>c960 coordinator: log in</title><style>"
      "body{font:15px/1.5 system-ui,sans-serif;background:#f4f5f7;color:#1d2330;display:flex;justify-content:center;"
      "padding-top:12vh;margin:0}form{background:#fff;border:1px solid #d5d9e0;border-radius:8px;padding:24px 28px;"
      "width:380px;box-shadow:0 2px 10px rgba(0,0,0,.06)}h1{font-size:19px;margin:0 0 14px}label{display:block;"
      "margin:10px 0 4px;color:#444}input[type=password]{width:100%;box-sizing:border-box;padding:7px 9px;"
      "font:13px ui-monospace,monospace;border:1px solid #b9c0cc;border-radius:4px}button{margin-top:14px;"
      "padding:7px 18px;border:0;border-radius:4px;background:#2b59c3;color:#fff;font-size:14px;cursor:pointer}"
      ".error{color:#b2182b;margin:0 0 8px}.hint{color:#666;font-size:13px;margin-top:14px}</style></head><body>"
      "<form method=\"post\" action=\"/login\"><h1>c960 coordinator</h1>",
      message.empty() ? "" : absl::StrCat("<p class=\"error\" role=\"alert\">", report::html_escape(message), "</p>"),
      "<label for=\"token\">Token (role ", roles_allowed(kDashboardRpc),
      ")</label>"
      "<input type=\"password\" id=\"token\" name=\"token\" autocomplete=\"current-password\" autofocus required>"
      "<input type=\"hidden\" name=\"next\" value=\"",
      report::html_escape(safe_next(next)),
      "\"><button type=\"submit\">Log in</button>"
      "<p class=\"hint\">A token from <code>c960 token new --role read --name NAME</code> (or a submit "
      "token: its own jobs), listed in the "
      "coordinator's <code>--tokens</code> file. The coordinator keeps it; this browser gets a session for "
      "this site only, which ends when you log out, after ",
      duration_text(limits.idle_ms), " unused, or ", duration_text(limits.lifetime_ms),
      " after logging in.</p></form></body></html>\n");
  return r;
}

const std::string_view* asset(const std::string& name, const char** type) {
  struct Asset {
    const char* name;
    const std::string_view* data;
    const char* type;
  };
  static const Asset kAssets[] = {
      {"dashboard.js", &dashboard_assets::kDashboardJs, "text/javascript; charset=utf-8"},
      {"dashboard.css", &dashboard_assets::kDashboardCss, "text/css; charset=utf-8"},
      {"heatmap.js", &report::assets::kHeatmapJs, "text/javascript; charset=utf-8"},
      {"heatmap.css", &report::assets::kHeatmapCss, "text/css; charset=utf-8"},
  };
  for (const Asset& a : kAssets)
    if (name == a.name) {
      *type = a.type;
      return a.data;
    }
  return nullptr;
}

// The pages' shell: the scripts build the content from the JSON API.
std::string shell(const std::string& title, const std::string& page, const std::string& job, const Caller& caller,
                  bool logout) {
  const std::string who =
      caller.authenticated ? absl::StrCat(caller.identity, " (", role_name(caller.role), ")") : std::string();
  return absl::StrCat(
      "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" "
      "content=\"width=device-width, initial-scale=1\"><link rel=\"icon\" href=\"data:,\">"
      "<title>",
      report::html_escape(title),
      "</title><link rel=\"stylesheet\" href=\"/assets/heatmap.css\"><link rel=\"stylesheet\" "
      "href=\"/assets/dashboard.css\"></head>"
      "<body data-page=\"",
      page, "\" data-job=\"", report::html_escape(job), "\" data-role=\"", role_name(caller.role), "\" data-caller=\"",
      report::html_escape(caller.identity), "\" data-workers=\"", role_may_call(caller.role, kWorkersRpc) ? "1" : "0",
      "\"><header class=\"top\"><a class=\"brand\" href=\"/\">c960</a>", "<span class=\"version\">coordinator ",
      report::html_escape(std::string(c960::version())), "</span><nav>",
      role_may_call(caller.role, kWorkersRpc) ? "<a href=\"/\">jobs and workers</a>" : "<a href=\"/\">jobs</a>",
      role_may_call(caller.role, kMetricsRpc) ? "<a href=\"/metrics\">metrics</a>" : "",
      who.empty() ? "" : absl::StrCat("<span class=\"who\">", report::html_escape(who), "</span>"),
      logout ? "<form method=\"post\" action=\"/logout\"><button type=\"submit\">log out</button></form>" : "",
      "</nav></header><main id=\"main\"><p class=\"loading\">loading…</p></main>"
      "<script src=\"/assets/heatmap.js\"></script><script src=\"/assets/dashboard.js\"></script></body></html>\n");
}

int64_t param_int(const HttpRequest& req, const std::string& name, int64_t fallback, absl::Status* error) {
  auto it = req.query.find(name);
  if (it == req.query.end() || it->second.empty()) return fallback;
  int64_t v = 0;
  if (!absl::SimpleAtoi(it->second, &v)) {
    *error = absl::InvalidArgumentError(absl::StrCat(name, ": '", it->second.substr(0, 32), "' is not a number"));
    return fallback;
  }
  return v;
}

bool param_flag(const HttpRequest& req, const std::string& name) {
  auto it = req.query.find(name);
  return it != req.query.end() && (it->second == "1" || it->second == "true" || it->second.empty());
}

// A yes/no parameter, strictly: absent, "", "1" or "true" (yes), "0" or "false" (no).
bool param_bool(const HttpRequest& req, const std::string& name, absl::Status* error) {
  auto it = req.query.find(name);
  if (it == req.query.end()) return false;
  const std::string& v = it->second;
  if (v.empty() || v == "1" || v == "true") return true;
  if (v == "0" || v == "false") return false;
  *error = absl::InvalidArgumentError(absl::StrCat(name, ": '", v.substr(0, 32), "' is not 1, true, 0 or false"));
  return false;
}

// page_size and page_token of a listing, into its request (ListJobsRequest, ListWorkersRequest).
template <typename ListRequest>
absl::Status page_params(const HttpRequest& req, ListRequest* lr) {
  absl::Status error;
  const int64_t size = param_int(req, "page_size", 0, &error);
  if (!error.ok()) return error;
  if (size < 0 || size > kMaxPageSize)
    return absl::InvalidArgumentError(absl::StrCat("page_size: ", size, " is not in 0..", kMaxPageSize));
  lr->set_page_size(int32_t(size));
  if (auto it = req.query.find("page_token"); it != req.query.end()) lr->set_page_token(it->second);
  return absl::OkStatus();
}

}  // namespace

std::string HttpResponse::header(const std::string& name) const {
  for (const auto& [k, v] : headers)
    if (absl::EqualsIgnoreCase(k, name)) return v;
  return "";
}

HttpApi::HttpApi(Coordinator* coordinator, Store* store, Metrics* metrics, HttpOptions options)
    : coordinator_(coordinator), store_(store), metrics_(metrics), options_(std::move(options)) {
  if (options_.tokens) {
    static const SystemClock kSystemClock;
    sessions_ = std::make_unique<SessionTable>(options_.clock ? options_.clock : &kSystemClock, options_.sessions);
    sessions_checked_ = options_.tokens->generation();
  }
  if (!metrics_) return;
  std::vector<std::string> names;
  for (const Route& r : routes()) names.push_back(r.name);
  metrics_->declare_http_handlers(names, kNotFoundName);
}

const std::vector<Route>& HttpApi::routes() {
  // Ids and asset names are one path segment: "[^/]+".
  static const std::vector<Route> kRoutes = {
      {"GET", "/healthz", Handler::kHealthz, "healthz", nullptr},
      {"GET", "/readyz", Handler::kReadyz, "readyz", nullptr},
      {"GET", "/login", Handler::kLoginForm, "login", nullptr},
      {"POST", "/login", Handler::kLogin, "login", nullptr},
      {"POST", "/logout", Handler::kLogout, "logout", nullptr},
      {"GET", "/", Handler::kDashboard, "dashboard", kListJobsRpc},
      {"GET", "/jobs/([^/]+)", Handler::kJobPage, "job_page", kGetJobRpc},
      {"GET", "/assets/([^/]+)", Handler::kAsset, "asset", kListJobsRpc},
      {"GET", "/metrics", Handler::kMetrics, "metrics", kMetricsRpc},
      {"GET", "/api/v1/jobs", Handler::kApiJobs, "api_jobs", kListJobsRpc},
      {"GET", "/api/v1/jobs/([^/]+)", Handler::kApiJob, "api_job", kGetJobRpc},
      {"GET", "/api/v1/jobs/([^/]+)/results", Handler::kApiResults, "api_results", kResultsRpc},
      // The files `c960 results JOB --format csv|json` and `--pgn` write, the same bytes.
      {"GET", "/api/v1/jobs/([^/]+)/results\\.csv", Handler::kResultsCsv, "results_csv", kResultsRpc},
      {"GET", "/api/v1/jobs/([^/]+)/results\\.json", Handler::kResultsJson, "results_json", kResultsRpc},
      {"GET", "/api/v1/jobs/([^/]+)/results\\.pgn", Handler::kResultsPgn, "results_pgn", kResultsRpc},
      {"POST", "/api/v1/jobs/([^/]+)/cancel", Handler::kApiCancel, "api_cancel", kCancelRpc},
      {"GET", "/api/v1/workers", Handler::kApiWorkers, "api_workers", kWorkersRpc},
      // Version 2 of the jobs API: the same clean JSON as `c960 status --format json`.
      {"GET", "/api/v2/jobs", Handler::kApiJobs, "api_jobs", kListJobsRpc, 2},
      {"GET", "/api/v2/jobs/([^/]+)", Handler::kApiJob, "api_job", kGetJobRpc, 2},
  };
  return kRoutes;
}

namespace {

// The rows' patterns compiled once, as httplib compiles them (std::regex, ECMAScript).
const std::vector<std::regex>& route_regexes() {
  static const std::vector<std::regex> kRegexes = [] {
    std::vector<std::regex> out;
    for (const Route& r : HttpApi::routes()) out.emplace_back(r.pattern);
    return out;
  }();
  return kRegexes;
}

// The rows whose path matches, of any method.
std::vector<size_t> rows_for_path(const std::string& path) {
  std::vector<size_t> out;
  const std::vector<std::regex>& res = route_regexes();
  for (size_t i = 0; i < res.size(); ++i)
    if (std::regex_match(path, res[i])) out.push_back(i);
  return out;
}

}  // namespace

HttpApi::Match HttpApi::match(const std::string& method, const std::string& path) {
  const std::string m = method == "HEAD" ? "GET" : method;
  const std::vector<Route>& rows = routes();
  const std::vector<std::regex>& res = route_regexes();
  for (size_t i = 0; i < rows.size(); ++i) {
    std::smatch sm;
    if (m != rows[i].method || !std::regex_match(path, sm, res[i])) continue;
    return {&rows[i], sm.size() > 1 ? sm[1].str() : std::string()};
  }
  return {};
}

void HttpApi::set_standby(bool standby, const std::string& leader) {
  {
    std::lock_guard lock(standby_mu_);
    leader_ = leader;
  }
  standby_ = standby;
}

HttpResponse HttpApi::respond(const HttpRequest& req) const {
  const Match m = match(req.method, req.path);
  if (standby_ && !(m.route && m.route->handler == Handler::kHealthz)) {
    std::string leader;
    {
      std::lock_guard lock(standby_mu_);
      leader = leader_;
    }
    return finish(text(503, absl::StrCat("not ready: this coordinator is a standby; ",
                                         leader.empty() ? "no leader is known yet"
                                                        : absl::StrCat("the leader serves gRPC at ", leader),
                                         "\n")),
                  "standby", false);
  }
  return m.route ? serve(*m.route, m.arg, req) : unrouted(req);
}

HttpResponse HttpApi::handle(const HttpRequest& req) const {
  HttpResponse r = respond(req);
  join_pages(&r);
  return r;
}

HttpResponse HttpApi::finish(HttpResponse resp, const char* name, bool asset) const {
  resp.headers.emplace_back("X-Content-Type-Options", "nosniff");
  // No address of a page here goes to another site; this site's own requests carry their origin.
  resp.headers.emplace_back("Referrer-Policy", "same-origin");
  resp.headers.emplace_back("X-Frame-Options", "DENY");
  resp.headers.emplace_back("Cache-Control", asset && resp.status == 200 ? "no-cache" : "no-store");
  if (metrics_) metrics_->count_http(name, resp.status);
  return resp;
}

namespace {

bool is_loopback_address(absl::string_view a) { return a == "::1" || absl::StartsWith(a, "127."); }

// A host as it is written in Host and Origin: IPv6 addresses in brackets.
std::string host_text(absl::string_view host) {
  return absl::StrContains(host, ':') ? absl::StrCat("[", host, "]") : std::string(host);
}

}  // namespace

std::vector<std::string> HttpApi::own_hosts(const HttpRequest& req) const {
  std::vector<std::string> names;
  const std::string& listen = options_.listen_host;
  if (!listen.empty() && listen != "0.0.0.0" && listen != "::") names.push_back(host_text(listen));
  if (!req.local_address.empty()) names.push_back(host_text(req.local_address));
  if (listen == "localhost" || is_loopback_address(listen) || is_loopback_address(req.local_address))
    names.insert(names.end(), {"localhost", "127.0.0.1", "[::1]"});
  std::vector<std::string> out;
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string& name = names[i];
    if (std::find(names.begin(), names.begin() + i, name) != names.begin() + i) continue;
    out.push_back(absl::StrCat(name, ":", req.local_port));
    if (req.local_port == (options_.tls ? 443 : 80)) out.push_back(name);
  }
  return out;
}

std::optional<HttpResponse> HttpApi::misdirected(const HttpRequest& req) const {
  if (authenticates() || req.host.empty()) return std::nullopt;
  const std::vector<std::string> hosts = own_hosts(req);
  for (const std::string& h : hosts)
    if (absl::EqualsIgnoreCase(req.host, h)) return std::nullopt;
  return text(421, absl::StrCat("Host: '", req.host.substr(0, 200),
                                "' is not this coordinator, which authenticates nobody and answers to ",
                                absl::StrJoin(hosts, ", "), "\n"));
}

std::vector<std::string> HttpApi::own_origins(const HttpRequest& req) const {
  const char* scheme = options_.tls ? "https://" : "http://";
  if (authenticates()) return {absl::StrCat(scheme, req.host)};
  std::vector<std::string> out;
  for (const std::string& h : own_hosts(req)) out.push_back(absl::StrCat(scheme, h));
  return out;
}

HttpResponse HttpApi::serve(const Route& route, const std::string& arg, const HttpRequest& req) const {
  if (route.handler != Handler::kHealthz && route.handler != Handler::kReadyz)
    if (std::optional<HttpResponse> refused = misdirected(req)) return finish(*refused, route.name, false);
  return finish(dispatch(req, route, arg), route.name, route.handler == Handler::kAsset);
}

HttpResponse HttpApi::unrouted(const HttpRequest& req) const {
  if (std::optional<HttpResponse> refused = misdirected(req)) return finish(*refused, kNotFoundName, false);
  std::set<std::string> allow;
  const char* name = kNotFoundName;
  for (size_t i : rows_for_path(req.path)) {
    const Route& r = routes()[i];
    if (std::string(r.method) == "GET") allow.insert({"GET", "HEAD"});
    allow.insert(r.method);
    name = r.name;
  }
  if (allow.empty()) {
    const bool api = absl::StartsWith(req.path, "/api/");
    return finish(api ? api_error(absl::NotFoundError(absl::StrCat("no such path: ", req.path.substr(0, 200))))
                      : text(404, "not found\n"),
                  name, false);
  }
  HttpResponse r = text(405, absl::StrCat("method ", req.method.substr(0, 16), " not allowed here\n"));
  r.headers.emplace_back("Allow", absl::StrJoin(allow, ", "));
  return finish(std::move(r), name, false);
}

absl::StatusOr<Caller> HttpApi::identify(const HttpRequest& req) const {
  // One credential per request, as on the gRPC side.
  if (req.authorization.size() > 1) return absl::UnauthenticatedError("more than one Authorization header");
  const auto by_token = [&](absl::string_view token, absl::string_view what) -> absl::StatusOr<Caller> {
    if (!options_.tokens)
      return absl::UnauthenticatedError(
          "this coordinator takes no tokens (no --tokens): authenticate with a client certificate");
    if (std::optional<Caller> c = options_.tokens->find(token)) return *c;
    return absl::UnauthenticatedError(
        absl::StrCat("unknown token in the ", what, " (revoked, or not in the coordinator's --tokens file)"));
  };
  if (req.authorization.size() == 1) {
    absl::string_view h = req.authorization[0];
    if (h.size() < 7 || !absl::EqualsIgnoreCase(h.substr(0, 7), "bearer "))
      return absl::UnauthenticatedError("the Authorization header is not 'Bearer TOKEN'");
    return by_token(absl::StripAsciiWhitespace(h.substr(7)), "Authorization header");
  }
  // The session cookie names a session or nobody: never a token, whatever it holds. One that
  // names nobody does not hide a client certificate (another service of this host name may have
  // set it).
  const bool certificate = options_.client_certificates && req.client_certificate_pem;
  if (std::optional<std::string> id = cookie_value(req.cookie, kSessionCookie); sessions_ && id && !id->empty()) {
    absl::StatusOr<Caller> who = by_session(*id);
    if (who.ok() || !certificate) return who;
  }
  if (certificate) return caller_from_certificate(*req.client_certificate_pem);
  return absl::UnauthenticatedError(
      options_.tokens ? "no token: log in at /login, or send 'Authorization: Bearer TOKEN'" : "no client certificate");
}

std::optional<HttpResponse> HttpApi::authorize(const HttpRequest& req, const Route& route, Caller* caller) const {
  if (!authenticates()) {
    *caller = Caller::local();
    return std::nullopt;
  }
  // The gRPC side's decision (cluster/auth.h) for the method the row mirrors.
  const absl::StatusOr<Caller> who = identify(req);
  const absl::StatusOr<std::optional<Caller>> decision = cluster::authorize(route.rpc, who);
  if (decision.ok()) {
    *caller = **decision;
    return std::nullopt;
  }
  const int status = who.ok() ? 403 : 401;
  const std::string why =
      who.ok() ? absl::StrCat("'", who->identity, "' has role ", role_name(who->role), ": ", route.method, " ",
                              req.path.substr(0, 200), " (as ", route.rpc, ") needs role ", roles_allowed(route.rpc))
               : std::string(who.status().message());
  HttpResponse r;
  if (is_page(route.handler) && options_.tokens) {
    r = login_page(status, req.path, status == 401 && !cookie_value(req.cookie, kSessionCookie) ? "" : why,
                   options_.sessions);
  } else if (is_api(route.handler)) {
    r = api_error(status == 401 ? absl::UnauthenticatedError(why) : absl::PermissionDeniedError(why));
  } else {
    r = text(status, why + "\n");
  }
  if (status == 401) r.headers.emplace_back("WWW-Authenticate", "Bearer realm=\"c960\"");
  // A cookie that names no session (ended, expired, its token gone, or never made here) is
  // dropped, and so is the old token cookie.
  if (status == 401 && req.authorization.empty() && options_.tokens) {
    if (cookie_value(req.cookie, kSessionCookie)) r.headers.emplace_back("Set-Cookie", session_cookie("", 0));
    if (cookie_value(req.cookie, kLegacyLoginCookie))
      r.headers.emplace_back("Set-Cookie", legacy_cookie_cleared(options_.tls));
  }
  return r;
}

absl::StatusOr<Caller> HttpApi::by_session(const std::string& id) const {
  const TokenTable& tokens = *options_.tokens;
  // After a reload (or a newly issued credential), every session's token is looked up once, so
  // that the sessions of tokens gone are ended even if no browser sends them again.
  if (const uint64_t generation = tokens.generation(); sessions_checked_.exchange(generation) != generation) {
    const size_t ended =
        sessions_->end_unless([&](const std::string& credential) { return tokens.find_hash(credential).has_value(); });
    if (ended)
      log_event(LogLevel::kInfo, "http_sessions_ended",
                absl::StrCat(ended, " dashboard sessions ended: their tokens are no longer accepted"),
                {{"sessions", int64_t(ended)}});
  }
  const std::optional<Session> session = sessions_->resolve(id);
  if (!session)
    return absl::UnauthenticatedError(
        "no such session (logged out, expired, or not made by this coordinator): log in again");
  // The session has the power of its token now, not at the login.
  if (std::optional<Caller> c = tokens.find_hash(session->credential)) return *c;
  sessions_->end_for_credential(session->credential);
  return absl::UnauthenticatedError(
      "the token this session was made with is no longer accepted (revoked, or not in the coordinator's --tokens "
      "file): log in again");
}

void HttpApi::set_cookies(const HttpRequest& req, const std::string& id, HttpResponse* resp) const {
  resp->headers.emplace_back("Set-Cookie", session_cookie(id, options_.sessions.lifetime_ms / 1000));
  if (cookie_value(req.cookie, kLegacyLoginCookie))
    resp->headers.emplace_back("Set-Cookie", legacy_cookie_cleared(options_.tls));
}

HttpResponse HttpApi::dispatch(const HttpRequest& req, const Route& route, const std::string& arg) const {
  switch (route.handler) {
    case Handler::kHealthz: return text(200, "ok\n");
    case Handler::kReadyz: {
      if (!ready_) return text(503, "not ready\n");
      // Degraded mode: the store refuses writes, so no work can be leased or completed here.
      if (const std::string cause = coordinator_->store_degraded(); !cause.empty())
        return text(503, absl::StrCat("not ready: the store refuses writes (", cause, ")\n"));
      return text(200, "ready\n");
    }
    case Handler::kLoginForm: {
      if (!options_.tokens) return text(404, "this coordinator takes no tokens: no login needed\n");
      auto next = req.query.find("next");
      return login_page(200, next == req.query.end() ? "/" : next->second, "", options_.sessions);
    }
    case Handler::kLogin: return login(req);
    case Handler::kLogout: return logout(req);
    default: break;
  }
  // Everything else: the one check, the principal's budget of unsent answers, then the handler.
  Caller caller;
  if (std::optional<HttpResponse> refused = authorize(req, route, &caller)) return *refused;
  const std::string principal = caller.authenticated ? caller.identity : absl::StrCat("address ", req.peer_address);
  if (req.budget) {
    if (std::optional<std::string> why = req.budget->refuse(principal)) {
      HttpResponse r = is_api(route.handler) ? api_error(absl::ResourceExhaustedError(*why)) : text(429, *why + "\n");
      r.headers.emplace_back("Retry-After", "1");
      r.principal = principal;
      return r;
    }
  }
  HttpResponse r = handler(req, route, arg, caller);
  r.principal = principal;
  return r;
}

HttpResponse HttpApi::handler(const HttpRequest& req, const Route& route, const std::string& arg,
                              const Caller& caller) const {
  switch (route.handler) {
    case Handler::kDashboard:
    case Handler::kJobPage: return page(route, arg, caller);
    case Handler::kAsset: {
      const char* type = nullptr;
      const std::string_view* data = asset(arg, &type);
      if (!data) return text(404, "no such asset\n");
      HttpResponse r;
      r.content_type = type;
      r.body = std::string(*data);
      return r;
    }
    case Handler::kMetrics: return metrics();
    case Handler::kApiJobs: return api_jobs(req, caller, route.version);
    case Handler::kApiJob: return api_job(arg, caller, route.version);
    case Handler::kApiResults: return api_results(req, arg, caller);
    case Handler::kApiWorkers: return api_workers(req, caller);
    case Handler::kApiCancel: return api_cancel(req, arg, caller);
    case Handler::kResultsCsv:
    case Handler::kResultsJson:
    case Handler::kResultsPgn: return download(req, arg, caller, route.handler);
    default: return text(500, "no handler\n");
  }
}

namespace {

// A state-changing request that a browser may have been made to send by another site: the
// cookie goes along with it (SameSite=Strict aside). A browser says where a request comes from:
// Sec-Fetch-Site, which a page cannot set, decides where it is sent; a browser without it is
// judged by its Origin (a form posted under a no-referrer policy says "null" there, which is why
// Origin is not asked of a browser that says Sec-Fetch-Site). One naming another site is
// refused. This is the whole check for the login and logout forms, which a plain form posts;
// `origins`: this site's (HttpApi::own_origins); `what` names the action in the error.
absl::Status from_this_site(const HttpRequest& req, const std::vector<std::string>& origins, const char* what) {
  if (!req.fetch_site.empty()) {
    if (req.fetch_site == "same-origin") return absl::OkStatus();
    return absl::PermissionDeniedError(absl::StrCat("Sec-Fetch-Site: '", req.fetch_site.substr(0, 32), "': ", what,
                                                    " from this dashboard's own pages"));
  }
  if (req.origin.empty()) return absl::OkStatus();
  for (const std::string& o : origins)
    if (absl::EqualsIgnoreCase(req.origin, o)) return absl::OkStatus();
  return absl::PermissionDeniedError(absl::StrCat("Origin: '", req.origin.substr(0, 200), "' is not this site (",
                                                  absl::StrJoin(origins, ", ").substr(0, 400), ")"));
}

// A cancel must also say it comes from this site's own page: the header only its fetches add.
// Requests with an Authorization header are not a browser's doing.
absl::Status same_origin(const HttpRequest& req, const std::vector<std::string>& origins) {
  if (!req.authorization.empty()) return absl::OkStatus();
  if (absl::Status s = from_this_site(req, origins, "cancel"); !s.ok()) return s;
  if (req.requested_with != kDashboardRequest)
    return absl::PermissionDeniedError(
        absl::StrCat("X-Requested-With: ",
                     req.requested_with.empty() ? "missing" : absl::StrCat("'", req.requested_with.substr(0, 32), "'"),
                     ": a cancel comes from the dashboard's page (X-Requested-With: ", kDashboardRequest,
                     ") or with an Authorization header"));
  return absl::OkStatus();
}

}  // namespace

HttpResponse HttpApi::login(const HttpRequest& req) const {
  if (!options_.tokens) return text(404, "this coordinator takes no tokens: no login needed\n");
  // Another site's form could log a browser in under the other site's token (login CSRF).
  if (absl::Status s = from_this_site(req, own_origins(req), "log in"); !s.ok())
    return text(403, absl::StrCat(s.message(), "\n"));
  if (!absl::StartsWith(absl::AsciiStrToLower(req.content_type), "application/x-www-form-urlencoded"))
    return text(400, "log in with the form at /login (application/x-www-form-urlencoded)\n");
  const std::multimap<std::string, std::string> form = parse_form(req.body);
  auto field = [&](const char* name) {
    auto it = form.find(name);
    return it == form.end() ? std::string() : it->second;
  };
  const std::string token(absl::StripAsciiWhitespace(field("token"))), next = safe_next(field("next"));
  const SessionLimits& limits = options_.sessions;
  if (token.empty()) return login_page(401, next, "give a token", limits);
  std::optional<Caller> who = valid_token_text(token) ? options_.tokens->find(token) : std::nullopt;
  if (!who) {
    log_event(LogLevel::kWarning, "http_login_refused", "HTTP login with an unknown token", {{"reason", "unknown"}});
    return login_page(401, next, "unknown token (revoked, or not in the coordinator's --tokens file)", limits);
  }
  if (!role_may_call(who->role, kDashboardRpc))
    return login_page(403, next,
                      absl::StrCat("'", who->identity, "' has role ", role_name(who->role),
                                   ": the dashboard needs role ", roles_allowed(kDashboardRpc)),
                      limits);
  // The session the browser had, if any, ends: a login replaces it (and one planted by another
  // site is not kept).
  if (std::optional<std::string> old = cookie_value(req.cookie, kSessionCookie)) sessions_->end(*old);
  // The session remembers the token by its hash only; the token goes no further than here.
  const std::string credential = token_hash(token);
  absl::StatusOr<std::string> id = sessions_->create(credential, who->identity);
  if (id.status().code() == absl::StatusCode::kResourceExhausted) {
    // Sessions of tokens gone since may hold the room: end them and try once more.
    sessions_->end_unless([&](const std::string& c) { return options_.tokens->find_hash(c).has_value(); });
    id = sessions_->create(credential, who->identity);
  }
  if (!id.ok()) {
    log_event(LogLevel::kWarning, "http_login_refused",
              absl::StrCat("HTTP login by ", who->identity, ": ", id.status().message()),
              {{"caller", who->identity}, {"reason", "sessions"}});
    return login_page(id.status().code() == absl::StatusCode::kResourceExhausted ? 503 : 500, next,
                      std::string(id.status().message()), limits);
  }
  log_event(LogLevel::kInfo, "http_login", absl::StrCat("HTTP login by ", who->identity),
            {{"caller", who->identity}, {"role", std::string(role_name(who->role))}});
  HttpResponse r = text(303, "logged in\n");
  r.headers.emplace_back("Location", next);
  set_cookies(req, *id, &r);
  return r;
}

HttpResponse HttpApi::logout(const HttpRequest& req) const {
  if (absl::Status s = from_this_site(req, own_origins(req), "log out"); !s.ok())
    return text(403, absl::StrCat(s.message(), "\n"));
  HttpResponse r = text(303, "logged out\n");
  r.headers.emplace_back("Location", options_.tokens ? "/login" : "/");
  if (!sessions_) return r;
  // The session ends here, not only in this browser: its id, wherever else it was seen, is no
  // credential from now on.
  if (std::optional<std::string> id = cookie_value(req.cookie, kSessionCookie))
    if (std::optional<Session> session = sessions_->resolve(*id); session && sessions_->end(*id))
      log_event(LogLevel::kInfo, "http_logout", absl::StrCat("HTTP logout by ", session->identity),
                {{"caller", session->identity}});
  set_cookies(req, "", &r);
  return r;
}

HttpResponse HttpApi::page(const Route& route, const std::string& job_id, const Caller& caller) const {
  std::string title = "c960 coordinator", page_name = "dashboard";
  if (route.handler == Handler::kJobPage) {
    absl::StatusOr<v1::Job> job = coordinator_->get_job(caller, job_id);
    if (!job.ok()) {
      HttpResponse r = text(http_status(job.status().code()), absl::StrCat(job.status().message(), "\n"));
      return r;
    }
    title = absl::StrCat(job->id(), " · c960 coordinator");
    page_name = "job";
  }
  HttpResponse r;
  r.content_type = "text/html; charset=utf-8";
  r.headers.emplace_back("Content-Security-Policy", kPagePolicy);
  r.body = shell(title, page_name, job_id, caller, options_.tokens != nullptr);
  return r;
}

HttpResponse HttpApi::metrics() const {
  if (!metrics_) return text(404, "no metrics\n");
  HttpResponse r;
  r.content_type = "text/plain; version=0.0.4; charset=utf-8";
  r.body = metrics_->render(coordinator_->metrics(), store_ ? store_->file_sizes() : Store::FileSizes{});
  return r;
}

namespace {

int64_t unix_now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

HttpResponse HttpApi::api_jobs(const HttpRequest& req, const Caller& caller, int version) const {
  v1::ListJobsRequest lr;
  if (absl::Status error = page_params(req, &lr); !error.ok()) return api_error(error);
  absl::StatusOr<v1::ListJobsResponse> resp = coordinator_->list_jobs(caller, lr);
  if (!resp.ok()) return api_error(resp.status());
  if (version == 1) return json(200, proto_json(*resp));
  const std::vector<v1::Job> jobs(resp->jobs().begin(), resp->jobs().end());
  return json(200, absl::StrCat("{\"api_version\": 2, \"jobs\": ", jobs_json(jobs, unix_now_ms()),
                                ", \"next_page_token\": ", json_quote(resp->next_page_token()), "}\n"));
}

HttpResponse HttpApi::api_job(const std::string& id, const Caller& caller, int version) const {
  absl::StatusOr<v1::Job> job = coordinator_->get_job(caller, id);
  if (!job.ok()) return api_error(job.status());
  if (version == 1) return json(200, proto_json(*job));
  return json(200, absl::StrCat("{\"api_version\": 2, \"job\": ", job_json(*job, unix_now_ms()), "}\n"));
}

HttpResponse HttpApi::api_results(const HttpRequest& req, const std::string& id, const Caller& caller) const {
  // Self-play games are never sent here (omit_games): counts per position are what pages and
  // scripts need; `c960 results --pgn` has the games.
  absl::StatusOr<std::vector<v1::ResultChunk>> chunks =
      coordinator_->results(caller, id, param_flag(req, "divide"), true);
  if (!chunks.ok()) return api_error(chunks.status());
  HttpResponse r = json(200, "");
  r.pages = results_json_pages(id, std::move(*chunks));
  return r;
}

namespace {

// Workers asked of the coordinator at a time (a short hold of its lock each) for the listing.
constexpr int kWorkersPerCall = 16;

// A WorkerInfo as protobuf's JSON mapping writes it inside a list (no newline).
std::string worker_json(const v1::WorkerInfo& w) {
  std::string out = proto_json(w);
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// /api/v1/workers a page at a time: protobuf's JSON of the ListWorkersResponse the coordinator
// gives for the whole page_size (without its cut at kMaxListBytes: nothing here is whole), made
// from its listing kWorkersPerCall workers at a time; a page's workers are all this holds.
class WorkerPages final : public AnswerPages {
 public:
  WorkerPages(Coordinator* coordinator, Caller caller, v1::ListWorkersRequest req, int wanted)
      : coordinator_(coordinator), caller_(std::move(caller)), req_(std::move(req)), left_(wanted) {}

  // The next workers, after `req_.page_token()`, into *out; false at the end of the answer.
  bool next(std::string* out, absl::Status* error) override {
    const size_t start = out->size();
    for (;;) {
      req_.set_page_size(std::min(left_, kWorkersPerCall));
      absl::StatusOr<v1::ListWorkersResponse> resp = coordinator_->list_workers(caller_, req_);
      if (!resp.ok()) {
        *error = resp.status();
        return false;
      }
      for (const v1::WorkerInfo& w : resp->workers()) {
        absl::StrAppend(out, first_ ? "" : ",", worker_json(w));
        first_ = false;
      }
      left_ -= resp->workers_size();
      req_.set_page_token(resp->next_page_token());
      if (left_ <= 0 || resp->next_page_token().empty()) {
        absl::StrAppend(out, "],\"next_page_token\":", json_quote(resp->next_page_token()), "}\n");
        return false;
      }
      if (out->size() - start >= kHttpPageBytes) return true;
    }
  }
  size_t held_bytes() const override { return 0; }

 private:
  Coordinator* coordinator_;
  const Caller caller_;
  v1::ListWorkersRequest req_;
  int left_;
  bool first_ = true;
};

}  // namespace

HttpResponse HttpApi::api_workers(const HttpRequest& req, const Caller& caller) const {
  v1::ListWorkersRequest lr;
  lr.set_include_lost(param_flag(req, "include_lost"));
  if (absl::Status error = page_params(req, &lr); !error.ok()) return api_error(error);
  const int wanted = lr.page_size() == 0 ? kDefaultPageSize : lr.page_size();
  auto pages = std::make_shared<WorkerPages>(coordinator_, caller, lr, wanted);
  // The first page here: a refusal (a bad page_token) is the answer's status, not a cut answer.
  HttpResponse r = json(200, "{\"workers\":[");
  absl::Status error;
  if (!pages->next(&r.body, &error)) {
    if (!error.ok()) return api_error(error);
    return r;  // the whole answer
  }
  r.pages = std::move(pages);
  return r;
}

namespace {

// The most a PGN download may hold (the stored games of a job are bounded only by the store).
constexpr size_t kMaxPgnDownloadBytes = size_t(256) << 20;

}  // namespace

HttpResponse HttpApi::api_cancel(const HttpRequest& req, const std::string& id, const Caller& caller) const {
  if (absl::Status s = same_origin(req, own_origins(req)); !s.ok()) return api_error(s);
  absl::StatusOr<v1::Job> job = coordinator_->cancel(caller, id);
  if (!job.ok()) return api_error(job.status());
  return json(200, proto_json(*job));
}

HttpResponse HttpApi::download(const HttpRequest& req, const std::string& id, const Caller& caller,
                               Handler handler) const {
  absl::Status error;
  const bool divide = param_bool(req, "divide", &error), partial = param_bool(req, "partial", &error);
  if (!error.ok()) return api_error(error);
  for (const auto& [k, v] : req.query)
    if (k != "divide" && k != "partial")
      return api_error(
          absl::InvalidArgumentError(absl::StrCat(k.substr(0, 32), ": no such parameter (divide, partial)")));
  // The results, then the job, as `c960 results` reads them: a state no older than the results.
  absl::StatusOr<std::vector<v1::ResultChunk>> chunks = coordinator_->results(caller, id, divide, true);
  if (!chunks.ok()) return api_error(chunks.status());
  absl::StatusOr<v1::Job> job = coordinator_->get_job(caller, id);
  if (!job.ok()) return api_error(job.status());
  // Not finished: 409 (the job's state conflicts with a whole file): ask with partial=1.
  const auto refused = [](const absl::Status& s) {
    return api_error(s, s.code() == absl::StatusCode::kFailedPrecondition ? 409 : 0);
  };
  HttpResponse r;
  std::string extension;
  if (handler == Handler::kResultsPgn) {
    if (!job->spec().has_selfplay())
      return api_error(
          absl::InvalidArgumentError(absl::StrCat("job ", id, " is a perft job: only self-play jobs have games")));
    size_t open = 0, positions = 0;
    selfplay_stats_from_results(*job, *chunks, &open, &positions);
    if (open > 0 && !partial)
      return refused(absl::FailedPreconditionError(
          absl::StrCat("job ", id, " is ", state_name(job->state()), " (", positions - open, " of ", positions,
                       " positions complete): ask with partial=1 for what is done")));
    // Every stored game, as `c960 results --pgn` writes them: each must replay.
    // The answer is built in memory: past kMaxPgnDownloadBytes the tool, which streams them into
    // a file, is the way.
    std::string bad;
    bool too_large = false;
    absl::Status s = coordinator_->results(caller, id, false, false, [&](const v1::ResultChunk& c) {
      for (const v1::SelfPlayGame& g : c.selfplay().game_records()) {
        if (absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g); !rec.ok()) {
          bad = std::string(rec.status().message());
          return false;
        }
        r.body += g.pgn();
        if (r.body.size() > kMaxPgnDownloadBytes) {
          too_large = true;
          return false;
        }
      }
      return true;
    });
    if (!bad.empty()) return api_error(absl::InternalError(absl::StrCat("a stored game does not replay: ", bad)));
    if (too_large) {
      // The answer, not the request, would be too large; no status says that better than 413.
      return api_error(
          absl::ResourceExhaustedError(absl::StrCat("job ", id, ": its games are over ", kMaxPgnDownloadBytes >> 20,
                                                    " MiB as PGN: write them with c960 results ", id, " --pgn FILE")),
          413);
    }
    if (!s.ok()) return api_error(s);
    r.content_type = "application/x-chess-pgn";
    extension = "pgn";
  } else {
    const bool csv = handler == Handler::kResultsCsv;
    absl::StatusOr<std::string> file =
        results_file(*job, *chunks, csv ? ResultsFormat::kCsv : ResultsFormat::kJson, divide, partial);
    if (!file.ok()) return refused(file.status());
    r.body = std::move(*file);
    r.content_type = csv ? "text/csv; charset=utf-8" : "application/json";
    extension = csv ? "csv" : "json";
  }
  // Made whole (the c960 tool's writers), sent a page at a time; counted whole until sent.
  if (r.body.size() > kHttpPageBytes) r.pages = text_pages(std::exchange(r.body, std::string()));
  // Job ids are [A-Za-z0-9._-] (validation.h): nothing to quote in the file name.
  r.headers.emplace_back("Content-Disposition",
                         absl::StrCat("attachment; filename=\"", job->id(), "-results", divide ? "-divide" : "",
                                      partial ? "-partial" : "", ".", extension, "\""));
  return r;
}

namespace {

// A job's results as the API's JSON, a page at a time: perft roots, then self-play positions
// (ranked over all of them first: selfplay/ranking.h), then the totals. Each chunk is let go once
// written.
class ResultsJsonPages final : public AnswerPages {
 public:
  ResultsJsonPages(const std::string& job_id, std::vector<v1::ResultChunk> chunks) : chunks_(std::move(chunks)) {
    selfplay_ = !chunks_.empty() && chunks_[0].has_selfplay();
    head_ = absl::StrCat("{\"job\":", json_quote(job_id), ",\"kind\":\"", selfplay_ ? "selfplay" : "perft",
                         "\",\"positions\":[");
    // Self-play positions, a further chunk of the same position left out (chunks come position by
    // position), and their ranking.
    // Related games count for fewer (selfplay/lines.h), as in `c960 results`.
    std::vector<selfplay::ResultCounts> counts;
    std::vector<selfplay::Lines> lines;
    for (size_t i = 0; i < chunks_.size(); ++i) {
      const v1::ResultChunk& c = chunks_[i];
      held_ += c.ByteSizeLong();
      if (!c.has_selfplay()) continue;
      const v1::SelfPlayPositionResult& p = c.selfplay();
      if (!positions_.empty() && p.position_id() == chunks_[positions_.back()].selfplay().position_id()) continue;
      positions_.push_back(i);
      counts.push_back({p.white_wins(), p.draws(), p.black_wins()});
      lines.push_back(result_lines(p));
    }
    std::vector<const selfplay::Lines*> of;
    of.reserve(lines.size());
    for (const selfplay::Lines& l : lines) of.push_back(&l);
    related_ = selfplay::relatedness(of, counts);
    ranking_ = selfplay::rank_positions(counts, {.effective_games = related_.effective});
    counts_ = std::move(counts);
  }

  bool next(std::string* out, absl::Status*) override {
    const size_t start = out->size();
    if (!head_.empty()) out->append(std::exchange(head_, std::string()));
    for (; perft_ < chunks_.size() && out->size() - start < kHttpPageBytes; ++perft_) {
      if (!chunks_[perft_].has_perft()) continue;
      perft_row(chunks_[perft_].perft(), out);
      release(perft_);
    }
    if (perft_ < chunks_.size()) return true;
    for (; sp_ < positions_.size() && out->size() - start < kHttpPageBytes; ++sp_) {
      selfplay_row(sp_, out);
      release(positions_[sp_]);
    }
    if (sp_ < positions_.size()) return true;
    footer(out);
    chunks_.clear();
    held_ = 0;
    return false;
  }
  size_t held_bytes() const override { return held_; }

 private:
  void release(size_t i) {
    held_ -= std::min(held_, chunks_[i].ByteSizeLong());
    chunks_[i] = v1::ResultChunk();
  }

  void perft_row(const v1::PerftRootResult& r, std::string* out) {
    complete_ &= r.complete();
    absl::StrAppend(out, first_ ? "" : ",", "\n{\"index\":", r.index(), ",\"start_position\":", r.start_position(),
                    ",\"fen\":", json_quote(r.fen()), ",\"depth\":", r.depth(),
                    ",\"complete\":", r.complete() ? "true" : "false", ",\"nodes\":\"",
                    to_string(from_proto(r.nodes())), "\"");
    if (r.divide_size() > 0) {
      out->append(",\"divide\":[");
      for (int k = 0; k < r.divide_size(); ++k)
        absl::StrAppend(out, k ? "," : "", "{\"move\":", json_quote(r.divide(k).move()), ",\"nodes\":\"",
                        to_string(from_proto(r.divide(k).nodes())), "\"}");
      out->append("]");
    }
    out->append("}");
    first_ = false;
  }

  void selfplay_row(size_t i, std::string* out) {
    const auto rank_number = [](int r) { return r ? absl::StrCat(r) : std::string("null"); };
    const v1::SelfPlayPositionResult& p = chunks_[positions_[i]].selfplay();
    complete_ &= p.complete();
    total_.white_wins += counts_[i].white_wins;
    total_.draws += counts_[i].draws;
    total_.black_wins += counts_[i].black_wins;
    const selfplay::Interval s = selfplay::effective_score(counts_[i], related_.effective[i]);
    const selfplay::RankedPosition& r = ranking_.positions[i];
    effective_total_ += related_.effective[i];
    absl::StrAppend(
        out, first_ ? "" : ",", "\n{\"id\":", json_quote(p.position_id()), ",\"start_position\":", p.start_position(),
        ",\"fen\":", json_quote(p.fen()), ",\"games_planned\":", p.games_planned(),
        ",\"complete\":", p.complete() ? "true" : "false", ",\"games\":", p.games(), ",\"white_wins\":", p.white_wins(),
        ",\"draws\":", p.draws(), ",\"black_wins\":", p.black_wins(), ",\"total_plies\":", p.total_plies(),
        ",\"score\":", json_number(s.value), ",\"score_lo\":", json_number(s.lo), ",\"score_hi\":", json_number(s.hi),
        ",\"rank\":", rank_number(r.rank), ",\"shrunk\":", json_number(r.shrunk), ",\"shrunk_lo\":", json_number(r.lo),
        ",\"shrunk_hi\":", json_number(r.hi), ",\"rank_lo\":", rank_number(r.rank_lo),
        ",\"rank_hi\":", rank_number(r.rank_hi),
        ",\"lines\":", related_.lines[i] > 0 ? absl::StrCat(related_.lines[i]) : std::string("null"),
        ",\"effective_games\":", json_number(related_.effective[i]), "}");
    first_ = false;
  }

  void footer(std::string* out) {
    absl::StrAppend(out, "\n],\"complete\":", complete_ ? "true" : "false");
    if (selfplay_) {
      const selfplay::Interval s = selfplay::effective_score(total_, effective_total_);
      absl::StrAppend(out, ",\"total\":{\"games\":", total_.games(),
                      ",\"effective_games\":", json_number(effective_total_), ",\"white_wins\":", total_.white_wins,
                      ",\"draws\":", total_.draws, ",\"black_wins\":", total_.black_wins,
                      ",\"score\":", json_number(s.value), ",\"score_lo\":", json_number(s.lo),
                      ",\"score_hi\":", json_number(s.hi), "}");
      absl::StrAppend(out, ",\"ranking\":{\"min_games\":", ranking_.min_games, ",\"ranked\":", ranking_.ranked(),
                      ",\"most_games\":", ranking_.most_games, ",\"mean\":", json_number(ranking_.mean),
                      ",\"tau\":", json_number(ranking_.tau), ",\"tau_lo\":", json_number(ranking_.tau_lo),
                      ",\"tau_hi\":", json_number(ranking_.tau_hi), "}");
      absl::StrAppend(out, ",\"related_games\":{\"correlation\":", json_number(related_.rho),
                      ",\"correlation_estimated\":", related_.estimated ? "true" : "false",
                      ",\"shared_lines\":", related_.shared_lines,
                      ",\"mostly_one_line\":", related_.mostly_one_line_count(),
                      ",\"note\":", json_quote(related_.note()), "}");
    }
    out->append("}\n");
  }

  std::vector<v1::ResultChunk> chunks_;
  bool selfplay_ = false;
  std::string head_;
  std::vector<size_t> positions_;  // indices in chunks_ of the self-play positions
  selfplay::Relatedness related_;  // of the positions, in their order
  double effective_total_ = 0;
  std::vector<selfplay::ResultCounts> counts_;
  selfplay::Ranking ranking_;
  size_t perft_ = 0, sp_ = 0;  // the next chunk, the next position
  bool complete_ = true, first_ = true;
  selfplay::ResultCounts total_;
  size_t held_ = 0;
};

// A text made whole, handed out a page at a time.
class TextPages final : public AnswerPages {
 public:
  explicit TextPages(std::string text) : text_(std::move(text)) {}
  bool next(std::string* out, absl::Status*) override {
    const size_t n = std::min(kHttpPageBytes, text_.size() - pos_);
    out->append(text_, pos_, n);
    pos_ += n;
    if (pos_ < text_.size()) return true;
    text_.clear();
    text_.shrink_to_fit();
    return false;
  }
  // The text is one allocation: all of it is held until the last page.
  size_t held_bytes() const override { return pos_ < text_.size() ? text_.capacity() : 0; }

 private:
  std::string text_;
  size_t pos_ = 0;
};

}  // namespace

std::shared_ptr<AnswerPages> results_json_pages(const std::string& job_id, std::vector<v1::ResultChunk> chunks) {
  return std::make_shared<ResultsJsonPages>(job_id, std::move(chunks));
}

std::shared_ptr<AnswerPages> text_pages(std::string text) { return std::make_shared<TextPages>(std::move(text)); }

bool join_pages(HttpResponse* resp, absl::Status* error) {
  if (!resp->pages) return true;
  absl::Status e;
  while (resp->pages->next(&resp->body, &e)) {}
  resp->pages.reset();
  if (error) *error = e;
  return e.ok();
}

std::string results_json(const std::string& job_id, const std::vector<v1::ResultChunk>& chunks) {
  HttpResponse r;
  r.pages = results_json_pages(job_id, chunks);
  join_pages(&r);
  return r.body;
}

std::multimap<std::string, std::string> parse_form(const std::string& body) {
  const auto decode = [](absl::string_view s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] == '+') {
        out += ' ';
      } else if (s[i] == '%' && i + 2 < s.size() && absl::ascii_isxdigit(s[i + 1]) && absl::ascii_isxdigit(s[i + 2])) {
        const auto hex = [](char c) { return absl::ascii_isdigit(c) ? c - '0' : absl::ascii_tolower(c) - 'a' + 10; };
        out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
        i += 2;
      } else {
        out += s[i];
      }
    }
    return out;
  };
  std::multimap<std::string, std::string> out;
  for (absl::string_view pair : absl::StrSplit(body, '&', absl::SkipEmpty())) {
    const size_t eq = pair.find('=');
    out.emplace(decode(pair.substr(0, eq)), eq == absl::string_view::npos ? "" : decode(pair.substr(eq + 1)));
  }
  return out;
}

std::optional<std::string> cookie_value(const std::string& header, const std::string& name) {
  for (absl::string_view part : absl::StrSplit(header, ';')) {
    part = absl::StripAsciiWhitespace(part);
    const size_t eq = part.find('=');
    if (eq != absl::string_view::npos && part.substr(0, eq) == name) return std::string(part.substr(eq + 1));
  }
  return std::nullopt;
}

}  // namespace c960::cluster
