// The two binaries of the c960 tool (cli/main.cpp): c960 links no gRPC, protobuf or OpenSSL and
// executes c960-cluster for the commands that need them; every command, help text, error and
// exit code is the same as the in-process tool's (cli::run, all commands in one process).
#include <filesystem>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

const std::string kC960 = std::string(c960::test::binary_dir()) + "/cli/c960";

test::RunResult in_process(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const cli::Io io{out, err, false, false};
  test::RunResult r;
  r.exit_code = cli::run(args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

void expect_same(const std::vector<std::string>& args) {
  std::vector<std::string> argv = args;
  argv.insert(argv.begin(), kC960);
  const test::RunResult binary = test::run(argv);
  const test::RunResult tool = in_process(args);
  const std::string line = "c960 " + absl::StrJoin(args, " ");
  EXPECT_EQ(binary.exit_code, tool.exit_code) << line << "\nstderr: " << binary.err;
  EXPECT_EQ(binary.out, tool.out) << line;
  EXPECT_EQ(binary.err, tool.err) << line;
}

TEST(CliExec, EveryCommandAnswersAsTheInProcessTool) {
  for (const std::string& name : cli::command_names()) {
    expect_same({name, "--help"});
    expect_same({"help", name});
    expect_same({name, "--no-such-option"});
  }
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {},
           {"--help"},
           {"help"},
           {"help", "submt"},
           {"version"},
           {"--version"},
           {"submt"},
           {"completion", "bash"},
           {"completion", "zsh"},
           {"startpos", "518"},
           {"perft", "--sp", "518", "--depth", "2", "--quiet"},
           {"token", "new", "--role", "nobody", "--name", "x"},
           {"results"},
       })
    expect_same(args);
}

// A command run through c960-cluster writes c960's own stdout and files, and exits with its code.
TEST(CliExec, ClusterCommandsKeepTheStreamsAndExitCode) {
  const test::RunResult r = test::run({kC960, "token", "new", "--role", "read", "--name", "exec-test"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "\nread exec-test sha256:")) << r.out;
  test::ScratchDir dir;
  const test::RunResult report =
      test::run({kC960, "report", "--from", test::data_path("report/adaptive-band.csv"), "--out", dir.file("r.html")});
  EXPECT_EQ(report.exit_code, 0) << report.err;
  EXPECT_TRUE(absl::StrContains(test::slurp(dir.file("r.html")), "<html")) << report.out << report.err;
}

// c960 starts without loading the cluster's libraries: they are c960-cluster's alone.
TEST(CliExec, C960LinksNoClusterLibraries) {
  const test::RunResult r = test::run({"/usr/bin/readelf", "--dynamic", kC960});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_TRUE(absl::StrContains(r.out, "(NEEDED)")) << r.out;
  for (const char* lib : {"libgrpc", "libprotobuf", "libssl", "libcrypto", "libsqlite", "libpq"})
    EXPECT_FALSE(absl::StrContains(r.out, lib)) << lib << " in\n" << r.out;
  const test::RunResult cluster =
      test::run({"/usr/bin/readelf", "--dynamic", std::string(c960::test::binary_dir()) + "/cli/c960-cluster"});
  EXPECT_TRUE(absl::StrContains(cluster.out, "libgrpc")) << cluster.out;
}

// Without c960-cluster the local commands still run; the others fail with exit code 127 and say
// which file is missing and where it was looked for.
TEST(CliExec, MissingClusterBinaryIsNamed) {
  if (std::filesystem::exists(C960_CLUSTER_INSTALLED)) GTEST_SKIP() << C960_CLUSTER_INSTALLED << " is installed";
  test::ScratchDir dir;
  const std::string alone = dir.file("c960");
  std::filesystem::copy_file(kC960, alone);
  const test::RunResult local = test::run({alone, "startpos", "518"});
  EXPECT_EQ(local.exit_code, 0) << local.err;
  const test::RunResult r = test::run({alone, "status"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(absl::StartsWith(r.err, "c960 status: this command is in c960-cluster, which is not installed")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, dir.file("c960-cluster"))) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, C960_CLUSTER_INSTALLED)) << r.err;
}

}  // namespace
}  // namespace c960
