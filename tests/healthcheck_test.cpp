// c960-healthcheck (tools/healthcheck) against a gRPC server with the standard health service,
// as the container images' HEALTHCHECK runs it against the coordinator.
#include <gtest/gtest.h>
#include <memory>
#include <string>

#include <grpcpp/ext/health_check_service_server_builder_option.h>
#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/health_check_service_interface.h>

#include "core/version.h"
#include "tests/process.h"
#include "tests/test_paths.h"

namespace {

const std::string kHealthcheck = std::string(c960::test::binary_dir()) + "/tools/healthcheck/c960-healthcheck";

// A server on an ephemeral loopback port that serves grpc.health.v1.Health (and answers any
// other method UNIMPLEMENTED: a server needs at least one service of its own).
class HealthServer {
 public:
  HealthServer() {
    grpc::EnableDefaultHealthCheckService(true);
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    builder.RegisterCallbackGenericService(&generic_);
    server_ = builder.BuildAndStart();
  }
  ~HealthServer() { server_->Shutdown(); }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  grpc::HealthCheckServiceInterface* health() { return server_->GetHealthCheckService(); }

 private:
  int port_ = 0;
  grpc::CallbackGenericService generic_;
  std::unique_ptr<grpc::Server> server_;
};

TEST(Healthcheck, ServingServerExitsZero) {
  HealthServer server;
  ASSERT_NE(server.health(), nullptr);
  const c960::test::RunResult r = c960::test::run({kHealthcheck, "--addr", server.address()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "SERVING\n");
}

TEST(Healthcheck, NotServingExitsOne) {
  HealthServer server;
  server.health()->SetServingStatus("c960.v1.Coordinator", false);
  const c960::test::RunResult r =
      c960::test::run({kHealthcheck, "--addr=" + server.address(), "--service", "c960.v1.Coordinator"});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_EQ(r.out, "NOT_SERVING\n");
  server.health()->SetServingStatus("c960.v1.Coordinator", true);
  EXPECT_EQ(c960::test::run({kHealthcheck, "--addr", server.address(), "--service", "c960.v1.Coordinator"}).exit_code,
            0);
}

TEST(Healthcheck, UnknownServiceAndNoServerExitOne) {
  HealthServer server;
  c960::test::RunResult r = c960::test::run({kHealthcheck, "--addr", server.address(), "--service", "no.such.Service"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("code 5"), std::string::npos) << r.err;  // NOT_FOUND
  // Port 1 on loopback: nothing listens there.
  r = c960::test::run({kHealthcheck, "--addr", "127.0.0.1:1", "--timeout", "2"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("127.0.0.1:1"), std::string::npos) << r.err;
}

TEST(Healthcheck, BadUsageExitsTwoAndNamesTheOption) {
  for (const auto& [args, option] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--timeout", "0"}, "--timeout"},
           {{"--timeout", "x"}, "--timeout"},
           {{"--addr", "nohostport"}, "--addr"},
           {{"--addr"}, "--addr"},
           {{"--bogus"}, "--bogus"},
       }) {
    std::vector<std::string> argv = {kHealthcheck};
    argv.insert(argv.end(), args.begin(), args.end());
    const c960::test::RunResult r = c960::test::run(argv);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find(option), std::string::npos) << r.err;
  }
}

TEST(Healthcheck, VersionAndHelp) {
  c960::test::RunResult r = c960::test::run({kHealthcheck, "--version"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "c960-healthcheck " + std::string(c960::version()) + "\n");
  r = c960::test::run({kHealthcheck, "--help"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_NE(r.out.find("--addr HOST:PORT"), std::string::npos);
}

}  // namespace
