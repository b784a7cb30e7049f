// Who may call what, against the real coordinator with TLS and tokens: anonymous, unknown and
// wrong-role callers against every RPC of both services, the right roles through, health open
// to all, the tokens file reloaded on SIGHUP and refused at start when bad; the c960 tool's
// messages; and the start-up rules (busy port, non-loopback listening).
#include "cluster/auth.h"

#include <condition_variable>
#include <google/protobuf/descriptor.h>
#include <mutex>
#include <optional>

#include <grpcpp/generic/generic_stub.h>

#include "absl/strings/match.h"
#include "cluster/config.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/cluster/pki.h"

namespace c960::test {
namespace {

using namespace std::chrono_literals;

constexpr const char* kRoles[] = {"admin", "submit", "read", "worker"};

struct Outcome {
  int exit_code = -1;
  std::string log;
};

// One call of `method` with an empty request (all a refusal needs) and `token` as its bearer
// token ("" none); the status, and the response bytes in *response.
grpc::Status generic_call(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& token, std::string* response = nullptr) {
  grpc::GenericStub stub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  if (!token.empty()) ctx.set_credentials(grpc::AccessTokenCredentials(token));
  grpc::ByteBuffer request, reply;
  grpc::Slice empty("");
  request = grpc::ByteBuffer(&empty, 1);
  std::mutex mu;
  std::condition_variable cv;
  bool done = false;
  grpc::Status status;
  stub.UnaryCall(&ctx, method, grpc::StubOptions(), &request, &reply, [&](grpc::Status s) {
    std::lock_guard lock(mu);
    status = std::move(s);
    done = true;
    cv.notify_all();
  });
  std::unique_lock lock(mu);
  cv.wait(lock, [&] { return done; });
  if (response) {
    std::vector<grpc::Slice> slices;
    response->clear();
    if (status.ok() && reply.Dump(&slices).ok())
      for (const grpc::Slice& s : slices) response->append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return status;
}

// The authenticator's refusals, told apart from a service's own PERMISSION_DENIED (e.g. a unit
// the worker does not hold) by the words the authenticator uses.
bool refused_by_authenticator(const grpc::Status& s) {
  return s.error_code() == grpc::StatusCode::UNAUTHENTICATED ||
         (s.error_code() == grpc::StatusCode::PERMISSION_DENIED &&
          absl::StrContains(s.error_message(), "may not call"));
}

std::vector<std::string> every_method() {
  std::vector<std::string> out;
  // Through a message of the same file, so that the linker keeps its descriptors.
  const google::protobuf::FileDescriptor* file = v1::Job::descriptor()->file();
  for (const char* service : {"JobService", "WorkerService"}) {
    const google::protobuf::ServiceDescriptor* sd = file->FindServiceByName(service);
    for (int i = 0; sd && i < sd->method_count(); ++i)
      out.push_back(absl::StrCat("/", sd->full_name(), "/", sd->method(i)->name()));
  }
  return out;
}

class AuthTest : public ClusterFixture {
 protected:
  void SetUp() override {
    ClusterFixture::SetUp();
    ASSERT_TRUE(make_pki(dir_, &pki_));
    for (const char* role : kRoles) tokens_[role] = new_token(role, absl::StrCat("the-", role));
    tokens_file_ = dir_ + "/tokens";
    write_tokens({"admin", "submit", "read", "worker"});
  }

  void write_tokens(const std::vector<std::string>& roles) {
    std::string text = "# role name hash\n";
    for (const std::string& r : roles) text += tokens_[r].line;
    write_file(tokens_file_, text);
  }

  std::vector<std::string> tls_flags() const {
    return {"--tls-cert=" + pki_.server_cert(), "--tls-key=" + pki_.server_key(), "--tokens=" + tokens_file_};
  }

  int start_secure() {
    const int port = start_coordinator(0, tls_flags());
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = read_file(pki_.ca());
    tls_channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::SslCredentials(ssl));
    return port;
  }

  // Starts the coordinator expecting it to refuse and exit by itself.
  Outcome start_expecting_exit(const std::vector<std::string>& flags) {
    const std::string log = absl::StrCat(dir_, "/refused", ++refused_, ".log");
    std::vector<std::string> argv = {kCoordinatorBin, "--db=" + dir_ + "/refused.db", "--port-file=" + dir_ + "/rport"};
    argv.insert(argv.end(), flags.begin(), flags.end());
    Process p(argv, log);
    const std::optional<int> code = p.wait(10s);
    return {code.value_or(-1), read_file(log)};
  }

  RunResult cli(std::vector<std::string> args, const std::string& role) {
    args.insert(args.begin(), kCli);
    args.push_back(absl::StrCat("--coordinator=127.0.0.1:", port_));
    args.push_back("--tls-ca=" + pki_.ca());
    if (!role.empty()) {
      const std::string file = absl::StrCat(dir_, "/", role, ".token");
      write_file(file, tokens_[role].token + "\n");
      args.push_back("--token-file=" + file);
    }
    return run(args);
  }

  Pki pki_;
  std::map<std::string, Token> tokens_;
  std::string tokens_file_;
  std::shared_ptr<grpc::Channel> tls_channel_;
  int refused_ = 0;
};

TEST_F(AuthTest, EveryRpcRefusesAnonymousUnknownAndWrongRoles) {
  ASSERT_GT(start_secure(), 0);
  const std::vector<std::string> methods = every_method();
  ASSERT_GE(methods.size(), 12u);
  for (const std::string& m : methods) {
    EXPECT_EQ(generic_call(tls_channel_, m, "").error_code(), grpc::StatusCode::UNAUTHENTICATED) << m;
    EXPECT_EQ(generic_call(tls_channel_, m, "c960_not-a-known-token").error_code(), grpc::StatusCode::UNAUTHENTICATED)
        << m;
    for (const char* role : kRoles) {
      const grpc::Status s = generic_call(tls_channel_, m, tokens_[role].token);
      if (cluster::role_may_call(*cluster::parse_role(role), m)) {
        EXPECT_FALSE(refused_by_authenticator(s)) << m << " as " << role << ": " << s.error_message();
      } else {
        EXPECT_EQ(s.error_code(), grpc::StatusCode::PERMISSION_DENIED) << m << " as " << role;
        EXPECT_TRUE(absl::StrContains(s.error_message(), absl::StrCat("role ", role))) << s.error_message();
      }
    }
  }
  // What the proto's comment promises, spelled out for a few, so the table cannot drift alone.
  EXPECT_EQ(generic_call(tls_channel_, "/c960.v1.JobService/SubmitJob", tokens_["read"].token).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(generic_call(tls_channel_, "/c960.v1.WorkerService/Hello", tokens_["submit"].token).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(generic_call(tls_channel_, "/c960.v1.JobService/ListJobs", tokens_["worker"].token).error_code(),
            grpc::StatusCode::PERMISSION_DENIED);
  EXPECT_EQ(generic_call(tls_channel_, "/c960.v1.JobService/ListJobs", tokens_["read"].token).error_code(),
            grpc::StatusCode::OK);
}

TEST_F(AuthTest, TwoTokensInOneCallAreRefused) {
  ASSERT_GT(start_secure(), 0);
  auto stub = v1::JobService::NewStub(tls_channel_);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  ctx.AddMetadata("authorization", "Bearer " + tokens_["read"].token);
  ctx.AddMetadata("authorization", "Bearer " + tokens_["admin"].token);
  v1::ListJobsResponse resp;
  const grpc::Status s = stub->ListJobs(&ctx, v1::ListJobsRequest(), &resp);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAUTHENTICATED) << s.error_message();
}

TEST_F(AuthTest, HealthIsOpenReflectionNeedsARole) {
  ASSERT_GT(start_secure(), 0);
  std::string reply;
  ASSERT_TRUE(generic_call(tls_channel_, "/grpc.health.v1.Health/Check", "", &reply).ok());
  EXPECT_EQ(reply, std::string("\x08\x01", 2)) << "not SERVING";  // HealthCheckResponse{status: SERVING}
  const std::string reflection = "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo";
  EXPECT_EQ(generic_call(tls_channel_, reflection, "").error_code(), grpc::StatusCode::UNAUTHENTICATED);
  EXPECT_FALSE(refused_by_authenticator(generic_call(tls_channel_, reflection, tokens_["worker"].token)));
}

TEST_F(AuthTest, SighupReloadsTheTokensFile) {
  write_tokens({"admin", "read"});
  ASSERT_GT(start_secure(), 0);
  const std::string list = "/c960.v1.JobService/ListJobs";
  EXPECT_EQ(generic_call(tls_channel_, list, tokens_["read"].token).error_code(), grpc::StatusCode::OK);
  EXPECT_EQ(generic_call(tls_channel_, list, tokens_["submit"].token).error_code(), grpc::StatusCode::UNAUTHENTICATED);
  write_tokens({"admin", "submit"});  // read revoked, submit added
  coordinator_->signal(SIGHUP);
  bool reloaded = false;
  for (auto end = std::chrono::steady_clock::now() + 10s; !reloaded && std::chrono::steady_clock::now() < end;) {
    reloaded = generic_call(tls_channel_, list, tokens_["submit"].token).ok();
    if (!reloaded) std::this_thread::sleep_for(50ms);
  }
  ASSERT_TRUE(reloaded) << "the added token does not work after SIGHUP";
  EXPECT_EQ(generic_call(tls_channel_, list, tokens_["read"].token).error_code(), grpc::StatusCode::UNAUTHENTICATED)
      << "the removed token still works";
  // A bad file is not taken: the tokens in use stay, and the log says why.
  write_file(tokens_file_, "admin x sha256:nothex\n");
  coordinator_->signal(SIGHUP);
  bool logged = false;
  for (auto end = std::chrono::steady_clock::now() + 10s; !logged && std::chrono::steady_clock::now() < end;) {
    logged = absl::StrContains(read_file(dir_ + "/coordinator1.log"), "ERROR");
    if (!logged) std::this_thread::sleep_for(50ms);
  }
  const std::string log = read_file(dir_ + "/coordinator1.log");
  EXPECT_TRUE(absl::StrContains(log, "--tokens not reloaded")) << log;
  EXPECT_TRUE(absl::StrContains(log, tokens_file_ + ":1: bad hash")) << log;
  EXPECT_EQ(generic_call(tls_channel_, list, tokens_["submit"].token).error_code(), grpc::StatusCode::OK);
  EXPECT_TRUE(coordinator_->running());
}

// A worker token revoked (taken out of the tokens file, SIGHUP) while its AcquireWork waits for
// work: the call ends UNAUTHENTICATED at the reload, long before its wait would, with no lease.
TEST_F(AuthTest, ARevokedWorkersWaitingAcquireEndsAtTheReload) {
  ASSERT_GT(start_secure(), 0);
  std::unique_ptr<v1::WorkerService::Stub> stub = v1::WorkerService::NewStub(tls_channel_);
  const auto context = [&](grpc::ClientContext* ctx, std::chrono::seconds deadline) {
    ctx->set_deadline(std::chrono::system_clock::now() + deadline);
    ctx->set_credentials(grpc::AccessTokenCredentials(tokens_["worker"].token));
  };
  v1::HelloRequest hello;
  hello.set_name("w");
  hello.set_threads(1);
  hello.add_capabilities("perft");
  hello.set_protocol_version(cluster::kProtocolVersion);
  v1::HelloResponse session;
  {
    grpc::ClientContext ctx;
    context(&ctx, 10s);
    grpc::Status s = stub->Hello(&ctx, hello, &session);
    ASSERT_TRUE(s.ok()) << s.error_message();
  }
  v1::AcquireWorkRequest req;
  req.set_worker_id(session.worker_id());
  req.set_max_units(1);
  req.set_wait_seconds(cluster::kMaxAcquireWaitSeconds);
  grpc::ClientContext ctx;
  context(&ctx, 120s);
  v1::AcquireWorkResponse resp;
  std::mutex mu;
  std::condition_variable cv;
  std::optional<grpc::Status> status;
  stub->async()->AcquireWork(&ctx, &req, &resp, [&](grpc::Status s) {
    std::lock_guard lock(mu);
    status = std::move(s);
    cv.notify_all();
  });
  // Parked: no answer while nothing changes.
  {
    std::unique_lock lock(mu);
    EXPECT_FALSE(cv.wait_for(lock, 1s, [&] { return status.has_value(); })) << status->error_message();
  }
  const auto revoked_at = std::chrono::steady_clock::now();
  write_tokens({"admin", "submit", "read"});
  coordinator_->signal(SIGHUP);
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return status.has_value(); })) << "the waiting call did not end";
  EXPECT_LT(std::chrono::steady_clock::now() - revoked_at, 30s);
  EXPECT_EQ(status->error_code(), grpc::StatusCode::UNAUTHENTICATED) << status->error_message();
  EXPECT_EQ(resp.leases_size(), 0);
}

TEST_F(AuthTest, BadTokensFileRefusedAtStartNamingTheLine) {
  write_file(tokens_file_,
             "# ok so far\n" + tokens_["admin"].line + "superuser root " + cluster::token_hash("x") + "\n");
  Outcome o = start_expecting_exit(tls_flags());
  EXPECT_EQ(o.exit_code, 2) << o.log;
  EXPECT_TRUE(absl::StrContains(o.log, tokens_file_ + ":3: unknown role 'superuser'")) << o.log;
  write_file(tokens_file_, tokens_["admin"].line + tokens_["admin"].line);
  o = start_expecting_exit(tls_flags());
  EXPECT_EQ(o.exit_code, 2) << o.log;
  EXPECT_TRUE(absl::StrContains(o.log, ":2: duplicate name 'the-admin'")) << o.log;
  o = start_expecting_exit(
      {"--tls-cert=" + pki_.server_cert(), "--tls-key=" + pki_.server_key(), "--tokens=" + dir_ + "/missing"});
  EXPECT_EQ(o.exit_code, 2) << o.log;
  EXPECT_TRUE(absl::StrContains(o.log, "missing: cannot read")) << o.log;
}

TEST_F(AuthTest, TokensWithoutTlsAreAUsageError) {
  const Outcome o = start_expecting_exit({"--listen=127.0.0.1:0", "--tokens=" + tokens_file_});
  EXPECT_EQ(o.exit_code, 2) << o.log;
  EXPECT_TRUE(absl::StrContains(o.log, "--tokens needs --tls-cert and --tls-key")) << o.log;
}

TEST_F(AuthTest, CliNamesTheRoleACommandNeeds) {
  ASSERT_GT(start_secure(), 0);
  RunResult r = cli({"status"}, "worker");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "c960 status needs a token of role submit, read or admin")) << r.err;
  r = cli({"submit", "perft", "--depth", "2", "--sps", "0"}, "read");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "needs a token of role submit or admin")) << r.err;
  r = cli({"status"}, "");
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "no token")) << r.err;
  r = cli({"submit", "perft", "--depth", "2", "--sps", "0"}, "submit");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = cli({"status"}, "read");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  // A token without TLS is refused before anything is sent.
  write_file(dir_ + "/t", tokens_["admin"].token);
  r = run({kCli, "status", absl::StrCat("--coordinator=127.0.0.1:", port_), "--token-file=" + dir_ + "/t"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "needs TLS")) << r.err;
}

TEST_F(AuthTest, PlaintextLoopbackCoordinatorLetsEveryoneIn) {
  const int port = start_coordinator();
  ASSERT_GT(port, 0);
  std::string reply;
  ASSERT_TRUE(generic_call(channel_, "/grpc.health.v1.Health/Check", "", &reply).ok());
  EXPECT_EQ(reply, std::string("\x08\x01", 2));
  for (const std::string& m : every_method())
    EXPECT_FALSE(refused_by_authenticator(generic_call(channel_, m, ""))) << m;
}

TEST_F(AuthTest, BusyPortExitsWithAddressInUse) {
  const int port = start_coordinator();
  ASSERT_GT(port, 0);
  const Outcome o = start_expecting_exit({absl::StrCat("--listen=127.0.0.1:", port)});
  EXPECT_EQ(o.exit_code, 2) << o.log;
  EXPECT_TRUE(absl::StrContains(o.log, "address in use")) << o.log;
  EXPECT_TRUE(coordinator_->running());
}

TEST_F(AuthTest, FileSizeLimitFailsTheWriteNotTheCoordinator) {
  // Under `ulimit -f` a write past the limit raises SIGXFSZ, which would kill the coordinator
  // without a word unless it ignores the signal (then the write fails with EFBIG).
  const std::string port_file = dir_ + "/port";
  coordinator_ = std::make_unique<Process>(
      std::vector<std::string>{"/bin/sh", "-c",
                               absl::StrCat("ulimit -f 1000 && exec ", kCoordinatorBin,
                                            " --listen=127.0.0.1:0 --port-file=", port_file, " --db=", db_)},
      dir_ + "/coordinator1.log");
  int port = 0;
  for (auto end = std::chrono::steady_clock::now() + 20s; port == 0 && std::chrono::steady_clock::now() < end;)
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(read_file(port_file)), &port)) std::this_thread::sleep_for(20ms);
  ASSERT_GT(port, 0) << read_file(dir_ + "/coordinator1.log");
  auto jobs = v1::JobService::NewStub(
      grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()));
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_perft()->set_depth(5);
  req.mutable_spec()->mutable_perft()->set_split_depth(2);  // about 400,000 units: megabytes
  v1::Job job;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 60s);
  EXPECT_FALSE(jobs->SubmitJob(&ctx, req, &job).ok());
  EXPECT_FALSE(coordinator_->wait(500ms)) << "the coordinator died: " << read_file(dir_ + "/coordinator1.log");
}

TEST_F(AuthTest, NonLoopbackListenNeedsTlsAndAuthenticationOrInsecure) {
  Outcome o = start_expecting_exit({"--listen=0.0.0.0:0"});
  EXPECT_EQ(o.exit_code, 2) << o.log;
  EXPECT_TRUE(absl::StrContains(o.log, "reaches beyond this machine")) << o.log;
  o = start_expecting_exit({"--listen=[::]:0"});
  EXPECT_EQ(o.exit_code, 2) << o.log;
  // TLS alone is not enough: it hides the traffic but lets anyone in.
  o = start_expecting_exit(
      {"--listen=0.0.0.0:0", "--tls-cert=" + pki_.server_cert(), "--tls-key=" + pki_.server_key()});
  EXPECT_EQ(o.exit_code, 2) << o.log;

  ASSERT_GT(start_coordinator(0, {"--listen=0.0.0.0:0", "--insecure"}), 0);
  const std::string log = read_file(dir_ + "/coordinator1.log");
  EXPECT_TRUE(absl::StrContains(log, "WARNING")) << log;
  EXPECT_TRUE(absl::StrContains(log, "WITHOUT AUTHENTICATION")) << log;
  coordinator_.reset();

  std::vector<std::string> secure = tls_flags();
  secure.push_back("--listen=0.0.0.0:0");
  ASSERT_GT(start_coordinator(0, secure), 0);
  EXPECT_FALSE(absl::StrContains(read_file(dir_ + "/coordinator2.log"), "WARNING"));
}

}  // namespace
}  // namespace c960::test
