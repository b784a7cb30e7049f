// A leader and its standbys, seen from the clients (cluster/coordinator_set.h): the address list
// flag, which coordinator calls go to after each kind of failure, and real calls through gRPC
// from the worker's connection and the c960 tool's client to fake coordinators on loopback: a
// standby that names the leader, one that names none, and an address where nothing listens.
#include "cluster/coordinator_set.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cli/client.h"
#include "cluster/address.h"
#include "cluster/backoff.h"
#include "cluster/errors.h"
#include "gtest/gtest.h"
#include "worker/connection.h"
#include "worker/enroll.h"
#include "worker/worker.h"

namespace c960::cluster {
namespace {

constexpr AddressRule kCoordinator = {.default_port = true, .unix_socket = true};

TEST(AddressList, ListsAreCheckedItemByItemAndNormalized) {
  absl::StatusOr<std::string> a = check_address_list("--coordinator", "a:1, b ,[::1]:3", kCoordinator);
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(*a, absl::StrCat("a:1,b:", kDefaultPort, ",[::1]:3"));
  EXPECT_EQ(split_address_list(*a), (std::vector<std::string>{"a:1", absl::StrCat("b:", kDefaultPort), "[::1]:3"}));
  // One address: as check_address (a unix socket included).
  EXPECT_EQ(*check_address_list("--coordinator", "unix:/run/c960.sock", kCoordinator), "unix:/run/c960.sock");
}

TEST(AddressList, RefusalsNameTheFlagAndTheProblem) {
  const auto refused = [](absl::string_view value) {
    absl::StatusOr<std::string> a = check_address_list("$C960_COORDINATOR", value, kCoordinator);
    EXPECT_FALSE(a.ok()) << value;
    if (a.ok()) return std::string();
    EXPECT_EQ(a.status().code(), absl::StatusCode::kInvalidArgument);
    const std::string m(a.status().message());
    EXPECT_EQ(m.rfind("$C960_COORDINATOR: ", 0), 0u) << m;
    return m;
  };
  EXPECT_NE(refused("a:1,,b:2").find("address 2 of 3 is empty"), std::string::npos);
  EXPECT_NE(refused("a:1,a:01").find("'a:1' is named twice"), std::string::npos);
  EXPECT_NE(refused("a:1,b:99999").find("99999"), std::string::npos);
  EXPECT_NE(refused("a:1,unix:/x").find("unix socket"), std::string::npos);
  std::string many;
  for (int k = 0; k <= kMaxCoordinatorAddresses; ++k) absl::StrAppend(&many, k ? "," : "", "h", k, ":1");
  EXPECT_NE(refused(many).find(absl::StrCat("at most ", kMaxCoordinatorAddresses)), std::string::npos);
}

std::vector<std::string> three_addresses(const std::string&, const std::string& port) {
  return {"192.0.2.1:" + port, "192.0.2.2:" + port, "[2001:db8::1]:" + port};
}
std::vector<std::string> no_addresses(const std::string&, const std::string&) { return {}; }

ChannelOptions plain(std::string address) {
  ChannelOptions o;
  o.address = std::move(address);
  return o;
}

TEST(CoordinatorSetTest, ANameThatResolvesToSeveralAddressesIsASetOfThem) {
  CoordinatorSet set(plain("coordinators.example:7960"), three_addresses);
  EXPECT_EQ(set.addresses(), (std::vector<std::string>{"192.0.2.1:7960", "192.0.2.2:7960", "[2001:db8::1]:7960"}));
  // An IP address is not looked up; a name that does not resolve stays as it is (gRPC resolves it).
  EXPECT_EQ(CoordinatorSet(plain("192.0.2.9:7960"), three_addresses).addresses(),
            std::vector<std::string>{"192.0.2.9:7960"});
  EXPECT_EQ(CoordinatorSet(plain("nowhere.example:7960"), no_addresses).addresses(),
            std::vector<std::string>{"nowhere.example:7960"});
}

TEST(CoordinatorSetTest, CallsFollowTheLeaderAStandbyNamesAndPassOverOnesThatDoNotAnswer) {
  CoordinatorSet set(plain("192.0.2.1:1,192.0.2.2:2,192.0.2.3:3"), nullptr);
  ASSERT_EQ(set.size(), 3u);
  EXPECT_EQ(set.current().index, 0u);
  // A standby naming the leader: straight to it.
  EXPECT_TRUE(set.failed(0, to_grpc(not_leader("standby", "192.0.2.3:3"))));
  EXPECT_EQ(set.current().address, "192.0.2.3:3");
  // A second report of a failure of a target calls have left moves nothing.
  EXPECT_FALSE(set.failed(0, grpc::Status(grpc::StatusCode::UNAVAILABLE, "late")));
  EXPECT_EQ(set.current().index, 2u);
  // No answer: the next address, round the list.
  EXPECT_TRUE(set.failed(2, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, "")));
  EXPECT_EQ(set.current().index, 0u);
  // A leader outside the set is not followed (not a destination a standby may pick): the next.
  EXPECT_TRUE(set.failed(0, to_grpc(not_leader("standby", "198.51.100.7:7960"))));
  EXPECT_EQ(set.current().index, 1u);
  // The leader's own answers (a refusal, a bad request) keep calls where they are.
  for (grpc::StatusCode code : {grpc::StatusCode::PERMISSION_DENIED, grpc::StatusCode::INVALID_ARGUMENT,
                                grpc::StatusCode::NOT_FOUND, grpc::StatusCode::RESOURCE_EXHAUSTED})
    EXPECT_FALSE(set.failed(1, grpc::Status(code, "")));
  EXPECT_FALSE(set.failed(1, grpc::Status::OK));
  EXPECT_EQ(set.current().index, 1u);
  EXPECT_EQ(set.moves(), 3);
  // One coordinator: nothing ever moves.
  CoordinatorSet one(plain("192.0.2.1:1"), nullptr);
  EXPECT_FALSE(one.failed(0, to_grpc(not_leader("standby", "192.0.2.1:1"))));
  EXPECT_TRUE(one.await_current(1));
}

// A client tries the next coordinator at once while there is one it has not tried since the
// last success, and backs off once every one failed (a round): standbys naming nobody, or each
// other, cannot keep it calling without a pause.
TEST(CoordinatorSetTest, ARoundEndsWhenEveryCoordinatorFailedAndASuccessStartsThemAgain) {
  CoordinatorSet set(plain("192.0.2.1:1,192.0.2.2:2,192.0.2.3:3"), nullptr);
  const grpc::Status gone(grpc::StatusCode::UNAVAILABLE, "connection refused");
  const grpc::Status nobody = to_grpc(not_leader("standby", ""));
  CoordinatorSet::After a = set.after(0, gone);
  EXPECT_TRUE(a.moved);
  EXPECT_FALSE(a.round_over);
  a = set.after(1, nobody);
  EXPECT_TRUE(a.moved);
  EXPECT_FALSE(a.round_over);
  a = set.after(2, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, ""));
  EXPECT_TRUE(a.moved);
  EXPECT_TRUE(a.round_over) << "all three failed: the client must wait";
  // The next round: again three failures before the next wait.
  EXPECT_FALSE(set.after(0, gone).round_over);
  EXPECT_FALSE(set.after(1, gone).round_over);
  // A success (or any answer of a leader) starts the rounds again.
  EXPECT_FALSE(set.after(2, grpc::Status::OK).round_over);
  EXPECT_FALSE(set.after(2, gone).round_over);
  EXPECT_FALSE(set.after(0, grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no")).moved);
  EXPECT_FALSE(set.after(0, gone).round_over);
  // Two standbys naming each other: the round ends after each was asked once.
  CoordinatorSet pair(plain("192.0.2.1:1,192.0.2.2:2"), nullptr);
  EXPECT_FALSE(pair.after(0, to_grpc(not_leader("standby", "192.0.2.2:2"))).round_over);
  EXPECT_EQ(pair.current().index, 1u);
  a = pair.after(1, to_grpc(not_leader("standby", "192.0.2.1:1")));
  EXPECT_TRUE(a.moved);
  EXPECT_TRUE(a.round_over);
  // A report about a target calls have left counts nothing.
  EXPECT_EQ(pair.after(1, gone).round_over, false);
  // One coordinator: every failure ends a round; its own answers do not.
  CoordinatorSet one(plain("192.0.2.1:1"), nullptr);
  a = one.after(0, gone);
  EXPECT_FALSE(a.moved);
  EXPECT_TRUE(a.round_over);
  EXPECT_FALSE(one.after(0, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "")).round_over);
}

// A fake coordinator: answers Hello and GetJob as a leader, or refuses both as a standby naming
// `leader`.
class FakeCoordinator final : public v1::WorkerService::Service, public v1::JobService::Service {
 public:
  explicit FakeCoordinator(std::string name) : name_(std::move(name)) {
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port_);
    b.RegisterService(static_cast<v1::WorkerService::Service*>(this));
    b.RegisterService(static_cast<v1::JobService::Service*>(this));
    server_ = b.BuildAndStart();
  }
  ~FakeCoordinator() override { server_->Shutdown(std::chrono::system_clock::now()); }
  std::string address() const { return absl::StrCat("127.0.0.1:", port_); }
  void standby(std::string leader) {
    std::lock_guard lock(mu_);
    leader_ = std::move(leader);
    leads_ = false;
  }
  void lead() {
    std::lock_guard lock(mu_);
    leads_ = true;
  }
  int calls() const { return calls_; }

  grpc::Status Hello(grpc::ServerContext*, const v1::HelloRequest*, v1::HelloResponse* resp) override {
    if (grpc::Status s = refuse(); !s.ok()) return s;
    resp->set_worker_id(name_);
    return grpc::Status::OK;
  }
  grpc::Status Enroll(grpc::ServerContext*, const v1::EnrollRequest*, v1::EnrollResponse* resp) override {
    if (grpc::Status s = refuse(); !s.ok()) return s;
    resp->set_token(absl::StrCat("token-of-", name_));
    resp->set_identity(name_);
    return grpc::Status::OK;
  }
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* req, v1::Job* job) override {
    if (grpc::Status s = refuse(); !s.ok()) return s;
    job->set_id(absl::StrCat(req->job_id(), "@", name_));
    return grpc::Status::OK;
  }

 private:
  std::string name_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
  grpc::Status refuse() {
    ++calls_;
    std::lock_guard lock(mu_);
    return leads_ ? grpc::Status::OK : to_grpc(not_leader(absl::StrCat(name_, " is a standby"), leader_));
  }
  std::mutex mu_;
  std::string leader_;
  bool leads_ = true;
  std::atomic<int> calls_{0};
};

// An address where nothing listens: a port taken from a server that then stopped.
std::string dead_address() {
  FakeCoordinator gone("gone");
  return gone.address();
}

TEST(CoordinatorSetTest, AWorkersCallsReachTheLeaderThroughAStandbyAndPastADeadAddress) {
  FakeCoordinator leader("leader"), standby("standby");
  standby.standby(leader.address());
  const std::string dead = dead_address();
  auto set = std::make_shared<CoordinatorSet>(plain(absl::StrJoin({dead, standby.address(), leader.address()}, ",")));
  std::unique_ptr<CoordinatorConnection> conn = grpc_connection(set);
  v1::HelloResponse resp;
  // The worker's own retry loop sends the call again after each failure: at most one try per
  // address before the leader answers.
  grpc::Status s;
  int tries = 0;
  for (; tries < 3; ++tries) {
    s = conn->hello(v1::HelloRequest(), &resp, 5'000);
    if (s.ok()) break;
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << s.error_message();
  }
  ASSERT_TRUE(s.ok()) << s.error_message();
  EXPECT_EQ(resp.worker_id(), "leader");
  EXPECT_EQ(tries, 2);  // the dead address, then the standby (which named the leader)
  EXPECT_EQ(standby.calls(), 1);
  // Later calls go straight to the leader.
  ASSERT_TRUE(conn->hello(v1::HelloRequest(), &resp, 5'000).ok());
  EXPECT_EQ(standby.calls(), 1);
  EXPECT_EQ(leader.calls(), 2);

  // The standby takes over and the old leader, now a standby, names it: calls follow at the next try.
  standby.lead();
  leader.standby(standby.address());
  s = conn->hello(v1::HelloRequest(), &resp, 5'000);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(reason_of(s), v1::ErrorInfo::REASON_NOT_LEADER);
  ASSERT_TRUE(conn->hello(v1::HelloRequest(), &resp, 5'000).ok());
  EXPECT_EQ(resp.worker_id(), "standby");
}

TEST(CoordinatorSetTest, TheToolsCallsReachTheLeaderWithinTheirRetries) {
  FakeCoordinator leader("leader"), standby("standby");
  standby.standby(leader.address());
  cli::Client client(plain(absl::StrCat(standby.address(), ",", leader.address())));
  v1::Job job;
  absl::Status s = client.get_job("j1", &job);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(job.id(), "j1@leader");
  EXPECT_EQ(standby.calls(), 1);
  // A standby that names no leader of the set: the tool tries the next address.
  FakeCoordinator lone("lone");
  lone.standby("");
  cli::Client other(plain(absl::StrCat(lone.address(), ",", leader.address())));
  s = other.get_job("j2", &job);
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_EQ(job.id(), "j2@leader");
}

// Seen in a test: a worker enrolling with coordinators that were all standbys naming no leader
// called them in a loop without a pause (thousands of log lines a second). It tries each once,
// then backs off (1 s, 1.6 s, 2.56 s, ... ceilings with full jitter): over 3 s that is a few
// rounds of two calls. Its stop ends a wait at once.
TEST(CoordinatorSetTest, EnrollingWithOnlyStandbysBacksOffAndAStopEndsTheWait) {
  FakeCoordinator a("a"), b("b");
  a.standby("");
  b.standby("");
  const std::string dir = absl::StrCat(::testing::TempDir(), "/enroll-backoff-", getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  StopSignal stop;
  absl::StatusOr<std::string> token;
  std::thread enrolling([&] {
    token = enrolled_token(plain(absl::StrCat(a.address(), ",", b.address())), "w", dir + "/credential", stop);
  });
  std::this_thread::sleep_for(std::chrono::seconds(3));  // the window calls are counted over
  const int calls = a.calls() + b.calls();
  stop.stop();
  enrolling.join();
  EXPECT_EQ(token.status().code(), absl::StatusCode::kCancelled) << token.status();
  EXPECT_GE(a.calls(), 1);
  EXPECT_GE(b.calls(), 1);
  // Rounds of two calls after waits of up to 1, 1.6, 2.56, 4.1, ... s: some 6 to 8 calls. The
  // bound is far above what the jitter can give (10 rounds in 3 s need nine draws near 0),
  // and far below a loop without a pause.
  EXPECT_LE(calls, 20);
  // A leader among them: enrolled on the next round.
  b.lead();
  StopSignal never;
  absl::StatusOr<std::string> got =
      enrolled_token(plain(absl::StrCat(a.address(), ",", b.address())), "w", dir + "/credential", never);
  ASSERT_TRUE(got.ok()) << got.status();
  EXPECT_EQ(*got, "token-of-b");
  std::filesystem::remove_all(dir);
}

// A worker over `set` for three seconds (the window its log lines are counted over), then
// stopped; `before_stop` runs at the end of the window.
struct WorkerWindow {
  int code = -1;
  std::string log;
  int lines = 0;
};
WorkerWindow run_worker_three_seconds(std::shared_ptr<CoordinatorSet> set,
                                      const std::function<void()>& before_stop = {}) {
  WorkerOptions options;
  options.hash_mb = 0;
  options.name = "lonely";
  Worker worker(grpc_connection(std::move(set)), options);
  ::testing::internal::CaptureStderr();
  std::atomic<int> code{-1};
  std::thread running([&] { code = worker.run(); });
  std::this_thread::sleep_for(std::chrono::seconds(3));
  if (before_stop) before_stop();
  worker.request_stop();
  running.join();
  WorkerWindow out;
  out.log = ::testing::internal::GetCapturedStderr();
  out.code = code.load();
  for (char c : out.log) out.lines += c == '\n';
  return out;
}

// A worker given two loopback ports where nothing listens: each try of a round fails at once
// (refused). It logs the first failure and then one line per wait, and tries again after waits
// that grow (1 s, 1.6 s, ... ceilings): over 3 s a handful of lines, not a stream. Its stop ends
// a wait at once.
TEST(CoordinatorSetTest, AWorkerWhoseCoordinatorsAllRefuseBacksOffAndStopsAtOnce) {
  const std::string dead_a = dead_address(), dead_b = dead_address();
  auto set = std::make_shared<CoordinatorSet>(plain(absl::StrCat(dead_a, ",", dead_b)));
  const WorkerWindow run = run_worker_three_seconds(set);
  EXPECT_EQ(run.code, 0) << run.log;
  EXPECT_GE(run.lines, 1) << "the first failure is said";
  // A round of two tries per wait, the waits drawn under 1, 1.6, 2.56, ... s: a few lines.
  EXPECT_LE(run.lines, 20) << run.log;
  EXPECT_LE(set->moves(), 20) << run.log;
}

// Coordinators that all answer, as standbys naming no leader: before, a worker logged two lines
// a try (the move and the retry) and tried again after 50 to 100 ms, doubling to 5 s: twelve
// lines or more in 3 s. It now tries each once, then logs one line per wait (1 s, 1.6 s, ...
// ceilings with full jitter): eleven lines in 3 s would need ten waits drawn near 0.
TEST(CoordinatorSetTest, AWorkerWhoseCoordinatorsAreAllStandbysNamingNobodyLogsOneLinePerWait) {
  FakeCoordinator a("a"), b("b");
  a.standby("");
  b.standby("");
  int calls = 0;
  const WorkerWindow run =
      run_worker_three_seconds(std::make_shared<CoordinatorSet>(plain(absl::StrCat(a.address(), ",", b.address()))),
                               [&] { calls = a.calls() + b.calls(); });
  EXPECT_EQ(run.code, 0) << run.log;
  EXPECT_GE(run.lines, 2) << "the first move and the first wait are said";
  EXPECT_LE(run.lines, 11) << run.log;
  EXPECT_GE(calls, 2) << "each was tried";
  EXPECT_LE(calls, 20);
}

}  // namespace
}  // namespace c960::cluster
