// The daemons' command lines (cluster/flags.h).
#include "cluster/flags.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <grpc/support/log.h>
#include <iterator>
#include <string>
#include <vector>

#include "absl/flags/declare.h"
#include "absl/flags/flag.h"
#include "cluster/log.h"
#include "gtest/gtest.h"

ABSL_DECLARE_FLAG(std::string, log_format);  // every daemon's, from cluster/flags.cpp

ABSL_FLAG(std::string, test_address, "127.0.0.1:1", "an address");
ABSL_FLAG(int32_t, test_count, 3, "a count");
ABSL_FLAG(bool, test_switch, false, "a switch");
ABSL_FLAG(std::vector<std::string>, test_list, {}, "a list");

namespace c960::cluster {
namespace {

const DaemonCommand kCmd = {"c960-test",
                            "c960-test [--test-address A]",
                            "A test daemon.",
                            "9.9",
                            {{"test_address", "HOST:PORT", "C960_TEST_ADDRESS"},
                             {"test_count", "N"},
                             {"test_switch", ""},
                             {"test_list", "ITEM", "C960_TEST_LIST"}}};

std::optional<int> parse(std::vector<std::string> args) {
  args.insert(args.begin(), "c960-test");
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  return parse_daemon_flags(int(argv.size()), argv.data(), kCmd);
}

class DaemonFlags : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::SetFlag(&FLAGS_test_address, "127.0.0.1:1");
    absl::SetFlag(&FLAGS_test_count, 3);
    absl::SetFlag(&FLAGS_test_switch, false);
    absl::SetFlag(&FLAGS_test_list, {});
    absl::SetFlag(&FLAGS_log_format, "text");
    unsetenv("C960_TEST_ADDRESS");
    unsetenv("C960_TEST_LIST");
    unsetenv("C960_LOG_FORMAT");
  }
  void TearDown() override { set_log_format(LogFormat::kText); }
};

TEST_F(DaemonFlags, DashesUnderscoresValuesAndSwitches) {
  EXPECT_EQ(parse({"--test-address", "h:2", "--test_count=7", "--test-switch"}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_address), "h:2");
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 7);
  EXPECT_TRUE(absl::GetFlag(FLAGS_test_switch));
  EXPECT_EQ(parse({"--test-switch=false"}), std::nullopt);
  EXPECT_FALSE(absl::GetFlag(FLAGS_test_switch));
}

TEST_F(DaemonFlags, UsageErrorsExitTwo) {
  EXPECT_EQ(parse({"--bogus"}), 2);
  EXPECT_EQ(parse({"stray"}), 2);
  EXPECT_EQ(parse({"--test-count", "x"}), 2);
  EXPECT_EQ(parse({"--test-count"}), 2);  // needs a value
  EXPECT_EQ(parse({"-x"}), 2);
}

TEST_F(DaemonFlags, HelpAndVersionExitZero) {
  EXPECT_EQ(parse({"--help"}), 0);
  EXPECT_EQ(parse({"--test-count", "x", "-h"}), 0);  // help wins over errors, as in the c960 tool
  EXPECT_EQ(parse({"--version"}), 0);
  const std::string help = daemon_help(kCmd);
  EXPECT_NE(help.find("--test-address HOST:PORT"), std::string::npos) << help;
  EXPECT_NE(help.find("(default 127.0.0.1:1)"), std::string::npos) << help;
  EXPECT_NE(help.find("[env C960_TEST_ADDRESS]"), std::string::npos) << help;
  EXPECT_EQ(help.find("test_count"), std::string::npos) << "underscore spelling in: " << help;
  EXPECT_EQ(help.find("flagfile"), std::string::npos) << "absl's own flags in: " << help;
}

TEST_F(DaemonFlags, EnvironmentGivesDefaultsTheCommandLineOverrides) {
  setenv("C960_TEST_ADDRESS", "env:5", 1);
  EXPECT_EQ(parse({}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_address), "env:5");
  EXPECT_EQ(parse({"--test-address=cli:6"}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_address), "cli:6");
  unsetenv("C960_TEST_ADDRESS");
}

TEST_F(DaemonFlags, ListFlagsAddUpWhenRepeated) {
  using List = std::vector<std::string>;
  EXPECT_EQ(parse({"--test-list", "a=/x", "--test-list=b=/y", "--test-list", "c,d"}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_list), (List{"a=/x", "b=/y", "c", "d"}));
  // Once: replaces what the environment gave; repeated: adds to the command line's own.
  setenv("C960_TEST_LIST", "e", 1);
  EXPECT_EQ(parse({}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_list), (List{"e"}));
  EXPECT_EQ(parse({"--test-list", "f"}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_list), (List{"f"}));
  absl::SetFlag(&FLAGS_test_list, {});
  EXPECT_EQ(parse({"--test-list", "g", "--test-list", "h"}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_list), (List{"g", "h"}));
  unsetenv("C960_TEST_LIST");
  // Other flags keep absl's rule: the last one wins.
  EXPECT_EQ(parse({"--test-count", "1", "--test-count", "2"}), std::nullopt);
  EXPECT_EQ(absl::GetFlag(FLAGS_test_count), 2);
}

TEST_F(DaemonFlags, OwnFlagsExcludeAbslInternals) {
  const std::vector<std::string> own = own_flag_names();
  EXPECT_EQ(own, (std::vector<std::string>{"log_format", "test_address", "test_count", "test_list", "test_switch"}));
}

// --log-format belongs to every daemon: documented without the daemon listing it, checked, and
// applied to the log as the command line is read.
TEST_F(DaemonFlags, LogFormatIsCommonToEveryDaemon) {
  const std::string help = daemon_help(kCmd);
  EXPECT_NE(help.find("--log-format text|json"), std::string::npos) << help;
  EXPECT_NE(help.find("[env C960_LOG_FORMAT]"), std::string::npos) << help;
  EXPECT_EQ(parse({"--log-format", "json"}), std::nullopt);
  EXPECT_EQ(current_log_format(), LogFormat::kJson);
  EXPECT_EQ(parse({"--log-format=text"}), std::nullopt);
  EXPECT_EQ(current_log_format(), LogFormat::kText);
  EXPECT_EQ(parse({"--log-format", "xml"}), 2);
  setenv("C960_LOG_FORMAT", "json", 1);
  EXPECT_EQ(parse({}), std::nullopt);
  EXPECT_EQ(current_log_format(), LogFormat::kJson);
}

// gRPC's own lines go through the log, in its format, instead of raw "E1201 ..." lines in a JSON
// stream.
TEST(DaemonLog, GrpcLinesGoThroughTheLog) {
  const std::string path = ::testing::TempDir() + "/grpc_log_" + std::to_string(getpid());
  std::fflush(stderr);
  const int saved = dup(2), fd = open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0600);
  ASSERT_GE(fd, 0);
  dup2(fd, 2);
  set_log_silenced(false);
  set_log_format(LogFormat::kJson);
  set_log_program("c960-test");
  gpr_log_verbosity_init();  // what grpc_init does: errors are printed
  gpr_log(GPR_ERROR, "handshake failed: %s", "No match found for server name");
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(fd);
  set_log_format(LogFormat::kText);
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::remove(path.c_str());
  EXPECT_NE(
      text.find("\"level\":\"ERROR\",\"program\":\"c960-test\",\"event\":\"grpc\","
                "\"message\":\"grpc: handshake failed: No match found for server name\",\"file\":\"flags_test.cpp\""),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("E1"), std::string::npos) << text;  // no raw gRPC line
}

// A hold keeps events (not plain lines) until it is released, in their order, and drops them if
// it never is; an inner hold releases into the one around it.
TEST(DaemonLog, HeldEventsAreWrittenOnlyOnceReleased) {
  set_log_silenced(false);
  set_log_format(LogFormat::kText);
  ::testing::internal::CaptureStderr();
  {
    LogHold dropped;
    log_event(LogLevel::kInfo, "never", "an event of a transition that did not commit");
    log_error("a plain line is written at once");
  }
  std::string text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(text.find("did not commit"), std::string::npos) << text;
  EXPECT_NE(text.find("a plain line is written at once"), std::string::npos) << text;

  LogHold outer;
  ::testing::internal::CaptureStderr();
  log_event(LogLevel::kInfo, "first", "first event");
  {
    LogHold inner;
    log_event(LogLevel::kInfo, "second", "second event");
    inner.release();
  }
  text = ::testing::internal::GetCapturedStderr();
  EXPECT_EQ(text.find("event"), std::string::npos) << text;
  ::testing::internal::CaptureStderr();
  outer.release();
  text = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(text.find("first event"), std::string::npos) << text;
  ASSERT_NE(text.find("second event"), std::string::npos) << text;
  EXPECT_LT(text.find("first event"), text.find("second event")) << text;
}

}  // namespace
}  // namespace c960::cluster
