// The coordinator's HTTP side without sockets (coordinator/http_api.h): the routing table, who
// may see what (health open, the rest as the gRPC method each row mirrors allows), cancelling
// (own jobs, same origin only), the JSON API against the coordinator's own answers, /metrics
// moving with a job, and the log line formats.
#include "coordinator/http_api.h"

#include <algorithm>
#include <google/protobuf/util/json_util.h>
#include <gtest/gtest.h>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster/log.h"
#include "coordinator/clock.h"
#include "coordinator/metrics.h"
#include "core/version.h"
#include "report/report.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

constexpr char kReadToken[] = "c960_read-token-for-tests-aaaaaaaaaaaaaaaaaaaaaaaa";
constexpr char kSubmitToken[] = "c960_submit-token-for-tests-bbbbbbbbbbbbbbbbbbbbbbbb";
constexpr char kOtherSubmitToken[] = "c960_submit-token-for-tests-cccccccccccccccccccccccc";
constexpr char kWorkerToken[] = "c960_worker-token-for-tests-dddddddddddddddddddddddd";
constexpr char kEnrollToken[] = "c960_enroll-token-for-tests-eeeeeeeeeeeeeeeeeeeeeeee";
constexpr char kAdminToken[] = "c960_admin-token-for-tests-ffffffffffffffffffffffffff";

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto s = Store::open(":memory:");
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, CoordinatorOptions{30'000});
    ASSERT_TRUE(coordinator_->load().ok());
    metrics_ = std::make_unique<Metrics>();
    store_->set_commit_observer([m = metrics_.get()](double seconds) { m->observe_commit(seconds); });
  }

  // An API without tokens (loopback) or with a token of each role (two submitters, bob and carol).
  // The sessions run on the fixture's clock; `limits` theirs.
  std::unique_ptr<HttpApi> api(bool tokens, SessionLimits limits = {}) {
    HttpOptions o;
    o.listen_host = "127.0.0.1";
    o.clock = &clock_;
    o.sessions = limits;
    if (tokens) {
      tokens_ = std::make_shared<TokenTable>(tokens_file(kEveryToken));
      o.tokens = tokens_;
    }
    auto a = std::make_unique<HttpApi>(coordinator_.get(), store_.get(), metrics_.get(), o);
    a->set_ready(true);
    return a;
  }

  // The tokens file api(true) loads, less the lines `leave_out` names.
  static constexpr char kEveryToken[] = "";
  static TokenSet tokens_file(const std::string& leave_out) {
    std::string text;
    for (const auto& [line, token] :
         std::vector<std::pair<std::string, std::string>>{{"read alice", kReadToken},
                                                          {"submit bob", kSubmitToken},
                                                          {"submit carol", kOtherSubmitToken},
                                                          {"worker w", kWorkerToken},
                                                          {"enroll join", kEnrollToken},
                                                          {"admin root", kAdminToken}}) {
      if (!leave_out.empty() && absl::StrContains(line, leave_out)) continue;
      absl::StrAppend(&text, line, " ", token_hash(token), line == "enroll join" ? " uses=2" : "", "\n");
    }
    auto set = TokenSet::parse(text, "tokens");
    EXPECT_TRUE(set.ok()) << set.status();
    return std::move(*set);
  }

  static HttpRequest get(const std::string& path, const std::string& token = "") {
    // As the server passes it: the path, and the query decoded apart.
    HttpRequest r;
    const size_t q = path.find('?');
    r.path = path.substr(0, q);
    if (q != std::string::npos) r.query = parse_form(path.substr(q + 1));
    if (!token.empty()) r.authorization.push_back(absl::StrCat("Bearer ", token));
    return r;
  }

  // POST /login as the form sends it, from this site.
  static HttpRequest login_form(const std::string& token, const std::string& cookie = "") {
    HttpRequest r;
    r.method = "POST";
    r.path = "/login";
    r.content_type = "application/x-www-form-urlencoded";
    r.body = absl::StrCat("token=", token);
    r.cookie = cookie;
    return r;
  }
  // The session cookie an answer sets ("" when none, or when it clears it).
  static std::string session_of(const HttpResponse& r) {
    const std::string prefix = absl::StrCat(kSessionCookie, "=");
    for (const auto& [k, v] : r.headers)
      if (k == "Set-Cookie" && absl::StartsWith(v, prefix)) return v.substr(prefix.size(), v.find(';') - prefix.size());
    return "";
  }
  // Logs in with `token`: the session's id ("" when refused).
  static std::string log_in(const HttpApi& a, const std::string& token) {
    return session_of(a.handle(login_form(token)));
  }
  static std::string session_cookie(const std::string& id) { return absl::StrCat(kSessionCookie, "=", id); }
  // A GET as a browser sends it after logging in: the session cookie.
  static HttpRequest get_with_session(const std::string& path, const std::string& id) {
    HttpRequest r = get(path);
    r.cookie = session_cookie(id);
    return r;
  }

  // A POST as the dashboard's cancel button sends it: the session cookie of a login with
  // `token`, same origin.
  static HttpRequest cancel_from_page(const HttpApi& a, const std::string& job, const std::string& token) {
    HttpRequest r;
    r.method = "POST";
    r.path = absl::StrCat("/api/v1/jobs/", job, "/cancel");
    r.cookie = session_cookie(log_in(a, token));
    r.host = "127.0.0.1:8080";
    r.local_address = "127.0.0.1";  // the connection's end, as the server passes it
    r.local_port = 8080;
    r.origin = "http://127.0.0.1:8080";
    r.fetch_site = "same-origin";
    r.requested_with = kDashboardRequest;
    return r;
  }

  static Caller submitter(const std::string& name) {
    Caller c;
    c.identity = name;
    c.role = Role::kSubmit;
    c.authenticated = true;
    return c;
  }

  // A perft job on `sps`, by default of depth 2 with one unit per position.
  std::string submit(const std::string& sps, v1::VerifyMode verify = v1::VERIFY_MODE_OFF, int depth = 2, int split = 0,
                     const Caller& by = Caller::local()) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(verify);
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(split);
    auto job = coordinator_->submit(by, req);
    EXPECT_TRUE(job.ok()) << job.status();
    return job.ok() ? job->id() : "";
  }

  std::string hello(const std::string& name) {
    v1::HelloRequest hello;
    hello.set_name(name);
    hello.set_threads(1);
    hello.add_capabilities("perft");
    hello.set_protocol_version(kProtocolVersion);
    auto h = coordinator_->hello(Caller::local(), hello);
    EXPECT_TRUE(h.ok()) << h.status();
    return h.ok() ? h->worker_id() : "";
  }

  // Worker `id` leases what it is given and completes it; `lie` is added to its node counts.
  int work(const std::string& id, int64_t lie = 0) {
    int done = 0;
    for (;;) {
      v1::AcquireWorkRequest ar;
      ar.set_worker_id(id);
      ar.set_max_units(8);
      auto leases = coordinator_->acquire(Caller::local(), ar);
      EXPECT_TRUE(leases.ok()) << leases.status();
      if (!leases.ok() || leases->leases().empty()) return done;
      for (const v1::Lease& l : leases->leases()) {
        v1::CompleteUnitRequest cr;
        cr.set_worker_id(id);
        cr.set_unit_id(l.unit_id());
        cr.set_attempt(l.attempt());
        auto result = compute_unit(l.spec(), nullptr);
        EXPECT_TRUE(result.ok()) << result.status();
        v1::PerftUnitResult* p = result->mutable_perft();
        p->mutable_nodes()->set_lo(p->nodes().lo() + uint64_t(lie));
        if (p->divide_size()) p->mutable_divide(0)->mutable_nodes()->set_lo(p->divide(0).nodes().lo() + uint64_t(lie));
        *cr.mutable_result() = *result;
        EXPECT_TRUE(coordinator_->complete(Caller::local(), cr).ok());
        ++done;
      }
    }
  }

  // The job run to the end by one worker, without verification.
  std::string run_perft_job(const std::string& sps) {
    const std::string job = submit(sps);
    work(hello("w1"));
    return job;
  }

  // The value of one sample line of the exposition ("name{labels} value"), or -1.
  static double sample(const std::string& text, const std::string& series) {
    for (absl::string_view line : absl::StrSplit(text, '\n')) {
      if (!absl::StartsWith(line, series + " ")) continue;
      double v = 0;
      if (absl::SimpleAtod(line.substr(series.size() + 1), &v)) return v;
    }
    return -1;
  }

  FakeClock clock_;
  std::shared_ptr<TokenTable> tokens_;  // the last api(true)'s, for reloads
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Metrics> metrics_;
};

TEST_F(HttpApiTest, RoutesAreOneTable) {
  const auto handler = [](const std::string& method, const std::string& path) {
    const HttpApi::Match m = HttpApi::match(method, path);
    return m.route ? std::string(m.route->name) : std::string("none");
  };
  EXPECT_EQ(handler("GET", "/"), "dashboard");
  EXPECT_EQ(handler("HEAD", "/"), "dashboard");
  EXPECT_EQ(handler("GET", "/metrics"), "metrics");
  EXPECT_EQ(HttpApi::match("GET", "/jobs/job-3").arg, "job-3");
  EXPECT_EQ(handler("GET", "/api/v1/jobs/job-3"), "api_job");
  const HttpApi::Match results = HttpApi::match("GET", "/api/v1/jobs/job-3/results");
  ASSERT_NE(results.route, nullptr);
  EXPECT_EQ(results.route->handler, HttpApi::Handler::kApiResults);
  EXPECT_EQ(results.arg, "job-3");
  EXPECT_EQ(handler("POST", "/api/v1/jobs/job-3/cancel"), "api_cancel");
  EXPECT_EQ(handler("GET", "/api/v1/jobs/job-3/cancel"), "none");
  EXPECT_EQ(handler("POST", "/api/v1/jobs/job-3"), "none");
  EXPECT_EQ(handler("GET", "/api/v1/jobs/a/b"), "none");
  EXPECT_EQ(handler("GET", "/assets/../x"), "none");
  EXPECT_EQ(handler("GET", "/jobs/"), "none");
  EXPECT_EQ(handler("GET", "/jobs/a\nb/c"), "none");
  // Every row that is not open mirrors a gRPC method the permission table knows by name (an
  // unknown method would be admin only).
  for (const HttpApi::Route& r : HttpApi::routes()) {
    if (!r.rpc) continue;
    EXPECT_TRUE(absl::StartsWith(r.rpc, "/c960.v1.JobService/")) << r.pattern;
    EXPECT_NE(permission_for(r.rpc).roles, 0u) << r.pattern << " " << r.rpc;
  }
}

// Each row is authorized as the gRPC method it mirrors: for every role, the HTTP answer is a 403
// exactly when cluster/auth.h says the role may not call that method, and the 403 names the roles
// that may.
TEST_F(HttpApiTest, EveryRouteTakesItsGrpcMethodsPermission) {
  auto a = api(true);
  const std::string job = submit("518", v1::VERIFY_MODE_OFF, 2, 0, submitter("bob"));
  const std::pair<const char*, Role> tokens[] = {{kReadToken, Role::kRead},
                                                 {kSubmitToken, Role::kSubmit},
                                                 {kWorkerToken, Role::kWorker},
                                                 {kEnrollToken, Role::kEnroll},
                                                 {kAdminToken, Role::kAdmin}};
  int refused = 0;
  for (const HttpApi::Route& r : HttpApi::routes()) {
    if (!r.rpc) continue;
    std::string path = r.pattern;
    if (const size_t dot = path.find("\\."); dot != std::string::npos) path.erase(dot, 1);
    const size_t group = path.find("([^/]+)");
    if (group != std::string::npos)
      path.replace(group, 7, r.handler == HttpApi::Handler::kAsset ? "dashboard.css" : job);
    for (const auto& [token, role] : tokens) {
      HttpRequest req = get(path, token);
      req.method = r.method;
      const HttpResponse resp = a->handle(req);
      if (role_may_call(role, r.rpc)) {
        EXPECT_NE(resp.status, 403) << r.method << " " << path << " as " << role_name(role) << ": " << resp.body;
        EXPECT_NE(resp.status, 401) << r.method << " " << path << " as " << role_name(role) << ": " << resp.body;
      } else {
        ++refused;
        EXPECT_EQ(resp.status, 403) << r.method << " " << path << " as " << role_name(role);
        EXPECT_TRUE(absl::StrContains(resp.body, absl::StrCat("needs role ", roles_allowed(r.rpc))))
            << r.method << " " << path << ": " << resp.body;
      }
    }
  }
  EXPECT_GT(refused, 0);
}

TEST_F(HttpApiTest, HealthIsOpenAndTheRestNeedsARoleThatMayCallItsMethod) {
  auto a = api(true);
  EXPECT_EQ(a->handle(get("/healthz")).status, 200);
  EXPECT_EQ(a->handle(get("/readyz")).status, 200);
  a->set_ready(false);
  EXPECT_EQ(a->handle(get("/readyz")).status, 503);
  for (const char* path : {"/metrics", "/api/v1/jobs", "/api/v1/workers", "/assets/dashboard.js"}) {
    const HttpResponse none = a->handle(get(path));
    EXPECT_EQ(none.status, 401) << path;
    EXPECT_EQ(none.header("WWW-Authenticate"), "Bearer realm=\"c960\"") << path;
    EXPECT_EQ(a->handle(get(path, "c960_unknown")).status, 401) << path;
    EXPECT_EQ(a->handle(get(path, kReadToken)).status, 200) << path;
    EXPECT_EQ(a->handle(get(path, kWorkerToken)).status, 403) << path;
  }
  // A submitter lists (its own) jobs and loads the pages' assets; the workers and the
  // cluster-wide metrics are not its business.
  EXPECT_EQ(a->handle(get("/api/v1/jobs", kSubmitToken)).status, 200);
  EXPECT_EQ(a->handle(get("/assets/dashboard.js", kSubmitToken)).status, 200);
  const HttpResponse workers = a->handle(get("/api/v1/workers", kSubmitToken));
  EXPECT_EQ(workers.status, 403);
  EXPECT_TRUE(absl::StrContains(workers.body, "needs role read or admin")) << workers.body;
  EXPECT_EQ(a->handle(get("/metrics", kSubmitToken)).status, 403);
  const HttpResponse worker = a->handle(get("/api/v1/jobs", kWorkerToken));
  EXPECT_TRUE(absl::StrContains(worker.body, "'w' has role worker")) << worker.body;
  EXPECT_TRUE(absl::StrContains(worker.body, "needs role submit, read or admin")) << worker.body;
  // A page without credentials shows the login form; with a session's cookie it is served.
  const HttpResponse page = a->handle(get("/"));
  EXPECT_EQ(page.status, 401);
  EXPECT_TRUE(absl::StrContains(page.body, "action=\"/login\"")) << page.body;
  HttpRequest cookie = get("/");
  cookie.cookie = absl::StrCat("other=1; ", session_cookie(log_in(*a, kReadToken)));
  EXPECT_EQ(a->handle(cookie).status, 200);
  // Two Authorization headers are refused, as on the gRPC side.
  HttpRequest two = get("/metrics", kReadToken);
  two.authorization.push_back(absl::StrCat("Bearer ", kReadToken));
  EXPECT_EQ(a->handle(two).status, 401);
  HttpRequest basic = get("/metrics");
  basic.authorization.push_back("Basic YTpi");
  EXPECT_EQ(a->handle(basic).status, 401);
}

// A submit token logs in to the dashboard and sees and cancels its own jobs only; others' are
// NOT_FOUND, as on the gRPC side.
TEST_F(HttpApiTest, ASubmitterSeesAndCancelsItsOwnJobsOnly) {
  auto a = api(true);
  const std::string mine = submit("518", v1::VERIFY_MODE_OFF, 2, 0, submitter("bob"));
  const std::string theirs = submit("0", v1::VERIFY_MODE_OFF, 2, 0, submitter("carol"));
  const HttpResponse list = a->handle(get("/api/v1/jobs", kSubmitToken));
  ASSERT_EQ(list.status, 200) << list.body;
  EXPECT_TRUE(absl::StrContains(list.body, absl::StrCat("\"id\":\"", mine, "\""))) << list.body;
  EXPECT_FALSE(absl::StrContains(list.body, absl::StrCat("\"id\":\"", theirs, "\""))) << list.body;
  EXPECT_EQ(a->handle(get(absl::StrCat("/jobs/", mine), kSubmitToken)).status, 200);
  EXPECT_EQ(a->handle(get(absl::StrCat("/jobs/", theirs), kSubmitToken)).status, 404);
  EXPECT_EQ(a->handle(get(absl::StrCat("/api/v1/jobs/", theirs, "/results"), kSubmitToken)).status, 404);
  // The page tells its script who looks, so that it offers cancel to the owner.
  const HttpResponse page = a->handle(get(absl::StrCat("/jobs/", mine), kSubmitToken));
  EXPECT_TRUE(absl::StrContains(page.body, "data-role=\"submit\" data-caller=\"bob\" data-workers=\"0\"")) << page.body;
  EXPECT_FALSE(absl::StrContains(page.body, "href=\"/metrics\"")) << page.body;

  const HttpResponse other = a->handle(cancel_from_page(*a, theirs, kSubmitToken));
  EXPECT_EQ(other.status, 404) << other.body;
  const HttpResponse read = a->handle(cancel_from_page(*a, mine, kReadToken));
  EXPECT_EQ(read.status, 403) << read.body;
  EXPECT_TRUE(absl::StrContains(read.body, "needs role submit or admin")) << read.body;
  auto state = [&](const std::string& id) {
    auto job = coordinator_->get_job(Caller::local(), id);
    return job.ok() ? job->state() : v1::JOB_STATE_UNSPECIFIED;
  };
  EXPECT_EQ(state(mine), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(state(theirs), v1::JOB_STATE_RUNNING);
  const HttpResponse cancelled = a->handle(cancel_from_page(*a, mine, kSubmitToken));
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_TRUE(absl::StrContains(cancelled.body, "\"state\":\"JOB_STATE_CANCELLED\"")) << cancelled.body;
  EXPECT_EQ(state(mine), v1::JOB_STATE_CANCELLED);
  EXPECT_EQ(state(theirs), v1::JOB_STATE_RUNNING);
  // An admin cancels anyone's; a GET does not cancel.
  EXPECT_EQ(a->handle(get(absl::StrCat("/api/v1/jobs/", theirs, "/cancel"), kAdminToken)).status, 405);
  EXPECT_EQ(a->handle(cancel_from_page(*a, theirs, kAdminToken)).status, 200);
  EXPECT_EQ(state(theirs), v1::JOB_STATE_CANCELLED);
}

// The cancel button's POST carries the session cookie, which a page of another site could make a
// browser send: it must say it comes from this site (CSRF).
TEST_F(HttpApiTest, CancelFromAnotherSiteIsRefused) {
  auto a = api(true);
  const std::string job = submit("518", v1::VERIFY_MODE_OFF, 2, 0, submitter("bob"));
  HttpRequest cross = cancel_from_page(*a, job, kSubmitToken);
  cross.fetch_site = "cross-site";
  HttpResponse r = a->handle(cross);
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(absl::StrContains(r.body, "Sec-Fetch-Site: 'cross-site'")) << r.body;
  HttpRequest origin = cancel_from_page(*a, job, kSubmitToken);
  origin.fetch_site.clear();  // an older browser
  origin.origin = "https://evil.example";
  r = a->handle(origin);
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(absl::StrContains(r.body, "Origin: 'https://evil.example' is not this site")) << r.body;
  HttpRequest form = cancel_from_page(*a, job, kSubmitToken);  // a plain form post: no such header
  form.requested_with.clear();
  r = a->handle(form);
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(absl::StrContains(r.body, "X-Requested-With: missing")) << r.body;
  // Nothing was cancelled; the page's own request does it, and so does a bearer token (no
  // browser adds one by itself).
  EXPECT_EQ(coordinator_->get_job(Caller::local(), job)->state(), v1::JOB_STATE_RUNNING);
  HttpRequest bearer = get(absl::StrCat("/api/v1/jobs/", job, "/cancel"), kSubmitToken);
  bearer.method = "POST";
  EXPECT_EQ(a->handle(bearer).status, 200);
  EXPECT_EQ(coordinator_->get_job(Caller::local(), job)->state(), v1::JOB_STATE_CANCELLED);
  // Without tokens (loopback) the rule is the same: any site could post to localhost.
  auto local = api(false);
  const std::string job2 = submit("518");
  HttpRequest bare = cancel_from_page(*local, job2, kSubmitToken);
  bare.cookie.clear();
  bare.requested_with.clear();
  EXPECT_EQ(local->handle(bare).status, 403);
  bare.requested_with = kDashboardRequest;
  EXPECT_EQ(local->handle(bare).status, 200);
}

// Issue 34: without authentication, only requests naming this coordinator are served (421
// else): a page of another site whose name resolves here (DNS rebinding) names its own site in
// Host and Origin, which agreed with each other. The same-site check takes this coordinator's
// names, not the Host's.
TEST_F(HttpApiTest, WithoutAuthenticationAnotherHostIsMisdirected) {
  auto local = api(false);
  const auto from = [](const std::string& method, const std::string& path, const std::string& host,
                       const std::string& origin) {
    HttpRequest r = get(path);
    r.method = method;
    r.host = host;
    r.origin = origin;
    r.requested_with = kDashboardRequest;
    r.local_address = "127.0.0.1";
    r.local_port = 7961;
    return r;
  };
  const std::string job = submit("518");
  for (const HttpRequest& r :
       {from("GET", "/api/v1/jobs", "evil.test:7961", ""), from("GET", "/", "evil.test:7961", ""),
        from("POST", "/logout", "evil.test:7961", "http://evil.test:7961"),
        from("POST", absl::StrCat("/api/v1/jobs/", job, "/cancel"), "evil.test:7961", "http://evil.test:7961"),
        from("GET", "/nowhere", "evil.test:7961", ""), from("GET", "/api/v1/jobs", "127.0.0.1:7962", ""),
        from("GET", "/api/v1/jobs", "127.0.0.1", "")}) {
    const HttpResponse resp = local->handle(r);
    EXPECT_EQ(resp.status, 421) << r.method << " " << r.path << " Host: " << r.host;
    EXPECT_TRUE(absl::StrContains(resp.body, "127.0.0.1:7961, localhost:7961, [::1]:7961")) << resp.body;
  }
  EXPECT_EQ(coordinator_->get_job(Caller::local(), job)->state(), v1::JOB_STATE_RUNNING);
  for (const std::string host : {"127.0.0.1:7961", "localhost:7961", "[::1]:7961", ""})
    EXPECT_EQ(local->handle(from("GET", "/api/v1/jobs", host, "")).status, 200) << host;
  EXPECT_EQ(local->handle(from("GET", "/healthz", "evil.test:7961", "")).status, 200);
  EXPECT_EQ(local->handle(from("GET", "/readyz", "evil.test:7961", "")).status, 200);
  // Origin: one of this coordinator's names, whichever the Host is.
  EXPECT_EQ(local->handle(from("POST", "/logout", "127.0.0.1:7961", "http://localhost:7961")).status, 303);
  EXPECT_EQ(local->handle(from("POST", "/logout", "127.0.0.1:7961", "http://evil.test:7961")).status, 403);
  EXPECT_EQ(local->handle(from("POST", "/logout", "", "http://evil.test:7961")).status, 403);
  // Listening on all addresses: the address the connection came in on names it.
  HttpOptions o;
  o.listen_host = "0.0.0.0";
  HttpApi any(coordinator_.get(), store_.get(), metrics_.get(), o);
  HttpRequest lan = from("GET", "/api/v1/jobs", "192.0.2.7:7961", "");
  lan.local_address = "192.0.2.7";
  EXPECT_EQ(any.handle(lan).status, 200);
  lan.host = "localhost:7961";  // not a loopback connection
  EXPECT_EQ(any.handle(lan).status, 421);
  // With authentication the Host is not checked (a reverse proxy's name, say).
  EXPECT_EQ(api(true)->handle(from("GET", "/api/v1/jobs", "evil.test:7961", "")).status, 401);
}

TEST_F(HttpApiTest, LoginSetsAStrictCookieAndRedirectsLocallyOnly) {
  auto a = api(true);
  HttpRequest post;
  post.method = "POST";
  post.path = "/login";
  post.content_type = "application/x-www-form-urlencoded";
  post.body = absl::StrCat("token=", kReadToken, "&next=%2F%2Fevil.example%2F");
  const HttpResponse r = a->handle(post);
  EXPECT_EQ(r.status, 303);
  EXPECT_EQ(r.header("Location"), "/");
  // Issue 34: the cookie holds a session's id, never the token, and is this host's only
  // (__Host-: Secure, Path=/, no Domain), out of scripts' reach and never sent by another site.
  const std::string set_cookie = r.header("Set-Cookie");
  EXPECT_TRUE(absl::StartsWith(set_cookie, "__Host-c960_session=")) << set_cookie;
  EXPECT_EQ(set_cookie.substr(set_cookie.find(';')), "; Path=/; Max-Age=43200; Secure; HttpOnly; SameSite=Strict");
  const std::string id = session_of(r);
  EXPECT_EQ(id.size(), kSessionIdLength) << id;
  EXPECT_EQ(id.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"),
            std::string::npos);
  for (const auto& [k, v] : r.headers) EXPECT_FALSE(absl::StrContains(v, kReadToken)) << k << ": " << v;
  EXPECT_FALSE(absl::StrContains(r.body, kReadToken)) << r.body;
  EXPECT_FALSE(absl::StrContains(id, token_hash(kReadToken).substr(7, 16)));
  // Each login is a session of its own.
  EXPECT_NE(log_in(*a, kReadToken), id);
  post.body = "token=c960_nobody&next=/jobs/job-1";
  EXPECT_EQ(a->handle(post).status, 401);
  // A submit token may log in (its own jobs); a worker's or a join token may not, and the page
  // says which roles may.
  post.body = absl::StrCat("token=", kSubmitToken);
  EXPECT_EQ(a->handle(post).status, 303);
  for (const char* token : {kWorkerToken, kEnrollToken}) {
    post.body = absl::StrCat("token=", token);
    const HttpResponse refused = a->handle(post);
    EXPECT_EQ(refused.status, 403);
    EXPECT_TRUE(absl::StrContains(refused.body, "the dashboard needs role submit, read or admin")) << refused.body;
  }
}

// Issue 34: a session acts as its token: the same role's routes, the same caller.
TEST_F(HttpApiTest, ASessionAuthorisesAsItsToken) {
  auto a = api(true);
  const std::string reader = log_in(*a, kReadToken), submit = log_in(*a, kSubmitToken);
  ASSERT_FALSE(reader.empty());
  ASSERT_FALSE(submit.empty());
  for (const char* path : {"/", "/metrics", "/api/v1/jobs", "/api/v1/workers"})
    EXPECT_EQ(a->handle(get_with_session(path, reader)).status, 200) << path;
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", submit)).status, 200);
  const HttpResponse workers = a->handle(get_with_session("/api/v1/workers", submit));
  EXPECT_EQ(workers.status, 403);
  EXPECT_TRUE(absl::StrContains(workers.body, "'bob' has role submit")) << workers.body;
  EXPECT_TRUE(absl::StrContains(a->handle(get_with_session("/", reader)).body, "data-caller=\"alice\""));
  // A bearer token, where a request has one, is the credential, not the cookie.
  HttpRequest both = get("/api/v1/workers", kReadToken);
  both.cookie = session_cookie(submit);
  EXPECT_EQ(a->handle(both).status, 200);
}

// Issue 34: logging out ends the session in the coordinator, not only in the browser: the same
// cookie, sent again (another service of this host name saw it, say), is refused.
TEST_F(HttpApiTest, LogoutEndsTheSessionInTheCoordinator) {
  auto a = api(true);
  const std::string id = log_in(*a, kReadToken), other = log_in(*a, kReadToken);
  ASSERT_EQ(a->handle(get_with_session("/api/v1/jobs", id)).status, 200);
  HttpRequest out;
  out.method = "POST";
  out.path = "/logout";
  out.cookie = session_cookie(id);
  const HttpResponse r = a->handle(out);
  EXPECT_EQ(r.status, 303);
  EXPECT_EQ(r.header("Location"), "/login");
  EXPECT_EQ(r.header("Set-Cookie"), "__Host-c960_session=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Strict");
  const HttpResponse again = a->handle(get_with_session("/api/v1/jobs", id));
  EXPECT_EQ(again.status, 401);
  EXPECT_TRUE(absl::StrContains(again.body, "no such session")) << again.body;
  // The refusal drops the dead cookie; the page asks for a login.
  EXPECT_EQ(again.header("Set-Cookie"), "__Host-c960_session=; Path=/; Max-Age=0; Secure; HttpOnly; SameSite=Strict");
  const HttpResponse page = a->handle(get_with_session("/", id));
  EXPECT_EQ(page.status, 401);
  EXPECT_TRUE(absl::StrContains(page.body, "action=\"/login\"")) << page.body;
  // The token's other session (another browser) goes on.
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", other)).status, 200);
  // A login from a browser that still has a session ends that one.
  const std::string next = session_of(a->handle(login_form(kReadToken, session_cookie(other))));
  ASSERT_FALSE(next.empty());
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", other)).status, 401);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", next)).status, 200);
}

// Issue 34: a session has the power its token has now. A reload of the tokens file without the
// token ends its sessions at once (they do not come back with the token); a reload that changes
// the token's role changes the session's.
TEST_F(HttpApiTest, ASessionEndsWithItsToken) {
  auto a = api(true);
  const std::string alice = log_in(*a, kReadToken), bob = log_in(*a, kSubmitToken), root = log_in(*a, kAdminToken);
  ASSERT_EQ(a->handle(get_with_session("/api/v1/jobs", alice)).status, 200);
  tokens_->replace(tokens_file("read alice"));  // SIGHUP with alice's line gone
  const HttpResponse gone = a->handle(get_with_session("/api/v1/jobs", alice));
  EXPECT_EQ(gone.status, 401);
  EXPECT_TRUE(absl::StrContains(gone.body, "log in again")) << gone.body;
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", bob)).status, 200);
  tokens_->replace(tokens_file(kEveryToken));  // the line back: the session stays ended
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", alice)).status, 401);
  // bob's sessions are ended by the reload that drops him, though no request of theirs came
  // since: the next request of anyone's checks every session's token.
  tokens_->replace(tokens_file("submit bob"));
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", root)).status, 200);
  tokens_->replace(tokens_file(kEveryToken));
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", bob)).status, 401);
  // root's token demoted to a worker's: its session is refused what a worker is refused.
  auto demoted = TokenSet::parse(absl::StrCat("worker root ", token_hash(kAdminToken), "\n"), "tokens");
  ASSERT_TRUE(demoted.ok()) << demoted.status();
  tokens_->replace(std::move(*demoted));
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", root)).status, 403);
}

// Issue 34: a worker credential issued by Enroll and then revoked (a `revoke` line, SIGHUP) is
// no longer found by its hash, which is how a session finds its token; and such credentials
// (role worker) cannot log in to begin with.
TEST_F(HttpApiTest, ARevokedIssuedCredentialNamesNobody) {
  auto a = api(true);
  const std::string issued = "c960_issued-worker-credential-gggggggggggggggggggggg";
  tokens_->add_issued(token_hash(issued), "join:1", "");
  ASSERT_TRUE(tokens_->find_hash(token_hash(issued)).has_value());
  EXPECT_EQ(a->handle(login_form(issued)).status, 403);
  auto set = TokenSet::parse(absl::StrCat("read alice ", token_hash(kReadToken), "\nrevoke join:1\n"), "tokens");
  ASSERT_TRUE(set.ok()) << set.status();
  tokens_->replace(std::move(*set));
  EXPECT_FALSE(tokens_->find_hash(token_hash(issued)).has_value());
  EXPECT_FALSE(tokens_->find(issued).has_value());
}

// Issue 34: the cookie names a session this coordinator made, or nobody. A token put in it
// (another service of this host name planting its own, login fixation), any other text, a
// session of another coordinator, and the old token cookie are refused, never read as tokens.
TEST_F(HttpApiTest, ACookieThisCoordinatorDidNotMakeIsRefused) {
  auto a = api(true);
  auto elsewhere = api(true);
  const std::string foreign = log_in(*elsewhere, kReadToken);
  for (const std::string& value : {std::string(kReadToken), std::string(kAdminToken), std::string(43, 'A'), foreign,
                                   token_hash(kReadToken), std::string("x")}) {
    const HttpResponse r = a->handle(get_with_session("/api/v1/jobs", value));
    EXPECT_EQ(r.status, 401) << value;
    EXPECT_TRUE(absl::StrContains(r.body, "no such session")) << r.body;
    EXPECT_EQ(a->handle(get_with_session("/", value)).status, 401) << value;
  }
  HttpRequest legacy = get("/api/v1/jobs");
  legacy.cookie = absl::StrCat(kLegacyLoginCookie, "=", kReadToken);
  const HttpResponse old = a->handle(legacy);
  EXPECT_EQ(old.status, 401);
  // ... and the browser is told to forget it.
  EXPECT_EQ(old.header("Set-Cookie"), "c960_token=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict");
  legacy.path = "/";
  EXPECT_EQ(a->handle(legacy).status, 401);
  // A login clears it too.
  EXPECT_TRUE(absl::StrContains(
      absl::StrJoin(a->handle(login_form(kReadToken, legacy.cookie)).headers, "\n", absl::PairFormatter(": ")),
      "Set-Cookie: c960_token=; Path=/; Max-Age=0"));
}

// Issue 34: a session ends after SessionLimits::idle_ms without a request, and lifetime_ms after
// its login however busy (the fixture's clock; the cookie lives as long as the longest).
TEST_F(HttpApiTest, SessionsExpireIdleAndAtTheirLifetime) {
  SessionLimits limits;
  limits.idle_ms = 60'000;
  limits.lifetime_ms = 150'000;
  auto a = api(true, limits);
  const std::string busy = log_in(*a, kReadToken), idle = log_in(*a, kReadToken);
  clock_.advance_ms(59'999);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", busy)).status, 200);
  clock_.advance_ms(1);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", idle)).status, 401);  // 60 s unused
  clock_.advance_ms(59'998);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", busy)).status, 200);  // used 59.999 s ago
  clock_.advance_ms(30'001);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", busy)).status, 200);  // 149.999 s since the login
  clock_.advance_ms(1);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", busy)).status, 401);  // 150 s since the login
  EXPECT_TRUE(absl::StrContains(a->handle(login_form(kReadToken)).header("Set-Cookie"), "; Max-Age=150;"));
}

// Issue 34: a token holds per_credential sessions at most (its next login ends its oldest); the
// table holds `total` (a login past it is refused, 503, until one ends; sessions of tokens since
// removed make room).
TEST_F(HttpApiTest, SessionsAreBoundedPerTokenAndInAll) {
  SessionLimits limits;
  limits.per_credential = 2;
  limits.total = 3;
  auto a = api(true, limits);
  const std::string a1 = log_in(*a, kReadToken), a2 = log_in(*a, kReadToken), a3 = log_in(*a, kReadToken);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", a1)).status, 401);  // the oldest made room
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", a2)).status, 200);
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", a3)).status, 200);
  const std::string b1 = log_in(*a, kSubmitToken);
  ASSERT_FALSE(b1.empty());
  const HttpResponse full = a->handle(login_form(kAdminToken));
  EXPECT_EQ(full.status, 503);
  EXPECT_TRUE(absl::StrContains(full.body, "3 dashboard sessions, its most (3)")) << full.body;
  EXPECT_EQ(session_of(full), "");
  // The refusal ends nobody's session. A token at its own bound still logs in: its oldest makes
  // room; one below it does not.
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", b1)).status, 200);
  const std::string a4 = log_in(*a, kReadToken);
  EXPECT_FALSE(a4.empty());
  EXPECT_EQ(a->handle(get_with_session("/api/v1/jobs", a2)).status, 401);
  EXPECT_EQ(a->handle(login_form(kSubmitToken)).status, 503);
  // A logout makes room.
  HttpRequest out;
  out.method = "POST";
  out.path = "/logout";
  out.cookie = session_cookie(a3);
  EXPECT_EQ(a->handle(out).status, 303);
  EXPECT_FALSE(log_in(*a, kAdminToken).empty());
  EXPECT_EQ(a->handle(login_form(kOtherSubmitToken)).status, 503);
  // So does a token taken out of the tokens file (its sessions end at the login).
  tokens_->replace(tokens_file("read alice"));
  EXPECT_FALSE(log_in(*a, kOtherSubmitToken).empty());
}

// The login and logout forms are plain form posts, which another site's page could make a
// browser send: logging it in under the other site's token, or out. A browser says where the
// post comes from; one from elsewhere is refused, one from this site's form (or no browser) is not.
TEST_F(HttpApiTest, LoginAndLogoutFromAnotherSiteAreRefused) {
  auto a = api(true);
  auto form = [](const std::string& path, const std::string& body) {
    HttpRequest r;
    r.method = "POST";
    r.path = path;
    r.content_type = "application/x-www-form-urlencoded";
    r.body = body;
    r.host = "127.0.0.1:8080";
    r.origin = "http://127.0.0.1:8080";
    r.fetch_site = "same-origin";
    return r;
  };
  const std::string token = absl::StrCat("token=", kReadToken);
  EXPECT_EQ(a->handle(form("/login", token)).status, 303);
  EXPECT_EQ(a->handle(form("/logout", "")).status, 303);
  HttpRequest cross = form("/login", token);
  cross.fetch_site = "cross-site";
  HttpResponse r = a->handle(cross);
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(absl::StrContains(r.body, "Sec-Fetch-Site: 'cross-site': log in from")) << r.body;
  EXPECT_EQ(r.header("Set-Cookie"), "");
  HttpRequest elsewhere = form("/logout", "");
  elsewhere.fetch_site.clear();  // an older browser says only its Origin
  elsewhere.origin = "https://evil.example";
  r = a->handle(elsewhere);
  EXPECT_EQ(r.status, 403);
  EXPECT_TRUE(absl::StrContains(r.body, "Origin: 'https://evil.example' is not this site")) << r.body;
  EXPECT_EQ(r.header("Set-Cookie"), "");
  HttpRequest same_site = form("/logout", "");
  same_site.fetch_site = "same-site";  // another port or subdomain is another origin
  EXPECT_EQ(a->handle(same_site).status, 403);
  HttpRequest null_origin = form("/login", token);  // Chromium's form post under a no-referrer policy
  null_origin.origin = "null";
  EXPECT_EQ(a->handle(null_origin).status, 303);
  null_origin.fetch_site.clear();  // without Sec-Fetch-Site, "null" is not this site
  EXPECT_EQ(a->handle(null_origin).status, 403);
  HttpRequest curl = form("/login", token);  // not a browser: says nothing of where it comes from
  curl.origin.clear();
  curl.fetch_site.clear();
  EXPECT_EQ(a->handle(curl).status, 303);
}

TEST_F(HttpApiTest, WithoutTokensEveryoneIsALocalAdmin) {
  auto a = api(false);
  EXPECT_EQ(a->handle(get("/api/v1/jobs")).status, 200);
  EXPECT_EQ(a->handle(get("/login")).status, 404);
  HttpRequest post = get("/api/v1/jobs");
  post.method = "POST";
  EXPECT_EQ(a->handle(post).status, 405);
  EXPECT_EQ(a->handle(get("/nowhere")).status, 404);
  EXPECT_EQ(a->handle(get("/api/v1/jobs/job-999")).status, 404);
  EXPECT_EQ(a->handle(get("/api/v1/jobs?page_size=x")).status, 400);
}

TEST_F(HttpApiTest, PagesLoadOnlyTheirOwnAssets) {
  auto a = api(false);
  const HttpResponse page = a->handle(get("/"));
  ASSERT_EQ(page.status, 200);
  EXPECT_TRUE(absl::StrContains(page.header("Content-Security-Policy"), "default-src 'none'"));
  for (const char* asset : {"/assets/heatmap.js", "/assets/dashboard.js", "/assets/dashboard.css"}) {
    EXPECT_TRUE(absl::StrContains(page.body, asset)) << asset;
    const HttpResponse r = a->handle(get(asset));
    EXPECT_EQ(r.status, 200) << asset;
    EXPECT_GT(r.body.size(), 100u) << asset;
  }
  EXPECT_FALSE(absl::StrContains(page.body, "http://"));
  EXPECT_FALSE(absl::StrContains(page.body, "https://"));
  EXPECT_EQ(a->handle(get("/assets/nothing.js")).status, 404);
  // A job page for a job that does not exist is a 404, not an empty page.
  EXPECT_EQ(a->handle(get("/jobs/job-7")).status, 404);
}

TEST_F(HttpApiTest, JsonApiMirrorsTheCoordinator) {
  auto a = api(false);
  const std::string id = run_perft_job("0,518");
  const HttpResponse jobs = a->handle(get("/api/v1/jobs"));
  ASSERT_EQ(jobs.status, 200);
  EXPECT_EQ(jobs.content_type, "application/json");
  EXPECT_TRUE(absl::StrContains(jobs.body, absl::StrCat("\"id\":\"", id, "\""))) << jobs.body;
  const HttpResponse job = a->handle(get(absl::StrCat("/api/v1/jobs/", id)));
  EXPECT_TRUE(absl::StrContains(job.body, "\"state\":\"JOB_STATE_SUCCEEDED\"")) << job.body;
  const HttpResponse results = a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results?divide=1")));
  ASSERT_EQ(results.status, 200);
  // perft(2) of every Chess960 start position with 20 first moves is 400; SP 518 is the
  // standard position.
  EXPECT_TRUE(absl::StrContains(results.body, "\"start_position\":518")) << results.body;
  EXPECT_TRUE(absl::StrContains(results.body, "\"nodes\":\"400\"")) << results.body;
  EXPECT_TRUE(absl::StrContains(results.body, "\"divide\":[")) << results.body;
  EXPECT_TRUE(absl::StrContains(results.body, "\"complete\":true")) << results.body;
  const HttpResponse workers = a->handle(get("/api/v1/workers"));
  EXPECT_TRUE(absl::StrContains(workers.body, "\"name\":\"w1\"")) << workers.body;
}

// The workers listing is paged (HttpResponse::pages: made a few workers at a time) and still the
// bytes of protobuf's JSON of the coordinator's ListWorkersResponse for the same page_size, its
// next_page_token included; a job's results JSON is paged too, and the same whole.
TEST_F(HttpApiTest, PagedAnswersAreTheWholeAnswersBytes) {
  auto a = api(false);
  for (int i = 0; i < 300; ++i) {
    v1::HelloRequest h;
    h.set_name(absl::StrCat("w", 1000 + i));
    h.set_threads(1 + i % 3);
    h.add_capabilities("perft");
    h.set_protocol_version(kProtocolVersion);
    for (int e = 0; e < 60; ++e) h.add_engines(absl::StrCat("engine-", e));
    ASSERT_TRUE(coordinator_->hello(Caller::local(), h).ok());
  }
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  o.always_print_primitive_fields = true;
  for (int size : {0, 1, 17, 250, 1000}) {
    HttpRequest req = get(absl::StrCat("/api/v1/workers?page_size=", size));
    v1::ListWorkersRequest lr;
    lr.set_page_size(size);
    auto list = coordinator_->list_workers(Caller::local(), lr);
    ASSERT_TRUE(list.ok()) << list.status();
    std::string want;
    ASSERT_TRUE(google::protobuf::util::MessageToJsonString(*list, &want, o).ok());
    HttpResponse paged = a->respond(req);
    ASSERT_EQ(paged.status, 200);
    EXPECT_EQ(paged.pages != nullptr, size == 0 || size > 17) << size;  // answers over a page only
    ASSERT_TRUE(join_pages(&paged));
    EXPECT_EQ(paged.body, want + "\n") << size;
  }
  // A bad page_token is the answer's status, not a cut answer.
  EXPECT_EQ(a->respond(get("/api/v1/workers?page_token=%01")).status, 400);
  const std::string id = run_perft_job("0,518,959");
  auto chunks = coordinator_->results(Caller::local(), id, true, true);
  ASSERT_TRUE(chunks.ok());
  HttpResponse results = a->respond(get(absl::StrCat("/api/v1/jobs/", id, "/results?divide=1")));
  ASSERT_NE(results.pages, nullptr);
  EXPECT_GT(results.pages->held_bytes(), 0u);
  ASSERT_TRUE(join_pages(&results));
  EXPECT_EQ(results.body, results_json(id, *chunks));
  EXPECT_TRUE(absl::EndsWith(results.body, "\n],\"complete\":true}\n")) << results.body;
}

// The downloads are the files `c960 results` writes (cluster/results_export.h): CSV with the
// header of `c960 perft --table`, JSON with the job's metadata; a job with positions outstanding
// only with partial=1 (409 otherwise); the games only for self-play.
TEST_F(HttpApiTest, ResultsDownloadAsTheToolWritesThem) {
  auto a = api(false);
  const std::string id = run_perft_job("518");
  const HttpResponse csv = a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.csv")));
  ASSERT_EQ(csv.status, 200) << csv.body;
  EXPECT_EQ(csv.content_type, "text/csv; charset=utf-8");
  EXPECT_EQ(csv.body, "sp,fen,depth,nodes\n518,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1,2,400\n");
  EXPECT_EQ(csv.header("Content-Disposition"), absl::StrCat("attachment; filename=\"", id, "-results.csv\""));
  const HttpResponse divide = a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.csv?divide=1")));
  ASSERT_EQ(divide.status, 200) << divide.body;
  EXPECT_TRUE(absl::StartsWith(divide.body, "sp,fen,depth,move,nodes\n")) << divide.body;
  EXPECT_EQ(std::count(divide.body.begin(), divide.body.end(), '\n'), 21) << divide.body;  // 20 first moves
  const HttpResponse json = a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.json")));
  ASSERT_EQ(json.status, 200) << json.body;
  EXPECT_TRUE(absl::StartsWith(json.body, absl::StrCat("{\"metadata\": {\"version\": \"", std::string(c960::version()),
                                                       "\", \"job\": \"", id, "\", \"state\": \"SUCCEEDED\", ")))
      << json.body;
  EXPECT_TRUE(absl::StrContains(json.body,
                                "\"verify\": \"off\", \"worker_1\": \"w1: c960 ?; CPU unknown\", \"depth\": 2, "
                                "\"split_depth\": 0, \"positions\": 1, "
                                "\"start_positions\": \"518\"},\n\"positions\": [\n  {\"sp\": 518, "))
      << json.body;
  EXPECT_TRUE(absl::StrContains(json.body, "\"depth\": 2, \"nodes\": 400}\n]}\n")) << json.body;
  const HttpResponse pgn = a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.pgn")));
  EXPECT_EQ(pgn.status, 400);
  EXPECT_TRUE(absl::StrContains(pgn.body, "only self-play jobs have games")) << pgn.body;
  EXPECT_EQ(a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.csv?divide=yes"))).status, 400);
  EXPECT_EQ(a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.csv?format=x"))).status, 400);
  EXPECT_EQ(a->handle(get("/api/v1/jobs/job-99/results.csv")).status, 404);
  EXPECT_EQ(a->handle(get(absl::StrCat("/api/v1/jobs/", id, "/results.txt"))).status, 404);
  // A running job: refused as `c960 results` refuses it, unless partial.
  const std::string running = submit("0,1");
  const HttpResponse refused = a->handle(get(absl::StrCat("/api/v1/jobs/", running, "/results.csv")));
  EXPECT_EQ(refused.status, 409);
  EXPECT_TRUE(absl::StrContains(refused.body, "0 of 2 positions complete")) << refused.body;
  const HttpResponse partial = a->handle(get(absl::StrCat("/api/v1/jobs/", running, "/results.csv?partial=1")));
  ASSERT_EQ(partial.status, 200) << partial.body;
  EXPECT_TRUE(absl::StartsWith(partial.body, "sp,fen,depth,nodes,complete\n0,")) << partial.body;
  EXPECT_TRUE(absl::StrContains(partial.body, ",0,false\n")) << partial.body;
}

// Version 2 of the jobs API: the JSON of `c960 status --format json` (cluster/job_json.h), with
// its version; the same roles as version 1.
TEST_F(HttpApiTest, JobsApiVersion2IsCleanJson) {
  EXPECT_EQ(HttpApi::match("GET", "/api/v2/jobs").route->version, 2);
  EXPECT_EQ(HttpApi::match("GET", "/api/v2/jobs/job-3").route->handler, HttpApi::Handler::kApiJob);
  EXPECT_EQ(HttpApi::match("GET", "/api/v2/jobs/job-3").route->version, 2);
  EXPECT_EQ(HttpApi::match("GET", "/api/v1/jobs/job-3").route->version, 1);
  EXPECT_EQ(HttpApi::match("GET", "/api/v2/jobs/job-3/results").route, nullptr);
  EXPECT_EQ(HttpApi::match("GET", "/api/v2/workers").route, nullptr);
  auto a = api(false);
  const std::string id = run_perft_job("0,518");
  const HttpResponse jobs = a->handle(get("/api/v2/jobs"));
  ASSERT_EQ(jobs.status, 200);
  EXPECT_EQ(jobs.content_type, "application/json");
  EXPECT_TRUE(absl::StartsWith(jobs.body, "{\"api_version\": 2, \"jobs\": [\n  {\"id\": ")) << jobs.body;
  const HttpResponse job = a->handle(get(absl::StrCat("/api/v2/jobs/", id)));
  ASSERT_EQ(job.status, 200);
  for (const std::string& want :
       {absl::StrCat("{\"api_version\": 2, \"job\": {\"id\": \"", id, "\", \"kind\": \"perft\", \"depth\": 2, "),
        std::string("\"state\": \"SUCCEEDED\", \"fraction_done\": 1.000000, "),
        std::string("\"nodes_done\": \"800\", ")})
    EXPECT_TRUE(absl::StrContains(job.body, want)) << want << "\n" << job.body;
  for (const char* raw : {"JOB_STATE_", "VERIFY_MODE_", "\"hi\":", "\"lo\":"})
    EXPECT_FALSE(absl::StrContains(job.body + jobs.body, raw)) << raw;
  EXPECT_EQ(a->handle(get("/api/v2/jobs/job-999")).status, 404);
  EXPECT_EQ(a->handle(get("/api/v2/jobs?page_size=x")).status, 400);
  // With tokens: as ListJobs, as for version 1.
  auto secured = api(true);
  EXPECT_EQ(secured->handle(get("/api/v2/jobs", kReadToken)).status, 200);
  EXPECT_EQ(secured->handle(get("/api/v2/jobs", kSubmitToken)).status, 200);
  EXPECT_EQ(secured->handle(get("/api/v2/jobs", kWorkerToken)).status, 403);
  EXPECT_EQ(secured->handle(get("/api/v2/jobs")).status, 401);
}

TEST_F(HttpApiTest, MetricsMoveWithAJob) {
  auto a = api(false);
  const std::string before = a->handle(get("/metrics")).body;
  EXPECT_EQ(sample(before, "c960_jobs{kind=\"perft\",state=\"succeeded\"}"), 0) << before;
  EXPECT_EQ(sample(before, "c960_perft_nodes_total"), 0);
  run_perft_job("518");
  metrics_->observe_rpc("/c960.v1.JobService/GetJob", 0, 0.002);
  metrics_->observe_rpc("/evil/Unbounded", 5, 0.002);
  const HttpResponse r = a->handle(get("/metrics"));
  ASSERT_EQ(r.status, 200);
  EXPECT_TRUE(absl::StartsWith(r.content_type, "text/plain; version=0.0.4"));
  const std::string& m = r.body;
  EXPECT_EQ(sample(m, "c960_jobs{kind=\"perft\",state=\"succeeded\"}"), 1) << m;
  EXPECT_EQ(sample(m, "c960_jobs_submitted_total"), 1);
  EXPECT_EQ(sample(m, "c960_perft_nodes_total"), 400);
  EXPECT_EQ(sample(m, "c960_unit_completions_total{outcome=\"accepted\"}"), 1);
  EXPECT_EQ(sample(m, "c960_workers{trust=\"new\",alive=\"true\"}") +
                sample(m, "c960_workers{trust=\"trusted\",alive=\"true\"}"),
            1);
  EXPECT_EQ(sample(m, "c960_rpc_duration_seconds_count{code=\"OK\",method=\"/c960.v1.JobService/GetJob\"}"), 1) << m;
  // A method the coordinator does not serve is "other": callers cannot add series.
  EXPECT_FALSE(absl::StrContains(m, "/evil/Unbounded"));
  EXPECT_EQ(sample(m, "c960_rpc_duration_seconds_count{code=\"NOT_FOUND\",method=\"other\"}"), 1) << m;
  // The submit and the completion committed the store.
  EXPECT_GE(sample(m, "c960_store_commit_duration_seconds_count"), 2) << m;
  EXPECT_TRUE(absl::StrContains(m, "# TYPE c960_unit_requeues_total counter"));
  EXPECT_TRUE(absl::StrContains(m, "# TYPE c960_store_size_bytes gauge"));
  // The request to /metrics before this one was counted.
  EXPECT_GE(sample(m, "c960_http_requests_total{code=\"200\",handler=\"metrics\"}"), 1) << m;
  // The kinds are the registered ones, each with every state from the start.
  EXPECT_EQ(sample(m, "c960_jobs{kind=\"selfplay\",state=\"running\"}"), 0) << m;
}

// The request counter's handler label takes the routing table's names and "not_found" only: a
// caller cannot add series.
TEST_F(HttpApiTest, HttpRequestsAreCountedByTheTablesNames) {
  auto a = api(false);
  a->handle(get("/api/v1/jobs"));
  a->handle(get("/nowhere/x1"));
  a->handle(get("/nowhere/x2"));
  HttpRequest put = get("/api/v1/jobs");
  put.method = "PUT";
  EXPECT_EQ(a->handle(put).status, 405);
  metrics_->count_http("made_up", 200);
  const std::string m = a->handle(get("/metrics")).body;
  EXPECT_EQ(sample(m, "c960_http_requests_total{code=\"200\",handler=\"api_jobs\"}"), 1) << m;
  EXPECT_EQ(sample(m, "c960_http_requests_total{code=\"404\",handler=\"not_found\"}"), 2) << m;
  EXPECT_EQ(sample(m, "c960_http_requests_total{code=\"405\",handler=\"api_jobs\"}"), 1) << m;
  EXPECT_EQ(sample(m, "c960_http_requests_total{code=\"200\",handler=\"not_found\"}"), 1) << m;
  EXPECT_FALSE(absl::StrContains(m, "made_up")) << m;
  EXPECT_FALSE(absl::StrContains(m, "nowhere")) << m;
}

// Replicas and disagreements as the coordinator sees them: a unit whose two workers sent
// different results is "disagreeing" until a third decides; then it is settled on two votes. The
// units are split below the root, where a wrong count is not impossible on its face.
TEST_F(HttpApiTest, MetricsCountDisagreementsAndReplicas) {
  auto a = api(false);
  submit("518", v1::VERIFY_MODE_ALL, 5, 1);
  const int units = work(hello("honest"));
  ASSERT_EQ(units, 20);  // one per first move of the standard position
  EXPECT_EQ(work(hello("liar"), 1), units);
  std::string m = a->handle(get("/metrics")).body;
  EXPECT_EQ(sample(m, "c960_units_disagreeing"), units) << m;
  EXPECT_EQ(sample(m, "c960_units{state=\"verifying\"}"), units) << m;
  EXPECT_EQ(sample(m, "c960_unit_disagreements_total"), units) << m;
  EXPECT_EQ(sample(m, "c960_units_replicated_total"), 0) << m;
  EXPECT_EQ(work(hello("judge")), units);
  m = a->handle(get("/metrics")).body;
  EXPECT_EQ(sample(m, "c960_units_disagreeing"), 0) << m;
  EXPECT_EQ(sample(m, "c960_units_replicated_total"), units) << m;
  EXPECT_EQ(sample(m, "c960_jobs{kind=\"perft\",state=\"succeeded\"}"), 1) << m;
  EXPECT_EQ(sample(m, "c960_worker_quarantines_total"), 1) << m;
  EXPECT_EQ(sample(m, "c960_workers{trust=\"quarantined\",alive=\"true\"}"), 1) << m;
}

TEST(HttpHelpers, FormCookieAndEscape) {
  const auto form = parse_form("a=1+2&b=%2Fx%zz&c");
  EXPECT_EQ(form.find("a")->second, "1 2");
  EXPECT_EQ(form.find("b")->second, "/x%zz");
  EXPECT_EQ(form.find("c")->second, "");
  EXPECT_EQ(cookie_value("x=1; c960_token=abc", "c960_token"), "abc");
  EXPECT_EQ(cookie_value("x=1", "c960_token"), std::nullopt);
  EXPECT_EQ(report::html_escape("<a href=\"x\">'&"), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;");
}

TEST(LogFormat, TextAndJsonLines) {
  const std::string text =
      format_log_line(LogFormat::kText, "2026-11-30T10:55:01.123Z", LogLevel::kInfo, "c960-coordinator",
                      "job_succeeded", "job job-3 succeeded", {{"job", "job-3"}});
  EXPECT_EQ(text, "2026-11-30T10:55:01.123Z INFO c960-coordinator: job job-3 succeeded");
  const std::string json =
      format_log_line(LogFormat::kJson, "2026-11-30T10:55:01.123Z", LogLevel::kWarning, "c960-coordinator",
                      "worker_lost", "worker \"w\" lost\n", {{"worker", "w\x01"}, {"silent_s", 31}, {"level", "x"}});
  EXPECT_EQ(json,
            "{\"time\":\"2026-11-30T10:55:01.123Z\",\"level\":\"WARNING\",\"program\":\"c960-coordinator\","
            "\"event\":\"worker_lost\",\"message\":\"worker \\\"w\\\" lost\\n\",\"worker\":\"w\\u0001\","
            "\"silent_s\":31,\"_level\":\"x\"}");
  // Bytes that are not UTF-8 become U+FFFD; valid UTF-8 passes.
  EXPECT_EQ(json_quote("\xff\xc3\xa9"), "\"\\ufffd\xc3\xa9\"");
  EXPECT_EQ(parse_log_format("json"), LogFormat::kJson);
  EXPECT_EQ(parse_log_format("JSON"), std::nullopt);
}

// Issue 20: the dashboard listed positions at 6 games, 1.000 [0.557, 1.000], as leaders. The
// results carry each position's shrunk score and rank interval, null below kMinGamesToRank games.
TEST(HttpApiResults, SelfPlayPositionsCarryTheirShrunkScoreAndRank) {
  std::vector<v1::ResultChunk> chunks;
  const int64_t wdl[][3] = {{6, 0, 0}, {30, 10, 0}, {20, 10, 10}, {10, 10, 20}, {15, 10, 15}};
  for (int i = 0; i < 5; ++i) {
    v1::SelfPlayPositionResult* p = chunks.emplace_back().mutable_selfplay();
    p->set_position_id(absl::StrCat(i));
    p->set_start_position(i);
    p->set_white_wins(wdl[i][0]);
    p->set_draws(wdl[i][1]);
    p->set_black_wins(wdl[i][2]);
    p->set_games(wdl[i][0] + wdl[i][1] + wdl[i][2]);
    p->set_complete(true);
  }
  chunks.push_back(chunks[4]);  // a further chunk of the same position: counted once
  const std::string j = results_json("job-1", chunks);
  EXPECT_TRUE(absl::StrContains(j, "\"id\":\"0\",")) << j;
  EXPECT_TRUE(absl::StrContains(j, "\"score_hi\":1,\"rank\":null,\"shrunk\":null,")) << j;
  EXPECT_TRUE(absl::StrContains(j, "\"black_wins\":0,\"total_plies\":0,\"score\":0.875,")) << j;
  const size_t best = j.find("\"id\":\"1\""), worst = j.find("\"id\":\"3\"");
  ASSERT_NE(best, std::string::npos);
  EXPECT_TRUE(absl::StrContains(j.substr(best, j.find('}', best) - best), "\"rank\":1,\"shrunk\":0.")) << j;
  EXPECT_TRUE(absl::StrContains(j.substr(worst, j.find('}', worst) - worst), "\"rank\":4,")) << j;
  EXPECT_TRUE(absl::StrContains(j, "\"ranking\":{\"min_games\":20,\"ranked\":4,\"most_games\":40,")) << j;
  EXPECT_TRUE(absl::StrContains(j, "\"total\":{\"games\":166,")) << j;
}

}  // namespace
}  // namespace c960::cluster
