// A worker that starts while the coordinator cannot write its store (a file-size limit put on
// the running coordinator with prlimit, as a full disk looks to it) keeps saying why and
// retrying, and registers and finishes the job once the limit is lifted.
#include <chrono>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 30s);
  v1::GetResultsRequest results;
  results.set_job_id(job.id());
  auto reader = jobs_->GetResults(&ctx, results);
  int roots = 0;
  for (v1::ResultChunk c; reader->Read(&c); ++roots)
    EXPECT_EQ(uint64_t(cluster::from_proto(c.perft().nodes())), reference().at(c.perft().start_position())[4]);
  EXPECT_TRUE(reader->Finish().ok());
  EXPECT_EQ(roots, 4);
}

}  // namespace
}  // namespace c960::test
