// Self-play jobs with the real binaries on loopback: the built-in engine with the coordinator
// restarted and a worker killed mid-job, Stockfish with a worker killed mid-job, and an engine
// missing on the workers. Distributed results must equal `c960 selfplay` for the same spec
// (games are pure functions of (spec, sp, i) under a nodes limit), and every PGN must pass
// pgn-extract.
#include <chrono>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/host_info.h"
#include "tests/cluster/cluster_fixture.h"
#include "tests/process.h"
#include "tests/selfplay_test_util.h"

namespace c960::cluster {
namespace {

using c960::test::Process;
using c960::test::run_command;
using namespace std::chrono_literals;

using c960::test::kCliBin;
using c960::test::read_file;

class SelfPlayClusterTest : public c960::test::ClusterFixture {
 protected:
  // Starts (or restarts, on the same port and store) the coordinator, with short leases.
  void start_coordinator(int port = 0) { ClusterFixture::start_coordinator(port, {"--lease-seconds=2"}); }

  // Workers offer the engines given as NAME=PATH (the built-in one always).
  Process* start_worker(int threads, const std::vector<std::string>& engines = {}) {
    std::vector<std::string> flags = {absl::StrCat("--threads=", threads), "--hash=0"};
    for (const std::string& e : engines) flags.push_back("--engine=" + e);
    return ClusterFixture::start_worker(port_, flags);
  }

  std::string cli(const std::string& args, int* exit_code = nullptr) {
    const auto r = run_command(absl::StrCat(kCliBin, " ", args, " --coordinator 127.0.0.1:", port_));
    if (exit_code) *exit_code = r.exit_code;
    return r.output;
  }

  std::string submit(const std::string& spec) {
    int rc = -1;
    const std::string out = cli("submit selfplay " + spec, &rc);
    EXPECT_EQ(rc, 0) << out;
    const std::vector<std::string> words = absl::StrSplit(absl::StripAsciiWhitespace(out), ' ');
    return words.back();  // the job id is the last word
  }

  // Polls until pred holds (through coordinator restarts); the last state seen is in *job.
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

  // Kills the first worker while it holds a unit, once `done` units are complete and more than
  // `left` are still to come; a two-thread worker then finishes the job, which must succeed
  // with no result mismatch. The last state seen is in *j.
  void kill_worker_mid_job(const std::string& job, int done, int left, v1::Job* j,
                           const std::vector<std::string>& engines = {}) {
    ASSERT_TRUE(wait_job(
        job,
        [&](const v1::Job& x) {
          return x.progress().units_done() >= done && x.progress().units_leased() >= 1 &&
                 x.progress().units_done() < x.progress().units_total() - left;
        },
        j))
        << j->ShortDebugString();
    workers_[0]->kill_now();
    start_worker(2, engines);
    ASSERT_TRUE(wait_job(
        job, [](const v1::Job& x) { return x.state() != v1::JOB_STATE_RUNNING; }, j));
    EXPECT_EQ(j->state(), v1::JOB_STATE_SUCCEEDED);
    EXPECT_EQ(j->result_mismatches(), 0) << j->mismatch_detail();
  }

  // `c960 results` (CSV and PGN) equal to `c960 selfplay` for the same spec; PGN accepted by
  // pgn-extract; c960 watch ends with success.
  void expect_equal_to_local(const std::string& job, const std::string& spec, int games) {
    int rc = -1;
    std::string out = cli("watch " + job, &rc);
    ASSERT_EQ(rc, 0) << out;
    // Too few games a position to rank any (kMinGamesToRank): watch says so rather than list luck.
    EXPECT_TRUE(absl::StrContains(out, "not ranked yet: 20 games a position")) << out;
    const std::string csv = cli("results " + job + " --out " + dir_ + "/d.csv --pgn " + dir_ + "/d.pgn", &rc);
    ASSERT_EQ(rc, 0) << csv;
    out =
        run_command(absl::StrCat(kCliBin, " selfplay ", spec, " --quiet --out ", dir_, "/l.csv --pgn ", dir_, "/l.pgn"))
            .output;
    const std::string local_csv = read_file(dir_ + "/l.csv"), local_pgn = read_file(dir_ + "/l.pgn");
    ASSERT_FALSE(local_csv.empty()) << out;
    EXPECT_TRUE(absl::StartsWith(read_file(dir_ + "/d.csv"),
                                 "sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,"
                                 "draw_rate,mean_plies"));
    EXPECT_EQ(read_file(dir_ + "/d.csv"), local_csv);
    EXPECT_EQ(read_file(dir_ + "/d.pgn"), local_pgn);
    EXPECT_EQ(c960::test::pgn_extract_errors(dir_ + "/d.pgn"), "");
    // Every game once: as many [Event tags as games planned.
    size_t events = 0;
    for (size_t at = 0; (at = local_pgn.find("[Event ", at)) != std::string::npos; ++at) ++events;
    EXPECT_EQ(events, size_t(games));
    const std::string json = cli("results " + job + " --format json", &rc);
    ASSERT_EQ(rc, 0) << json;
    EXPECT_TRUE(absl::StrContains(json, absl::StrCat("\"total\": {\"games\": ", games))) << json;
  }
};

TEST_F(SelfPlayClusterTest, BuiltinEngineSurvivesCoordinatorRestartAndKilledWorker) {
  start_coordinator();
  const std::string spec =
      "--sps 0,518,959 --games-per-position 8 --engine builtin --nodes 3000 --random-plies 4 --seed 11 --max-plies 160";
  const std::string job = submit(spec + " --games-per-unit 1");  // verified (adaptive): two workers
  ASSERT_TRUE(absl::StartsWith(job, "job-")) << job;
  start_worker(1);
  start_worker(1);
  v1::Job j;
  ASSERT_TRUE(wait_job(
      job, [](const v1::Job& j) { return j.progress().units_done() >= 2; }, &j));
  ASSERT_LT(j.progress().units_done(), j.progress().units_total()) << "the job ended before the restart";
  coordinator_->kill_now();
  start_coordinator(port_);
  // The worker reconnects; kill it while it holds a unit, with more still to come.
  ASSERT_NO_FATAL_FAILURE(kill_worker_mid_job(job, 6, 2, &j));
  EXPECT_EQ(j.progress().games_done(), 24);
  expect_equal_to_local(job, spec, 24);
}

TEST_F(SelfPlayClusterTest, StockfishJobWithAKilledWorkerEqualsLocalRun) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed";
  start_coordinator();
  // The job names the engine; the workers know where it is. Locally, "sf=PATH" plays the same
  // games under the same name.
  const std::string limits = " --option Hash=16 --nodes 2000 --random-plies 2 --seed 5 --max-plies 120";
  const std::string job = submit("--sps 0,518 --games-per-position 3 --engine sf" + limits + " --games-per-unit 1");
  start_worker(1, {"sf=" + sf});
  start_worker(1, {"sf=" + sf});
  v1::Job j;
  ASSERT_NO_FATAL_FAILURE(kill_worker_mid_job(job, 1, 1, &j, {"sf=" + sf}));
  expect_equal_to_local(job, "--sps 0,518 --games-per-position 3 --engine sf=" + sf + limits, 6);
}

// A match of two engines through the client: `c960 submit selfplay --opponent NAME` (a path is
// refused), units only for the workers that offer both engines, a worker killed mid-job, and
// `c960 results` (CSV, PGN) equal to `c960 selfplay --opponent` with the same names; `c960 watch`
// shows A's figures and the pair counts.
TEST_F(SelfPlayClusterTest, AMatchJobWithAKilledWorkerEqualsALocalMatch) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed";
  start_coordinator();
  int rc = -1;
  const std::string refused = cli("submit selfplay --sps 0 --games-per-position 2 --engine builtin --opponent " + sf +
                                      " --nodes 100 --random-plies 2",
                                  &rc);
  EXPECT_EQ(rc, 2) << refused;
  EXPECT_TRUE(absl::StrContains(refused, "--opponent: '" + sf + "' is a path")) << refused;
  const std::string limits = " --nodes 1500 --random-plies 4 --seed 9 --max-plies 120";
  const std::string job = submit("--sps 0,518,959 --games-per-position 6 --engine builtin --opponent sf" + limits +
                                 " --games-per-unit 2 --verify off");
  start_worker(1);  // the built-in engine only: never leased a unit of the match
  start_worker(1, {"sf=" + sf});
  v1::Job j;
  ASSERT_TRUE(wait_job(
      job, [&](const v1::Job& x) { return x.progress().units_done() >= 1 && x.progress().units_leased() >= 1; }, &j))
      << j.ShortDebugString();
  workers_[1]->kill_now();
  start_worker(1, {"sf=" + sf});
  ASSERT_TRUE(wait_job(
      job, [](const v1::Job& x) { return x.state() != v1::JOB_STATE_RUNNING; }, &j));
  EXPECT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED) << j.failure_detail();
  std::string out = cli("watch " + job, &rc);
  ASSERT_EQ(rc, 0) << out;
  EXPECT_TRUE(absl::StrContains(out, "A: score ")) << out;
  EXPECT_TRUE(absl::StrContains(out, "(9 pairs)")) << out;
  out = cli("results " + job + " --format csv --out " + dir_ + "/d.csv --pgn " + dir_ + "/d.pgn", &rc);
  ASSERT_EQ(rc, 0) << out;
  out = run_command(absl::StrCat(kCliBin, " selfplay --sps 0,518,959 --games-per-position 6 --engine builtin ",
                                 "--opponent sf=", sf, limits, " --quiet --format csv --out ", dir_, "/l.csv --pgn ",
                                 dir_, "/l.pgn"))
            .output;
  const std::string local_csv = read_file(dir_ + "/l.csv");
  ASSERT_FALSE(local_csv.empty()) << out;
  EXPECT_TRUE(absl::StartsWith(local_csv, "sp,fen,pairs,ll,ld,dd_wl,wd,ww,")) << local_csv;
  EXPECT_EQ(read_file(dir_ + "/d.csv"), local_csv);
  EXPECT_EQ(read_file(dir_ + "/d.pgn"), read_file(dir_ + "/l.pgn"));
  // Its JSON names the workers that computed it: Stockfish's id name and binary's SHA-256.
  const std::string json = cli("results " + job + " --format json", &rc);
  ASSERT_EQ(rc, 0) << json;
  EXPECT_TRUE(absl::StrContains(json, "\"worker_1\": ")) << json.substr(0, 2000);
  EXPECT_TRUE(absl::StrContains(json, "sf 'Stockfish")) << json.substr(0, 2000);
  EXPECT_TRUE(absl::StrContains(json, "sha256 " + cluster::file_sha256(sf).value_or("?"))) << json.substr(0, 2000);
  // The job's report is a match report, naming both engines, as the local CSV's is.
  out = cli("report " + job + " --out " + dir_ + "/r.html", &rc);
  ASSERT_EQ(rc, 0) << out;
  const std::string html = read_file(dir_ + "/r.html");
  EXPECT_TRUE(absl::StrContains(html, "<title>c960 match report: " + job)) << html.substr(0, 400);
  EXPECT_TRUE(absl::StrContains(html, "Pairs by A's points")) << html.substr(0, 400);
  EXPECT_TRUE(absl::StrContains(html, "builtin")) << html.substr(0, 400);
}

// --store-games sample:N and none: `c960 results` gives the local run's statistics all the same
// (the coordinator counts every game as it settles), and --pgn the games kept: the first N of
// each position, or none.
TEST_F(SelfPlayClusterTest, StoredGamesFollowTheJobsChoiceAndStatisticsCoverEveryGame) {
  start_coordinator();
  start_worker(2);
  const std::string spec =
      "--sps 0,518 --games-per-position 4 --engine builtin --depth 2 --random-plies 2 --seed 3 "
      "--max-plies 80";
  int rc = -1;
  const std::string out =
      run_command(absl::StrCat(kCliBin, " selfplay ", spec, " --quiet --out ", dir_, "/l.csv --pgn ", dir_, "/l.pgn"))
          .output;
  const std::string local_csv = read_file(dir_ + "/l.csv"), local_pgn = read_file(dir_ + "/l.pgn");
  ASSERT_FALSE(local_csv.empty()) << out;
  // The local games, position by position in job order, each by index.
  std::vector<std::string> games;
  for (size_t at = local_pgn.find("[Event "); at != std::string::npos;) {
    const size_t next = local_pgn.find("[Event ", at + 1);
    games.push_back(local_pgn.substr(at, next == std::string::npos ? std::string::npos : next - at));
    at = next;
  }
  ASSERT_EQ(games.size(), 8u);
  for (const auto& [choice, kept] : std::vector<std::pair<std::string, std::string>>{
           {"sample:2", games[0] + games[1] + games[4] + games[5]}, {"none", ""}}) {
    SCOPED_TRACE(choice);
    const std::string job = submit(spec + " --verify off --store-games " + choice);
    v1::Job j;
    ASSERT_TRUE(wait_job(
        job, [](const v1::Job& x) { return x.state() != v1::JOB_STATE_RUNNING; }, &j));
    const std::string r = cli("results " + job + " --out " + dir_ + "/d.csv --pgn " + dir_ + "/d.pgn", &rc);
    ASSERT_EQ(rc, 0) << r;
    EXPECT_EQ(read_file(dir_ + "/d.csv"), local_csv);
    EXPECT_EQ(read_file(dir_ + "/d.pgn"), kept);
  }
  cli("submit selfplay " + spec + " --store-games sample:0", &rc);
  EXPECT_EQ(rc, 2);
  cli("submit selfplay " + spec + " --store-games some", &rc);
  EXPECT_EQ(rc, 2);
}

TEST_F(SelfPlayClusterTest, AnEngineThatDoesNotStartOnTwoWorkersFailsTheJobWithTheReason) {
  start_coordinator();
  // /bin/false exists but is no UCI engine: every worker offering it fails its units.
  const std::string job = submit("--sps 3 --games-per-position 4 --engine broken --nodes 100 --games-per-unit 1");
  start_worker(1, {"broken=/bin/false"});
  start_worker(1, {"broken=/bin/false"});
  int rc = -1;
  const std::string out = cli("watch " + job, &rc);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_TRUE(absl::StrContains(out, "FAILED")) << out;
  EXPECT_TRUE(absl::StrContains(out, "broken")) << out;
  EXPECT_TRUE(workers_[0]->running());  // reported, not crashed
  // `c960 results` says the job failed and why; --partial writes its (empty) positions.
  const std::string failed = cli("results " + job, &rc);
  EXPECT_EQ(rc, 1) << failed;
  EXPECT_TRUE(absl::StrContains(failed, absl::StrCat("job ", job, " failed: "))) << failed;
  EXPECT_TRUE(absl::StrContains(failed, "broken")) << failed;
  EXPECT_TRUE(absl::StrContains(failed, "(0 of 1 positions complete); --partial")) << failed;
  const std::string partial = cli("results " + job + " --partial", &rc);
  EXPECT_EQ(rc, 0) << partial;
  EXPECT_TRUE(absl::StrContains(partial, ",complete\n3,")) << partial;
  EXPECT_TRUE(absl::EndsWith(partial, ",false\n")) << partial;
  // A path is not an engine name: refused before it reaches a worker.
  cli("submit selfplay --sps 3 --games-per-position 2 --engine /usr/games/stockfish --nodes 100", &rc);
  EXPECT_EQ(rc, 2);
  // Requests are checked by the coordinator too, naming the field.
  v1::SubmitJobRequest req;
  req.mutable_spec()->mutable_selfplay()->set_games_per_position(2);
  req.mutable_spec()->mutable_selfplay()->set_engine("builtin");
  req.mutable_spec()->mutable_selfplay()->set_depth(0);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + 10s);
  v1::Job ignored;
  grpc::Status s = jobs_->SubmitJob(&ctx, req, &ignored);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_TRUE(absl::StartsWith(s.error_message(), "limits")) << s.error_message();
  const std::string usage = cli("submit selfplay --games-per-position 2 --engine builtin --depth 2 --fen x", &rc);
  EXPECT_EQ(rc, 2) << usage;
  EXPECT_TRUE(absl::StrContains(usage, "--fen")) << usage;
  cli("results job-999", &rc);
  EXPECT_EQ(rc, 2);
}

}  // namespace
}  // namespace c960::cluster
