// The base of the cluster integration tests: a scratch directory per test (removed when the test
// passes, its logs printed when it fails), and the real coordinator and workers started on
// loopback with ephemeral ports; every process is stopped in TearDown, also after a failure.
// Built with C960_TEST_POSTGRES, the coordinator's store is a PostgreSQL database.
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "gtest/gtest.h"
#include "tests/cluster/pg_server.h"
#include "tests/process.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace c960::test {

inline const std::string kBin = c960::test::binary_dir();
inline const std::string kCoordinatorBin = kBin + "/coordinator/c960-coordinator";
inline const std::string kWorkerBin = kBin + "/worker/c960-worker";
inline const std::string kCliBin = kBin + "/cli/c960";

class ClusterFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = absl::StrCat(::testing::TempDir(), "/c960-", info->test_suite_name(), "-", info->name(), "-", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    db_ = dir_ + "/coordinator.db";
#ifdef C960_TEST_POSTGRES
    // The binary's PostgreSQL build (tests/CMakeLists.txt: *_pg_* tests): the store in a fresh
    // database of the process's scratch server (pg_server.h) instead.
    std::string why;
    bool installed = false;
    PgServer* pg = PgServer::shared(&why, &installed);
    if (!installed) GTEST_SKIP() << why;
    ASSERT_NE(pg, nullptr) << why;
    db_ = pg->fresh_database("cluster");
    ASSERT_FALSE(db_.empty()) << "createdb failed";
#endif
  }

  void TearDown() override {
    workers_.clear();
    coordinator_.reset();
    if (!HasFailure()) {
      std::filesystem::remove_all(dir_);
      return;
    }
    for (const auto& e : std::filesystem::directory_iterator(dir_))
      if (e.path().extension() == ".log")
        std::fprintf(stderr, "---- %s\n%s\n", e.path().c_str(), read_file(e.path()).c_str());
  }

  // Starts (or restarts, on the same store) the coordinator on `port` (0: any); returns the port
  // it serves on, or 0 after a test failure if it did not start.
  int start_coordinator(int port = 0, const std::vector<std::string>& extra = {}) {
    using namespace std::chrono_literals;
    const std::string port_file = dir_ + "/port";
    std::filesystem::remove(port_file);
    std::vector<std::string> argv = {kCoordinatorBin, absl::StrCat("--listen=127.0.0.1:", port),
                                     "--port-file=" + port_file, "--db=" + db_};
    argv.insert(argv.end(), extra.begin(), extra.end());
    coordinator_ = std::make_unique<Process>(argv, absl::StrCat(dir_, "/coordinator", ++coordinator_starts_, ".log"));
    for (auto end = std::chrono::steady_clock::now() + 20s; std::chrono::steady_clock::now() < end;) {
      int p = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(read_file(port_file)), &p) && p > 0) {
        port_ = p;
        channel_ = grpc::CreateChannel(absl::StrCat("127.0.0.1:", p), grpc::InsecureChannelCredentials());
        jobs_ = v1::JobService::NewStub(channel_);
        return p;
      }
      if (!coordinator_->running() || coordinator_->wait(10ms)) break;
      std::this_thread::sleep_for(20ms);
    }
    ADD_FAILURE() << "coordinator did not start";
    return 0;
  }

  // Starts a worker for the coordinator on `port` with the given flags.
  Process* start_worker(int port, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {kWorkerBin, absl::StrCat("--coordinator=127.0.0.1:", port)};
    argv.insert(argv.end(), flags.begin(), flags.end());
    workers_.push_back(std::make_unique<Process>(argv, absl::StrCat(dir_, "/worker", workers_.size(), ".log")));
    return workers_.back().get();
  }

  // Waits until the file at `path` (a process's log) contains `text`.
  bool wait_for_text(const std::string& path, const std::string& text, std::chrono::seconds timeout) {
    for (auto end = std::chrono::steady_clock::now() + timeout; std::chrono::steady_clock::now() < end;) {
      if (absl::StrContains(read_file(path), text)) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
  }

  // Stops the coordinator on `port` with `sig` and, `away` later, starts it again with `flags`,
  // under a running `watch` that writes to `log`: the watch says it is reconnecting, then that it
  // reconnected, and goes on. Call it in ASSERT_NO_FATAL_FAILURE.
  void restart_under_watch(Process& watch, const std::string& log, int port, int sig,
                           const std::vector<std::string>& flags, std::chrono::milliseconds away) {
    write_file(log, "");
    coordinator_->signal(sig);
    ASSERT_TRUE(
        wait_for_text(log, absl::StrCat("reconnecting to 127.0.0.1:", port, "... (since "), std::chrono::seconds(20)))
        << read_file(log);
    ASSERT_TRUE(coordinator_->wait(std::chrono::seconds(20))) << "the coordinator did not stop";
    std::this_thread::sleep_for(away);
    ASSERT_EQ(start_coordinator(port, flags), port);
    ASSERT_TRUE(
        wait_for_text(log, absl::StrCat("reconnected to 127.0.0.1:", port, " after "), std::chrono::seconds(30)))
        << read_file(log);
    ASSERT_FALSE(watch.wait(std::chrono::milliseconds(0)).has_value()) << "the watch ended: " << read_file(log);
  }

  std::string dir_, db_;
  int port_ = 0;
  int coordinator_starts_ = 0;
  std::unique_ptr<Process> coordinator_;
  std::vector<std::unique_ptr<Process>> workers_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<v1::JobService::Stub> jobs_;
};

}  // namespace c960::test
