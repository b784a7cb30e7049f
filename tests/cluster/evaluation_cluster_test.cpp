// Evaluation jobs with the real binaries on loopback: each unit computed by two workers (verify
// hosts), whose copies must agree, and the job's results equal to `c960 evaluate` of the same
// spec on this machine, row for row: the built-in engine, and Stockfish when it is installed.
#include <chrono>
#include <filesystem>
#include <gtest/gtest.h>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/process.h"
#include "tests/selfplay_test_util.h"

namespace c960::cluster {
namespace {

using c960::test::kCliBin;
using c960::test::run_command;
using namespace std::chrono_literals;

class EvaluationClusterTest : public c960::test::ClusterFixture {
 protected:
  std::string cli(const std::string& args, int* exit_code) {
    const auto r = run_command(absl::StrCat(kCliBin, " ", args, " --coordinator 127.0.0.1:", port_));
    *exit_code = r.exit_code;
    return r.output;
  }

  bool wait_final(const std::string& id, v1::Job* job) {
    for (auto end = std::chrono::steady_clock::now() + 120s; std::chrono::steady_clock::now() < end;) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 5s);
      v1::GetJobRequest req;
      req.set_job_id(id);
      if (jobs_->GetJob(&ctx, req, job).ok() && job->state() != v1::JOB_STATE_RUNNING) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  // Runs the spec as a job on two workers offering `engines` (NAME=PATH) and locally with
  // `local_spec` (engines by path); the two CSVs must be equal.
  void run_both(const std::string& job_spec, const std::string& local_spec, const std::vector<std::string>& engines) {
    start_coordinator(0, {"--lease-seconds=5"});
    std::vector<std::string> flags = {"--threads=2", "--hash=0"};
    for (const std::string& e : engines) flags.push_back("--engine=" + e);
    start_worker(port_, flags);
    start_worker(port_, flags);
    int rc = -1;
    const std::string out = cli(absl::StrCat("submit evaluation ", job_spec, " --verify hosts --quiet"), &rc);
    ASSERT_EQ(rc, 0) << out;
    const std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(out), absl::ByAnyChar(" \n"));
    const std::string id = words.back();  // the job id is the last word (a note may come before it)
    v1::Job job;
    ASSERT_TRUE(wait_final(id, &job)) << "job " << id << " did not finish";
    ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.failure_detail();
    EXPECT_EQ(job.result_mismatches(), 0) << job.mismatch_detail();
    EXPECT_EQ(job.progress().disagreements(), 0);
    const std::string csv = cli(absl::StrCat("results ", id, " --format csv"), &rc);
    ASSERT_EQ(rc, 0) << csv;
    const auto local = run_command(absl::StrCat(kCliBin, " evaluate ", local_spec, " --format csv --threads 2"));
    ASSERT_EQ(local.exit_code, 0) << local.output;
    EXPECT_EQ(csv, local.output);
    // A row per position and engine, after the header.
    const std::vector<std::string> lines = absl::StrSplit(absl::StripAsciiWhitespace(csv), '\n');
    EXPECT_GT(lines.size(), 1u);
  }
};

TEST_F(EvaluationClusterTest, BuiltinJobEqualsLocalRun) {
  run_both("--sps 0-4,518 --engine builtin --depth 5 --positions-per-unit 2",
           "--sps 0-4,518 --engine builtin --depth 5", {});
}

TEST_F(EvaluationClusterTest, StockfishAndBuiltinJobEqualsLocalRun) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed (Debian package stockfish): the built-in engine's test ran";
  // The job names the engine "sf"; the local run gives its path, so the engine columns differ:
  // the local run is given the same name through a link.
  const std::string dir = ::testing::TempDir() + "/c960-eval-sf";
  std::filesystem::create_directories(dir);
  std::filesystem::remove(dir + "/sf");
  std::filesystem::create_symlink(sf, dir + "/sf");
  start_coordinator(0, {"--lease-seconds=5"});
  for (int i = 0; i < 2; ++i) start_worker(port_, {"--threads=2", "--hash=0", "--engine=sf=" + sf});
  int rc = -1;
  const std::string out =
      cli("submit evaluation --sps 0-3 --engine builtin sf --option sf:Hash=16 --depth 8 --verify hosts --quiet", &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(out), absl::ByAnyChar(" \n"));
  const std::string id = words.back();  // the job id is the last word (a note may come before it)
  v1::Job job;
  ASSERT_TRUE(wait_final(id, &job));
  ASSERT_EQ(job.state(), v1::JOB_STATE_SUCCEEDED) << job.failure_detail();
  EXPECT_EQ(job.result_mismatches(), 0) << job.mismatch_detail();
  EXPECT_EQ(job.progress().disagreements(), 0);
  const std::string csv = cli(absl::StrCat("results ", id, " --format csv"), &rc);
  ASSERT_EQ(rc, 0) << csv;
  const auto local = run_command(absl::StrCat("cd ", dir, " && ", kCliBin,
                                              " evaluate --sps 0-3 --engine builtin ./sf --option ./sf:Hash=16 "
                                              "--depth 8 --format csv"));
  ASSERT_EQ(local.exit_code, 0) << local.output;
  // The same figures; the local run names the engine by its path.
  std::string expected = local.output;
  for (size_t at = expected.find(",./sf,"); at != std::string::npos; at = expected.find(",./sf,", at))
    expected.replace(at, 6, ",sf,");
  EXPECT_EQ(csv, expected);
  EXPECT_NE(csv.find(",sf,8,0,"), std::string::npos) << csv;  // Stockfish's rows: depth limit 8, no node limit
}

TEST_F(EvaluationClusterTest, RefusesBadSpecsNamingTheField) {
  start_coordinator(0, {});
  int rc = -1;
  std::string out = cli("submit evaluation --sps 0-3 --engine builtin --depth 500", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("--depth"), std::string::npos) << out;
  out = cli("submit evaluation --sps 0-3 --engine /usr/games/stockfish --depth 5", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("is a path"), std::string::npos) << out;
  out = cli("submit evaluation --sps 0-3 --engine sf --option Threads=4 --depth 5", &rc);
  EXPECT_NE(rc, 0);
  EXPECT_NE(out.find("Threads=4"), std::string::npos) << out;
}

}  // namespace
}  // namespace c960::cluster
