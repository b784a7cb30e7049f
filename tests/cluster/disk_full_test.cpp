// A worker that starts while the coordinator cannot write its store (a file-size limit put on
// the running coordinator with prlimit, as a full disk looks to it) keeps saying why and
// retrying, and registers and finishes the job once the limit is lifted. A full disk in the
// middle of a job puts the coordinator in degraded mode (issue 35): not ready, one reload of its
// store for the episode however often workers retry, and the job ends exact once space returns.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/u128.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/cluster/reference.h"

namespace c960::test {
namespace {

using namespace std::chrono_literals;

class DiskFullTest : public ClusterFixture {
 protected:
  bool set_file_size_limit(const std::string& soft) {
    const CommandResult r =
        run_command(absl::StrCat("prlimit --pid ", coordinator_->pid(), " --fsize=", soft, ":unlimited"));
    EXPECT_EQ(r.exit_code, 0) << r.output;
    return r.exit_code == 0;
  }
  // The coordinator's CPU time so far (user + system), in seconds, from /proc.
  double cpu_seconds() {
    const std::string stat = read_file(absl::StrCat("/proc/", coordinator_->pid(), "/stat"));
    const size_t paren = stat.rfind(')');
    if (paren == std::string::npos) return -1;
    std::vector<std::string> f = absl::StrSplit(stat.substr(paren + 2), ' ');
    // Fields 14 and 15 of stat (utime, stime) are the 12th and 13th after the name.
    double utime = 0, stime = 0;
    if (f.size() < 13 || !absl::SimpleAtod(f[11], &utime) || !absl::SimpleAtod(f[12], &stime)) return -1;
    return (utime + stime) / double(sysconf(_SC_CLK_TCK));
  }
  // An HTTP GET of the coordinator's: "CODE BODY".
  std::string http_get(int port, const std::string& path) {
    const CommandResult r =
        run_command(absl::StrCat("curl -s --max-time 10 -w ' %{http_code}' http://127.0.0.1:", port, path, " 2>&1"));
    return r.output;
  }
  // Calls answered UNAVAILABLE so far, by the RPC histogram (also a coordinator without the
  // store's metrics: before degraded mode each was a full reload of the store).
  double unavailable_calls(int port) {
    double n = 0;
    for (absl::string_view line : absl::StrSplit(http_get(port, "/metrics"), '\n')) {
      if (!absl::StartsWith(line, "c960_rpc_duration_seconds_count{") || !absl::StrContains(line, "\"UNAVAILABLE\""))
        continue;
      double v = 0;
      if (absl::SimpleAtod(line.substr(line.rfind(' ') + 1), &v)) n += v;
    }
    return n;
  }
  // A metric's value from /metrics (-1 when not found).
  double metric(int port, const std::string& name) {
    for (absl::string_view line : absl::StrSplit(http_get(port, "/metrics"), '\n')) {
      if (!absl::StartsWith(line, name + " ")) continue;
      double v = 0;
      if (absl::SimpleAtod(line.substr(name.size() + 1), &v)) return v;
    }
    return -1;
  }
  v1::Job get_job(const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::GetJobRequest get;
    get.set_job_id(id);
    v1::Job j;
    EXPECT_TRUE(jobs_->GetJob(&ctx, get, &j).ok());
    return j;
  }

  // The job's results stream: `roots` positions, each the published perft(depth).
  void expect_exact_results(const std::string& job_id, int depth, int roots) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
    v1::GetResultsRequest results;
    results.set_job_id(job_id);
    auto reader = jobs_->GetResults(&ctx, results);
    int read = 0;
    for (v1::ResultChunk c; reader->Read(&c); ++read)
      EXPECT_EQ(uint64_t(cluster::from_proto(c.perft().nodes())),
                reference().at(c.perft().start_position())[size_t(depth)]);
    EXPECT_TRUE(reader->Finish().ok());
    EXPECT_EQ(read, roots);
  }
};

TEST_F(DiskFullTest, WorkerRetriesHelloUntilTheCoordinatorCanWriteAgain) {
  const int port = start_coordinator();
  ASSERT_GT(port, 0);
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_perft()->set_depth(4);
  req.mutable_spec()->mutable_perft()->set_start_positions("0-3");
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  v1::Job job;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    ASSERT_TRUE(jobs_->SubmitJob(&ctx, req, &job).ok());
  }
  // Every write of the store past its first byte now fails (EFBIG), as on a full disk.
  ASSERT_TRUE(set_file_size_limit("1"));
  start_worker(port, {"--name=w", "--threads=1"});
  const std::string log = dir_ + "/worker0.log";
  ASSERT_TRUE(wait_for_text(log, "the disk is full", 20s)) << read_file(log);
  // Still trying a while later, not gone.
  std::this_thread::sleep_for(1500ms);
  EXPECT_TRUE(workers_[0]->running()) << read_file(log);
  EXPECT_FALSE(absl::StrContains(read_file(log), "registered as")) << read_file(log);
  EXPECT_TRUE(absl::StrContains(read_file(log), "retrying in")) << read_file(log);
  EXPECT_TRUE(coordinator_->running());

  ASSERT_TRUE(set_file_size_limit("unlimited"));
  EXPECT_TRUE(wait_for_text(log, "registered as", 20s)) << read_file(log);
  v1::Job j;
  for (auto end = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < end;) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::GetJobRequest get;
    get.set_job_id(job.id());
    ASSERT_TRUE(jobs_->GetJob(&ctx, get, &j).ok());
    if (j.state() != v1::JOB_STATE_RUNNING) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED) << j.ShortDebugString();
  expect_exact_results(job.id(), 4, 4);
}

TEST_F(DiskFullTest, AFullDiskMidJobDegradesWithoutAReloadPerRetryAndTheJobEndsExact) {
  const std::string http_port_file = dir_ + "/http-port";
  const int port = start_coordinator(0, {"--http-listen=127.0.0.1:0", "--http-port-file=" + http_port_file});
  ASSERT_GT(port, 0);
  int http = 0;
  ASSERT_TRUE(absl::SimpleAtoi(absl::StripAsciiWhitespace(read_file(http_port_file)), &http)) << http_port_file;
  EXPECT_TRUE(absl::EndsWith(http_get(http, "/readyz"), " 200")) << http_get(http, "/readyz");
  // Many small units: completions keep coming while the disk fills.
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_perft()->set_depth(5);
  req.mutable_spec()->mutable_perft()->set_start_positions("0-59");
  req.mutable_spec()->mutable_perft()->set_split_depth(1);
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  v1::Job job;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 30s);
    ASSERT_TRUE(jobs_->SubmitJob(&ctx, req, &job).ok());
  }
  start_worker(port, {"--name=w1", "--threads=1"});
  start_worker(port, {"--name=w2", "--threads=1"});
  for (auto end = std::chrono::steady_clock::now() + 60s;
       std::chrono::steady_clock::now() < end && get_job(job.id()).progress().units_done() < 40;)
    std::this_thread::sleep_for(20ms);
  ASSERT_GE(get_job(job.id()).progress().units_done(), 40);
  ASSERT_EQ(get_job(job.id()).state(), v1::JOB_STATE_RUNNING) << "the job ended before the disk filled";
  const double reloads_before = metric(http, "c960_store_reloads_total");
  const double unavailable_before = unavailable_calls(http);

  // The episode: 4 s of a full disk while both workers retry.
  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(set_file_size_limit("1"));
  ASSERT_TRUE(wait_for_text(dir_ + "/worker0.log", "the disk is full", 20s)) << read_file(dir_ + "/worker0.log");
  std::this_thread::sleep_for(4s);
  const std::string readyz = http_get(http, "/readyz");
  const double degraded = metric(http, "c960_store_degraded");
  const double reloads = metric(http, "c960_store_reloads_total");
  const int64_t done_during = get_job(job.id()).progress().units_done();  // reads are served
  const double cpu1 = cpu_seconds();
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // (Its log cannot tell: the file-size limit stops its log file's writes too.)
  std::printf(
      "disk-full episode: coordinator CPU %.3f s over %.2f s (%.1f%% of a core); %g calls answered UNAVAILABLE; "
      "store reloads %g\n",
      cpu1 - cpu0, wall, 100 * (cpu1 - cpu0) / wall, unavailable_calls(http) - unavailable_before,
      reloads - reloads_before);
  EXPECT_TRUE(absl::StartsWith(readyz, "not ready: the store refuses writes")) << readyz;
  EXPECT_TRUE(absl::EndsWith(readyz, " 503")) << readyz;
  EXPECT_TRUE(absl::StrContains(readyz, "disk is full")) << readyz;
  EXPECT_EQ(degraded, 1);
  // One reload for the episode (the failed commit), none per retry.
  EXPECT_LE(reloads - reloads_before, 1) << "reloads during the episode";
  EXPECT_GT(done_during, 0);

  ASSERT_TRUE(set_file_size_limit("unlimited"));
  v1::Job j;
  for (auto end = std::chrono::steady_clock::now() + 120s; std::chrono::steady_clock::now() < end;) {
    j = get_job(job.id());
    if (j.state() != v1::JOB_STATE_RUNNING) break;
    std::this_thread::sleep_for(50ms);
  }
  ASSERT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED) << j.ShortDebugString();
  EXPECT_TRUE(absl::EndsWith(http_get(http, "/readyz"), " 200")) << http_get(http, "/readyz");
  EXPECT_EQ(metric(http, "c960_store_degraded"), 0);
  EXPECT_EQ(coordinator_starts_, 1) << "no restart";
  expect_exact_results(job.id(), 5, 60);
}

}  // namespace
}  // namespace c960::test
