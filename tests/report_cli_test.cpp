// `c960 report` in process (cli::run): --from a table on disk writes one self-contained HTML
// file; wrong combinations of arguments and unreadable inputs are usage errors that name the
// option. The report of a cluster job is checked by tests/cluster/prometheus_test.sh, which has
// a finished job.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <gtest/gtest.h>
#include <sstream>
#include <string>

#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "tests/process.h"
#include "tests/test_paths.h"

namespace c960 {
namespace {

const std::string kTable = std::string(c960::test::data_dir()) + "/report/selfplay-seed1.csv";
const std::string kReference = std::string(c960::test::data_dir()) + "/report/selfplay-seed2.csv";

struct Ran {
  int code;
  std::string out, err;
};

Ran report(std::vector<std::string> args) {
  args.insert(args.begin(), "report");
  std::ostringstream out, err;
  const cli::Io io{out, err};
  const int code = cli::run(args, io);
  return {code, out.str(), err.str()};
}

TEST(ReportCli, FromATableWritesOneOfflineFile) {
  const std::string path = ::testing::TempDir() + "/c960-report-" + std::to_string(getpid()) + ".html";
  const Ran r = report({"--from", kTable, "--reference", kReference, "--title", "seed 1", "--out", path});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_NE(r.out.find("wrote " + path), std::string::npos) << r.out;
  const std::string html = test::slurp(path);
  std::filesystem::remove(path);
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u) << html.substr(0, 80);
  EXPECT_NE(html.find("<title>seed 1</title>"), std::string::npos);
  EXPECT_NE(html.find("selfplay-seed2.csv"), std::string::npos) << "the reference is named";
  EXPECT_NE(html.find("selfplay-seed1.csv"), std::string::npos) << "the table is named in the metadata";
  // Nothing to fetch: no script or style from elsewhere.
  EXPECT_EQ(html.find("<script src="), std::string::npos);
  EXPECT_EQ(html.find("<link rel=\"stylesheet\" href=\"http"), std::string::npos);
}

TEST(ReportCli, ToStdoutWithoutOut) {
  const Ran r = report({"--from", kTable});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_EQ(r.out.rfind("<!doctype html>", 0), 0u);
}

TEST(ReportCli, BadUsageNamesTheProblem) {
  const auto usage = [](std::vector<std::string> args, const std::string& needle) {
    const Ran r = report(args);
    EXPECT_EQ(r.code, cli::kExitUsage) << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err << " (expected '" << needle << "')";
  };
  usage({}, "either a job id or --from");
  usage({"job-1", "--from", kTable}, "either a job id or --from");
  usage({"--from", "/nonexistent/t.csv"}, "--from: cannot read '/nonexistent/t.csv'");
  usage({"--from", kTable, "--reference", "/nonexistent/r.csv"}, "--reference: cannot read");
  usage({"--from", kTable, "--coordinator", "127.0.0.1:1"}, "--coordinator: only for a job's report");
  // A file that is not a results table: the error names --from and the problem.
  const std::string junk = ::testing::TempDir() + "/c960-report-junk-" + std::to_string(getpid()) + ".csv";
  std::FILE* f = std::fopen(junk.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("a,b\n1,2\n", f);
  std::fclose(f);
  usage({"--from", junk}, "--from " + junk + ":");
  std::filesystem::remove(junk);
}

// Issue 20: the report of an adaptive run and of a two-engine match, from the tables c960
// selfplay wrote (tests/data/report/README.md says how).
TEST(ReportCli, AdaptiveAndMatchTables) {
  const std::string data = std::string(c960::test::data_dir()) + "/report/";
  Ran r = report({"--from", data + "adaptive-band.csv"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_NE(r.out.find("<h2>Adaptive allocation</h2>"), std::string::npos);
  EXPECT_NE(r.out.find("<th>table</th><td>adaptive-band.csv</td>"), std::string::npos);

  r = report({"--from", data + "match-builtin-stockfish.csv", "--title", "builtin vs Stockfish"});
  ASSERT_EQ(r.code, cli::kExitOk) << r.err;
  EXPECT_NE(r.out.find("<title>builtin vs Stockfish</title>"), std::string::npos);
  EXPECT_NE(r.out.find("<h2>Which positions favour which engine</h2>"), std::string::npos);
  EXPECT_EQ(r.out.find("id=\"adaptive\""), std::string::npos);

  // A match table with a broken count: refused, naming the file, the line and the field.
  std::vector<std::string> lines = absl::StrSplit(test::slurp(data + "match-builtin-stockfish.csv"), '\n');
  std::vector<std::string> fields = absl::StrSplit(lines[1], ',');
  fields[2] = "x";  // pairs
  lines[1] = absl::StrJoin(fields, ",");
  const std::string csv = absl::StrJoin(lines, "\n");
  const std::string bad = ::testing::TempDir() + "/c960-report-match-" + std::to_string(getpid()) + ".csv";
  std::FILE* f = std::fopen(bad.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs(csv.c_str(), f);
  std::fclose(f);
  r = report({"--from", bad});
  std::filesystem::remove(bad);
  EXPECT_EQ(r.code, cli::kExitUsage) << r.err;
  EXPECT_NE(r.err.find("--from " + bad + ": line 2, column 3 (pairs): 'x' is not a whole number"), std::string::npos)
      << r.err;
  // A match table goes without --reference.
  r = report({"--from", data + "match-builtin-stockfish.csv", "--reference", kReference});
  EXPECT_EQ(r.code, cli::kExitUsage) << r.err;
  EXPECT_NE(r.err.find("a reference table goes with self-play tables only"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace c960
