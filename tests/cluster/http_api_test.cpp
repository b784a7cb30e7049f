// The coordinator's HTTP side without sockets (coordinator/http_api.h): routes, who may see
// what (health open, the rest read or admin when tokens are on), the JSON API against the
// coordinator's own answers, /metrics moving with a job, and the log line formats.
#include "coordinator/http_api.h"

#include <gtest/gtest.h>
#include <memory>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cluster/log.h"
#include "coordinator/clock.h"
#include "coordinator/metrics.h"
#include "report/report.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

constexpr char kReadToken[] = "c960_read-token-for-tests-aaaaaaaaaaaaaaaaaaaaaaaa";
constexpr char kSubmitToken[] = "c960_submit-token-for-tests-bbbbbbbbbbbbbbbbbbbbbbbb";

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

  // An API without tokens (loopback) or with a read and a submit token.
  std::unique_ptr<HttpApi> api(bool tokens) {
    HttpOptions o;
    if (tokens) {
      auto set = TokenSet::parse(
          absl::StrCat("read alice ", token_hash(kReadToken), "\nsubmit bob ", token_hash(kSubmitToken), "\n"),
          "tokens");
      EXPECT_TRUE(set.ok()) << set.status();
      o.tokens = std::make_shared<TokenTable>(std::move(*set));
    }
    auto a = std::make_unique<HttpApi>(coordinator_.get(), store_.get(), metrics_.get(), o);
    a->set_ready(true);
    return a;
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

  // A perft job on `sps`, by default of depth 2 with one unit per position.
  std::string submit(const std::string& sps, v1::VerifyMode verify = v1::VERIFY_MODE_OFF, int depth = 2,
                     int split = 0) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(verify);
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(split);
    auto job = coordinator_->submit(Caller::local(), req);
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
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::unique_ptr<Metrics> metrics_;
};

TEST_F(HttpApiTest, RoutesAreAFixedSet) {
  EXPECT_EQ(HttpApi::route("/").handler, HttpApi::Handler::kDashboard);
  EXPECT_EQ(HttpApi::route("/metrics").handler, HttpApi::Handler::kMetrics);
  EXPECT_EQ(HttpApi::route("/jobs/job-3").arg, "job-3");
  EXPECT_EQ(HttpApi::route("/api/v1/jobs/job-3").handler, HttpApi::Handler::kApiJob);
  const HttpApi::Route results = HttpApi::route("/api/v1/jobs/job-3/results");
  EXPECT_EQ(results.handler, HttpApi::Handler::kApiResults);
  EXPECT_EQ(results.arg, "job-3");
  EXPECT_EQ(HttpApi::route("/api/v1/jobs/a/b").handler, HttpApi::Handler::kNotFound);
  EXPECT_EQ(HttpApi::route("/assets/../x").handler, HttpApi::Handler::kNotFound);
  EXPECT_EQ(HttpApi::route("/jobs/").handler, HttpApi::Handler::kNotFound);
}

TEST_F(HttpApiTest, HealthIsOpenAndTheRestNeedsReadOrAdmin) {
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
    EXPECT_EQ(a->handle(get(path, kSubmitToken)).status, 403) << path;
    EXPECT_EQ(a->handle(get(path, kReadToken)).status, 200) << path;
  }
  // A page without credentials shows the login form; with the cookie it logs in.
  const HttpResponse page = a->handle(get("/"));
  EXPECT_EQ(page.status, 401);
  EXPECT_TRUE(absl::StrContains(page.body, "action=\"/login\"")) << page.body;
  HttpRequest cookie = get("/");
  cookie.cookie = absl::StrCat("other=1; ", kLoginCookie, "=", kReadToken);
  EXPECT_EQ(a->handle(cookie).status, 200);
  // Two Authorization headers are refused, as on the gRPC side.
  HttpRequest two = get("/metrics", kReadToken);
  two.authorization.push_back(absl::StrCat("Bearer ", kReadToken));
  EXPECT_EQ(a->handle(two).status, 401);
  HttpRequest basic = get("/metrics");
  basic.authorization.push_back("Basic YTpi");
  EXPECT_EQ(a->handle(basic).status, 401);
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
  EXPECT_TRUE(absl::StrContains(r.header("Set-Cookie"), "HttpOnly")) << r.header("Set-Cookie");
  EXPECT_TRUE(absl::StrContains(r.header("Set-Cookie"), "SameSite=Strict")) << r.header("Set-Cookie");
  post.body = "token=c960_nobody&next=/jobs/job-1";
  EXPECT_EQ(a->handle(post).status, 401);
  post.body = absl::StrCat("token=", kSubmitToken);
  EXPECT_EQ(a->handle(post).status, 403);
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

// Version 2 of the jobs API: the JSON of `c960 status --format json` (cluster/job_json.h), with
// its version; the same roles as version 1.
TEST_F(HttpApiTest, JobsApiVersion2IsCleanJson) {
  EXPECT_EQ(HttpApi::route("/api/v2/jobs").version, 2);
  EXPECT_EQ(HttpApi::route("/api/v2/jobs/job-3").handler, HttpApi::Handler::kApiJob);
  EXPECT_EQ(HttpApi::route("/api/v2/jobs/job-3").version, 2);
  EXPECT_EQ(HttpApi::route("/api/v1/jobs/job-3").version, 1);
  EXPECT_EQ(HttpApi::route("/api/v2/jobs/job-3/results").handler, HttpApi::Handler::kNotFound);
  EXPECT_EQ(HttpApi::route("/api/v2/workers").handler, HttpApi::Handler::kNotFound);
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
  // With tokens: read may, submit may not, as for version 1.
  auto secured = api(true);
  HttpRequest read = get("/api/v2/jobs"), submitter = get("/api/v2/jobs");
  read.authorization = {absl::StrCat("Bearer ", kReadToken)};
  submitter.authorization = {absl::StrCat("Bearer ", kSubmitToken)};
  EXPECT_EQ(secured->handle(read).status, 200);
  EXPECT_EQ(secured->handle(submitter).status, 403);
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
