// A standby's side of leadership with real sockets and processes (coordinator/standby_service.h,
// coordinator/file_lease.h): every gRPC call a standby gets is sent to the leader, and the SQLite
// lease passes to a second holder the moment the first is killed.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <memory>
#include <string>
#include <sys/wait.h>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/errors.h"
#include "coordinator/file_lease.h"
#include "coordinator/leadership.h"
#include "coordinator/standby_service.h"
#include "gtest/gtest.h"

namespace c960::cluster {
namespace {

// A standby's gRPC port: every call of every service refused UNAVAILABLE naming the leader.
TEST(StandbyServiceTest, EveryCallIsSentToTheLeader) {
  grpc::EnableDefaultHealthCheckService(true);
  StandbyService standby;
  grpc::ServerBuilder b;
  int port = 0;
  b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  b.RegisterCallbackGenericService(&standby);
  std::unique_ptr<grpc::Server> server = b.BuildAndStart();
  ASSERT_NE(port, 0);
  server->GetHealthCheckService()->SetServingStatus(false);
  auto channel = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials());

  auto call_hello = [&] {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::HelloResponse resp;
    return v1::WorkerService::NewStub(channel)->Hello(&ctx, v1::HelloRequest(), &resp);
  };
  grpc::Status s = call_hello();
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEADER);
  EXPECT_EQ(error_info_of(s).leader(), "");
  EXPECT_NE(s.error_message().find("standby"), std::string::npos) << s.error_message();

  standby.set_leader("192.0.2.1:7960");
  s = call_hello();
  EXPECT_EQ(error_info_of(s).leader(), "192.0.2.1:7960");
  EXPECT_NE(s.error_message().find("/c960.v1.WorkerService/Hello"), std::string::npos) << s.error_message();
  {  // another service, a streaming call: the same
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    v1::WatchJobRequest req;
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader = v1::JobService::NewStub(channel)->WatchJob(&ctx, req);
    v1::Job job;
    EXPECT_FALSE(reader->Read(&job));
    s = reader->Finish();
    EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEADER);
    EXPECT_EQ(error_info_of(s).leader(), "192.0.2.1:7960");
  }
  server->Shutdown(std::chrono::system_clock::now());
}

}  // namespace
}  // namespace c960::cluster

namespace c960::cluster {
namespace {

// Coordinators on one SQLite file: the lease is a lock the kernel drops when its holder dies.
TEST(FileLeaseTest, ASecondCoordinatorWaitsAndTakesOverWhenTheFirstIsKilled) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/file_lease_", ::getpid(), "-leader");
  ::unlink(path.c_str());
  const LeaderTiming timing{.ttl_ms = 3'000};
  {
    FileLease a(path), b(path);
    LeaderElection ea(&a, "a:1", timing), eb(&b, "b:2", timing);
    EXPECT_EQ(ea.step(0), LeaderRole::kLeader);
    EXPECT_EQ(ea.epoch(), 1);
    EXPECT_EQ(eb.step(0), LeaderRole::kStandby);
    EXPECT_EQ(eb.leader(), "a:1");
    EXPECT_EQ(ea.step(1'000), LeaderRole::kLeader);  // renewed, same epoch
    EXPECT_EQ(ea.epoch(), 1);
    ASSERT_TRUE(a.release_lease("a:1", 1).ok());  // a clean shutdown
    EXPECT_EQ(eb.step(2'000), LeaderRole::kLeader);
    EXPECT_EQ(eb.epoch(), 2);
  }
  // A holder killed with SIGKILL (no destructor, no release): the next takes over at once.
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    FileLease lease(path);
    LeaderElection e(&lease, "child:3", timing);
    const char c = e.step(0) == LeaderRole::kLeader ? 'L' : 'S';
    if (::write(ready[1], &c, 1) != 1) ::_exit(1);
    ::pause();
    ::_exit(0);
  }
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ::close(ready[1]);
  ASSERT_EQ(c, 'L');
  FileLease d(path);
  LeaderElection ed(&d, "d:4", timing);
  EXPECT_EQ(ed.step(0), LeaderRole::kStandby);
  EXPECT_EQ(ed.leader(), "child:3");
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(ed.step(500), LeaderRole::kLeader);
  EXPECT_EQ(ed.epoch(), 4);  // a (1), b (2), the child (3), d (4)
  ::unlink(path.c_str());
}

}  // namespace
}  // namespace c960::cluster
