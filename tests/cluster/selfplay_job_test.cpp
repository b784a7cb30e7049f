// The self-play job kind in the coordinator, without sockets: planning and validation, games
// played by the worker's compute path equal to a local run's, duplicate and differing
// completions never counted twice (also across a restart), and unit failure reports.
#include <unistd.h>

#include <filesystem>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/selfplay_proto.h"
#include "coordinator/coordinator.h"
#include "selfplay/local_runner.h"
#include "selfplay/stats.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

class SelfPlayJobTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = absl::StrCat(::testing::TempDir(), "/c960-selfplay-job-", getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    open();
  }
  void TearDown() override {
    coordinator_.reset();
    store_.reset();
    std::filesystem::remove_all(dir_);
  }

  void open() {
    coordinator_.reset();
    store_.reset();
    auto s = Store::open(dir_ + "/c.db");
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, CoordinatorOptions{30'000});
    ASSERT_TRUE(coordinator_->load().ok());
    v1::HelloRequest req;
    req.set_name("w");
    req.set_threads(1);
    req.add_capabilities("selfplay");
    auto r = coordinator_->hello(Caller::local(), req);
    ASSERT_TRUE(r.ok()) << r.status();
    worker_ = r->worker_id();
  }

  // Two positions, three games each, two games per unit: units of 2 and 1 games.
  static v1::SelfPlayJobSpec small_spec() {
    v1::SelfPlayJobSpec s;
    s.set_start_positions("518,0");
    s.set_games_per_position(3);
    s.set_engine("builtin");
    s.set_depth(2);
    s.set_random_plies(4);
    s.set_seed(7);
    s.set_max_plies(60);
    s.set_draw_score_cp(10);
    s.set_resign_score_cp(1000);
    s.set_hash_mb(1);
    s.set_engine_timeout_ms(30000);
    s.set_games_per_unit(2);
    return s;
  }

  absl::StatusOr<v1::Job> submit(const v1::SelfPlayJobSpec& s) {
    v1::SubmitJobRequest req;
    *req.mutable_spec()->mutable_selfplay() = s;
    return coordinator_->submit(Caller::local(), req);
  }

  std::vector<v1::Lease> acquire(int n) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(worker_);
    req.set_max_units(n);
    auto r = coordinator_->acquire(Caller::local(), req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::vector<v1::Lease>(r->leases().begin(), r->leases().end()) : std::vector<v1::Lease>();
  }

  absl::StatusOr<v1::CompletionOutcome> complete(const v1::Lease& l, const v1::UnitResult& result) {
    v1::CompleteUnitRequest req;
    req.set_worker_id(worker_);
    req.set_unit_id(l.unit_id());
    req.set_attempt(l.attempt());
    *req.mutable_result() = result;
    auto resp = coordinator_->complete(Caller::local(), req);
    if (!resp.ok()) return resp.status();
    return resp->outcome();
  }

  v1::UnitResult compute(const v1::Lease& l) {
    auto r = compute_unit(l.spec(), nullptr);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : v1::UnitResult();
  }

  std::string dir_;
  FakeClock clock_;
  std::string worker_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
};

TEST_F(SelfPlayJobTest, PlansUnitsOfAFewGamesOfOnePosition) {
  auto j = submit(small_spec());
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->progress().units_total(), 4);
  EXPECT_EQ(j->progress().games_total(), 6);
  std::vector<v1::Lease> ls = acquire(10);
  ASSERT_EQ(ls.size(), 4u);
  // In job order (positions ascending, as parse_sp_ranges gives them): position 0 games 0-1,
  // 2; then position 518 games 0-1, 2.
  const int sp[] = {0, 0, 518, 518}, first[] = {0, 2, 0, 2}, games[] = {2, 1, 2, 1};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(ls[i].spec().selfplay().start_position(), sp[i]);
    EXPECT_EQ(ls[i].spec().selfplay().first_game(), first[i]);
    EXPECT_EQ(ls[i].spec().selfplay().games(), games[i]);
  }
}

TEST_F(SelfPlayJobTest, RejectsBadSpecsNamingTheField) {
  const auto expect_bad = [&](const v1::SelfPlayJobSpec& s, const std::string& field) {
    auto j = submit(s);
    ASSERT_FALSE(j.ok()) << field;
    EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument) << j.status();
    EXPECT_TRUE(absl::StartsWith(j.status().message(), field)) << j.status();
  };
  v1::SelfPlayJobSpec s = small_spec();
  s.set_games_per_position(0);
  expect_bad(s, "games_per_position");
  s = small_spec();
  s.set_start_positions("0,960");
  expect_bad(s, "start_positions");
  s = small_spec();
  s.set_engine("");
  expect_bad(s, "engine");
  s = small_spec();
  s.set_nodes(1000);  // and depth 2
  expect_bad(s, "limits");
  s = small_spec();
  s.set_games_per_unit(100000);
  expect_bad(s, "games_per_unit");
  s = small_spec();
  s.add_options()->set_name("Hash");
  expect_bad(s, "options");
  s = small_spec();
  s.set_random_plies(41);
  expect_bad(s, "random_plies");
  s = small_spec();
  s.set_hash_mb(5000);
  expect_bad(s, "hash_mb");
  // Unset (0) where 0 is not valid means the default.
  s = small_spec();
  s.clear_hash_mb();
  s.clear_engine_timeout_ms();
  s.clear_resign_score_cp();
  auto spec = selfplay::spec_from_proto(s);
  ASSERT_TRUE(spec.ok()) << spec.status();
  EXPECT_EQ(spec->hash_mb, 16);
  EXPECT_EQ(spec->engine_timeout_ms, 30000);
  EXPECT_EQ(spec->adjudication.resign_score_cp, 1000);
  s = small_spec();
  s.set_engine("/usr/games/stockfish");
  s.add_options()->set_name("Bad\nName");
  expect_bad(s, "options");
  // A plan beyond the unit limit is refused as too large, not attempted.
  s = small_spec();
  s.set_start_positions("");
  s.set_games_per_position(1000000);
  s.set_games_per_unit(1);
  auto j = submit(s);
  EXPECT_EQ(j.status().code(), absl::StatusCode::kResourceExhausted) << j.status();
  EXPECT_EQ(coordinator_->results(Caller::local(), "job-404", false).status().code(), absl::StatusCode::kNotFound);
}

TEST_F(SelfPlayJobTest, GamesEqualALocalRunAndAreNeverCountedTwice) {
  auto j = submit(small_spec());
  ASSERT_TRUE(j.ok()) << j.status();
  std::vector<v1::Lease> ls = acquire(10);
  ASSERT_EQ(ls.size(), 4u);
  std::vector<v1::UnitResult> results;
  for (const v1::Lease& l : ls) results.push_back(compute(l));
  // Half now, then a restart of the coordinator: the job resumes with the stored units.
  ASSERT_EQ(complete(ls[0], results[0]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  ASSERT_EQ(complete(ls[1], results[1]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(complete(ls[1], results[1]).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  open();
  v1::Job now = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(now.progress().games_done(), 3);
  EXPECT_EQ(now.state(), v1::JOB_STATE_RUNNING);
  // The old leases are still valid ids: completing them counts once, the repeated one not at all.
  EXPECT_EQ(complete(ls[0], results[0]).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  ASSERT_EQ(complete(ls[2], results[2]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  // A differing second result is a recorded mismatch and changes no count.
  v1::UnitResult other = results[2];
  other.mutable_selfplay()->mutable_games(0)->set_result(other.selfplay().games(0).result() == "1-0" ? "0-1" : "1-0");
  EXPECT_EQ(complete(ls[2], other).value(), v1::COMPLETION_OUTCOME_MISMATCH);
  ASSERT_EQ(complete(ls[3], results[3]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  now = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(now.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(now.progress().games_done(), 6);
  EXPECT_EQ(now.result_mismatches(), 1);

  // Every game stored once, keyed by (sp, index).
  auto stored = store_->load_games(j->id());
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ((*stored)[i].sp, i < 3 ? 0 : 518);
    EXPECT_EQ((*stored)[i].index, int64_t(i % 3));
  }

  // The distributed games are the local run's games, and so are the statistics.
  auto spec = selfplay::spec_from_proto(small_spec());
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto local = selfplay::play_local(*spec, 1);
  ASSERT_TRUE(local.ok()) << local.status();
  selfplay::SelfPlayStats local_stats, cluster_stats;
  std::string local_pgn, cluster_pgn;
  for (const selfplay::PlayedGame& g : *local) {
    local_stats.add(g.sp, g.record);
    local_pgn += g.record.pgn;
  }
  auto chunks = coordinator_->results(Caller::local(), j->id(), false);
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  ASSERT_EQ(chunks->size(), 2u);
  for (const v1::ResultChunk& c : *chunks) {
    EXPECT_TRUE(c.selfplay().complete());
    EXPECT_EQ(c.selfplay().games(), 3);
    for (const v1::SelfPlayGame& g : c.selfplay().game_records()) {
      auto rec = selfplay::game_from_proto(g);
      ASSERT_TRUE(rec.ok()) << rec.status();
      cluster_stats.add(c.selfplay().start_position(), *rec);
      cluster_pgn += g.pgn();
    }
  }
  EXPECT_EQ(cluster_pgn, local_pgn);
  EXPECT_EQ(cluster_stats.to_csv(), local_stats.to_csv());
  // Counts-only results agree with the games.
  auto summary = coordinator_->results(Caller::local(), j->id(), false, true);
  ASSERT_TRUE(summary.ok());
  for (const v1::ResultChunk& c : *summary) {
    EXPECT_EQ(c.selfplay().game_records_size(), 0);
    const selfplay::ResultCounts& rc = cluster_stats.positions().at(c.selfplay().start_position()).counts;
    EXPECT_EQ(c.selfplay().white_wins(), rc.white_wins);
    EXPECT_EQ(c.selfplay().draws(), rc.draws);
    EXPECT_EQ(c.selfplay().black_wins(), rc.black_wins);
  }
}

TEST_F(SelfPlayJobTest, RejectsResultsThatCannotBelongToTheUnit) {
  ASSERT_TRUE(submit(small_spec()).ok());
  std::vector<v1::Lease> ls = acquire(1);
  ASSERT_EQ(ls.size(), 1u);
  const v1::UnitResult good = compute(ls[0]);
  v1::UnitResult r = good;
  r.mutable_selfplay()->mutable_games()->RemoveLast();
  EXPECT_EQ(complete(ls[0], r).status().code(), absl::StatusCode::kInvalidArgument);
  r = good;
  r.mutable_selfplay()->mutable_games(1)->set_game_index(5);
  EXPECT_EQ(complete(ls[0], r).status().code(), absl::StatusCode::kInvalidArgument);
  r = good;
  r.mutable_selfplay()->mutable_games(0)->set_moves(0, "a1a8");  // not legal at the start
  EXPECT_EQ(complete(ls[0], r).status().code(), absl::StatusCode::kInvalidArgument);
  r = good;
  r.mutable_selfplay()->mutable_games(0)->set_termination("boredom");
  EXPECT_EQ(complete(ls[0], r).status().code(), absl::StatusCode::kInvalidArgument);
  v1::UnitResult perft;
  perft.mutable_perft();
  EXPECT_EQ(complete(ls[0], perft).status().code(), absl::StatusCode::kInvalidArgument);
  // Nothing of that was stored; the good result still is accepted.
  EXPECT_EQ(complete(ls[0], good).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
}

TEST_F(SelfPlayJobTest, AMissingEngineFailsUnitsAndThenTheJob) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine(dir_ + "/no-such-engine");
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  for (int i = 0; i < kMaxUnitFailures; ++i) {
    std::vector<v1::Lease> ls = acquire(1);
    ASSERT_EQ(ls.size(), 1u);
    auto r = compute_unit(ls[0].spec(), nullptr);
    ASSERT_FALSE(r.ok());
    ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    v1::CompleteUnitRequest req;
    req.set_worker_id(worker_);
    req.set_unit_id(ls[0].unit_id());
    req.set_attempt(ls[0].attempt());
    req.set_failure(std::string(r.status().message()));
    auto resp = coordinator_->complete(Caller::local(), req);
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->outcome(), v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
    EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->state(),
              i + 1 < kMaxUnitFailures ? v1::JOB_STATE_RUNNING : v1::JOB_STATE_FAILED);
  }
  const v1::Job failed = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_TRUE(absl::StrContains(failed.failure_detail(), "no-such-engine")) << failed.failure_detail();
  EXPECT_TRUE(acquire(4).empty());
  // The state and its reason survive a restart.
  open();
  EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->state(), v1::JOB_STATE_FAILED);
  EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->failure_detail(), failed.failure_detail());
  EXPECT_TRUE(acquire(4).empty());
  // A failure report with a result is malformed.
  v1::CompleteUnitRequest bad;
  bad.set_worker_id(worker_);
  bad.set_unit_id(j->id() + "/0");
  bad.set_attempt(1);
  bad.set_failure("x");
  bad.mutable_result()->mutable_selfplay();
  EXPECT_EQ(coordinator_->complete(Caller::local(), bad).status().code(), absl::StatusCode::kInvalidArgument);
}

// A store written before self-play jobs (no failure_detail column) opens, keeps its jobs and
// can record a failure.
TEST(SelfPlayStoreTest, OldStoresGainTheFailureColumn) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/c960-old-store-", getpid(), ".db");
  std::filesystem::remove(path);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "CREATE TABLE jobs (id TEXT PRIMARY KEY, seq INTEGER NOT NULL, request_id TEXT NOT NULL, "
                         "spec BLOB NOT NULL, plan BLOB NOT NULL, state INTEGER NOT NULL, created_ms INTEGER NOT NULL, "
                         "finished_ms INTEGER NOT NULL, mismatches INTEGER NOT NULL, mismatch_detail TEXT NOT NULL);"
                         "INSERT INTO jobs VALUES ('job-1', 1, '', x'', x'', 1, 5, 0, 0, '');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  {
    auto store = Store::open(path);
    ASSERT_TRUE(store.ok()) << store.status();
    auto jobs = (*store)->load_jobs();
    ASSERT_TRUE(jobs.ok()) << jobs.status();
    ASSERT_EQ(jobs->size(), 1u);
    EXPECT_EQ((*jobs)[0].failure_detail, "");
    ASSERT_TRUE((*store)->fail_job("job-1", v1::JOB_STATE_FAILED, 9, "no engine").ok());
  }
  auto store = Store::open(path);  // the column exists now: no second ALTER
  ASSERT_TRUE(store.ok()) << store.status();
  auto jobs = (*store)->load_jobs();
  ASSERT_TRUE(jobs.ok()) << jobs.status();
  EXPECT_EQ((*jobs)[0].failure_detail, "no engine");
  EXPECT_EQ((*jobs)[0].state, v1::JOB_STATE_FAILED);
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

}  // namespace
}  // namespace c960::cluster
