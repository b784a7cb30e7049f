// `c960 results` against a real coordinator and workers, run in process so that the tests can say
// whether stdout is a terminal: what a running, cancelled or finished job gives, with and without
// --partial, as a table, CSV and JSON (with the job's metadata).
#include <chrono>
#include <gtest/gtest.h>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cli/commands.h"
#include "cli/table_format.h"
#include "cluster/results_export.h"
#include "core/startpos.h"
#include "core/version.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/cluster/reference.h"

namespace c960::cluster {
namespace {

using c960::test::reference;
using namespace std::chrono_literals;

struct CliResult {
  int code = -1;
  std::string out, err;
};

std::vector<std::string> lines_of(const std::string& text) { return absl::StrSplit(text, '\n', absl::SkipEmpty()); }

class ResultsCliTest : public c960::test::ClusterFixture {
 protected:
  // The c960 tool in process, talking to this test's coordinator; `tty`: whether stdout is a
  // terminal.
  CliResult cli(std::vector<std::string> args, bool tty = false) {
    args.insert(args.end(), {"--coordinator", absl::StrCat("127.0.0.1:", port_)});
    std::ostringstream out, err;
    const cli::Io io{out, err, tty, false};
    CliResult r;
    r.code = cli::run(args, io);
    r.out = out.str();
    r.err = err.str();
    return r;
  }

  // Submits through `c960 submit`; the job id is the last word it prints.
  std::string submit(const std::vector<std::string>& args) {
    const CliResult r = cli(args);
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    const std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(r.out), ' ');
    return words.back();
  }

  bool wait_job(const std::string& id, const std::function<bool(const v1::Job&)>& pred, v1::Job* job) {
    for (auto end = std::chrono::steady_clock::now() + 60s; std::chrono::steady_clock::now() < end;) {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + 5s);
      v1::GetJobRequest req;
      req.set_job_id(id);
      if (jobs_->GetJob(&ctx, req, job).ok() && pred(*job)) return true;
      std::this_thread::sleep_for(20ms);
    }
    return false;
  }

  v1::Job cancel(const std::string& id) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::CancelJobRequest req;
    req.set_job_id(id);
    v1::Job job;
    EXPECT_TRUE(jobs_->CancelJob(&ctx, req, &job).ok());
    return job;
  }
};

TEST_F(ResultsCliTest, PerftJobRunningThenCancelledGivesWhatWasDoneWithPartial) {
  start_coordinator();
  // Perft 6, one unit a root: long enough to cancel with some roots done and others not.
  const std::string job =
      submit({"submit", "perft", "--depth", "6", "--sps", "0-39", "--split-depth", "0", "--verify", "off"});
  ASSERT_TRUE(absl::StartsWith(job, "job-")) << job;

  // No worker yet: running, and nothing done.
  CliResult r = cli({"results", job});
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_EQ(r.out, "");
  EXPECT_TRUE(absl::StrContains(r.err, "is still running (0 of 40 positions complete)")) << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, absl::StrCat("c960 watch ", job))) << r.err;
  r = cli({"results", job, "--partial"});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 41u) << r.out;
  EXPECT_EQ(lines[0], "sp,fen,depth,nodes,complete");
  EXPECT_EQ(lines[1], absl::StrCat("0,", *startpos_fen(0), ",6,0,false"));

  start_worker(port_, {"--threads=1", "--hash=16"});
  v1::Job j;
  ASSERT_TRUE(wait_job(
      job, [](const v1::Job& x) { return x.progress().units_done() >= 3; }, &j));
  const v1::Job cancelled = cancel(job);
  ASSERT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);
  const int64_t done = cancelled.progress().units_done();
  ASSERT_LT(done, 40) << "the job ended before the cancel";

  r = cli({"results", job});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(
      absl::StrContains(r.err, absl::StrCat("job ", job, " was cancelled (", done, " of 40 positions complete)")))
      << r.err;
  EXPECT_TRUE(absl::StrContains(r.err, "--partial")) << r.err;

  // CSV: every root, the complete ones exact.
  r = cli({"results", job, "--partial"});
  ASSERT_EQ(r.code, 0) << r.err;
  lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 41u) << r.out;
  int64_t complete = 0;
  for (size_t i = 1; i < lines.size(); ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    ASSERT_EQ(f.size(), 5u) << lines[i];
    int sp = -1;
    ASSERT_TRUE(absl::SimpleAtoi(f[0], &sp));
    EXPECT_EQ(sp, int(i) - 1);
    ASSERT_TRUE(f[4] == "true" || f[4] == "false") << lines[i];
    if (f[4] == "false") continue;
    ++complete;
    EXPECT_EQ(f[3], absl::StrCat(reference().at(sp)[6])) << lines[i];
  }
  EXPECT_EQ(complete, done);

  // JSON: the job's metadata, and "complete" on every root.
  r = cli({"results", job, "--partial", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& s :
       {absl::StrCat("{\"metadata\": {\"version\": \"", std::string(c960::version()), "\", \"job\": \"", job, "\""),
        std::string("\"state\": \"CANCELLED\""), std::string("\"created\": \"20"), std::string("\"verify\": \"off\""),
        std::string("\"depth\": 6, \"split_depth\": 0, \"positions\": 40, \"start_positions\": \"0-39\""),
        absl::StrCat("{\"sp\": 39, \"fen\": \"", *startpos_fen(39), "\", \"depth\": 6, \"nodes\": ")})
    EXPECT_TRUE(absl::StrContains(r.out, s)) << s << "\n" << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, ", \"complete\": false}")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, ", \"complete\": true}")) << r.out;

  // On a terminal: the table, incomplete roots marked and counted.
  r = cli({"results", job, "--partial"}, true);
  ASSERT_EQ(r.code, 0) << r.err;
  lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 43u) << r.out;
  EXPECT_TRUE(absl::StartsWith(lines[0], "sp  position")) << r.out;
  EXPECT_TRUE(absl::EndsWith(lines[40], "incomplete")) << r.out;
  EXPECT_EQ(lines[42], absl::StrCat(40 - done, " of 40 positions are incomplete (counts so far)"));
}

TEST_F(ResultsCliTest, FinishedPerftJobIsATableOnATerminalAndCsvElsewhere) {
  start_coordinator();
  start_worker(port_, {"--threads=1", "--hash=16"});
  const std::string job = submit({"submit", "perft", "--depth", "3", "--sps", "518,0-9", "--verify", "off"});
  v1::Job j;
  ASSERT_TRUE(wait_job(
      job, [](const v1::Job& x) { return x.state() != v1::JOB_STATE_RUNNING; }, &j));
  ASSERT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);

  // Not a terminal: the CSV as before, in root order.
  CliResult r = cli({"results", job});
  ASSERT_EQ(r.code, 0) << r.err;
  std::string csv = "sp,fen,depth,nodes\n";
  for (int sp : {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 518})
    absl::StrAppend(&csv, sp, ",", *startpos_fen(sp), ",3,", reference().at(sp)[3], "\n");
  EXPECT_EQ(r.out, csv);
  // --out on a terminal: still CSV, the file is for programs.
  const std::string path = dir_ + "/t.csv";
  r = cli({"results", job, "--out", path}, true);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(c960::test::read_file(path), csv);

  // A terminal, or --format text: sorted by start position, back ranks, separators, a total.
  for (const CliResult& t : {cli({"results", job}, true), cli({"results", job, "--format", "text"})}) {
    ASSERT_EQ(t.code, 0) << t.err;
    const std::vector<std::string> lines = lines_of(t.out);
    ASSERT_EQ(lines.size(), 13u) << t.out;
    uint64_t total = 0;
    for (const auto& [sp, counts] : reference())
      if (sp <= 9 || sp == 518) total += counts[3];
    ASSERT_EQ(cli::with_thousands(total).size(), 7u);  // the widest cell of the nodes column
    EXPECT_EQ(lines[0], " sp  position  depth    nodes");
    EXPECT_EQ(lines[1], absl::StrFormat("  0  BBQNNRKR      3  %7s", cli::with_thousands(reference().at(0)[3])));
    EXPECT_EQ(lines[11], "518  RNBQKBNR      3    8,902");
    EXPECT_TRUE(absl::StartsWith(lines[12], "     total")) << lines[12];
    EXPECT_TRUE(absl::EndsWith(lines[12], absl::StrCat(" ", cli::with_thousands(total)))) << lines[12];
  }
  r = cli({"results", job, "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, "\"state\": \"SUCCEEDED\"")) << r.out;
  EXPECT_TRUE(absl::StrContains(r.out, "\"finished\": \"20")) << r.out;
  EXPECT_TRUE(absl::StrContains(
      r.out, absl::StrCat("{\"sp\": 518, \"fen\": \"", *startpos_fen(518), "\", \"depth\": 3, \"nodes\": 8902}")))
      << r.out;
  EXPECT_FALSE(absl::StrContains(r.out, "complete")) << r.out;
  r = cli({"results", job, "--format", "xml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(absl::StrContains(r.err, "--format")) << r.err;
}

TEST_F(ResultsCliTest, SelfPlayJobCancelledGivesItsPartialStatistics) {
  start_coordinator();
  const std::string job = submit({"submit",   "selfplay", "--sps",       "0-7",  "--games-per-position", "4",
                                  "--engine", "builtin",  "--nodes",     "3000", "--random-plies",       "2",
                                  "--seed",   "7",        "--max-plies", "160",  "--games-per-unit",     "1",
                                  "--verify", "off"});
  ASSERT_TRUE(absl::StartsWith(job, "job-")) << job;
  CliResult r = cli({"results", job});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "is still running (0 of 8 positions complete)")) << r.err;

  start_worker(port_, {"--threads=1", "--hash=0"});
  v1::Job j;
  ASSERT_TRUE(wait_job(
      job, [](const v1::Job& x) { return x.progress().units_done() >= 5; }, &j));
  const v1::Job cancelled = cancel(job);
  ASSERT_EQ(cancelled.state(), v1::JOB_STATE_CANCELLED);
  const int64_t games = cancelled.progress().games_done();
  ASSERT_LT(games, 32) << "the job ended before the cancel";

  r = cli({"results", job});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, absl::StrCat("job ", job, " was cancelled ("))) << r.err;

  // CSV: a row per position and 'all', the complete ones with every game.
  r = cli({"results", job, "--partial"});
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = lines_of(r.out);
  ASSERT_EQ(lines.size(), 10u) << r.out;
  EXPECT_TRUE(absl::StartsWith(lines[0], "sp,fen,games,")) << lines[0];
  EXPECT_TRUE(absl::EndsWith(lines[0], ",complete")) << lines[0];
  int64_t sum = 0, incomplete = 0;
  for (size_t i = 1; i < 9; ++i) {
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    int64_t n = -1;
    ASSERT_TRUE(absl::SimpleAtoi(f[2], &n)) << lines[i];
    sum += n;
    EXPECT_EQ(f.back(), n == 4 ? "true" : "false") << lines[i];
    incomplete += n < 4;
  }
  EXPECT_EQ(sum, games);
  EXPECT_GE(incomplete, 1);
  EXPECT_TRUE(absl::StartsWith(lines[9], absl::StrCat("all,,", games, ","))) << lines[9];
  EXPECT_TRUE(absl::EndsWith(lines[9], ",false")) << lines[9];

  // JSON: the job's metadata and the spec's.
  r = cli({"results", job, "--partial", "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  for (const std::string& s :
       {absl::StrCat("{\"metadata\": {\"version\": \"", std::string(c960::version()), "\", \"job\": \"", job, "\""),
        std::string("\"state\": \"CANCELLED\""), std::string("\"engine\": \"builtin\""), std::string("\"nodes\": 3000"),
        std::string("\"seed\": 7"), std::string("\"date\": \""), std::string("\"complete\": false"),
        absl::StrCat("\"total\": {\"complete\": false, \"games\": ", games)})
    EXPECT_TRUE(absl::StrContains(r.out, s)) << s << "\n" << r.out;

  // On a terminal: the table, 'all' first.
  r = cli({"results", job, "--partial"}, true);
  ASSERT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> table = lines_of(r.out);
  ASSERT_EQ(table.size(), 14u) << r.out;  // then why nothing is ranked, and whether the start position matters
  EXPECT_TRUE(absl::StartsWith(table[0], "rank  id   ")) << r.out;
  EXPECT_TRUE(absl::StartsWith(table[1], "      all")) << r.out;
  EXPECT_EQ(table[10], absl::StrCat(incomplete, " of 8 positions are incomplete (games so far)"));
  EXPECT_TRUE(absl::StartsWith(table[11], "Not ranked yet: ranks need 3 positions with 20 games each")) << r.out;
  EXPECT_TRUE(absl::StartsWith(table[12], "Does the start position matter?")) << r.out;
  for (const std::string& line : table) EXPECT_LE(line.size(), 80u) << line;  // fits the terminal

  // The report: refused without --partial (naming it), and with it the games so far, said to be
  // partial in the title and the metadata.
  r = cli({"report", job});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(absl::StrContains(r.err, "--partial reports what it did")) << r.err;
  r = cli({"report", job, "--partial"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(absl::StrContains(r.out, absl::StrCat("report: ", job, " (partial, CANCELLED)"))) << r.out.substr(0, 400);
  EXPECT_TRUE(absl::StrContains(r.out, "these are the results so far"));
}

// The report of a job that kept no games: its statistics are the counts over every game, as
// `c960 results` gives them, not the stored games (there are none).
TEST_F(ResultsCliTest, ASelfPlayReportCountsEveryGameStoredOrNot) {
  start_coordinator();
  const std::string job =
      submit({"submit", "selfplay", "--sps", "0-1", "--games-per-position", "3", "--engine", "builtin", "--nodes",
              "500", "--random-plies", "2", "--max-plies", "80", "--store-games", "none", "--verify", "off"});
  ASSERT_TRUE(absl::StartsWith(job, "job-")) << job;
  start_worker(port_, {"--threads=1", "--hash=0"});
  v1::Job j;
  ASSERT_TRUE(wait_job(
      job, [](const v1::Job& x) { return x.state() == v1::JOB_STATE_SUCCEEDED; }, &j));
  CliResult r = cli({"report", job});
  ASSERT_EQ(r.code, 0) << r.err;
  // The page's summary counts the 6 games, as the results' 'all' row does.
  const CliResult csv = cli({"results", job});
  ASSERT_EQ(csv.code, 0) << csv.err;
  EXPECT_TRUE(absl::StrContains(csv.out, "\nall,,6,")) << csv.out;
  EXPECT_TRUE(absl::StrContains(r.out, "<div class=\"k\">games</div><div class=\"v\">6</div>"))
      << r.out.substr(0, 2000);
}

// The coordinator's downloads (/api/v1/jobs/ID/results.csv, .json) are cluster::results_file of
// the job and its results; `c960 results` writes its files with its own code: the two agree byte
// for byte, for a finished perft job (with and without --divide), a running one (--partial) and a
// finished self-play job.
TEST_F(ResultsCliTest, TheCoordinatorsResultsFilesAreTheToolsBytes) {
  start_coordinator();
  const std::string perft = submit({"submit", "perft", "--depth", "2", "--sps", "518,0-3", "--verify", "off"});
  const std::string selfplay =
      submit({"submit", "selfplay", "--sps", "0-1", "--games-per-position", "2", "--engine", "builtin", "--nodes",
              "300", "--random-plies", "2", "--max-plies", "60", "--verify", "off"});
  const auto file = [&](const std::string& id, ResultsFormat format, bool divide, bool partial) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + 10s);
    v1::GetResultsRequest req;
    req.set_job_id(id);
    req.set_divide(divide);
    req.set_omit_games(true);
    std::vector<v1::ResultChunk> chunks;
    auto reader = jobs_->GetResults(&ctx, req);
    for (v1::ResultChunk c; reader->Read(&c);) chunks.push_back(c);
    EXPECT_TRUE(reader->Finish().ok());
    v1::Job job;
    EXPECT_TRUE(wait_job(
        id, [](const v1::Job&) { return true; }, &job));
    absl::StatusOr<std::string> text = results_file(job, chunks, format, divide, partial);
    return text.ok() ? *text : std::string(text.status().message());
  };
  // Running, no worker yet: only with --partial, and refused alike without.
  CliResult r = cli({"results", perft, "--format", "csv", "--partial"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, file(perft, ResultsFormat::kCsv, false, true));
  EXPECT_TRUE(absl::StrContains(file(perft, ResultsFormat::kCsv, false, false), "0 of 5 positions complete"));

  start_worker(port_, {"--threads=1", "--hash=0"});
  v1::Job j;
  for (const std::string& id : {perft, selfplay})
    ASSERT_TRUE(wait_job(
        id, [](const v1::Job& x) { return x.state() == v1::JOB_STATE_SUCCEEDED; }, &j));
  for (const bool divide : {false, true}) {
    std::vector<std::string> args = {"results", perft, "--format", "csv"};
    if (divide) args.push_back("--divide");
    r = cli(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, file(perft, ResultsFormat::kCsv, divide, false));
    args[3] = "json";
    r = cli(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out, file(perft, ResultsFormat::kJson, divide, false));
  }
  r = cli({"results", selfplay, "--format", "csv"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, file(selfplay, ResultsFormat::kCsv, false, false));
  r = cli({"results", selfplay, "--format", "json"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.out, file(selfplay, ResultsFormat::kJson, false, false));
  EXPECT_TRUE(absl::StrContains(r.out, "\"metadata\": {\"version\": ")) << r.out;
}

}  // namespace
}  // namespace c960::cluster
