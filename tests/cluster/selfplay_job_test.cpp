// The self-play job kind in the coordinator, without sockets: planning and validation, games
// played by the worker's compute path equal to a local run's, duplicate and differing
// completions never counted twice (also across a restart), and unit failure reports.
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sqlite3.h>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cli/job_format.h"
#include "cluster/results_export.h"
#include "cluster/selfplay_proto.h"
#include "coordinator/coordinator.h"
#include "coordinator/selfplay_codec.h"
#include "core/startpos.h"
#include "selfplay/local_runner.h"
#include "selfplay/match.h"
#include "selfplay/stats.h"
#include "tests/selfplay_test_util.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

// Settles a unit with its self-play games as the coordinator does: the unit row and the
// kind's tables in one transaction, kept whole or not at all.
absl::Status settle_with_games(Store* store, const std::string& job, int64_t unit, const std::string& result,
                               std::optional<int32_t> state, int64_t finished_ms, const SelfPlaySettlement& sp) {
  std::unique_ptr<Store::Transaction> txn = store->transaction();
  if (absl::Status s = store->settle_unit(job, unit, result, 1, state, finished_ms); !s.ok()) return s;
  if (absl::Status s = apply_settlement(store, job, sp, 1); !s.ok()) return s;
  return txn->commit();
}

absl::Status unsettle_with_games(Store* store, const std::string& job, int64_t unit, int32_t wanted,
                                 const SelfPlaySettlement& sp) {
  std::unique_ptr<Store::Transaction> txn = store->transaction();
  if (absl::Status s = store->unsettle_unit(job, unit, wanted); !s.ok()) return s;
  if (absl::Status s = apply_settlement(store, job, sp, -1); !s.ok()) return s;
  return txn->commit();
}

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
    const absl::Status loaded = coordinator_->load();
    ASSERT_TRUE(loaded.ok()) << loaded;
    worker_ = hello("w");
  }

  // A worker offering self-play with the built-in engine and the engine "sf".
  static v1::HelloRequest hello_request(const std::string& name) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_threads(32);
    req.add_capabilities("selfplay");
    req.add_engines("sf");
    req.set_protocol_version(kProtocolVersion);
    return req;
  }
  std::string hello(const std::string& name) {
    auto r = coordinator_->hello(Caller::local(), hello_request(name));
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? r->worker_id() : "";
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

  // Without verification: one worker plays everything here (verification has its own tests).
  absl::StatusOr<v1::Job> submit(const v1::SelfPlayJobSpec& s) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    *req.mutable_spec()->mutable_selfplay() = s;
    return coordinator_->submit(Caller::local(), req);
  }

  std::vector<v1::Lease> acquire(int n, const std::string& worker = "") {
    v1::AcquireWorkRequest req;
    req.set_worker_id(worker.empty() ? worker_ : worker);
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

  // Plays job `id`'s units until it is no longer running. Adaptive and SPRT jobs plan their next
  // batches on the coordinator's refill thread, so an empty acquire is waited out, not taken as
  // the end. The first time `restart_when(job, units completed here)` says yes, the coordinator
  // is restarted from its store (a look due then is made when the job is loaded again).
  void play_until_final(const std::string& id,
                        const std::function<absl::StatusOr<v1::UnitResult>(const v1::Lease&)>& play,
                        const std::function<bool(const v1::Job&, int)>& restart_when) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
    int completed = 0;
    bool restarted = false;
    for (;;) {
      v1::Job now = coordinator_->get_job(Caller::local(), id).value();
      if (now.state() != v1::JOB_STATE_RUNNING) return;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the job never finished";
      std::vector<v1::Lease> ls = acquire(2);
      if (ls.empty()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
        continue;
      }
      for (const v1::Lease& l : ls) {
        absl::StatusOr<v1::UnitResult> r = play(l);
        ASSERT_TRUE(r.ok()) << r.status();
        ASSERT_EQ(complete(l, *r).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
        ++completed;
      }
      if (!restarted && restart_when(now, completed)) {
        open();
        restarted = true;
      }
    }
  }

  // Plays every unit of the running jobs here.
  void play_all() {
    for (;;) {
      std::vector<v1::Lease> ls = acquire(8);
      if (ls.empty()) return;
      for (const v1::Lease& l : ls) ASSERT_EQ(complete(l, compute(l)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
    }
  }

  // What `c960 results` makes of a job: statistics from each position's counts, and the PGN of
  // the games the job stored.
  void cluster_figures(const std::string& job, selfplay::SelfPlayStats* stats, std::string* pgn, int64_t* games) {
    auto chunks = coordinator_->results(Caller::local(), job, false);
    ASSERT_TRUE(chunks.ok()) << chunks.status();
    std::string last;
    bool first = true;
    for (const v1::ResultChunk& c : *chunks) {
      const v1::SelfPlayPositionResult& r = c.selfplay();
      EXPECT_TRUE(r.complete());
      for (const v1::SelfPlayGame& g : r.game_records()) {
        *pgn += g.pgn();
        ++*games;
      }
      if (!first && r.position_id() == last) continue;
      first = false;
      last = r.position_id();
      selfplay::PositionStats p;
      p.id = r.position_id();
      p.sp = r.start_position();
      p.fen = selfplay::xfen_of(*selfplay::chess960_position(r.start_position()));
      p.counts.white_wins = r.white_wins();
      p.counts.draws = r.draws();
      p.counts.black_wins = r.black_wins();
      p.total_plies = r.total_plies();
      p.duplicates = r.duplicates();
      p.uncounted = r.uncounted();
      for (int t = 0; t < r.terminations_size(); ++t) p.terminations[size_t(t)] = r.terminations(t);
      stats->set_position(p);
    }
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
  ASSERT_EQ(complete(ls[3], results[3]).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  // A second result with another outcome than the final position shows is refused and changes
  // no count.
  v1::UnitResult other = results[2];
  other.mutable_selfplay()->mutable_games(0)->set_result(other.selfplay().games(0).result() == "1-0" ? "0-1" : "1-0");
  EXPECT_EQ(complete(ls[2], other).status().code(), absl::StatusCode::kInvalidArgument);
  now = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(now.state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(now.progress().games_done(), 6);

  // Every game stored once, keyed by (sp, index).
  auto stored = load_games(store_.get(), j->id());
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_EQ(stored->size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ((*stored)[i].sp, i < 3 ? 0 : 1);  // the position's index in the plan (0, 518)
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
    local_stats.add(spec->positions[g.position], g.record);
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
    const selfplay::PositionStats* ps = cluster_stats.find(c.selfplay().position_id());
    ASSERT_NE(ps, nullptr) << c.selfplay().position_id();
    const selfplay::ResultCounts& rc = ps->counts;
    EXPECT_EQ(c.selfplay().white_wins(), rc.white_wins);
    EXPECT_EQ(c.selfplay().draws(), rc.draws);
    EXPECT_EQ(c.selfplay().black_wins(), rc.black_wins);
  }
}

// The spec from two positions beyond the 960 instead: a FEN after 1.e4 and a DFRC pair.
v1::SelfPlayJobSpec with_fen_positions(v1::SelfPlayJobSpec fens) {
  fens.clear_start_positions();
  v1::SelfPlayPosition* a = fens.add_positions();
  a->set_id("e4");
  a->set_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1");
  v1::SelfPlayPosition* b = fens.add_positions();
  b->set_id("7");
  b->set_fen("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAhf - 0 1");
  return fens;
}

// Jobs of positions beyond the 960 (FENs, DFRC pairs): units carry their position, results are
// keyed by its id, and games and statistics equal a local run's.
TEST_F(SelfPlayJobTest, FenAndDfrcJobsEqualALocalRunKeyedById) {
  const v1::SelfPlayJobSpec fens = with_fen_positions(small_spec());
  v1::SelfPlayJobSpec dfrc = small_spec();
  dfrc.clear_start_positions();
  dfrc.set_dfrc_pairs("497280,1000");
  for (const v1::SelfPlayJobSpec& js : {fens, dfrc}) {
    auto j = submit(js);
    ASSERT_TRUE(j.ok()) << j.status();
    std::vector<v1::Lease> ls = acquire(10);
    ASSERT_EQ(ls.size(), 4u);
    for (const v1::Lease& l : ls) {
      EXPECT_TRUE(l.spec().selfplay().has_position());
      EXPECT_EQ(l.spec().selfplay().job().positions_size(), 0);  // the list stays in the job
      ASSERT_EQ(complete(l, compute(l)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
    }
    EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->state(), v1::JOB_STATE_SUCCEEDED);
    auto spec = selfplay::spec_from_proto(js);
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto local = selfplay::play_local(*spec, 1);
    ASSERT_TRUE(local.ok()) << local.status();
    selfplay::SelfPlayStats local_stats, cluster_stats;
    std::string local_pgn, cluster_pgn;
    for (const selfplay::PlayedGame& g : *local) {
      local_stats.add(spec->positions[g.position], g.record);
      local_pgn += g.record.pgn;
    }
    auto chunks = coordinator_->results(Caller::local(), j->id(), false);
    ASSERT_TRUE(chunks.ok()) << chunks.status();
    ASSERT_EQ(chunks->size(), 2u);
    for (size_t k = 0; k < chunks->size(); ++k) {
      const v1::SelfPlayPositionResult& r = (*chunks)[k].selfplay();
      EXPECT_EQ(r.position_id(), spec->positions[k].id);
      EXPECT_EQ(r.start_position(), -1);
      for (const v1::SelfPlayGame& g : r.game_records()) {
        auto rec = selfplay::game_from_proto(g);
        ASSERT_TRUE(rec.ok()) << rec.status();
        cluster_stats.add(spec->positions[k], *rec);
        cluster_pgn += g.pgn();
      }
    }
    EXPECT_EQ(cluster_pgn, local_pgn);
    EXPECT_EQ(cluster_stats.to_csv(), local_stats.to_csv());
  }
  // One kind of positions per job.
  v1::SelfPlayJobSpec both = fens;
  both.set_dfrc_pairs("5");
  EXPECT_EQ(submit(both).status().code(), absl::StatusCode::kInvalidArgument);
}

// Statistics (duplicates and terminations too) come from counts the store keeps as units
// settle, whichever games the job stores; the stored games' PGN is the local run's.
TEST_F(SelfPlayJobTest, StatisticsAndStoredGamesEqualALocalRunWhateverIsStored) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_games_per_position(5);
  s.set_random_plies(1);  // one random ply of about 20: some games repeat others
  auto spec = selfplay::spec_from_proto(s);
  ASSERT_TRUE(spec.ok()) << spec.status();
  auto local = selfplay::play_local(*spec, 1);
  ASSERT_TRUE(local.ok()) << local.status();
  selfplay::SelfPlayStats local_stats;
  for (const selfplay::PlayedGame& g : *local) local_stats.add(spec->positions[g.position], g.record);
  ASSERT_GT(local_stats.total().duplicates, 0);
  for (const auto& [mode, sample] : std::vector<std::pair<v1::StoreGames, int>>{
           {v1::STORE_GAMES_UNSPECIFIED, 0}, {v1::STORE_GAMES_SAMPLE, 2}, {v1::STORE_GAMES_NONE, 0}}) {
    SCOPED_TRACE(v1::StoreGames_Name(mode));
    s.set_store_games(mode);
    s.set_store_games_sample(sample);
    auto j = submit(s);
    ASSERT_TRUE(j.ok()) << j.status();
    play_all();
    ASSERT_EQ(coordinator_->get_job(Caller::local(), j->id())->state(), v1::JOB_STATE_SUCCEEDED);
    selfplay::SelfPlayStats stats;
    std::string pgn, local_pgn;
    int64_t games = 0;
    cluster_figures(j->id(), &stats, &pgn, &games);
    EXPECT_EQ(stats.to_csv(), local_stats.to_csv());
    EXPECT_EQ(stats.to_json(), local_stats.to_json());
    // Local games come by position in job order, then by index.
    const int kept = mode == v1::STORE_GAMES_NONE ? 0 : mode == v1::STORE_GAMES_SAMPLE ? sample : 5;
    for (const selfplay::PlayedGame& g : *local)
      if (g.index < kept) local_pgn += g.record.pgn;
    EXPECT_EQ(games, 2 * kept);
    EXPECT_EQ(pgn, local_pgn);
    auto stored = load_games(store_.get(), j->id());
    ASSERT_TRUE(stored.ok());
    EXPECT_EQ(int64_t(stored->size()), 2 * kept);
  }
  // The choice is checked.
  s.set_store_games(v1::STORE_GAMES_SAMPLE);
  s.set_store_games_sample(0);
  EXPECT_TRUE(absl::StrContains(submit(s).status().message(), "store_games_sample"));
  s.set_store_games(v1::STORE_GAMES_NONE);
  s.set_store_games_sample(3);
  EXPECT_TRUE(absl::StrContains(submit(s).status().message(), "store_games_sample"));
  s.set_store_games(v1::StoreGames(42));
  s.set_store_games_sample(0);
  EXPECT_TRUE(absl::StrContains(submit(s).status().message(), "store_games"));
}

// A coordinator restarted in the middle of a job keeps every settled game's counts and games,
// and the finished job's figures equal a local run's.
TEST_F(SelfPlayJobTest, ARestartMidJobLosesNothing) {
  v1::SelfPlayJobSpec s = small_spec();
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  std::vector<v1::Lease> ls = acquire(2);
  ASSERT_EQ(ls.size(), 2u);
  for (const v1::Lease& l : ls) ASSERT_EQ(complete(l, compute(l)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  open();
  EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->progress().games_done(), 3);
  // A copy sent again after the restart is compared with the kept digest: a duplicate.
  EXPECT_EQ(complete(ls[0], compute(ls[0])).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  play_all();
  open();
  const selfplay::SelfPlaySpec local_spec = *selfplay::spec_from_proto(s);
  auto local = selfplay::play_local(local_spec, 1);
  ASSERT_TRUE(local.ok());
  selfplay::SelfPlayStats local_stats, stats;
  std::string local_pgn, pgn;
  for (const selfplay::PlayedGame& g : *local) {
    local_stats.add(local_spec.positions[g.position], g.record);
    local_pgn += g.record.pgn;
  }
  int64_t games = 0;
  cluster_figures(j->id(), &stats, &pgn, &games);
  EXPECT_EQ(games, 6);
  EXPECT_EQ(stats.to_csv(), local_stats.to_csv());
  EXPECT_EQ(pgn, local_pgn);
}

// An adaptive job (selfplay/adaptive.h) plays batch after batch per position, each next batch
// planned by a look at the position's settled counts: the games are a local run's under the same
// rule, through a restart of the coordinator between batches, and its results carry each
// position's verdict.
TEST_F(SelfPlayJobTest, AnAdaptiveJobPlaysTheGamesALocalRunPlays) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_start_positions("0,518,959");
  s.set_games_per_position(24);
  s.set_target_width(0.7);
  s.set_adaptive_batch(4);
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->progress().games_total(), 12);  // the first batch of each position
  std::vector<v1::Lease> first = acquire(100);
  EXPECT_EQ(first.size(), 6u);  // 3 positions x 4 games, 2 games per unit; nothing beyond yet
  for (const v1::Lease& l : first) ASSERT_EQ(complete(l, compute(l)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  // Looks run on the coordinator's refill thread: play whatever it plans until the job ends,
  // restarting the coordinator once 8 units are in (the second batch under way).
  ASSERT_NO_FATAL_FAILURE(play_until_final(
      j->id(), [](const v1::Lease& l) { return compute_unit(l.spec(), nullptr); },
      [](const v1::Job&, int completed) { return completed >= 2; }));
  v1::Job done = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);

  const selfplay::SelfPlaySpec local_spec = *selfplay::spec_from_proto(s);
  ASSERT_TRUE(local_spec.adaptive.enabled());
  auto local = selfplay::play_local(local_spec, 2);
  ASSERT_TRUE(local.ok()) << local.status();
  selfplay::SelfPlayStats local_stats, stats;
  local_stats.set_adaptive(local_spec.adaptive, local_spec.games_per_position);
  stats.set_adaptive(local_spec.adaptive, local_spec.games_per_position);
  std::string local_pgn, pgn;
  for (const selfplay::PlayedGame& g : *local) {
    local_stats.add(local_spec.positions[g.position], g.record);
    local_pgn += g.record.pgn;
  }
  int64_t games = 0;
  cluster_figures(j->id(), &stats, &pgn, &games);
  EXPECT_EQ(games, int64_t(local->size()));
  EXPECT_EQ(done.progress().games_total(), int64_t(local->size()));
  EXPECT_EQ(done.progress().games_done(), int64_t(local->size()));
  EXPECT_EQ(stats.to_csv(), local_stats.to_csv());
  EXPECT_EQ(pgn, local_pgn);
  // Every position ended with a verdict, and the rule made them play different counts here.
  std::set<int64_t> counts;
  for (const selfplay::PositionStats* p : stats.rows()) {
    EXPECT_EQ(stats.verdict_of(*p), selfplay::Verdict::kNarrow) << p->id;
    counts.insert(p->played());
  }
  EXPECT_GT(counts.size(), 1u);
  EXPECT_NE(stats.to_csv().find(",verdict,"), std::string::npos);
}

// Schema 8 counts each distinct game once: opened, a store of schema 7 has every self-play
// job's statistics counted again from its settled units' game summaries (here made wrong on
// purpose first), to the local run's figures; the stored games stay.
TEST_F(SelfPlayJobTest, SchemaSevenStoresAreRecountedDistinctGamesOnce) {
  coordinator_.reset();
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir_ + "/c.db" + suffix);
  {
    auto old = Store::open(dir_ + "/c.db", 7);
    ASSERT_TRUE(old.ok()) << old.status();
    store_ = std::move(*old);
  }
  coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, CoordinatorOptions{30'000});
  ASSERT_TRUE(coordinator_->load().ok());
  worker_ = hello("w");
  v1::SelfPlayJobSpec s = small_spec();
  s.set_games_per_position(5);
  s.set_random_plies(1);
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  play_all();
  ASSERT_TRUE(store_->exec_for_test("UPDATE sp_totals SET white_wins = 99, draws = 0, duplicates = 0").ok());
  open();
  EXPECT_EQ(store_->schema_version(), Store::kSchemaVersion);
  const selfplay::SelfPlaySpec spec = *selfplay::spec_from_proto(s);
  selfplay::SelfPlayStats local_stats, stats;
  auto local = selfplay::play_local(spec, 1);
  ASSERT_TRUE(local.ok()) << local.status();
  for (const selfplay::PlayedGame& g : *local) local_stats.add(spec.positions[g.position], g.record);
  ASSERT_GT(local_stats.total().duplicates, 0);
  std::string pgn;
  int64_t games = 0;
  cluster_figures(j->id(), &stats, &pgn, &games);
  EXPECT_EQ(games, 10);  // stored games kept
  EXPECT_EQ(stats.to_csv(), local_stats.to_csv());
}

// Taking a settled unit back (its only vote came from a worker quarantined since) takes its
// games out of the counts, duplicates included, and out of the stored games.
TEST(SelfPlayStoreTest, TakingAUnitBackUndoesItsCountsAndGames) {
  auto store = Store::open(":memory:");
  ASSERT_TRUE(store.ok());
  StoredJob j;
  j.id = "job-1";
  j.seq = 1;
  for (int i = 0; i < 2; ++i) {
    StoredUnit u;
    u.index = i;
    j.units.push_back(u);
  }
  ASSERT_TRUE((*store)->insert_job(j).ok());
  const auto settlement = [](int64_t first, uint64_t hash) {
    SelfPlaySettlement s;
    s.sp = 0;
    s.first_game = first;
    for (int k = 0; k < 2; ++k) {
      s.games.push_back({0, 0, 10, hash});
      StoredGame g;
      g.sp = 0;
      g.index = first + k;
      g.white = g.black = "c960";
      g.moves = std::string(20, 'x');
      s.stored.push_back(g);
    }
    return s;
  };
  const SelfPlaySettlement a = settlement(0, 7), b = settlement(2, 7);
  ASSERT_TRUE(settle_with_games(store->get(), "job-1", 0, "r0", std::nullopt, 0, a).ok());
  ASSERT_TRUE(settle_with_games(store->get(), "job-1", 1, "r1", std::nullopt, 0, b).ok());
  auto totals = load_position_totals(store->get(), "job-1");
  ASSERT_TRUE(totals.ok() && totals->size() == 1u);
  EXPECT_EQ((*totals)[0].games, 4);
  EXPECT_EQ((*totals)[0].white_wins, 1);  // four copies of one game: one game's evidence
  EXPECT_EQ((*totals)[0].plies, 40);
  EXPECT_EQ((*totals)[0].duplicates, 3);
  EXPECT_EQ((*totals)[0].stored, 4);
  EXPECT_EQ((*totals)[0].terminations.at(0), 4);
  // A second settlement of the same games fails whole.
  EXPECT_FALSE(settle_with_games(store->get(), "job-1", 1, "r1", std::nullopt, 0, b).ok());
  SelfPlaySettlement undo = b;
  undo.stored.clear();
  ASSERT_TRUE(unsettle_with_games(store->get(), "job-1", 1, 2, undo).ok());
  totals = load_position_totals(store->get(), "job-1");
  EXPECT_EQ((*totals)[0].games, 2);
  EXPECT_EQ((*totals)[0].duplicates, 1);
  EXPECT_EQ((*totals)[0].white_wins, 1);  // the distinct game stays while a copy of it does
  EXPECT_EQ((*totals)[0].stored, 2);
  EXPECT_EQ(load_games(store->get(), "job-1")->size(), 2u);
  EXPECT_FALSE((*store)->unit_result("job-1", 1)->has_value());
  // Settled again, as another worker computes it, it counts as before.
  ASSERT_TRUE(settle_with_games(store->get(), "job-1", 1, "r1", std::nullopt, 0, b).ok());
  EXPECT_EQ((*load_position_totals(store->get(), "job-1"))[0].duplicates, 3);
  // Taken back whole, nothing is left of the game's evidence.
  ASSERT_TRUE(unsettle_with_games(store->get(), "job-1", 1, 2, undo).ok());
  SelfPlaySettlement undo_a = a;
  undo_a.stored.clear();
  ASSERT_TRUE(unsettle_with_games(store->get(), "job-1", 0, 2, undo_a).ok());
  totals = load_position_totals(store->get(), "job-1");
  EXPECT_EQ((*totals)[0].games, 0);
  EXPECT_EQ((*totals)[0].white_wins, 0);
  EXPECT_EQ((*totals)[0].duplicates, 0);
}

// A store of schema 3 kept every game whole, in its unit's result, its copies' and the games
// table; opened now, it is converted (counts, digests, compact games) and the job goes on to
// the local run's figures, a copy sent again still recognised.
// A job as the store keeps it, every unit of its plan unsettled.
StoredJob stored_job(const std::string& id, int64_t seq, const v1::JobSpec& js, const KindPlan& plan) {
  StoredJob sj;
  sj.id = id;
  sj.seq = seq;
  sj.spec = js.SerializeAsString();
  sj.plan = plan.plan.SerializeAsString();
  sj.state = v1::JOB_STATE_RUNNING;
  for (size_t i = 0; i < plan.units.size(); ++i) {
    StoredUnit u;
    u.index = int64_t(i);
    u.spec = plan.units[i].first.SerializeAsString();
    u.meta = plan.units[i].second.SerializeAsString();
    sj.units.push_back(u);
  }
  return sj;
}

TEST_F(SelfPlayJobTest, SchemaThreeStoresAreConverted) {
  coordinator_.reset();
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir_ + "/c.db" + suffix);
  const std::unique_ptr<JobKind> kind = make_selfplay_kind();
  v1::JobSpec js;
  js.set_verify(v1::VERIFY_MODE_OFF);
  *js.mutable_selfplay() = small_spec();
  auto plan = kind->plan(js);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Coordinators of those schemas kept the job's spec in each unit.
  for (auto& u : plan->units) u.first = kind->work_spec(kind->shared(js), u.first);
  ASSERT_EQ(plan->units.size(), 4u);
  std::vector<v1::Lease> leases;
  {
    auto old = Store::open(dir_ + "/c.db", 3);
    ASSERT_TRUE(old.ok()) << old.status();
    EXPECT_EQ((*old)->schema_version(), 3);
    ASSERT_TRUE((*old)->insert_job(stored_job("job-1", 1, js, *plan)).ok());
    // Three units settled the old way (with the PGN the coordinator made then), one not.
    for (int64_t i = 0; i < 3; ++i) {
      v1::Lease l;
      l.set_unit_id(absl::StrCat("job-1/", i));
      l.set_attempt(1);
      *l.mutable_spec() = plan->units[size_t(i)].first;
      leases.push_back(l);
      auto canonical = kind->check_result(l.spec(), compute(l));
      ASSERT_TRUE(canonical.ok()) << canonical.status();
      for (v1::SelfPlayGame& g : *canonical->mutable_selfplay()->mutable_games()) g.set_pgn("[Event \"old\"]");
      const std::string whole = canonical->SerializeAsString();
      ASSERT_TRUE((*old)->record_leases("job-1", {{i, 1, 1, StoredCopy{i, 0, "w", 1, 0, {}, false}}}).ok());
      ASSERT_TRUE((*old)->put_copy_result("job-1", i, 0, whole).ok());
      ASSERT_TRUE((*old)->settle_unit("job-1", i, whole, 1, std::nullopt, 0).ok());
    }
    ASSERT_TRUE((*old)->exec_for_test("INSERT INTO games VALUES ('job-1', 518, 0, 0, x'00')").ok());
  }
  open();
  EXPECT_EQ(store_->schema_version(), Store::kSchemaVersion);
  auto job = coordinator_->get_job(Caller::local(), "job-1");
  ASSERT_TRUE(job.ok()) << job.status();
  EXPECT_EQ(job->progress().games_done(), 5);
  EXPECT_EQ(load_games(store_.get(), "job-1")->size(), 5u);
  EXPECT_EQ(complete(leases[1], compute(leases[1])).value(), v1::COMPLETION_OUTCOME_DUPLICATE);
  play_all();
  const selfplay::SelfPlaySpec local_spec = *selfplay::spec_from_proto(small_spec());
  auto local = selfplay::play_local(local_spec, 1);
  ASSERT_TRUE(local.ok());
  selfplay::SelfPlayStats local_stats, stats;
  std::string local_pgn, pgn;
  for (const selfplay::PlayedGame& g : *local) {
    local_stats.add(local_spec.positions[g.position], g.record);
    local_pgn += g.record.pgn;
  }
  int64_t games = 0;
  cluster_figures("job-1", &stats, &pgn, &games);
  EXPECT_EQ(games, 6);
  EXPECT_EQ(stats.to_csv(), local_stats.to_csv());
  EXPECT_EQ(pgn, local_pgn);
}

// Writes a job into a store of schema 5 as that schema's coordinator did: every unit settled,
// each stored game as 16-bit move codes.
void write_schema_five_job(Store* store, const std::string& id, const v1::SelfPlayJobSpec& s,
                           const std::function<v1::UnitResult(const v1::Lease&)>& compute) {
  const std::unique_ptr<JobKind> kind = make_selfplay_kind();
  v1::JobSpec js;
  js.set_verify(v1::VERIFY_MODE_OFF);
  *js.mutable_selfplay() = s;
  auto plan = kind->plan(js);
  ASSERT_TRUE(plan.ok()) << plan.status();
  // Coordinators of those schemas kept the job's spec in each unit.
  for (auto& u : plan->units) u.first = kind->work_spec(kind->shared(js), u.first);
  ASSERT_TRUE(store->insert_job(stored_job(id, id == "job-1" ? 1 : 2, js, *plan)).ok());
  for (size_t i = 0; i < plan->units.size(); ++i) {
    v1::Lease l;
    l.set_unit_id(absl::StrCat(id, "/", i));
    l.set_attempt(1);
    *l.mutable_spec() = plan->units[i].first;
    auto canonical = kind->check_result(l.spec(), compute(l));
    ASSERT_TRUE(canonical.ok()) << canonical.status();
    auto c = compact_result(l.spec().selfplay(), plan->units[i].second.selfplay().position(), *canonical,
                            MoveCoding::kMoveCodes);
    ASSERT_TRUE(c.ok()) << c.status();
    const bool last = i + 1 == plan->units.size();
    ASSERT_TRUE(settle_with_games(store, id, int64_t(i), c->settled.SerializeAsString(),
                                  last ? std::optional<int32_t>(v1::JOB_STATE_SUCCEEDED) : std::nullopt, 1,
                                  c->settlement)
                    .ok());
  }
}

// A store of schema 5 kept stored games as 16-bit move codes; opened now, each is recoded
// (replayed from its job's position) and a job of the 960 and one of FENs give the PGN of a
// local run as before, from rows a fraction of the size.
TEST_F(SelfPlayJobTest, SchemaFiveStoresHaveTheirGamesRecoded) {
  coordinator_.reset();
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir_ + "/c.db" + suffix);
  const v1::SelfPlayJobSpec fens = with_fen_positions(small_spec());
  const std::vector<std::pair<std::string, v1::SelfPlayJobSpec>> jobs = {{"job-1", small_spec()}, {"job-2", fens}};
  int64_t old_bytes = 0;
  {
    auto old = Store::open(dir_ + "/c.db", 5);
    ASSERT_TRUE(old.ok()) << old.status();
    for (const auto& [id, s] : jobs) {
      write_schema_five_job(old->get(), id, s, [this](const v1::Lease& l) { return compute(l); });
      auto games = load_games(old->get(), id);
      ASSERT_TRUE(games.ok() && games->size() == 6u);
      for (const StoredGame& g : *games) old_bytes += int64_t(g.moves.size());
    }
  }
  open();
  EXPECT_EQ(store_->schema_version(), Store::kSchemaVersion);
  int64_t new_bytes = 0;
  for (const auto& [id, s] : jobs) {
    SCOPED_TRACE(id);
    auto spec = selfplay::spec_from_proto(s);
    ASSERT_TRUE(spec.ok()) << spec.status();
    auto local = selfplay::play_local(*spec, 1);
    ASSERT_TRUE(local.ok()) << local.status();
    std::string local_pgn, pgn;
    for (const selfplay::PlayedGame& g : *local) local_pgn += g.record.pgn;
    auto chunks = coordinator_->results(Caller::local(), id, false);
    ASSERT_TRUE(chunks.ok()) << chunks.status();
    int games = 0;
    for (const v1::ResultChunk& c : *chunks)
      for (const v1::SelfPlayGame& g : c.selfplay().game_records()) pgn += g.pgn(), ++games;
    EXPECT_EQ(games, 6);
    EXPECT_EQ(pgn, local_pgn);
    auto stored = load_games(store_.get(), id);
    ASSERT_TRUE(stored.ok()) << stored.status();
    for (const StoredGame& g : *stored) new_bytes += int64_t(g.moves.size());
  }
  EXPECT_LT(new_bytes * 2, old_bytes);
}

// A stored game of a schema-5 store that does not replay fails the migration, naming the game,
// and leaves the store as it was.
TEST_F(SelfPlayJobTest, ASchemaFiveGameThatDoesNotReplayFailsTheOpen) {
  coordinator_.reset();
  store_.reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(dir_ + "/c.db" + suffix);
  const std::string path = dir_ + "/c.db";
  {
    auto old = Store::open(path, 5);
    ASSERT_TRUE(old.ok()) << old.status();
    write_schema_five_job(old->get(), "job-1", small_spec(), [this](const v1::Lease& l) { return compute(l); });
    // Game index 2 of the plan's second position (518; the plan sorts them): its fourth ply becomes a1a1.
    ASSERT_TRUE((*old)
                    ->exec_for_test("UPDATE sp_games SET moves = substr(moves, 1, 6) || x'0000' || substr(moves, 9) "
                                    "WHERE job_id = 'job-1' AND sp = 1 AND game_index = 2")
                    .ok());
  }
  auto s = Store::open(path);
  ASSERT_FALSE(s.ok());
  EXPECT_EQ(s.status().code(), absl::StatusCode::kFailedPrecondition) << s.status();
  for (const char* part : {"job job-1", "position 1 of its plan (518)", "game index 2", "ply 4 is not legal"})
    EXPECT_TRUE(absl::StrContains(s.status().message(), part)) << part << " in " << s.status();
  auto old = Store::open(path, 5);
  ASSERT_TRUE(old.ok()) << old.status();
  EXPECT_EQ((*old)->schema_version(), 5);
  EXPECT_EQ(load_games(old->get(), "job-1")->size(), 6u);
}

// A stored game whose bytes do not decode (a damaged store) fails the results that would send
// it, naming the game; the other positions' games were sent before it.
TEST_F(SelfPlayJobTest, AStoredGameThatDoesNotDecodeFailsResultsNamingIt) {
  auto j = submit(small_spec());
  ASSERT_TRUE(j.ok()) << j.status();
  play_all();
  ASSERT_TRUE(coordinator_->results(Caller::local(), j->id(), false).ok());
  // Game 2 (index 1) of position 518, the plan's second: one ply, and no byte for it.
  ASSERT_TRUE(store_
                  ->exec_for_test(absl::StrCat("UPDATE sp_games SET moves = x'01' WHERE job_id = '", j->id(),
                                               "' AND sp = 1 AND game_index = 1"))
                  .ok());
  int sent = 0;
  const absl::Status s = coordinator_->results(Caller::local(), j->id(), false, false, [&](const v1::ResultChunk& c) {
    sent += c.selfplay().game_records_size();
    return true;
  });
  EXPECT_EQ(s.code(), absl::StatusCode::kDataLoss) << s;
  EXPECT_TRUE(absl::StrContains(s.message(), "stored game 518.2: ply 1: the bytes end before the moves")) << s;
  EXPECT_EQ(sent, 3);
}

TEST_F(SelfPlayJobTest, RejectsResultsThatCannotBelongToTheUnit) {
  ASSERT_TRUE(submit(small_spec()).ok());
  std::vector<v1::Lease> ls = acquire(1);
  ASSERT_EQ(ls.size(), 1u);
  const v1::UnitResult good = compute(ls[0]);
  const std::unique_ptr<JobKind> kind = make_selfplay_kind();
  // What the coordinator checks alone, each forgery refused with the reason.
  std::vector<std::pair<std::string, v1::UnitResult>> forged;
  auto add = [&](const std::string& what, auto edit) {
    v1::UnitResult r = good;
    edit(r.mutable_selfplay());
    forged.emplace_back(what, r);
  };
  add("a game missing", [](v1::SelfPlayUnitResult* r) { r->mutable_games()->RemoveLast(); });
  add("game index", [](v1::SelfPlayUnitResult* r) { r->mutable_games(1)->set_game_index(5); });
  add("illegal move", [](v1::SelfPlayUnitResult* r) { r->mutable_games(0)->set_moves(0, "a1a8"); });
  add("unknown termination", [](v1::SelfPlayUnitResult* r) { r->mutable_games(0)->set_termination("boredom"); });
  add("no moves", [](v1::SelfPlayUnitResult* r) {
    r->mutable_games(0)->clear_moves();
    r->mutable_games(0)->set_opening_plies(0);
  });
  add("a checkmate that is none", [](v1::SelfPlayUnitResult* r) {
    v1::SelfPlayGame* g = r->mutable_games(0);
    g->mutable_moves()->DeleteSubrange(g->moves_size() - 2, 2);
    g->set_termination("checkmate");
    g->set_result("1-0");
  });
  add("another opening", [](v1::SelfPlayUnitResult* r) {
    v1::SelfPlayGame* g = r->mutable_games(0);
    g->set_moves(0, g->moves(0) == "a2a3" ? "b2b3" : "a2a3");
  });
  add("the wrong result for the ending", [](v1::SelfPlayUnitResult* r) {
    v1::SelfPlayGame* g = r->mutable_games(0);
    g->set_result(g->result() == "0-1" ? "1-0" : "0-1");
  });
  add("a resignation the spec does not allow", [](v1::SelfPlayUnitResult* r) {
    v1::SelfPlayGame* g = r->mutable_games(0);
    g->set_termination("adjudicated_resign");
    g->set_result("1-0");
  });
  for (const auto& [what, r] : forged)
    EXPECT_EQ(kind->check_result(ls[0].spec(), r).status().code(), absl::StatusCode::kInvalidArgument) << what;
  v1::UnitResult perft;
  perft.mutable_perft();
  EXPECT_EQ(kind->check_result(ls[0].spec(), perft).status().code(), absl::StatusCode::kInvalidArgument);
  // The worker's own PGN text is never kept: the coordinator makes it from the checked moves.
  v1::UnitResult lying_pgn = good;
  lying_pgn.mutable_selfplay()->mutable_games(0)->set_pgn("[Event \"forged\"]\n1. e4 e5 1-0\n");
  absl::StatusOr<v1::UnitResult> canonical = kind->check_result(ls[0].spec(), lying_pgn);
  ASSERT_TRUE(canonical.ok()) << canonical.status();
  EXPECT_EQ(canonical->selfplay().games(0).pgn(), "");  // made again on export, from the stored moves
  EXPECT_EQ(canonical->selfplay().games(0).moves_size(), good.selfplay().games(0).moves_size());
  // Through the coordinator: a forgery is refused and quarantines its sender; nothing is stored.
  EXPECT_EQ(complete(ls[0], forged[4].second).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(complete(ls[0], good).status().code(), absl::StatusCode::kPermissionDenied);
  auto stored = load_games(store_.get(), coordinator_->list_jobs(Caller::local(), {})->jobs(0).id());
  ASSERT_TRUE(stored.ok());
  EXPECT_TRUE(stored->empty());
}

// Issue 19: games ending in an engine failure at ply 0 or 1 cannot be checked, so under
// --verify off a worker token alone made 40 of 40 forged White wins land in the results. Such
// games (an engine failure before both engines played a move from the position) are reported
// but are not evidence about the position: they move no count, score or test. Later failures
// count as before.
TEST_F(SelfPlayJobTest, AnEngineFailureBeforeBothEnginesMovedIsNotEvidence) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_games_per_position(4);
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  int forged = 0, late = 0;
  for (std::vector<v1::Lease> ls; !(ls = acquire(8)).empty();)
    for (const v1::Lease& l : ls) {
      v1::UnitResult r = compute(l);
      for (v1::SelfPlayGame& g : *r.mutable_selfplay()->mutable_games()) {
        // Position 518's games: "the engine would not start" right after the random opening,
        // White the winner. Position 0's: a crash of the side to move two engine plies in.
        const bool early = l.spec().selfplay().start_position() == 518;
        const int end = g.opening_plies() + (early ? 0 : 2);
        ASSERT_LT(end, g.moves_size());
        g.mutable_moves()->DeleteSubrange(end, g.moves_size() - end);
        g.set_termination(early ? "engine_error" : "engine_crash");
        g.set_result(early ? "1-0" : (end % 2 == 0 ? "0-1" : "1-0"));  // the side to move loses
        g.set_detail("forged");
        g.clear_pgn();
        (early ? forged : late) += 1;
      }
      ASSERT_EQ(complete(l, r).value(), v1::COMPLETION_OUTCOME_ACCEPTED) << l.unit_id();
    }
  ASSERT_EQ(forged, 4);
  ASSERT_EQ(late, 4);
  auto chunks = coordinator_->results(Caller::local(), j->id(), false);
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  std::map<int, v1::SelfPlayPositionResult> by_sp;
  for (const v1::ResultChunk& c : *chunks) by_sp[c.selfplay().start_position()] = c.selfplay();
  const v1::SelfPlayPositionResult& early = by_sp[518];
  EXPECT_EQ(early.games(), 4);  // played, and complete
  EXPECT_TRUE(early.complete());
  EXPECT_EQ(early.uncounted(), 4);
  EXPECT_EQ(early.white_wins() + early.draws() + early.black_wins(), 0) << "forged failures counted";
  EXPECT_EQ(early.terminations(int(selfplay::Termination::kEngineError)), 4);  // reported
  EXPECT_EQ(early.game_records_size(), 4);
  const v1::SelfPlayPositionResult& counted = by_sp[0];
  EXPECT_EQ(counted.uncounted(), 0);
  EXPECT_EQ(counted.white_wins() + counted.draws() + counted.black_wins(), 4);
  // As `c960 results` and the local statistics make them: the same figures.
  selfplay::SelfPlayStats stats, local;
  std::string pgn;
  int64_t games = 0;
  cluster_figures(j->id(), &stats, &pgn, &games);
  EXPECT_EQ(stats.find("518")->counts.games(), 0);
  EXPECT_EQ(stats.find("518")->uncounted, 4);
  EXPECT_EQ(stats.total().uncounted, 4);
  EXPECT_EQ(stats.total().counts.games(), 4);
  EXPECT_NE(stats.to_csv().find(",uncounted,"), std::string::npos);
  selfplay::GameRecord g;
  g.start_fen = *startpos_fen(518, true);
  g.termination = selfplay::Termination::kEngineError;
  g.result = selfplay::GameResult::kWhiteWins;
  local.add(518, g);
  EXPECT_EQ(local.find("518")->counts.games(), 0);
  EXPECT_EQ(local.find("518")->uncounted, 1);
  EXPECT_EQ(local.find("518")->terminations[size_t(selfplay::Termination::kEngineError)], 1);
}

// Issue 20: a job whose games would all repeat the first (a fixed limit, no randomness) is
// refused at submit naming the fields that fix it; the README's example now varies its games.
TEST_F(SelfPlayJobTest, AJobWhoseGamesWouldAllRepeatIsRefused) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_random_plies(0);
  const absl::Status refused = submit(s).status();
  EXPECT_EQ(refused.code(), absl::StatusCode::kInvalidArgument) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "would repeat the first")) << refused;
  EXPECT_TRUE(absl::StrContains(refused.message(), "random_plies")) << refused;
  s.set_games_per_position(1);
  EXPECT_TRUE(submit(s).ok());
  s.set_games_per_position(3);
  s.clear_depth();
  s.set_nodes(300);
  EXPECT_EQ(submit(s).status().code(), absl::StatusCode::kInvalidArgument);
  s.set_node_jitter_percent(10);
  EXPECT_TRUE(submit(s).ok());
}

TEST_F(SelfPlayJobTest, AJobNamesAnEngineNeverAPath) {
  v1::SelfPlayJobSpec s = small_spec();
  for (const std::string engine : {"/usr/games/stockfish", "../x", "sf fast", ""}) {
    s.set_engine(engine);
    auto j = submit(s);
    EXPECT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument) << engine;
    EXPECT_TRUE(absl::StrContains(j.status().message(), "engine")) << j.status();
  }
}

TEST_F(SelfPlayJobTest, UnitsGoOnlyToWorkersOfferingTheEngine) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("other");
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_TRUE(acquire(4).empty());  // the worker offers builtin and sf only
  EXPECT_TRUE(absl::StrContains(j->notice(), "no connected worker offers engine 'other'")) << j->notice();
  v1::HelloRequest req;
  req.set_name("other-host");
  req.set_threads(32);
  req.add_capabilities("selfplay");
  req.add_engines("other");
  req.set_protocol_version(kProtocolVersion);
  const std::string w2 = coordinator_->hello(Caller::local(), req)->worker_id();
  EXPECT_EQ(coordinator_->get_job(Caller::local(), j->id())->notice(), "");
  EXPECT_FALSE(acquire(4, w2).empty());
}

// The probe of issue 19: a submitter setting Stockfish's "Debug Log File" made every worker
// offering it truncate and write a file of the worker's choosing... of the job's choosing. Now
// the coordinator refuses such a job, and a worker refuses the option (and any option its
// operator did not allow, and Hash or Threads out of bounds) before the engine starts, even for
// a unit that comes to it some other way.
TEST_F(SelfPlayJobTest, AJobCannotMakeAWorkerWriteFilesOrExceedItsBounds) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed (deploy/install-deps.sh installs it)";
  const std::string target = dir_ + "/written-by-the-job";
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("sf");
  v1::UciOption* o = s.add_options();
  o->set_name("Debug Log File");
  o->set_value(target);
  auto refused = submit(s);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "options: 'Debug Log File'")) << refused.status();
  // A unit that carries it anyway (an older or a hostile coordinator): the worker refuses it.
  s.clear_options();
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  std::vector<v1::Lease> ls = acquire(1);
  ASSERT_EQ(ls.size(), 1u);
  const std::map<std::string, EngineOffer> offers = {{"sf", {sf, default_engine_policy(), "", ""}}};
  auto with = [&](std::vector<std::pair<std::string, std::string>> options) {
    v1::UnitSpec spec = ls[0].spec();
    for (const auto& [name, value] : options) {
      v1::UciOption* u = spec.mutable_selfplay()->mutable_job()->add_options();
      u->set_name(name);
      u->set_value(value);
    }
    return compute_unit(spec, nullptr, offers);
  };
  for (const auto& [options, names] :
       std::vector<std::pair<std::vector<std::pair<std::string, std::string>>, std::string>>{
           {{{"Debug Log File", target}}, "'Debug Log File': names a file"},
           {{{"EvalFile", target}}, "'EvalFile': names a file"},
           {{{"SyzygyPath", dir_}}, "'SyzygyPath': names a file"},
           {{{"Hash", "4096"}}, "'Hash': '4096' is not a number in 1..256"},
           {{{"Threads", "8"}}, "'Threads': '8' is not a number in 1..1"},
           {{{"Skill Level", "3"}}, "'Skill Level': not one a job may set on this worker"}}) {
    auto r = with(options);
    ASSERT_FALSE(r.ok()) << names;
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), names)) << r.status();
  }
  EXPECT_FALSE(std::filesystem::exists(target));
  // Within the bounds it plays; and an option the operator allows (--engine-option) is a job's.
  auto ok = with({{"Hash", "16"}, {"Threads", "1"}});
  EXPECT_TRUE(ok.ok()) << ok.status();
  std::map<std::string, EngineOffer> wider = offers;
  wider["sf"].policy.allowed.push_back(*selfplay::parse_allowed_option("Skill Level=0..20"));
  v1::UnitSpec spec = ls[0].spec();
  v1::UciOption* skill = spec.mutable_selfplay()->mutable_job()->add_options();
  skill->set_name("Skill Level");
  skill->set_value("3");
  auto allowed = compute_unit(spec, nullptr, wider);
  EXPECT_TRUE(allowed.ok()) << allowed.status();
}

// Workers say what a job may set on each engine they offer (Hello's engine_offers, from
// c960-worker --engine-option): a job no connected offering worker allows is refused at submit,
// naming the option, and a job's units go only to workers that allow its options.
TEST_F(SelfPlayJobTest, UnitsGoOnlyToWorkersAllowingTheJobsOptions) {
  struct Allowed {
    std::string name;
    int64_t min, max;
  };
  auto hello_with = [&](const std::string& name, const std::vector<Allowed>& allowed) {
    v1::HelloRequest req = hello_request(name);
    v1::EngineOffer* o = req.add_engine_offers();
    o->set_engine("sf");
    for (const Allowed& a : allowed) {
      v1::AllowedOption* ao = o->add_options();
      ao->set_name(a.name);
      ao->set_bounded(true);
      ao->set_min(a.min);
      ao->set_max(a.max);
    }
    return coordinator_->hello(Caller::local(), req);
  };
  auto with = [](std::string name, std::string value) {
    v1::SelfPlayJobSpec s = small_spec();
    s.set_engine("sf");
    v1::UciOption* o = s.add_options();
    o->set_name(std::move(name));
    o->set_value(std::move(value));
    return s;
  };
  worker_ = hello_with("w", {{"Hash", 1, 64}})->worker_id();  // the fixture's worker, saying what it allows
  for (const auto& [spec, why] : std::vector<std::pair<v1::SelfPlayJobSpec, std::string>>{
           {with("Skill Level", "3"), "'Skill Level': not one a job may set"},
           {with("Hash", "128"), "'Hash': '128' is not a number in 1..64"}}) {
    auto refused = submit(spec);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), "no connected worker offering engine 'sf' allows"))
        << refused.status();
    EXPECT_TRUE(absl::StrContains(refused.status().message(), why)) << refused.status();
  }
  // A worker that allows Skill Level joins: the job is accepted, and only that worker gets it.
  const std::string w2 = hello_with("w2", {{"Hash", 1, 64}, {"Skill Level", 0, 20}})->worker_id();
  auto skill = submit(with("Skill Level", "3"));
  ASSERT_TRUE(skill.ok()) << skill.status();
  EXPECT_TRUE(acquire(4).empty());
  EXPECT_FALSE(acquire(4, w2).empty());
  // Offers are checked: an engine it does not offer, a range upside down.
  v1::HelloRequest bad;
  bad.set_name("bad");
  bad.set_threads(1);
  bad.set_protocol_version(kProtocolVersion);
  bad.add_engine_offers()->set_engine("sf");
  auto r = coordinator_->hello(Caller::local(), bad);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(r.status().message(), "engine_offers.engine")) << r.status();
  auto upside = hello_with("upside", {{"Hash", 64, 1}});
  EXPECT_EQ(upside.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(upside.status().message(), "engine_offers.options")) << upside.status();
}

// Issue 34: a job sizes the built-in engine's hash (hash_mb, up to 4,096 MiB a player, two
// players a game, one game per compute thread); the worker's operator bounds it. Workers say
// their bound at Hello (builtin's Hash, c960-worker --engine-option builtin:Hash=1..MAX, 64 by
// default): a job no connected worker allows is refused at submit, its units go only to workers
// that allow it, and a worker refuses such a unit before it allocates anything.
TEST_F(SelfPlayJobTest, AJobCannotSizeAWorkersMemoryPastItsOperatorsBound) {
  auto hello_with = [&](const std::string& name, int64_t max_mb) {
    v1::HelloRequest req = hello_request(name);
    v1::EngineOffer* o = req.add_engine_offers();
    o->set_engine("builtin");
    v1::AllowedOption* a = o->add_options();
    a->set_name("Hash");
    a->set_bounded(true);
    a->set_min(1);
    a->set_max(max_mb);
    return coordinator_->hello(Caller::local(), req);
  };
  // The fixture's worker says it allows the default bound.
  auto w = hello_with("w", kDefaultBuiltinHashMaxMb);
  ASSERT_TRUE(w.ok()) << w.status();
  worker_ = w->worker_id();
  v1::SelfPlayJobSpec big = small_spec();
  big.set_hash_mb(4096);
  auto refused = submit(big);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "no connected worker offering engine 'builtin' allows"))
      << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "'Hash': '4096' is not a number in 1..64"))
      << refused.status();
  // Within the bound it is accepted. A worker whose operator allows more joins: the big job is
  // accepted, and only it gets units.
  auto roomy = hello_with("roomy", 4096);
  ASSERT_TRUE(roomy.ok()) << roomy.status();
  v1::SelfPlayJobSpec fits = small_spec();
  fits.set_hash_mb(kDefaultBuiltinHashMaxMb);
  auto fitting = submit(fits);
  ASSERT_TRUE(fitting.ok()) << fitting.status();
  ASSERT_TRUE(coordinator_->cancel(Caller::local(), fitting->id()).ok());
  auto accepted = submit(big);
  ASSERT_TRUE(accepted.ok()) << accepted.status();
  EXPECT_TRUE(acquire(4).empty());
  std::vector<v1::Lease> ls = acquire(1, roomy->worker_id());
  ASSERT_EQ(ls.size(), 1u);
  // A unit that carries it anyway (an older or a hostile coordinator): the worker refuses it
  // naming the field and its flag, under its default bound or the one its operator set.
  for (const std::map<std::string, EngineOffer>& engines :
       {std::map<std::string, EngineOffer>{},
        std::map<std::string, EngineOffer>{{"builtin", {"", default_builtin_policy(), "", ""}}}}) {
    auto r = compute_unit(ls[0].spec(), nullptr, engines);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "hash_mb 4096 is more than this worker allows (Hash (1..64)"))
        << r.status();
    EXPECT_TRUE(absl::StrContains(r.status().message(), "--engine-option builtin:Hash=1..MAX")) << r.status();
  }
  // An offer for builtin needs no --engine of that name.
  EXPECT_TRUE(hello_with("plain", 16).ok());
}

// Issue 33: two owners (outside contributors, not trusted), each under several credentials,
// forge engine-failure reports for every unit they get: the job does not FAIL, the units go to
// other owners, and it fails only when a third owner reports too (the failure names them).
TEST_F(SelfPlayJobTest, TwoOwnersCannotFailASelfPlayJob) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("sf");
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  auto report_failures = [&](const Caller& c, const std::string& name) {
    auto h = coordinator_->hello(c, hello_request(name));
    ASSERT_TRUE(h.ok()) << h.status();
    for (int round = 0; round < 4; ++round) {
      v1::AcquireWorkRequest areq;
      areq.set_worker_id(h->worker_id());
      areq.set_max_units(4);
      auto got = coordinator_->acquire(c, areq);
      ASSERT_TRUE(got.ok()) << got.status();
      for (const v1::Lease& l : got->leases()) {
        v1::CompleteUnitRequest req;
        req.set_worker_id(h->worker_id());
        req.set_unit_id(l.unit_id());
        req.set_attempt(l.attempt());
        req.set_failure(absl::StrCat("engine crashed (forged by ", c.identity, ")"));
        auto resp = coordinator_->complete(c, req);
        ASSERT_TRUE(resp.ok()) << resp.status();
      }
    }
  };
  for (const Caller& c :
       {Caller{"m1", Role::kWorker, true, 0, "mallory"}, Caller{"m2", Role::kWorker, true, 0, "mallory"},
        Caller{"t1", Role::kWorker, true, 0, "trudy"}, Caller{"t2", Role::kWorker, true, 0, "trudy"}})
    report_failures(c, "vm");
  v1::Job running = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(running.state(), v1::JOB_STATE_RUNNING) << running.failure_detail();
  EXPECT_GE(running.unit_failures(), kMaxUnitFailures);
  EXPECT_TRUE(absl::StrContains(running.notice(), "untrusted owners alone cannot fail a job")) << running.notice();
  // A third owner: three owners agree that the engine fails.
  report_failures(Caller{"o1", Role::kWorker, true, 0, "oscar"}, "vm");
  const v1::Job failed = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
  EXPECT_TRUE(absl::StrContains(failed.failure_detail(), "reported by")) << failed.failure_detail();
}

TEST_F(SelfPlayJobTest, ABrokenEngineFailsTheJobOnlyWhenTwoWorkersReportIt) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("sf");
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  const std::string w2 = hello("w2");
  const std::map<std::string, EngineOffer> broken = {
      {"sf", {dir_ + "/no-such-engine", default_engine_policy(), "", ""}}};
  auto fail_one = [&](const std::string& worker) {
    std::vector<v1::Lease> ls = acquire(1, worker);
    ASSERT_EQ(ls.size(), 1u);
    auto r = compute_unit(ls[0].spec(), nullptr, broken);
    ASSERT_FALSE(r.ok());
    ASSERT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition) << r.status();
    v1::CompleteUnitRequest req;
    req.set_worker_id(worker);
    req.set_unit_id(ls[0].unit_id());
    req.set_attempt(ls[0].attempt());
    req.set_failure(std::string(r.status().message()));
    auto resp = coordinator_->complete(Caller::local(), req);
    ASSERT_TRUE(resp.ok()) << resp.status();
    EXPECT_EQ(resp->outcome(), v1::COMPLETION_OUTCOME_FAILURE_RECORDED);
  };
  // One worker alone cannot fail the job, however often it reports.
  for (int i = 0; i < kMaxUnitFailures; ++i) fail_one(worker_);
  v1::Job running = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(running.state(), v1::JOB_STATE_RUNNING);
  EXPECT_TRUE(absl::StrContains(running.notice(), "no-such-engine")) << running.notice();
  fail_one(w2);
  const v1::Job failed = coordinator_->get_job(Caller::local(), j->id()).value();
  EXPECT_EQ(failed.state(), v1::JOB_STATE_FAILED);
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

// Issue 19: a spec of many long options was copied into every unit (+1.5 GiB of RSS and +679 MiB
// of store for 19,200 units). Units keep what tells them apart; the job's spec is kept once, and
// leases still carry it whole, so the games are the same. A job's spec has a size bound, and a
// watch sends the spec once.
TEST_F(SelfPlayJobTest, AJobsSpecIsKeptOnceNotInEachUnit) {
  v1::SelfPlayJobSpec s = small_spec();
  s.set_engine("sf");
  s.set_start_positions("0-9");
  s.set_games_per_position(4);
  s.set_games_per_unit(1);
  v1::HelloRequest offer = hello_request("w-sf");
  v1::EngineOffer* o = offer.add_engine_offers();
  o->set_engine("sf");
  for (int k = 0; k < 32; ++k) {
    const std::string name = absl::StrCat("Option ", k, " ", std::string(50, 'x'));
    v1::UciOption* u = s.add_options();
    u->set_name(name);
    u->set_value(absl::StrCat(k));
    v1::AllowedOption* a = o->add_options();
    a->set_name(name);
    a->set_bounded(true);
    a->set_min(0);
    a->set_max(100);
  }
  auto w = coordinator_->hello(Caller::local(), offer);
  ASSERT_TRUE(w.ok()) << w.status();
  auto job = submit(s);
  ASSERT_TRUE(job.ok()) << job.status();
  ASSERT_EQ(job->progress().units_total(), 40);
  const size_t spec_bytes = job->spec().ByteSizeLong();
  ASSERT_GT(spec_bytes, 32u * 55u);

  // Leases carry the whole job, options and all, before and after a restart.
  auto check = [&](const std::vector<v1::Lease>& ls) {
    ASSERT_FALSE(ls.empty());
    for (const v1::Lease& l : ls) {
      ASSERT_EQ(l.spec().selfplay().job().options_size(), 32) << l.unit_id();
      EXPECT_EQ(l.spec().selfplay().job().SerializeAsString(), s.SerializeAsString()) << l.unit_id();
    }
  };
  check(acquire(3, w->worker_id()));

  // The store (closed: the coordinator holds it exclusively): all 40 unit rows together are
  // smaller than one copy of the spec.
  coordinator_.reset();
  store_.reset();
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir_ + "/c.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* q = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT COUNT(*), SUM(LENGTH(spec)) FROM units WHERE job_id = ?", -1, &q, nullptr),
            SQLITE_OK);
  sqlite3_bind_text(q, 1, job->id().c_str(), -1, SQLITE_TRANSIENT);
  ASSERT_EQ(sqlite3_step(q), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int64(q, 0), 40);
  EXPECT_LT(sqlite3_column_int64(q, 1), int64_t(spec_bytes)) << "unit rows carry the job's spec";
  sqlite3_finalize(q);
  sqlite3_close(db);

  open();
  w = coordinator_->hello(Caller::local(), offer);
  ASSERT_TRUE(w.ok()) << w.status();
  check(acquire(3, w->worker_id()));

  // A watch: the spec in its first update only.
  uint64_t version = 0;
  auto first = coordinator_->watch(Caller::local(), job->id(), &version, 0, true);
  auto later = coordinator_->watch(Caller::local(), job->id(), &version, 0, false);
  ASSERT_TRUE(first.ok() && later.ok());
  EXPECT_EQ(first->spec().SerializeAsString(), job->spec().SerializeAsString());
  EXPECT_FALSE(later->has_spec());
  EXPECT_EQ(later->progress().units_total(), 40);

  // Specs past the bound are refused naming it: the other limits keep a valid spec below it,
  // fields this coordinator does not know (kept by protobuf as they came) do not.
  v1::SelfPlayJobSpec big = small_spec();
  big.GetReflection()->MutableUnknownFields(&big)->AddLengthDelimited(999, std::string(kMaxJobSpecBytes, 'u'));
  ASSERT_GT(big.ByteSizeLong(), kMaxJobSpecBytes);
  auto refused = submit(big);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << refused.status();
  EXPECT_TRUE(absl::StrContains(refused.status().message(), "spec: ")) << refused.status();
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

// A match of two engines on the cluster (SelfPlayJobSpec.opponent): units of whole
// colour-reversed pairs go to a worker offering both engines, and the coordinator counts the
// pairs as they settle, so that `c960 results` (match_stats_from_results) gives a local match's
// statistics over the same games, byte for byte, through a restart and a repeated completion.
TEST_F(SelfPlayJobTest, AMatchJobCountsThePairsALocalMatchCounts) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed (deploy/install-deps.sh installs it)";
  v1::SelfPlayJobSpec s = small_spec();
  s.set_start_positions("0,518,959");
  s.set_games_per_position(6);
  s.set_opponent("sf");
  // Odd units would split pairs: refused, naming the field.
  s.set_games_per_unit(3);
  auto odd = submit(s);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(odd.status().message(), "games_per_unit: 3 is odd")) << odd.status();
  // A path is not an engine name, for the opponent as for the engine.
  s.set_games_per_unit(2);
  s.set_opponent("/usr/games/stockfish");
  auto path = submit(s);
  EXPECT_EQ(path.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(path.status().message(), "opponent: '/usr/games/stockfish'")) << path.status();
  s.set_opponent("sf");
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  // A worker that offers the built-in engine only gets none of its units.
  v1::HelloRequest builtin_only = hello_request("builtin-only");
  builtin_only.clear_engines();
  const std::string lone = coordinator_->hello(Caller::local(), builtin_only).value().worker_id();
  EXPECT_TRUE(acquire(4, lone).empty());

  const std::map<std::string, EngineOffer> offers = {{"sf", {sf, default_engine_policy(), "", ""}}};
  int completed = 0;
  for (;;) {
    std::vector<v1::Lease> ls = acquire(2);
    if (ls.empty()) break;
    for (const v1::Lease& l : ls) {
      EXPECT_EQ(l.spec().selfplay().first_game() % 2, 0);
      EXPECT_EQ(l.spec().selfplay().games() % 2, 0);
      auto r = compute_unit(l.spec(), nullptr, offers);
      ASSERT_TRUE(r.ok()) << r.status();
      ASSERT_EQ(complete(l, *r).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
      // The same result again is a duplicate, never a second count of the pairs.
      EXPECT_NE(complete(l, *r).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
      if (++completed == 4) open();
    }
  }
  v1::Job done = coordinator_->get_job(Caller::local(), j->id()).value();
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  auto chunks = coordinator_->results(Caller::local(), j->id(), false, true);
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  size_t incomplete = 9, positions = 0;
  const selfplay::MatchStats cluster = cli::match_stats_from_results(done, *chunks, &incomplete, &positions);
  EXPECT_EQ(incomplete, 0u);
  EXPECT_EQ(positions, 3u);

  selfplay::SelfPlaySpec local_spec = *selfplay::spec_from_proto(s);
  local_spec.opponent_path = sf;
  auto local = selfplay::play_local(local_spec, 2);
  ASSERT_TRUE(local.ok()) << local.status();
  std::map<std::pair<size_t, int>, selfplay::GameRecord> games;
  for (const selfplay::PlayedGame& g : *local) games[{g.position, g.index}] = g.record;
  selfplay::MatchStats expected(local_spec.engine, local_spec.opponent);
  for (size_t k = 0; k < local_spec.positions.size(); ++k)
    for (int i = 0; i < local_spec.games_per_position; i += 2)
      expected.add_pair(local_spec.positions[k], &games.at({k, i}), &games.at({k, i + 1}));
  EXPECT_EQ(cluster.to_csv(), expected.to_csv());
  EXPECT_EQ(cluster.to_json(), expected.to_json());
  int64_t pairs = 0;
  for (int64_t c : cluster.total()) pairs += c;
  int64_t duplicates = 0, unpaired = 0;
  for (const selfplay::MatchPositionStats* r : cluster.rows()) duplicates += r->duplicates, unpaired += r->unpaired;
  EXPECT_EQ(pairs + duplicates + unpaired / 2, 9);  // 3 positions x 3 pairs, each counted once
}

// Provenance: a worker says at Hello what it runs on (CPU) and what each engine it offers is
// (UCI id name, binary SHA-256); a job lists the workers whose results it accepted, by that,
// also after a restart (the store keeps it), and `c960 results` puts them in its metadata.
TEST_F(SelfPlayJobTest, AJobListsTheProvenanceOfTheWorkersWhoseResultsItAccepted) {
  v1::HelloRequest req = hello_request("w2");
  req.set_version("9.9.9");
  req.set_cpu("Test CPU @ 3.0GHz");
  v1::EngineOffer* offer = req.add_engine_offers();
  offer->set_engine("sf");
  offer->set_id_name("Stockfish 15.1");
  offer->set_sha256("zz");
  auto bad = coordinator_->hello(Caller::local(), req);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "engine_offers.sha256: 'zz'")) << bad.status();
  offer->set_sha256(std::string(64, 'a'));
  const std::string w2 = coordinator_->hello(Caller::local(), req).value().worker_id();
  auto j = submit(small_spec());
  ASSERT_TRUE(j.ok()) << j.status();
  for (std::vector<v1::Lease> ls; !(ls = acquire(8, w2)).empty();)
    for (const v1::Lease& l : ls) {
      v1::CompleteUnitRequest c;
      c.set_worker_id(w2);
      c.set_unit_id(l.unit_id());
      c.set_attempt(l.attempt());
      *c.mutable_result() = compute(l);
      ASSERT_EQ(coordinator_->complete(Caller::local(), c).value().outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
    }
  const std::string line = "w2: c960 9.9.9; CPU Test CPU @ 3.0GHz; sf 'Stockfish 15.1' sha256 " + std::string(64, 'a');
  for (int pass = 0; pass < 2; ++pass) {
    v1::Job done = coordinator_->get_job(Caller::local(), j->id()).value();
    EXPECT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
    ASSERT_EQ(done.provenance_size(), 1) << done.ShortDebugString();  // not "w", which computed nothing
    EXPECT_EQ(done.provenance(0), line);
    bool listed = false;
    for (const selfplay::MetadataValue& m : job_metadata(done)) listed |= m.key == "worker_1" && m.value == line;
    EXPECT_TRUE(listed);
    open();  // the workers' provenance is in the store
  }
}

// A match with an SPRT on the cluster plays rounds of pairs, `adaptive_batch` games a position at
// a time, and stops at the first look whose pairs decide the test: fewer games than the cap, the
// decision the results' SPRT gives, and the games those of a local match of that length.
TEST_F(SelfPlayJobTest, AnSprtMatchJobStopsAtTheFirstLookThatDecides) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed (deploy/install-deps.sh installs it)";
  v1::SelfPlayJobSpec s = small_spec();
  s.set_start_positions("0,518,959");
  s.set_games_per_position(200);
  s.set_opponent("sf");
  s.set_depth(3);
  s.set_games_per_unit(2);
  s.set_sprt_elo0(-30);
  s.set_sprt_elo1(0);
  s.set_sprt_alpha(0.1);
  s.set_sprt_beta(0.1);
  s.set_adaptive_batch(3);
  auto odd = submit(s);
  EXPECT_EQ(odd.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(odd.status().message(), "adaptive_batch: 3 is odd")) << odd.status();
  s.set_adaptive_batch(4);
  auto j = submit(s);
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->progress().games_total(), 12);  // two rounds of three positions
  const std::map<std::string, EngineOffer> offers = {{"sf", {sf, default_engine_policy(), "", ""}}};
  // Restarted once the first round is in: the look due then is made when the job is loaded.
  ASSERT_NO_FATAL_FAILURE(play_until_final(
      j->id(), [&](const v1::Lease& l) { return compute_unit(l.spec(), nullptr, offers); },
      [](const v1::Job& now, int) { return now.progress().games_done() >= 12; }));
  v1::Job done = coordinator_->get_job(Caller::local(), j->id()).value();
  ASSERT_EQ(done.state(), v1::JOB_STATE_SUCCEEDED);
  const int64_t played = done.progress().games_done();
  EXPECT_LT(played, 3 * 200) << "the SPRT never decided";
  EXPECT_EQ(played % 12, 0) << "a look is at a whole number of batches of every position";
  auto chunks = coordinator_->results(Caller::local(), j->id(), false, true);
  ASSERT_TRUE(chunks.ok()) << chunks.status();
  const selfplay::MatchStats cluster = cli::match_stats_from_results(done, *chunks);
  const std::string json = cluster.to_json();
  EXPECT_TRUE(absl::StrContains(json, "\"result\": \"H0\"") || absl::StrContains(json, "\"result\": \"H1\"")) << json;
  // One batch fewer would not have decided: the job stopped at its first deciding look.
  selfplay::SelfPlaySpec local_spec = *selfplay::spec_from_proto(s);
  local_spec.opponent_path = sf;
  local_spec.sprt = {};
  local_spec.games_per_position = int(played / 3);
  auto local = selfplay::play_local(local_spec, 2);
  ASSERT_TRUE(local.ok()) << local.status();
  std::map<std::pair<size_t, int>, selfplay::GameRecord> games;
  for (const selfplay::PlayedGame& g : *local) games[{g.position, g.index}] = g.record;
  const auto prefix = [&](int per_position) {
    selfplay::MatchStats m(local_spec.engine, local_spec.opponent);
    m.set_sprt(selfplay::spec_from_proto(s)->sprt);
    for (size_t k = 0; k < local_spec.positions.size(); ++k)
      for (int i = 0; i < per_position; i += 2)
        m.add_pair(local_spec.positions[k], &games.at({k, i}), &games.at({k, i + 1}));
    return m;
  };
  const selfplay::MatchStats all = prefix(int(played / 3));
  EXPECT_EQ(cluster.to_csv(), all.to_csv());
  EXPECT_EQ(cluster.to_json(), all.to_json());
  const selfplay::SprtRule rule = selfplay::spec_from_proto(s)->sprt;
  EXPECT_NE(selfplay::sprt_result(rule, all.llr()), selfplay::SprtResult::kContinue);
  if (played > 12) {
    const selfplay::MatchStats before = prefix(int(played / 3) - 4);
    EXPECT_EQ(selfplay::sprt_result(rule, before.llr()), selfplay::SprtResult::kContinue);
  }
}

// The store counts a match unit's pairs, and takes them back, as MatchStats counts them: a pair
// that repeats another is a duplicate whichever settles first, and goes with its last copy.
TEST(SelfPlayStoreMatch, PairsAreCountedOnceAndTakenBack) {
  const std::string path = absl::StrCat(::testing::TempDir(), "/c960-match-store-", getpid(), ".db");
  std::filesystem::remove(path);
  auto store = Store::open(path);
  ASSERT_TRUE(store.ok()) << store.status();
  // Two units of two pairs each: pairs (1-0, 0-1) = A wins both (WW), and a drawn pair with a
  // game that is not evidence (unpaired); the second unit repeats the first's WW pair.
  const auto game = [](uint8_t result, uint64_t hash, bool evidence) {
    GameSummary g;
    g.result = result;
    g.hash = hash;
    g.plies = 40;
    g.evidence = evidence;
    return g;
  };
  SelfPlaySettlement a;
  a.sp = 0;
  a.first_game = 0;
  a.match = true;
  a.games = {game(0, 11, true), game(2, 12, true), game(1, 13, true), game(1, 14, false)};
  SelfPlaySettlement b = a;
  b.first_game = 4;
  b.games = {game(0, 11, true), game(2, 12, true), game(0, 15, true), game(1, 16, true)};
  const auto pairs = [&] {
    auto t = load_position_totals(store->get(), "j");
    EXPECT_TRUE(t.ok()) << t.status();
    return t.ok() && !t->empty() ? (*t)[0].pairs : std::vector<int64_t>();
  };
  ASSERT_TRUE(apply_settlement(store->get(), "j", a, 1).ok());
  // penta[4] (WW) 1, wins 2, unpaired 2.
  EXPECT_EQ(pairs(), (std::vector<int64_t>{0, 0, 0, 0, 1, 2, 0, 0, 0, 2}));
  ASSERT_TRUE(apply_settlement(store->get(), "j", b, 1).ok());
  // The repeat is a duplicate; the new pair (1-0, 1/2) is WD: penta[3].
  EXPECT_EQ(pairs(), (std::vector<int64_t>{0, 0, 0, 1, 1, 3, 1, 0, 1, 2}));
  // Taken back without saying it is a match (a unit taken back knows its row only).
  a.match = false;
  ASSERT_TRUE(apply_settlement(store->get(), "j", a, -1).ok());
  EXPECT_EQ(pairs(), (std::vector<int64_t>{0, 0, 0, 1, 1, 3, 1, 0, 0, 0}));
  b.match = false;
  ASSERT_TRUE(apply_settlement(store->get(), "j", b, -1).ok());
  EXPECT_EQ(pairs(), (std::vector<int64_t>(10, 0)));
  store->reset();
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

}  // namespace
}  // namespace c960::cluster
