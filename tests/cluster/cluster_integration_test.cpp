// The real binaries on loopback with ephemeral ports: full jobs checked against the published
// perft table, workers and the coordinator killed mid-job, graceful stops, duplicate and late
// completions, and invalid requests with their status codes. Built twice: with the store in an
// SQLite file, and (C960_TEST_POSTGRES) in a database of a scratch PostgreSQL server.
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <netinet/in.h>
#include <sstream>
#include <string>
#include <sys/socket.h>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/config.h"
#include "cluster/errors.h"
#include "cluster/u128.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/position.h"
#include "core/startpos.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/cluster/reference.h"
#include "tests/process.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {
using c960::test::reference;

using c960::test::Process;
using namespace std::chrono_literals;
using c960::test::kCliBin;
using c960::test::read_file;

using c960::test::free_port;

class ClusterTest : public c960::test::ClusterFixture {
 protected:
  void SetUp() override {
    ASSERT_EQ(reference().size(), 960u);
    ClusterFixture::SetUp();
  }

  int start_coordinator(int port = 0, const std::vector<std::string>& extra = {}) {
    const int p = ClusterFixture::start_coordinator(port, extra);
    if (p) workers_stub_ = v1::WorkerService::NewStub(channel_);
    return p;
  }

  Process* start_worker(int port, const std::vector<std::string>& extra = {}) {
    std::vector<std::string> flags = {"--threads=1", "--hash=16"};
    flags.insert(flags.end(), extra.begin(), extra.end());
    return ClusterFixture::start_worker(port, flags);
  }

  std::unique_ptr<grpc::ClientContext> ctx(std::chrono::milliseconds timeout = 10s) {
    auto c = std::make_unique<grpc::ClientContext>();
    c->set_deadline(std::chrono::system_clock::now() + timeout);
    return c;
  }

  // Without verification unless asked: most tests here run one worker, or kill one of two.
  v1::Job submit(int depth, const std::string& sps, std::optional<int> split = std::nullopt,
                 v1::VerifyMode verify = v1::VERIFY_MODE_OFF) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(verify);
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    if (split) req.mutable_spec()->mutable_perft()->set_split_depth(*split);
    v1::Job job;
    grpc::Status s = jobs_->SubmitJob(ctx(60s).get(), req, &job);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return job;
  }

  grpc::Status get(const std::string& id, v1::Job* job) {
    v1::GetJobRequest req;
    req.set_job_id(id);
    return jobs_->GetJob(ctx().get(), req, job);
  }

  // Polls the job until pred holds; the last state seen is in *job. Unreachable coordinators
  // (restarting) are polled through.
  bool wait_job(const std::string& id, const std::function<bool(const v1::Job&)>& pred, std::chrono::seconds timeout,
                v1::Job* job) {
    for (auto end = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < end;) {
      if (get(id, job).ok() && pred(*job)) return true;
      std::this_thread::sleep_for(50ms);
    }
    return false;
  }

  // Every root's total against the table, and the job's own counters.
  void expect_exact(const v1::Job& job, int depth, size_t roots) {
    EXPECT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED);
    EXPECT_EQ(job.progress().units_done(), job.progress().units_total());
    EXPECT_EQ(job.result_mismatches(), 0) << job.mismatch_detail();
    v1::GetResultsRequest req;
    req.set_job_id(job.id());
    auto c = ctx(60s);
    auto reader = jobs_->GetResults(c.get(), req);
    v1::ResultChunk chunk;
    size_t n = 0;
    NodeCount sum = 0;
    while (reader->Read(&chunk)) {
      const v1::PerftRootResult& r = chunk.perft();
      ASSERT_TRUE(reference().count(r.start_position())) << r.start_position();
      EXPECT_TRUE(r.complete());
      EXPECT_EQ(r.depth(), depth);
      EXPECT_EQ(r.fen(), *startpos_fen(r.start_position()));
      EXPECT_EQ(from_proto(r.nodes()), NodeCount(reference().at(r.start_position())[depth]))
          << "sp " << r.start_position() << " depth " << depth;
      sum += from_proto(r.nodes());
      ++n;
    }
    ASSERT_TRUE(reader->Finish().ok());
    EXPECT_EQ(n, roots);
    // The progress counter adds each unit once: equal to the sum of the exact totals.
    EXPECT_EQ(from_proto(job.progress().nodes_done()), sum);
  }

  // Runs the c960 tool; returns its exit code, stdout in *out, stderr in *err.
  int cli(const std::string& args, std::string* out, std::string* err = nullptr) {
    const std::string o = dir_ + "/cli.out", e = dir_ + "/cli.err";
    const int rc =
        std::system(absl::StrCat(kCliBin, " ", args, " --coordinator 127.0.0.1:", port_, " >", o, " 2>", e).c_str());
    *out = read_file(o);
    if (err) *err = read_file(e);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  }

  std::unique_ptr<v1::WorkerService::Stub> workers_stub_;
};

TEST_F(ClusterTest, All960AtDepth4ThroughTheCliMatchTheTable) {
  const int port = start_coordinator();
  start_worker(port);
  start_worker(port);
  std::string out, err;
  ASSERT_EQ(cli("submit perft --depth 4", &out, &err), 0) << err;
  const std::string id = std::string(absl::StripAsciiWhitespace(out.substr(out.find_last_of(' ') + 1)));
  ASSERT_TRUE(absl::StartsWith(id, "job-")) << out;
  ASSERT_EQ(cli("watch " + id, &out, &err), 0) << out << err;
  EXPECT_TRUE(absl::StrContains(out, "SUCCEEDED")) << out;
  const std::string csv = dir_ + "/table.csv";
  ASSERT_EQ(cli(absl::StrCat("results ", id, " --format csv --out ", csv), &out, &err), 0) << err;
  std::vector<std::string> lines = absl::StrSplit(read_file(csv), '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 961u);
  EXPECT_EQ(lines[0], "sp,fen,depth,nodes");
  for (int sp = 0; sp < 960; ++sp)
    EXPECT_EQ(lines[sp + 1], absl::StrCat(sp, ",", *startpos_fen(sp), ",4,", reference().at(sp)[4]));
  ASSERT_EQ(cli("results " + id + " --format json", &out, &err), 0) << err;
  EXPECT_TRUE(absl::StrContains(
      out, absl::StrCat("{\"sp\": 518, \"fen\": \"", *startpos_fen(518), "\", \"depth\": 4, \"nodes\": 197281}")))
      << out.substr(0, 500);
  v1::Job job;
  ASSERT_TRUE(get(id, &job).ok());
  expect_exact(job, 4, 960);
  ASSERT_EQ(cli("status " + id, &out, &err), 0) << err;
  EXPECT_TRUE(absl::StrContains(out, "960/960 units")) << out;
}

// c960 submit says at once what will keep a job waiting (on stderr, so that the id alone is on
// stdout): one worker, a single credential, under the default adaptive verification; and an
// engine no connected worker offers.
TEST_F(ClusterTest, SubmitSaysWhatWillKeepTheJobWaiting) {
  const int port = start_coordinator();
  start_worker(port);
  ASSERT_TRUE(wait_for_text(dir_ + "/worker0.log", "registered as", std::chrono::seconds(20)));
  std::string out, err;
  ASSERT_EQ(cli("submit perft --depth 2 --sps 0-3 --verify all --quiet", &out, &err), 0) << err;
  EXPECT_TRUE(absl::StartsWith(out, "job-")) << out;
  EXPECT_EQ(out.find('\n'), out.size() - 1) << out;
  EXPECT_TRUE(absl::StrContains(err, "note: job job-")) << err;
  EXPECT_TRUE(absl::StrContains(err, "checked by a second owner")) << err;
  ASSERT_EQ(cli("submit selfplay --sps 0 --games-per-position 2 --engine sf --nodes 100 --verify off", &out, &err), 0)
      << err;
  EXPECT_TRUE(absl::StrContains(err, "no connected worker offers engine 'sf'")) << err;
  ASSERT_EQ(cli("submit perft --depth 2 --sps 0 --verify off", &out, &err), 0) << err;
  EXPECT_EQ(err, "");
}

TEST_F(ClusterTest, FenRootsWithDivideThroughTheCli) {
  const int port = start_coordinator();
  start_worker(port);
  const std::vector<std::string> fens = {"r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1", "4k3/8/8/3pP3/8/8/8/4K3 w - d6 0 2"};
  std::string out, err;
  ASSERT_EQ(
      cli(absl::StrCat("submit perft --verify off --depth 4 --split-depth 2 --fen '", fens[0], "' '", fens[1], "'"),
          &out, &err),
      0)
      << err;
  const std::string id = std::string(absl::StripAsciiWhitespace(out.substr(out.find_last_of(' ') + 1)));
  ASSERT_EQ(cli("watch " + id, &out, &err), 0) << out << err;
  ASSERT_EQ(cli("results " + id + " --divide", &out, &err), 0) << err;
  // Expected: the core's divide of each root, in generation order, as "sp,fen,depth,move,nodes".
  std::string expected = "sp,fen,depth,move,nodes\n";
  for (const std::string& f : fens) {
    Position pos = *Position::from_fen(f);
    for (const DivideEntry& e : divide(pos, 4))
      absl::StrAppend(&expected, ",", pos.fen(), ",4,", to_uci(e.move), ",", to_string(e.nodes), "\n");
  }
  EXPECT_EQ(out, expected);
  ASSERT_EQ(cli("results " + id, &out, &err), 0) << err;
  Position p0 = *Position::from_fen(fens[0]);
  EXPECT_TRUE(absl::StrContains(out, absl::StrCat(",", p0.fen(), ",4,", perft(p0, 4), "\n"))) << out;
}

TEST_F(ClusterTest, WorkerKilledMidJobLeavesTheTotalsExact) {
  const int port = start_coordinator(0, {"--lease-seconds=2"});
  Process* doomed = start_worker(port);
  start_worker(port);
  // Perft 6 units last long enough (a tenth of a second and more) to kill a worker mid-job.
  const v1::Job submitted = submit(6, "0-59", 0);
  v1::Job job;
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.progress().units_done() >= 8; }, 60s, &job));
  ASSERT_EQ(job.state(), v1::JOB_STATE_RUNNING) << "the job ended before the kill";
  doomed->kill_now();
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }, 60s, &job));
  expect_exact(job, 6, 60);
  // The killed worker stops counting as alive once its lease period passed.
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.progress().workers_alive() == 1; }, 20s, &job));
}

TEST_F(ClusterTest, CoordinatorKilledMidJobResumesFromItsFile) {
  const int port = start_coordinator();
  start_worker(port);
  start_worker(port);
  // Verified, so that copies and their results must survive the restart too.
  const v1::Job submitted = submit(6, "0-59", 0, v1::VERIFY_MODE_ALL);
  v1::Job job;
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.progress().units_done() >= 12; }, 60s, &job));
  ASSERT_EQ(job.state(), v1::JOB_STATE_RUNNING) << "the job ended before the kill";
  const int64_t done_before = job.progress().units_done();
  coordinator_->kill_now();
  std::this_thread::sleep_for(500ms);  // the workers keep computing and hold their results
  ASSERT_EQ(start_coordinator(port), port);
  ASSERT_TRUE(get(submitted.id(), &job).ok());
  EXPECT_GE(job.progress().units_done(), done_before) << "completed units were lost";
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }, 60s, &job));
  expect_exact(job, 6, 60);
}

// Issue 37: two coordinators on one store. The second is a standby: its gRPC port refuses every
// call naming the leader, its /readyz is 503. The leader is killed mid-job (verified, so copies
// and votes must carry over); the standby takes over at once (SQLite's lease is a lock the kernel
// drops), the workers, given both addresses, follow it, and the job ends exact.
TEST_F(ClusterTest, AStandbyTakesOverWhenTheLeaderIsKilledMidJob) {
  const int leader_port = start_coordinator();
  ASSERT_GT(leader_port, 0);
  const std::string standby_port_file = dir_ + "/standby.port", standby_http_file = dir_ + "/standby.http";
  Process standby({c960::test::kCoordinatorBin, "--listen=127.0.0.1:0", "--port-file=" + standby_port_file,
                   "--http-listen=127.0.0.1:0", "--http-port-file=" + standby_http_file, "--db=" + db_},
                  dir_ + "/standby.log");
  int standby_port = 0, standby_http = 0;
  for (auto end = std::chrono::steady_clock::now() + 20s;
       std::chrono::steady_clock::now() < end &&
       !(absl::SimpleAtoi(absl::StripAsciiWhitespace(read_file(standby_port_file)), &standby_port) &&
         absl::SimpleAtoi(absl::StripAsciiWhitespace(read_file(standby_http_file)), &standby_http));)
    std::this_thread::sleep_for(20ms);
  ASSERT_GT(standby_port, 0) << read_file(dir_ + "/standby.log");
  ASSERT_GT(standby_http, 0) << read_file(dir_ + "/standby.log");
  const std::string leader_address = absl::StrCat("127.0.0.1:", leader_port);
  // On either store the standby names the leader (SQLite: the lease file; PostgreSQL: the row
  // the advisory lock's holder wrote), and the takeover is the lease's second holding.
  const std::string named_leader = leader_address;
  const int64_t new_epoch = 2;
  const std::string standby_address = absl::StrCat("127.0.0.1:", standby_port);
  // Channels that reconnect within a tenth of a second, as the tools' do (cluster/channel.cpp).
  grpc::ChannelArguments fast;
  fast.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 100);
  fast.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 100);
  fast.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 500);
  const auto standby_channel = grpc::CreateCustomChannel(standby_address, grpc::InsecureChannelCredentials(), fast);
  {  // the standby refuses, naming the leader (once it has read the lease after the leader wrote its port)
    auto standby_jobs = v1::JobService::NewStub(standby_channel);
    grpc::Status s;
    for (auto end = std::chrono::steady_clock::now() + 10s; std::chrono::steady_clock::now() < end;
         std::this_thread::sleep_for(50ms)) {
      v1::ListJobsResponse resp;
      s = standby_jobs->ListJobs(ctx().get(), v1::ListJobsRequest(), &resp);
      if (reason_of(s) == v1::ErrorInfo::REASON_NOT_LEADER && error_info_of(s).leader() == named_leader) break;
    }
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
    EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEADER);
    EXPECT_EQ(error_info_of(s).leader(), named_leader);
    const std::string readyz = dir_ + "/readyz";
    const int rc = std::system(absl::StrCat("curl -s -o ", readyz, " -w '%{http_code}' http://127.0.0.1:", standby_http,
                                            "/readyz > ", readyz, ".code")
                                   .c_str());
    ASSERT_EQ(rc, 0);
    EXPECT_EQ(read_file(readyz + ".code"), "503");
    EXPECT_TRUE(absl::StrContains(read_file(readyz), "standby")) << read_file(readyz);
  }
  const std::string both = absl::StrCat(leader_address, ",", standby_address);
  ClusterFixture::start_worker(0, {"--threads=1", "--hash=16", "--coordinator=" + both});
  ClusterFixture::start_worker(0, {"--threads=1", "--hash=16", "--coordinator=" + both});
  const v1::Job submitted = submit(6, "0-59", 0, v1::VERIFY_MODE_ALL);
  v1::Job job;
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.progress().units_done() >= 12; }, 60s, &job));
  ASSERT_EQ(job.state(), v1::JOB_STATE_RUNNING) << "the job ended before the kill";
  const int64_t done_before = job.progress().units_done();
  coordinator_->kill_now();
  const auto killed = std::chrono::steady_clock::now();
  channel_ = standby_channel;
  jobs_ = v1::JobService::NewStub(channel_);
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job&) { return true; }, 30s, &job))
      << read_file(dir_ + "/standby.log");
  const double takeover_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - killed).count();
  std::fprintf(stderr, "takeover: the standby served %.2f s after the leader was killed\n", takeover_s);
  EXPECT_GE(job.progress().units_done(), done_before) << "completed units were lost";
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }, 90s, &job))
      << read_file(dir_ + "/standby.log");
  expect_exact(job, 6, 60);
  // The tool, given both addresses with the first one dead, reaches the new leader.
  std::string out;
  const std::string o = dir_ + "/status.out";
  ASSERT_EQ(
      std::system(absl::StrCat(kCliBin, " status ", submitted.id(), " --coordinator ", both, " >", o, " 2>&1").c_str()),
      0)
      << read_file(o);
  EXPECT_TRUE(absl::StrContains(read_file(o), "SUCCEEDED")) << read_file(o);
  const std::string log = read_file(dir_ + "/standby.log");
  EXPECT_TRUE(absl::StrContains(log, absl::StrCat("took the leader lease (epoch ", new_epoch, ")"))) << log;
}

TEST_F(ClusterTest, WorkersStartedBeforeTheCoordinatorWaitForIt) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  start_worker(port);
  start_worker(port);
  std::this_thread::sleep_for(1s);  // they back off meanwhile
  ASSERT_EQ(start_coordinator(port), port);
  const v1::Job submitted = submit(3, "");
  v1::Job job;
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }, 60s, &job));
  expect_exact(job, 3, 960);
  // Both get through in the end, however their backoff lined up with the coordinator's start.
  EXPECT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.progress().workers_alive() == 2; }, 30s, &job))
      << job.progress().workers_alive() << " workers alive";
  // The text log says states in words, not the protocol's enum names.
  const std::string log = read_file(dir_ + "/coordinator1.log");
  EXPECT_TRUE(absl::StrContains(log, "engines builtin, trust new")) << log;
  EXPECT_TRUE(absl::StrContains(log, "(perft, verify ")) << log;
  for (const char* raw : {"TRUST_STATE_", "VERIFY_MODE_", "JOB_STATE_"})
    EXPECT_FALSE(absl::StrContains(log, raw)) << log;
}

// Issue 19: SIGTERM while a big plan runs ends the coordinator within its grace period (it used
// to wait for the plan: one submit kept it 29 minutes), and the submitter is told, not hung.
TEST_F(ClusterTest, SigtermDuringAPlanEndsTheCoordinatorPromptly) {
  const int port = start_coordinator();
  // An eager plan of some 7 million positions: seconds of walking.
  Process submit({kCliBin, "submit", "perft", "--coordinator", absl::StrCat("127.0.0.1:", port), "--depth", "9",
                  "--split-depth", "3", "--sps", "0-799"},
                 dir_ + "/submit.log");
  auto cpu_seconds = [](pid_t pid) {
    std::istringstream in(read_file(absl::StrCat("/proc/", pid, "/stat")));
    std::string field;
    double ticks = 0;
    for (int k = 1; in >> field; ++k)
      if (k == 14 || k == 15) ticks += std::stod(field);
    return ticks / double(sysconf(_SC_CLK_TCK));
  };
  const auto until = std::chrono::steady_clock::now() + 30s;
  while (cpu_seconds(coordinator_->pid()) < 0.5 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(20ms);
  coordinator_->signal(SIGTERM);
  const std::optional<int> rc = coordinator_->wait(5s);  // its gRPC server's grace is 2 s
  ASSERT_TRUE(rc.has_value()) << "the coordinator still runs 5 s after SIGTERM";
  EXPECT_EQ(*rc, 0);
  const std::optional<int> submitted = submit.wait(10s);
  ASSERT_TRUE(submitted.has_value()) << "c960 submit still waits after the coordinator stopped";
  EXPECT_NE(*submitted, 0) << read_file(dir_ + "/submit.log");
}

TEST_F(ClusterTest, WorkerStoppedWithSigtermFinishesOrReleasesAndExitsZero) {
  const int port = start_coordinator();
  Process* w1 = start_worker(port);
  const v1::Job submitted = submit(6, "0-23", 0);
  v1::Job job;
  auto busy = [](const v1::Job& j) { return j.progress().units_done() >= 1 && j.progress().units_leased() >= 1; };
  ASSERT_TRUE(wait_job(submitted.id(), busy, 60s, &job));
  w1->signal(SIGTERM);  // mid-unit: it finishes the running unit and releases the prefetched one
  std::optional<int> rc = w1->wait(30s);
  ASSERT_TRUE(rc.has_value()) << "worker did not stop";
  EXPECT_EQ(*rc, 0);
  ASSERT_TRUE(get(submitted.id(), &job).ok());
  EXPECT_EQ(job.progress().units_leased(), 0) << "units still leased to a stopped worker";
  const int64_t done_after_first = job.progress().units_done();

  // With no grace period the running unit is released unfinished.
  Process* w2 = start_worker(port, {"--grace-seconds=0"});
  ASSERT_TRUE(wait_job(
      submitted.id(),
      [&](const v1::Job& j) {
        return j.progress().units_done() > done_after_first && j.progress().units_leased() >= 1;
      },
      60s, &job));
  w2->signal(SIGTERM);
  rc = w2->wait(10s);
  ASSERT_TRUE(rc.has_value()) << "worker did not stop";
  EXPECT_EQ(*rc, 0);
  ASSERT_TRUE(get(submitted.id(), &job).ok());
  EXPECT_EQ(job.progress().units_leased(), 0);

  start_worker(port);
  ASSERT_TRUE(wait_job(
      submitted.id(), [](const v1::Job& j) { return j.state() != v1::JOB_STATE_RUNNING; }, 60s, &job));
  expect_exact(job, 6, 24);
}

TEST_F(ClusterTest, DuplicateAndLateCompletionsAreCountedOnce) {
  start_coordinator(0, {"--lease-seconds=1"});
  auto hello = [&](const std::string& name) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_threads(1);
    req.add_capabilities("perft");
    req.set_protocol_version(kProtocolVersion);
    v1::HelloResponse resp;
    EXPECT_TRUE(workers_stub_->Hello(ctx().get(), req, &resp).ok());
    return resp.worker_id();
  };
  auto acquire = [&](const std::string& w, int n) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w);
    req.set_max_units(n);
    v1::AcquireWorkResponse resp;
    EXPECT_TRUE(workers_stub_->AcquireWork(ctx().get(), req, &resp).ok());
    return resp;
  };
  auto call = [&](const std::string& w, const v1::Lease& l, const v1::UnitResult& result,
                  v1::CompleteUnitResponse* resp) {
    v1::CompleteUnitRequest req;
    req.set_worker_id(w);
    req.set_unit_id(l.unit_id());
    req.set_attempt(l.attempt());
    *req.mutable_result() = result;
    return workers_stub_->CompleteUnit(ctx().get(), req, resp);
  };
  auto complete = [&](const std::string& w, const v1::Lease& l, const v1::UnitResult& result) {
    v1::CompleteUnitResponse resp;
    grpc::Status s = call(w, l, result, &resp);
    EXPECT_TRUE(s.ok()) << s.error_message();
    return resp.outcome();
  };
  const std::string w1 = hello("one"), w2 = hello("two");
  ASSERT_NE(w1, w2);
  const v1::Job submitted = submit(3, "0,518", 0);
  v1::AcquireWorkResponse got = acquire(w1, 2);
  ASSERT_EQ(got.leases_size(), 2);
  const v1::UnitResult r0 = *compute_unit(got.leases(0).spec(), nullptr);
  EXPECT_EQ(complete(w1, got.leases(0), r0), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(complete(w1, got.leases(0), r0), v1::COMPLETION_OUTCOME_DUPLICATE);
  // A worker that never held the unit may not complete it, right or wrong.
  v1::CompleteUnitResponse foreign;
  const grpc::Status s = call(w2, got.leases(0), r0, &foreign);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << s.error_message();
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEASED);

  // w1 sits on the second unit past its lease: it goes to w2 with a new attempt.
  v1::AcquireWorkResponse again;
  for (auto end = std::chrono::steady_clock::now() + 20s;
       again.leases_size() == 0 && std::chrono::steady_clock::now() < end;) {
    std::this_thread::sleep_for(100ms);
    again = acquire(w2, 1);
  }
  ASSERT_EQ(again.leases_size(), 1);
  EXPECT_EQ(again.leases(0).unit_id(), got.leases(1).unit_id());
  EXPECT_EQ(again.leases(0).attempt(), 2);
  const v1::UnitResult r1 = *compute_unit(got.leases(1).spec(), nullptr);
  EXPECT_EQ(complete(w1, got.leases(1), r1), v1::COMPLETION_OUTCOME_ACCEPTED);  // late, but first
  EXPECT_EQ(complete(w2, again.leases(0), r1), v1::COMPLETION_OUTCOME_DUPLICATE);

  v1::Job job;
  ASSERT_TRUE(get(submitted.id(), &job).ok());
  expect_exact(job, 3, 2);
}

// Every program takes and refuses HOST:PORT in the same words (cluster/address.h), and the
// coordinator refuses a bad address before it opens or creates its store.
TEST_F(ClusterTest, BadAddressesAreUsageErrorsInEveryProgram) {
  const std::string db = dir_ + "/never.db";
  struct Case {
    std::vector<std::string> argv;
    std::string flag, why;
  };
  const std::vector<Case> cases = {
      {{test::kCoordinatorBin, "--listen=127.0.0.1:99999", "--db=" + db}, "--listen", "not in 1..65535 (or 0"},
      {{test::kCoordinatorBin, "--listen=127.0.0.1:0", "--http-listen=127.0.0.1", "--db=" + db},
       "--http-listen",
       "has no port"},
      {{test::kWorkerBin, "--coordinator=http://127.0.0.1:7960"}, "--coordinator", "without a scheme"},
      {{test::kWorkerBin, "--coordinator=::1"}, "--coordinator", "in brackets"},
      {{test::kCliBin, "status", "--coordinator=127.0.0.1:x"}, "--coordinator", "not a number"},
      {{test::kBin + "/tools/healthcheck/c960-healthcheck", "--addr=127.0.0.1:0"},
       "--addr",
       "port 0, not in 1..65535"}};
  for (const Case& c : cases) {
    const test::RunResult r = test::run(c.argv);
    EXPECT_EQ(r.exit_code, 2) << c.argv[0] << " " << c.argv[1] << "\n" << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, c.flag + ": '")) << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, c.why)) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(db));
}

// --db postgresql:// and its password: refused before any connection when the password would be on
// the command line or in a file others may read, or with SQLite's backups; an unreachable server
// names the URL (no password in it).
TEST_F(ClusterTest, DatabaseFlagsAreCheckedBeforeConnecting) {
  const std::string url = "postgresql://c960@127.0.0.1:1/none?connect_timeout=2";
  const std::string file = dir_ + "/db.password", open_file = dir_ + "/open.password";
  test::write_file(file, "secret\n");
  test::write_file(open_file, "secret\n");
  std::filesystem::permissions(file, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  std::filesystem::permissions(open_file, std::filesystem::perms::owner_read | std::filesystem::perms::group_read);
  struct Case {
    std::vector<std::string> args;
    std::string why;
  };
  const std::vector<Case> cases = {
      {{"--db=postgresql://c960:secret@127.0.0.1:1/none"}, "--db: a password in the URL is on the command line"},
      {{"--db=" + url, "--backup-dir=" + dir_ + "/backups"}, "--backup-dir: the store is a PostgreSQL database"},
      {{"--db=" + dir_ + "/c.db", "--db-password-file=" + file}, "--db-password-file: only with --db postgresql://"},
      {{"--db=" + url, "--db-password-file=" + open_file}, "is readable by group or others"},
      {{"--db=" + url, "--db-password-file=" + dir_ + "/missing"}, "--db-password-file: cannot read"},
      {{"--db=" + url, "--db-password-file=" + file}, "cannot connect to the database 'postgresql://c960@127.0.0.1:1/"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> argv = {test::kCoordinatorBin, "--listen=127.0.0.1:0"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const test::RunResult r = test::run(argv);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << "\n" << r.err;
    EXPECT_TRUE(absl::StrContains(r.err, c.why)) << r.err;
    EXPECT_FALSE(absl::StrContains(r.err, "secret")) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/backups"));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/c.db"));
}

TEST_F(ClusterTest, InvalidRequestsGetTheirStatusCodes) {
  start_coordinator();
  auto submit_code = [&](const std::function<void(v1::PerftJobSpec*)>& edit, const std::string& field) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->mutable_perft()->set_depth(3);
    edit(req.mutable_spec()->mutable_perft());
    v1::Job job;
    grpc::Status s = jobs_->SubmitJob(ctx().get(), req, &job);
    EXPECT_TRUE(absl::StartsWith(s.error_message(), field)) << s.error_message();
    return s.error_code();
  };
  using C = grpc::StatusCode;
  EXPECT_EQ(submit_code([](auto* s) { s->set_depth(0); }, "depth"), C::INVALID_ARGUMENT);
  EXPECT_EQ(submit_code([](auto* s) { s->set_depth(99); }, "depth"), C::INVALID_ARGUMENT);
  EXPECT_EQ(submit_code([](auto* s) { s->set_start_positions("0-960"); }, "start_positions"), C::INVALID_ARGUMENT);
  EXPECT_EQ(submit_code([](auto* s) { s->add_fens("rnbqkbnr/pppppppp/8/8 w KQkq - 0 1"); }, "fens[0]"),
            C::INVALID_ARGUMENT);
  EXPECT_EQ(submit_code([](auto* s) { s->set_split_depth(4); }, "split_depth"), C::INVALID_ARGUMENT);
  EXPECT_EQ(submit_code(
                [](auto* s) {
                  s->set_depth(8);
                  s->set_split_depth(6);
                },
                "plan too large"),
            C::RESOURCE_EXHAUSTED);
  {
    v1::SubmitJobRequest req;  // no kind
    v1::Job job;
    EXPECT_EQ(jobs_->SubmitJob(ctx().get(), req, &job).error_code(), C::INVALID_ARGUMENT);
  }
  v1::Job job;
  EXPECT_EQ(get("job-404", &job).error_code(), C::NOT_FOUND);
  EXPECT_EQ(get("../etc", &job).error_code(), C::INVALID_ARGUMENT);
  {
    v1::CancelJobRequest req;
    req.set_job_id("job-404");
    EXPECT_EQ(jobs_->CancelJob(ctx().get(), req, &job).error_code(), C::NOT_FOUND);
  }
  {
    v1::ListJobsRequest req;
    req.set_page_size(-5);
    v1::ListJobsResponse resp;
    EXPECT_EQ(jobs_->ListJobs(ctx().get(), req, &resp).error_code(), C::INVALID_ARGUMENT);
  }
  {
    v1::WatchJobRequest req;
    req.set_job_id("job-404");
    auto c = ctx();
    auto reader = jobs_->WatchJob(c.get(), req);
    v1::Job j;
    EXPECT_FALSE(reader->Read(&j));
    EXPECT_EQ(reader->Finish().error_code(), C::NOT_FOUND);
  }
  {
    v1::GetResultsRequest req;
    req.set_job_id("");
    auto c = ctx();
    auto reader = jobs_->GetResults(c.get(), req);
    v1::ResultChunk chunk;
    EXPECT_FALSE(reader->Read(&chunk));
    EXPECT_EQ(reader->Finish().error_code(), C::INVALID_ARGUMENT);
  }
  {
    v1::HelloRequest req;
    req.set_threads(1);
    v1::HelloResponse resp;
    grpc::Status old = workers_stub_->Hello(ctx().get(), req, &resp);  // no protocol version: an old worker
    EXPECT_EQ(old.error_code(), C::FAILED_PRECONDITION);
    EXPECT_EQ(reason_of(old), v1::ErrorInfo::REASON_INCOMPATIBLE_VERSION);
    req.set_protocol_version(kProtocolVersion);
    req.set_threads(-1);
    EXPECT_EQ(workers_stub_->Hello(ctx().get(), req, &resp).error_code(), C::INVALID_ARGUMENT);
  }
  {
    v1::AcquireWorkRequest req;
    req.set_worker_id("w-404");
    req.set_max_units(1);
    v1::AcquireWorkResponse resp;
    EXPECT_EQ(workers_stub_->AcquireWork(ctx().get(), req, &resp).error_code(), C::NOT_FOUND);
  }
  {
    v1::CompleteUnitRequest req;
    req.set_worker_id("w-404");
    req.set_unit_id("no slash");
    req.set_attempt(1);
    v1::CompleteUnitResponse resp;
    EXPECT_EQ(workers_stub_->CompleteUnit(ctx().get(), req, &resp).error_code(), C::INVALID_ARGUMENT);
  }
  {
    v1::RenewLeasesRequest req;
    req.set_worker_id("w-404");
    v1::RenewLeasesResponse resp;
    EXPECT_EQ(workers_stub_->RenewLeases(ctx().get(), req, &resp).error_code(), C::NOT_FOUND);
  }
  // The client commands turn them into exit code 2 and a message naming the field.
  std::string out, err;
  EXPECT_EQ(cli("submit perft --depth 0", &out, &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "depth")) << err;
  EXPECT_EQ(cli("submit perft --depth 3 --sps 0-2000", &out, &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "--sps")) << err;
  EXPECT_EQ(cli("submit perft --depth 2 --sp 518 --sps 1", &out, &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "give one of --sp, --sps and --fen")) << err;
  EXPECT_EQ(cli("submit perft --depth 2 --sp 960", &out, &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "--sp")) << err;
  EXPECT_EQ(cli("submit selfplay --sp 960 --games-per-position 1 --engine builtin --depth 1", &out, &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "--sp")) << err;
  // --sp N is --sps N, for submit as for perft and selfplay.
  ASSERT_EQ(cli("submit perft --depth 2 --sp 601 --quiet", &out, &err), 0) << err;
  ASSERT_EQ(cli("results " + std::string(absl::StripAsciiWhitespace(out)) + " --partial --format csv", &out, &err), 0)
      << err;
  EXPECT_TRUE(absl::StrContains(out, "\n601,")) << out;
  EXPECT_EQ(cli("status job-404", &out, &err), 2);
  EXPECT_TRUE(absl::StrContains(err, "job-404")) << err;
  EXPECT_EQ(cli("results job-404", &out, &err), 2);
  EXPECT_EQ(cli("watch job-404", &out, &err), 2);
  EXPECT_EQ(cli("cancel job-404", &out, &err), 2);
  // The coordinator is still serving.
  v1::ListJobsResponse list;
  EXPECT_TRUE(jobs_->ListJobs(ctx().get(), v1::ListJobsRequest(), &list).ok());
  EXPECT_TRUE(coordinator_->running());
}

TEST_F(ClusterTest, CancelEndsTheWatchWithFailure) {
  const int port = start_coordinator();
  const v1::Job submitted = submit(5, "0-99");  // no workers: it cannot finish
  std::string out, err;
  std::thread canceller([&] {
    std::this_thread::sleep_for(300ms);
    v1::CancelJobRequest req;
    req.set_job_id(submitted.id());
    v1::Job j;
    EXPECT_TRUE(jobs_->CancelJob(ctx().get(), req, &j).ok());
  });
  const int rc = cli("watch " + submitted.id(), &out, &err);
  canceller.join();
  EXPECT_EQ(rc, 1) << out << err;
  EXPECT_TRUE(absl::StrContains(out, "CANCELLED")) << out;
  (void)port;
}

}  // namespace
}  // namespace c960::cluster
