// A hostile worker against the real coordinator with TLS and tokens, beside two honest real
// workers: it lies about counts, completes, renews and fails units it never held, forges
// failure reports, tries to take over an honest worker's session, and sends impossible perft and
// forged self-play results. Each forged call gets its status code; the perft table stays the
// published one, the job succeeds, and the hostile worker ends quarantined, the honest ones not.
// Also hostile clients: another submitter's jobs, a reader cancelling, an engine given as a path.
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/config.h"
#include "cluster/errors.h"
#include "cluster/u128.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/cluster/pki.h"
#include "tests/cluster/reference.h"
#include "worker/compute.h"

namespace c960::test {
namespace {

using namespace std::chrono_literals;
using cluster::reason_of;

constexpr int kDepth = 5;
constexpr int kPositions = 12;  // start positions 0..11
// Split at ply 1: units of 4 plies without divide, where a count off by one passes every check
// the coordinator can make alone (only another worker can tell).
constexpr int kSplit = 1;

std::unique_ptr<grpc::ClientContext> context(const std::string& token) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  ctx->set_deadline(std::chrono::system_clock::now() + 30s);
  ctx->set_credentials(grpc::AccessTokenCredentials(token));
  return ctx;
}

// A worker made of the generated stubs, saying whatever the test wants.
class Hostile {
 public:
  Hostile(const std::shared_ptr<grpc::Channel>& channel, std::string token)
      : stub_(v1::WorkerService::NewStub(channel)), token_(std::move(token)) {}

  grpc::Status hello(const std::string& name, v1::HelloResponse* resp,
                     const std::vector<std::string>& capabilities = {"perft", "selfplay"}) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_version("hostile");
    req.set_threads(32);
    for (const std::string& c : capabilities) req.add_capabilities(c);
    req.set_protocol_version(cluster::kProtocolVersion);
    const grpc::Status s = stub_->Hello(context(token_).get(), req, resp);
    if (s.ok()) session_ = resp->worker_id();
    return s;
  }
  grpc::Status acquire(int n, std::vector<v1::Lease>* out, const std::string& session = "") {
    v1::AcquireWorkRequest req;
    req.set_worker_id(session.empty() ? session_ : session);
    req.set_max_units(n);
    v1::AcquireWorkResponse resp;
    const grpc::Status s = stub_->AcquireWork(context(token_).get(), req, &resp);
    out->assign(resp.leases().begin(), resp.leases().end());
    return s;
  }
  grpc::Status complete(const std::string& unit_id, int attempt, const v1::UnitResult* result,
                        const std::string& failure, v1::CompletionOutcome* outcome = nullptr,
                        const std::string& session = "") {
    v1::CompleteUnitRequest req;
    req.set_worker_id(session.empty() ? session_ : session);
    req.set_unit_id(unit_id);
    req.set_attempt(attempt);
    if (result) *req.mutable_result() = *result;
    req.set_failure(failure);
    v1::CompleteUnitResponse resp;
    const grpc::Status s = stub_->CompleteUnit(context(token_).get(), req, &resp);
    if (outcome) *outcome = resp.outcome();
    return s;
  }
  grpc::Status complete(const v1::Lease& l, const v1::UnitResult& r, v1::CompletionOutcome* outcome = nullptr) {
    return complete(l.unit_id(), l.attempt(), &r, "", outcome);
  }
  grpc::Status renew(const std::vector<std::string>& ids, v1::RenewLeasesResponse* resp,
                     const std::string& session = "") {
    v1::RenewLeasesRequest req;
    req.set_worker_id(session.empty() ? session_ : session);
    for (const std::string& id : ids) req.add_unit_ids(id);
    return stub_->RenewLeases(context(token_).get(), req, resp);
  }

 private:
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  std::string token_, session_;
};

// The honest result of a lease, or one off by one leaf node.
v1::UnitResult result_of(const v1::Lease& l, bool lie) {
  absl::StatusOr<v1::UnitResult> r = cluster::compute_unit(l.spec(), nullptr);
  EXPECT_TRUE(r.ok()) << r.status();
  v1::UnitResult out = r.ok() ? *r : v1::UnitResult();
  if (lie) out.mutable_perft()->mutable_nodes()->set_lo(out.perft().nodes().lo() + 1);
  return out;
}

class HostileWorkerTest : public ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    ASSERT_TRUE(make_pki(dir_, &pki_));
    std::string lines = "# role name hash\n";
    for (const auto& [role, name] : std::vector<std::pair<std::string, std::string>>{{"admin", "the-admin"},
                                                                                     {"worker", "honest-a"},
                                                                                     {"worker", "honest-b"},
                                                                                     {"worker", "liar"},
                                                                                     {"worker", "forger-1"},
                                                                                     {"worker", "forger-2"},
                                                                                     {"worker", "forger-3"},
                                                                                     {"worker", "forger-4"},
                                                                                     {"worker", "forger-5"},
                                                                                     {"submit", "alice"},
                                                                                     {"submit", "bob"},
                                                                                     {"read", "reader"}}) {
      tokens_[name] = new_token(role, name);
      lines += tokens_[name].line;
    }
    write_file(dir_ + "/tokens", lines);
  }

  int start_secure(const std::vector<std::string>& extra = {}) {
    std::vector<std::string> flags = {"--tls-cert=" + pki_.server_cert(), "--tls-key=" + pki_.server_key(),
                                      "--tokens=" + dir_ + "/tokens"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    const int port = start_coordinator(0, flags);
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = read_file(pki_.ca());
    tls_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::SslCredentials(ssl));
    admin_ = v1::JobService::NewStub(tls_);
    return port;
  }

  // A real c960-worker with its own token, named `name`.
  void start_honest(int port, const std::string& name) {
    const std::string token_file = absl::StrCat(dir_, "/", name, ".token");
    write_file(token_file, tokens_[name].token + "\n");
    start_worker(port, {"--tls-ca=" + pki_.ca(), "--token-file=" + token_file, "--name=" + name, "--threads=1"});
  }

  v1::Job submit(const v1::JobSpec& spec) {
    v1::SubmitJobRequest req;
    *req.mutable_spec() = spec;
    v1::Job job;
    const grpc::Status s = admin_->SubmitJob(context(tokens_["the-admin"].token).get(), req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  v1::Job get(const std::string& id) {
    v1::GetJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    const grpc::Status s = admin_->GetJob(context(tokens_["the-admin"].token).get(), req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  v1::Job wait_finished(const std::string& id, std::chrono::seconds timeout = 120s) {
    v1::Job j;
    for (auto end = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < end;) {
      j = get(id);
      if (j.state() != v1::JOB_STATE_RUNNING || HasFailure()) break;
      std::this_thread::sleep_for(50ms);
    }
    return j;
  }

  std::vector<v1::WorkerInfo> workers() {
    v1::ListWorkersRequest req;
    req.set_include_lost(true);
    v1::ListWorkersResponse resp;
    const grpc::Status s = admin_->ListWorkers(context(tokens_["the-admin"].token).get(), req, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return {resp.workers().begin(), resp.workers().end()};
  }

  std::optional<v1::WorkerInfo> worker(const std::string& name) {
    for (const v1::WorkerInfo& w : workers())
      if (w.name() == name) return w;
    return std::nullopt;
  }

  std::vector<v1::ResultChunk> results(const std::string& id) {
    v1::GetResultsRequest req;
    req.set_job_id(id);
    auto ctx = context(tokens_["the-admin"].token);
    auto reader = admin_->GetResults(ctx.get(), req);
    std::vector<v1::ResultChunk> out;
    for (v1::ResultChunk c; reader->Read(&c);) out.push_back(c);
    const grpc::Status s = reader->Finish();
    EXPECT_TRUE(s.ok()) << s.error_message();
    return out;
  }

  // The session id the honest worker `name` logged when it registered: what an eavesdropper
  // or a leaked log would give away.
  std::string session_in_log(int worker_index) {
    static const std::regex session("(s-[0-9a-f]{32}): registered as");
    for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end;) {
      const std::string log = read_file(absl::StrCat(dir_, "/worker", worker_index, ".log"));
      std::smatch m;
      if (std::regex_search(log, m, session)) return m[1];
      std::this_thread::sleep_for(50ms);
    }
    ADD_FAILURE() << "worker " << worker_index << " did not register";
    return "";
  }

  Pki pki_;
  std::map<std::string, Token> tokens_;
  std::shared_ptr<grpc::Channel> tls_;
  std::unique_ptr<v1::JobService::Stub> admin_;
};

class HostileWorkerPerftTest : public HostileWorkerTest, public ::testing::WithParamInterface<v1::VerifyMode> {};

TEST_P(HostileWorkerPerftTest, TableStaysExactAndTheLiarIsQuarantined) {
  // The honest workers are the operator's own: trust roots, which decide what the liar disputes.
  const int port = start_secure({"--trust-roots=honest-a,honest-b"});
  ASSERT_GT(port, 0);
  v1::JobSpec spec;
  spec.set_verify(GetParam());
  spec.mutable_perft()->set_depth(kDepth);
  spec.mutable_perft()->set_start_positions(absl::StrCat("0-", kPositions - 1));
  spec.mutable_perft()->set_split_depth(kSplit);
  const v1::Job job = submit(spec);
  ASSERT_FALSE(job.id().empty());
  const int64_t units = job.progress().units_total();
  ASSERT_GT(units, 100);

  // The liar registers first and takes a few units before any honest worker is there.
  Hostile liar(tls_, tokens_["liar"].token);
  v1::HelloResponse hello;
  ASSERT_TRUE(liar.hello("liar", &hello).ok());
  EXPECT_EQ(hello.worker_name(), "liar/liar");
  std::vector<v1::Lease> held;
  ASSERT_TRUE(liar.acquire(8, &held).ok());
  ASSERT_EQ(held.size(), 8u);
  std::set<std::string> mine;
  for (const v1::Lease& l : held) mine.insert(l.unit_id());
  std::vector<std::string> others;
  for (int64_t i = 0; i < units && others.size() < 20; ++i)
    if (const std::string id = absl::StrCat(job.id(), "/", i); !mine.count(id)) others.push_back(id);

  // Completing, failing or renewing units never leased to it: refused, or LOST.
  grpc::Status s = liar.complete(others[0], 1, nullptr, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();  // neither result nor failure
  const v1::UnitResult some = result_of(held[0], false);
  s = liar.complete(others[0], 1, &some, "");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEASED);
  s = liar.complete(others[1], 1, nullptr, "engine crashed");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEASED);
  v1::RenewLeasesResponse renewed;
  ASSERT_TRUE(liar.renew(others, &renewed).ok());
  ASSERT_EQ(renewed.renewals_size(), int(others.size()));
  for (const v1::LeaseRenewal& r : renewed.renewals()) EXPECT_EQ(r.status(), v1::LEASE_STATUS_LOST) << r.unit_id();
  // Forged failure reports of its own units: perft units run no engine and cannot fail, so
  // the reports are refused (under any number of names they could not fail the job).
  for (int k = 0; k < cluster::kMaxUnitFailures; ++k) {
    v1::CompletionOutcome outcome{};
    s = liar.complete(held[size_t(k)].unit_id(), held[size_t(k)].attempt(), nullptr, "engine crashed", &outcome);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_TRUE(absl::StrContains(s.error_message(), "failure:")) << s.error_message();
  }
  EXPECT_EQ(get(job.id()).state(), v1::JOB_STATE_RUNNING);

  start_honest(port, "honest-a");
  start_honest(port, "honest-b");
  const std::string honest_session = session_in_log(0);
  ASSERT_FALSE(honest_session.empty());

  // Taking over an honest worker: its name gives the liar a session of its own identity, and
  // the honest worker's session is unknown to the liar's credentials.
  Hostile thief(tls_, tokens_["liar"].token);
  ASSERT_TRUE(thief.hello("honest-a", &hello).ok());
  EXPECT_EQ(hello.worker_name(), "liar/honest-a");
  EXPECT_NE(hello.worker_id(), honest_session);
  std::vector<v1::Lease> stolen;
  s = thief.acquire(4, &stolen, honest_session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_UNKNOWN_WORKER);
  EXPECT_TRUE(stolen.empty());
  s = thief.complete(others[2], 1, &some, "", nullptr, honest_session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();
  s = thief.renew(others, &renewed, honest_session);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message();

  // Now the lies: every other unit off by one, until the coordinator stops it.
  int lies = 0, completions = 0;
  grpc::Status last;
  for (auto end = std::chrono::steady_clock::now() + 120s; std::chrono::steady_clock::now() < end;) {
    for (const v1::Lease& l : held) {
      const bool lie = completions++ % 2 == 0;
      v1::CompletionOutcome outcome{};
      last = liar.complete(l, result_of(l, lie), &outcome);
      if (!last.ok()) break;
      lies += lie;
      EXPECT_NE(outcome, v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
    }
    if (!last.ok()) break;
    last = liar.acquire(4, &held);
    if (!last.ok()) break;
    if (held.empty()) std::this_thread::sleep_for(20ms);
  }
  EXPECT_GT(lies, 0);
  EXPECT_EQ(last.error_code(), grpc::StatusCode::PERMISSION_DENIED) << last.error_message();
  EXPECT_EQ(reason_of(last), v1::ErrorInfo::REASON_QUARANTINED) << last.error_message();

  const v1::Job done = wait_finished(job.id());
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED) << done.ShortDebugString();
  EXPECT_GE(done.result_mismatches(), 1);
  EXPECT_EQ(done.unit_failures(), 0);
  const std::vector<v1::ResultChunk> table = results(job.id());
  ASSERT_EQ(table.size(), size_t(kPositions));
  for (const v1::ResultChunk& c : table) {
    EXPECT_TRUE(c.perft().complete());
    EXPECT_EQ(uint64_t(cluster::from_proto(c.perft().nodes())), reference().at(c.perft().start_position())[kDepth])
        << "start position " << c.perft().start_position();
  }

  // The liar is quarantined, with the reason; the honest workers are not, and their results
  // were confirmed.
  std::optional<v1::WorkerInfo> w = worker("liar/liar");
  ASSERT_TRUE(w.has_value());
  EXPECT_EQ(w->trust(), v1::TRUST_STATE_QUARANTINED) << w->ShortDebugString();
  EXPECT_TRUE(absl::StrContains(w->trust_reason(), "outvoted")) << w->trust_reason();
  for (const char* name : {"honest-a/honest-a", "honest-b/honest-b"}) {
    w = worker(name);
    ASSERT_TRUE(w.has_value()) << name;
    EXPECT_NE(w->trust(), v1::TRUST_STATE_QUARANTINED) << w->ShortDebugString();
    EXPECT_GT(w->agreeing_results(), 0) << w->ShortDebugString();
    EXPECT_GT(w->units_done(), 0) << w->ShortDebugString();
  }
  // `c960 workers` shows the same, as a table and as JSON (with a reader's token).
  write_file(dir_ + "/reader.token", tokens_["reader"].token + "\n");
  const std::vector<std::string> conn = {absl::StrCat("--coordinator=127.0.0.1:", port), "--tls-ca=" + pki_.ca(),
                                         "--token-file=" + dir_ + "/reader.token"};
  std::vector<std::string> argv = {kCli, "workers"};
  argv.insert(argv.end(), conn.begin(), conn.end());
  RunResult r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  bool liar_row = false;
  for (absl::string_view line : absl::StrSplit(r.out, '\n'))
    if (absl::StartsWith(line, "liar/liar "))
      liar_row = absl::StrContains(line, "quarantined") && absl::StrContains(line, "outvoted");
  EXPECT_TRUE(liar_row) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "honest-a/honest-a ")) << r.out;
  argv.push_back("--format=json");
  r = run(argv);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "\"TRUST_STATE_QUARANTINED\"")) << r.out;
  argv.back() = "--format=yaml";
  EXPECT_EQ(run(argv).exit_code, 2);
  // Its name stays barred.
  s = liar.hello("liar", &hello);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_QUARANTINED);
  for (const auto& p : workers_) EXPECT_TRUE(p->running());
}

INSTANTIATE_TEST_SUITE_P(Verify, HostileWorkerPerftTest,
                         ::testing::Values(v1::VERIFY_MODE_ADAPTIVE, v1::VERIFY_MODE_ALL),
                         [](const ::testing::TestParamInfo<v1::VerifyMode>& p) {
                           return p.param == v1::VERIFY_MODE_ALL ? std::string("All") : std::string("Adaptive");
                         });

// Results the coordinator can tell are wrong by itself: refused with INVALID_ARGUMENT naming the
// field, and their sender quarantined at once, even in a job that asks for no verification.
TEST_F(HostileWorkerTest, ImpossibleResultsAreRefusedAndQuarantineTheirSender) {
  ASSERT_GT(start_secure(), 0);
  v1::JobSpec perft;
  perft.set_verify(v1::VERIFY_MODE_OFF);
  perft.mutable_perft()->set_depth(2);
  perft.mutable_perft()->set_start_positions("0-3");
  perft.mutable_perft()->set_split_depth(0);  // units are the roots, with divide
  ASSERT_FALSE(submit(perft).id().empty());
  v1::JobSpec games;
  games.set_verify(v1::VERIFY_MODE_OFF);
  games.mutable_selfplay()->set_start_positions("0-1");
  games.mutable_selfplay()->set_games_per_position(2);
  games.mutable_selfplay()->set_engine("builtin");
  games.mutable_selfplay()->set_nodes(200);
  games.mutable_selfplay()->set_node_jitter_percent(10);
  games.mutable_selfplay()->set_max_plies(40);
  games.mutable_selfplay()->set_games_per_unit(1);
  const v1::Job selfplay_job = submit(games);
  ASSERT_FALSE(selfplay_job.id().empty());

  // Each forger sends one forged result (the first quarantines its sender) and is then refused.
  struct Forgery {
    std::string who, capability, field;
    std::function<void(v1::UnitResult*)> forge;
  };
  const std::vector<Forgery> forgeries = {
      {"forger-1", "perft", "result.perft.nodes",
       [](v1::UnitResult* r) {  // 2^128 - 1 leaf nodes at depth 2
         r->mutable_perft()->mutable_nodes()->set_hi(~uint64_t(0));
         r->mutable_perft()->mutable_nodes()->set_lo(~uint64_t(0));
       }},
      {"forger-2", "perft", "result.perft.divide.move",
       [](v1::UnitResult* r) { r->mutable_perft()->mutable_divide(0)->set_move("a1a1"); }},
      {"forger-3", "selfplay", "result.selfplay",
       [](v1::UnitResult* r) {  // a game of no moves
         r->mutable_selfplay()->mutable_games(0)->clear_moves();
       }},
      {"forger-4", "selfplay", "result.selfplay",
       [](v1::UnitResult* r) {  // a checkmate that is none
         v1::SelfPlayGame* g = r->mutable_selfplay()->mutable_games(0);
         while (g->moves_size() > g->opening_plies() + 1) g->mutable_moves()->RemoveLast();
         g->set_result(g->moves_size() % 2 ? "1-0" : "0-1");
         g->set_termination("checkmate");
       }},
  };
  for (const Forgery& f : forgeries) {
    SCOPED_TRACE(f.who);
    Hostile h(tls_, tokens_[f.who].token);
    v1::HelloResponse hello;
    ASSERT_TRUE(h.hello(f.who, &hello, {f.capability}).ok());
    std::vector<v1::Lease> leases;
    ASSERT_TRUE(h.acquire(1, &leases).ok());
    ASSERT_EQ(leases.size(), 1u);
    absl::StatusOr<v1::UnitResult> r = cluster::compute_unit(leases[0].spec(), nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    f.forge(&*r);
    grpc::Status s = h.complete(leases[0], *r);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
    EXPECT_TRUE(absl::StartsWith(s.error_message(), f.field)) << s.error_message();
    s = h.acquire(1, &leases);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
    EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_QUARANTINED);
    std::optional<v1::WorkerInfo> w = worker(hello.worker_name());
    ASSERT_TRUE(w.has_value());
    EXPECT_EQ(w->trust(), v1::TRUST_STATE_QUARANTINED);
    EXPECT_TRUE(absl::StrContains(w->trust_reason(), "impossible result")) << w->trust_reason();
  }

  // A real game with text of the worker's own in place of its PGN: the moves count, the text
  // does not (the coordinator writes the PGN).
  Hostile h(tls_, tokens_["forger-5"].token);
  v1::HelloResponse hello;
  ASSERT_TRUE(h.hello("forger-5", &hello, {"selfplay"}).ok());
  const std::string forged = "[Event \"forged\"]\n1. e4 e5 1-0 arbitrary text";
  for (int n = 0; n < 8; ++n) {
    std::vector<v1::Lease> leases;
    ASSERT_TRUE(h.acquire(1, &leases).ok());
    if (leases.empty()) break;
    absl::StatusOr<v1::UnitResult> r = cluster::compute_unit(leases[0].spec(), nullptr);
    ASSERT_TRUE(r.ok()) << r.status();
    r->mutable_selfplay()->mutable_games(0)->set_pgn(forged);
    v1::CompletionOutcome outcome{};
    const grpc::Status s = h.complete(leases[0], *r, &outcome);
    ASSERT_TRUE(s.ok()) << s.error_message();
    EXPECT_EQ(outcome, v1::COMPLETION_OUTCOME_ACCEPTED);
  }
  const v1::Job j = wait_finished(selfplay_job.id(), 30s);
  EXPECT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);
  int games_seen = 0;
  for (const v1::ResultChunk& c : results(selfplay_job.id()))
    for (const v1::SelfPlayGame& g : c.selfplay().game_records()) {
      ++games_seen;
      EXPECT_FALSE(absl::StrContains(g.pgn(), "arbitrary")) << g.pgn();
      EXPECT_TRUE(absl::StrContains(g.pgn(), "[Result \"" + g.result() + "\"]")) << g.pgn();
    }
  EXPECT_EQ(games_seen, 4);
  EXPECT_EQ(worker("forger-5/forger-5")->trust(), v1::TRUST_STATE_NEW);
}

// A real worker whose token is unknown, or of a role that may not work, says which and stops
// (exit 2: the operator must act), instead of a bare status code.
TEST_F(HostileWorkerTest, WorkerWithAWrongTokenSaysWhyAndStops) {
  const int port = start_secure();
  ASSERT_GT(port, 0);
  write_file(dir_ + "/unknown.token", "c960_not-a-known-token\n");
  write_file(dir_ + "/alice.token", tokens_["alice"].token + "\n");
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"unknown.token", "unauthenticated: the coordinator refused the token"},
      {"alice.token", "permission denied: the coordinator does not let these credentials do this"}};
  for (size_t k = 0; k < cases.size(); ++k) {
    Process* w = start_worker(port, {"--tls-ca=" + pki_.ca(), "--token-file=" + dir_ + "/" + cases[k].first});
    EXPECT_EQ(w->wait(30s), std::optional<int>(2)) << cases[k].first;
    const std::string log = read_file(absl::StrCat(dir_, "/worker", k, ".log"));
    EXPECT_TRUE(absl::StrContains(log, "hello refused: " + cases[k].second)) << log;
    EXPECT_TRUE(absl::StrContains(log, "ERROR c960-worker: ")) << "a fatal refusal is an error: " << log;
    EXPECT_FALSE(absl::StrContains(log, "code 16")) << log;
  }
}

// The adaptive replication's and the caps' flags are checked at start.
TEST_F(HostileWorkerTest, TrustFlagsOutOfRangeAreUsageErrors) {
  for (const std::string flag : {"--trust-after=0", "--trust-after=x", "--spot-check-rate=1.5",
                                 "--spot-check-rate=-0.1", "--spot-check-rate=nan", "--max-active-jobs=0",
                                 "--max-planned-units=0", "--max-watches-per-caller=0", "--max-watches=100001"}) {
    const RunResult r = run({kCoordinatorBin, "--listen=127.0.0.1:0", "--db=" + dir_ + "/flags.db", flag});
    EXPECT_EQ(r.exit_code, 2) << flag << "\n" << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, flag.substr(0, flag.find('=')))) << r.err;
  }
}

// Per-caller caps, from flags: one submitter cannot take the coordinator's memory from others.
TEST_F(HostileWorkerTest, CapsPerCallerComeFromFlagsAndNameThemselves) {
  ASSERT_GT(start_secure({"--max-active-jobs=1", "--max-planned-units=10"}), 0);
  auto jobs = v1::JobService::NewStub(tls_);
  const auto submit_as = [&](const std::string& who, const std::string& sps) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->mutable_perft()->set_depth(2);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(0);  // one unit per position
    v1::Job job;
    return jobs->SubmitJob(context(tokens_[who].token).get(), req, &job);
  };
  EXPECT_TRUE(submit_as("alice", "0-3").ok());
  grpc::Status s = submit_as("alice", "4");
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "max-active-jobs")) << s.error_message();
  s = submit_as("bob", "0-10");  // 11 units
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << s.error_message();
  EXPECT_TRUE(absl::StrContains(s.error_message(), "max-planned-units")) << s.error_message();
  EXPECT_TRUE(submit_as("bob", "0-9").ok());  // alice's job does not count against bob
}

// A job's RPC as `who`, by method name: the status (for a stream, OK once its first message came).
grpc::Status job_call(v1::JobService::Stub* stub, const std::string& method, const std::string& token,
                      const std::string& job_id) {
  auto ctx = context(token);
  v1::Job job;
  if (method == "GetJob") {
    v1::GetJobRequest req;
    req.set_job_id(job_id);
    return stub->GetJob(ctx.get(), req, &job);
  }
  if (method == "CancelJob") {
    v1::CancelJobRequest req;
    req.set_job_id(job_id);
    return stub->CancelJob(ctx.get(), req, &job);
  }
  const auto first = [&](auto reader, auto message) {
    if (reader->Read(&message)) {
      ctx->TryCancel();
      reader->Finish().IgnoreError();
      return grpc::Status::OK;
    }
    return reader->Finish();
  };
  if (method == "WatchJob") {
    v1::WatchJobRequest req;
    req.set_job_id(job_id);
    return first(stub->WatchJob(ctx.get(), req), v1::Job());
  }
  v1::GetResultsRequest req;
  req.set_job_id(job_id);
  return first(stub->GetResults(ctx.get(), req), v1::ResultChunk());
}

// Clients against one another: a submitter's jobs do not exist for another submitter, readers
// read but do not cancel, workers do neither; and a job cannot name an engine by its path.
TEST_F(HostileWorkerTest, OtherSubmittersJobsAreInvisibleAndEnginePathsAreRefused) {
  const int port = start_secure();
  ASSERT_GT(port, 0);
  auto jobs = v1::JobService::NewStub(tls_);
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_perft()->set_depth(2);
  req.mutable_spec()->mutable_perft()->set_start_positions("0-3");
  v1::Job alices;
  ASSERT_TRUE(jobs->SubmitJob(context(tokens_["alice"].token).get(), req, &alices).ok());
  EXPECT_EQ(alices.owner(), "alice");

  struct Expect {
    std::string who;
    grpc::StatusCode code;
  };
  const std::vector<std::pair<std::string, std::vector<Expect>>> table = {
      {"GetJob",
       {{"alice", grpc::StatusCode::OK},
        {"bob", grpc::StatusCode::NOT_FOUND},
        {"reader", grpc::StatusCode::OK},
        {"honest-a", grpc::StatusCode::PERMISSION_DENIED},
        {"the-admin", grpc::StatusCode::OK}}},
      {"WatchJob",
       {{"alice", grpc::StatusCode::OK},
        {"bob", grpc::StatusCode::NOT_FOUND},
        {"reader", grpc::StatusCode::OK},
        {"honest-a", grpc::StatusCode::PERMISSION_DENIED}}},
      {"GetResults",
       {{"alice", grpc::StatusCode::OK},
        {"bob", grpc::StatusCode::NOT_FOUND},
        {"reader", grpc::StatusCode::OK},
        {"honest-a", grpc::StatusCode::PERMISSION_DENIED}}},
      // Last: alice's own cancel succeeds.
      {"CancelJob",
       {{"bob", grpc::StatusCode::NOT_FOUND},
        {"reader", grpc::StatusCode::PERMISSION_DENIED},
        {"honest-a", grpc::StatusCode::PERMISSION_DENIED},
        {"alice", grpc::StatusCode::OK}}},
  };
  for (const auto& [method, expects] : table)
    for (const Expect& e : expects) {
      const grpc::Status s = job_call(jobs.get(), method, tokens_[e.who].token, alices.id());
      EXPECT_EQ(s.error_code(), e.code) << method << " as " << e.who << ": " << s.error_message();
    }
  EXPECT_EQ(get(alices.id()).state(), v1::JOB_STATE_CANCELLED);

  // Lists: bob's own jobs only; a reader's all of them.
  v1::Job bobs;
  ASSERT_TRUE(jobs->SubmitJob(context(tokens_["bob"].token).get(), req, &bobs).ok());
  const auto listed = [&](const std::string& who) {
    v1::ListJobsResponse resp;
    const grpc::Status s = jobs->ListJobs(context(tokens_[who].token).get(), v1::ListJobsRequest(), &resp);
    EXPECT_TRUE(s.ok()) << who << ": " << s.error_message();
    std::set<std::string> ids;
    for (const v1::Job& j : resp.jobs()) ids.insert(j.id());
    return ids;
  };
  EXPECT_EQ(listed("bob"), (std::set<std::string>{bobs.id()}));
  EXPECT_EQ(listed("alice"), (std::set<std::string>{alices.id()}));
  EXPECT_EQ(listed("reader"), (std::set<std::string>{alices.id(), bobs.id()}));

  // An engine named by its path: refused by the coordinator, and by the c960 tool before that.
  v1::SubmitJobRequest games;
  games.mutable_spec()->mutable_selfplay()->set_games_per_position(2);
  games.mutable_spec()->mutable_selfplay()->set_nodes(100);
  games.mutable_spec()->mutable_selfplay()->set_engine("/usr/games/stockfish");
  v1::Job ignored;
  const grpc::Status s = jobs->SubmitJob(context(tokens_["alice"].token).get(), games, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << s.error_message();
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "engine")) << s.error_message();
  write_file(dir_ + "/alice.token", tokens_["alice"].token + "\n");
  const RunResult r = run({kCli, "submit", "selfplay", "--sps", "3", "--games-per-position", "2", "--engine",
                           "/usr/games/stockfish", "--nodes", "100", absl::StrCat("--coordinator=127.0.0.1:", port),
                           "--tls-ca=" + pki_.ca(), "--token-file=" + dir_ + "/alice.token"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "is a path")) << r.err;
  EXPECT_EQ(listed("reader").size(), 2u);  // nothing submitted
}

}  // namespace
}  // namespace c960::test
