// `c960 watch`, `c960 status` and `c960 submit --watch/--quiet` against a real coordinator on
// loopback: the watch block on an 80-column terminal (replayed on a small terminal model), what
// the watch says while the coordinator is away, a watch of an address that never answers, and
// the status table and JSON.
#include <stdlib.h>

#include <atomic>
#include <chrono>
#include <future>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cli/client.h"
#include "cli/command.h"
#include "cli/watch.h"
#include "gtest/gtest.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/process.h"

namespace c960::test {
namespace {

using namespace std::chrono_literals;

// A terminal `width` columns wide that understands what the watch writes (\r, \n, ESC[nA,
// ESC[K): the screen it ends with, and whether any line ever reached the last column (where a
// real terminal wraps, and the block's redraw would go wrong).
struct Terminal {
  explicit Terminal(int width) : width(width) {}
  int width;
  std::vector<std::string> rows{""};
  size_t row = 0;
  bool overflowed = false;
  std::string bad_line;

  void feed(const std::string& s) {
    for (size_t i = 0; i < s.size(); ++i) {
      const char c = s[i];
      if (c == '\r') {
        col = 0;
      } else if (c == '\n') {
        if (++row == rows.size()) rows.emplace_back();
        col = 0;
      } else if (c == '\x1b' && i + 1 < s.size() && s[i + 1] == '[') {
        size_t j = i + 2;
        int n = 0;
        while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) n = n * 10 + (s[j++] - '0');
        if (j < s.size() && s[j] == 'A') row -= std::min<size_t>(row, size_t(std::max(n, 1)));
        if (j < s.size() && s[j] == 'K') rows[row].resize(std::min(rows[row].size(), col));
        i = j;
      } else {
        if (int(col) >= width - 1) {
          overflowed = true;
          bad_line = rows[row];
        }
        if (rows[row].size() <= col) rows[row].resize(col + 1, ' ');
        rows[row][col++] = c;
      }
    }
  }

 private:
  size_t col = 0;
};

class CliWatchTest : public ClusterFixture {
 protected:
  // Runs the c960 tool; returns its exit code, stdout in *out, stderr in *err.
  int cli(const std::vector<std::string>& args, std::string* out, std::string* err = nullptr) {
    std::vector<std::string> argv = {kCliBin};
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back(absl::StrCat("--coordinator=127.0.0.1:", port_));
    const RunResult r = run(argv);
    *out = r.out;
    if (err) *err = r.err;
    return r.exit_code;
  }

  std::string submit_quiet(const std::vector<std::string>& args) {
    std::vector<std::string> a = {"submit"};
    a.insert(a.end(), args.begin(), args.end());
    a.push_back("--quiet");
    std::string out, err;
    EXPECT_EQ(cli(a, &out, &err), 0) << err;
    return std::string(absl::StripTrailingAsciiWhitespace(out));
  }

  // follow_job in-process, as on a terminal of `width` columns.
  int watch_on_terminal(const std::string& id, int width, Terminal* term, std::string* err) {
    setenv("COLUMNS", absl::StrCat(width).c_str(), 1);
    std::ostringstream out, errs;
    const cli::Io io{out, errs, true, false};
    cli::Client client(absl::StrCat("127.0.0.1:", port_));
    const int rc = cli::follow_job(client, id, io, "watch");
    unsetenv("COLUMNS");
    term->feed(out.str());
    *err = errs.str();
    return rc;
  }
};

TEST_F(CliWatchTest, SubmitQuietPrintsTheIdAndSubmitWatchFollowsTheJob) {
  const int port = start_coordinator();
  start_worker(port, {"--threads=1", "--hash=16"});
  const std::string id = submit_quiet({"perft", "--depth", "3", "--sps", "0-1", "--verify", "off"});
  EXPECT_TRUE(absl::StartsWith(id, "job-")) << id;
  EXPECT_EQ(id.find_first_of(" \n"), std::string::npos) << id;
  std::string out, err;
  ASSERT_EQ(cli({"submit", "perft", "--depth", "3", "--sps", "2-3", "--verify", "off", "--watch"}, &out, &err), 0)
      << out << err;
  EXPECT_TRUE(absl::StrContains(out, "submitted perft depth 3")) << out;
  EXPECT_TRUE(absl::StrContains(out, "SUCCEEDED")) << out;
  EXPECT_TRUE(absl::StrContains(out, "took ")) << out;
  EXPECT_EQ(out.find('\x1b'), std::string::npos) << "no terminal, no ANSI";
  EXPECT_EQ(out.find('\r'), std::string::npos) << "no terminal, no carriage returns";
  // A refused submit exits as submit does, and watches nothing.
  ASSERT_EQ(
      cli({"submit", "perft", "--depth", "3", "--sps", "0", "--verify", "off", "--watch", "--request-id", "twice"},
          &out, &err),
      0);
  EXPECT_EQ(
      cli({"submit", "perft", "--depth", "4", "--sps", "0", "--verify", "off", "--watch", "--request-id", "twice"},
          &out, &err),
      2);
}

TEST_F(CliWatchTest, TheWatchBlockFitsAnEightyColumnTerminal) {
  const int port = start_coordinator();
  start_worker(port, {"--threads=1", "--hash=16"});
  const std::string perft = submit_quiet({"perft", "--depth", "5", "--sps", "0-3", "--verify", "off"});
  Terminal term(80);
  std::string err;
  ASSERT_EQ(watch_on_terminal(perft, 80, &term, &err), 0) << err;
  EXPECT_FALSE(term.overflowed) << "a line reached column 80: " << term.bad_line;
  // The block was redrawn in place: three lines, then the cursor on a fresh one.
  ASSERT_EQ(term.rows.size(), 4u) << absl::StrJoin(term.rows, "\n");
  EXPECT_TRUE(absl::StartsWith(term.rows[0], perft + "  perft d5  SUCCEEDED  100.0%  [###")) << term.rows[0];
  EXPECT_TRUE(absl::StartsWith(term.rows[1], "4/4 units  ")) << term.rows[1];
  EXPECT_TRUE(absl::StrContains(term.rows[1], " nodes  took 0:00:")) << term.rows[1];

  const std::string sp = submit_quiet({"selfplay", "--sps", "0-5", "--games-per-position", "4", "--engine", "builtin",
                                       "--nodes", "200", "--verify", "off", "--games-per-unit", "2"});
  Terminal term2(80);
  ASSERT_EQ(watch_on_terminal(sp, 80, &term2, &err), 0) << err;
  EXPECT_FALSE(term2.overflowed) << "a line reached column 80: " << term2.bad_line;
  ASSERT_EQ(term2.rows.size(), 6u) << absl::StrJoin(term2.rows, "\n");
  EXPECT_TRUE(absl::StrContains(term2.rows[0], "SUCCEEDED")) << term2.rows[0];
  EXPECT_TRUE(absl::StartsWith(term2.rows[1], "24/24 games")) << term2.rows[1];
  EXPECT_EQ(term2.rows[2], "best:  not ranked yet: 20 games a position (most so far: 4)") << term2.rows[2];
  EXPECT_EQ(term2.rows[3], "worst:") << term2.rows[3];
}

TEST_F(CliWatchTest, TheWatchSaysWhileTheCoordinatorIsAway) {
  const int port = start_coordinator();
  const std::string id = submit_quiet({"perft", "--depth", "5", "--sps", "0-99", "--verify", "off"});  // no workers
  const std::string log = dir_ + "/watch.log";
  Process watch({kCliBin, "watch", id, absl::StrCat("--coordinator=127.0.0.1:", port)}, log);
  ASSERT_TRUE(wait_for_text(log, id + "  perft d5  RUNNING", 20s)) << read_file(log);
  // Killed, then stopped gracefully (its streams end CANCELLED, and so may the first new one).
  for (const int sig : {SIGKILL, SIGTERM}) ASSERT_NO_FATAL_FAILURE(restart_under_watch(watch, log, port, sig, {}, 0ms));
  std::string out, err;
  ASSERT_EQ(cli({"cancel", id}, &out, &err), 0) << err;
  EXPECT_EQ(watch.wait(30s), std::optional<int>(1)) << read_file(log);
  EXPECT_TRUE(absl::StrContains(read_file(log), "CANCELLED")) << read_file(log);
}

// Something at the address accepts calls but never sends a job: the watch gives up with the
// message and exit code of an unreachable coordinator instead of waiting for ever.
class NeverAnswers final : public v1::JobService::Service {
 public:
  grpc::Status WatchJob(grpc::ServerContext*, const v1::WatchJobRequest*, grpc::ServerWriter<v1::Job>*) override {
    ++calls;
    return grpc::Status(grpc::StatusCode::UNAVAILABLE, "not now");
  }
  std::atomic<int> calls{0};
};

TEST(CliWatchUnreachable, AWatchOfAnAddressThatNeverAnsweredFails) {
  NeverAnswers service;
  int port = 0;
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  ASSERT_GT(port, 0);
  std::ostringstream out, err;
  const cli::Io io{out, err, false, false};
  cli::Client client(absl::StrCat("127.0.0.1:", port), cli::RetryPolicy{3, 10, 50});
  auto rc = std::async(std::launch::async, [&] { return cli::follow_job(client, "job-1", io, "watch"); });
  if (rc.wait_for(30s) != std::future_status::ready) {
    ADD_FAILURE() << "the watch is still waiting after 30 s";
    std::_Exit(1);  // the watch thread cannot be stopped
  }
  EXPECT_EQ(rc.get(), 1);
  EXPECT_TRUE(absl::StartsWith(err.str(), absl::StrCat("c960 watch: cannot reach the coordinator at 127.0.0.1:", port)))
      << err.str();
  EXPECT_EQ(service.calls, 4);  // the first call and policy.max_retries more
  server->Shutdown();
}

TEST_F(CliWatchTest, StatusPrintsATableOrJson) {
  const int port = start_coordinator();
  start_worker(port, {"--threads=1", "--hash=16"});
  const std::string done = submit_quiet({"perft", "--depth", "3", "--sps", "0-1", "--verify", "off", "--watch"});
  const std::string running = submit_quiet({"perft", "--depth", "5", "--sps", "0-959", "--verify", "all"});
  std::string out, err;
  ASSERT_EQ(cli({"status"}, &out, &err), 0) << err;
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipEmpty());
  // One worker under --verify all: once its first results wait for a check, the table says why.
  if (lines.size() == 4) {
    EXPECT_TRUE(absl::StartsWith(lines[3], running + ": waiting: results are checked by a second owner")) << out;
  }
  ASSERT_GE(lines.size(), 3u) << out;
  ASSERT_LE(lines.size(), 4u) << out;
  EXPECT_EQ(lines[0].substr(0, lines[0].find("KIND")), "ID" + std::string(lines[0].find("KIND") - 2, ' ')) << out;
  for (const char* column : {"KIND", "STATE", "DONE", "UNITS", "AGE", "DURATION"})
    EXPECT_TRUE(absl::StrContains(lines[0], column)) << lines[0];
  // Newest first; the columns line up (each row as long as the header, its state under STATE).
  EXPECT_TRUE(absl::StartsWith(lines[1], running + " ")) << out;
  EXPECT_TRUE(absl::StrContains(lines[1], "perft d5")) << out;
  EXPECT_EQ(lines[1].find("RUNNING"), lines[0].find("STATE")) << out;
  EXPECT_TRUE(absl::EndsWith(lines[1], " -")) << "no duration while running: " << out;
  EXPECT_TRUE(absl::StartsWith(lines[2], done.substr(0, done.find('\n')) + " ")) << out;
  EXPECT_EQ(lines[2].find("SUCCEEDED"), lines[0].find("STATE")) << out;
  EXPECT_TRUE(absl::StrContains(lines[2], "100.0%  ")) << out;
  EXPECT_EQ(lines[2].size(), lines[0].size()) << out;

  ASSERT_EQ(cli({"status", "--format", "json"}, &out, &err), 0) << err;
  EXPECT_TRUE(absl::StartsWith(out, "[\n  {\"id\": \"" + running + "\", \"kind\": \"perft\", \"depth\": 5, ")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\"state\": \"SUCCEEDED\"")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\"created\": \"20")) << out;
  EXPECT_TRUE(absl::EndsWith(out, "}\n]\n")) << out;
  ASSERT_EQ(cli({"status", running, "--format=json"}, &out, &err), 0) << err;
  EXPECT_TRUE(absl::StartsWith(out, "{\"id\": \"" + running + "\"")) << out;
  EXPECT_TRUE(absl::StrContains(out, "\"finished\": null")) << out;
  EXPECT_EQ(cli({"status", "--format", "yaml"}, &out, &err), 2);
  EXPECT_EQ(err, "c960 status: --format: 'yaml' is not text or json\n");
}

}  // namespace
}  // namespace c960::test
