// The self-play job kind in the coordinator, without sockets: the fixture of the
// selfplay_job_*_test.cpp files (a file store in a temporary folder, so that tests restart the
// coordinator; a worker "w" offering self-play with the built-in engine and "sf").
#pragma once

#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <google/protobuf/unknown_field_set.h>
#include <gtest/gtest.h>
#include <map>
#include <set>
#include <sqlite3.h>

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
#include "tests/cluster/coordinator_fixture.h"
#include "tests/selfplay_test_util.h"
#include "worker/compute.h"

namespace c960::cluster {

// Settles a unit with its self-play games as the coordinator does: the unit row and the
// kind's tables in one transaction, kept whole or not at all.
inline absl::Status settle_with_games(Store* store, const std::string& job, int64_t unit, const std::string& result,
                                      std::optional<int32_t> state, int64_t finished_ms, const SelfPlaySettlement& sp) {
  std::unique_ptr<Store::Transaction> txn = store->transaction();
  if (absl::Status s = store->settle_unit(job, unit, result, 1, state, finished_ms); !s.ok()) return s;
  if (absl::Status s = apply_settlement(store, job, sp, 1); !s.ok()) return s;
  return txn->commit();
}

inline absl::Status unsettle_with_games(Store* store, const std::string& job, int64_t unit, int32_t wanted,
                                        const SelfPlaySettlement& sp) {
  std::unique_ptr<Store::Transaction> txn = store->transaction();
  if (absl::Status s = store->unsettle_unit(job, unit, wanted); !s.ok()) return s;
  if (absl::Status s = apply_settlement(store, job, sp, -1); !s.ok()) return s;
  return txn->commit();
}

// The spec from two positions beyond the 960 instead: a FEN after 1.e4 and a DFRC pair.
inline v1::SelfPlayJobSpec with_fen_positions(v1::SelfPlayJobSpec fens) {
  fens.clear_start_positions();
  v1::SelfPlayPosition* a = fens.add_positions();
  a->set_id("e4");
  a->set_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1");
  v1::SelfPlayPosition* b = fens.add_positions();
  b->set_id("7");
  b->set_fen("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAhf - 0 1");
  return fens;
}

class SelfPlayJobTest : public CoordinatorFixture {
 protected:
  void SetUp() override {
    hello_options_ = selfplay_offer();
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

  // The coordinator restarted (or started) over the store in dir_, and a session for "w".
  void open() {
    open_store(dir_ + "/c.db");
    CoordinatorFixture::open();
    worker_ = hello("w");
  }

  // A worker offering self-play with the built-in engine and the engine "sf".
  static HelloOptions selfplay_offer() { return HelloOptions{.capabilities = {"selfplay"}, .engines = {"sf"}}; }
  static v1::HelloRequest hello_request(const std::string& name) {
    return CoordinatorFixture::hello_request(name, selfplay_offer());
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
    return CoordinatorFixture::acquire(worker.empty() ? worker_ : worker, n);
  }

  absl::StatusOr<v1::CompletionOutcome> complete(const v1::Lease& l, const v1::UnitResult& r) {
    return CoordinatorFixture::complete(worker_, l, r);
  }

  v1::UnitResult compute(const v1::Lease& l) { return result(l); }

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
    uint64_t version = 0;  // of the coordinator's state when the job was last looked at
    for (;;) {
      // A watch with no wait: the version the changes after this look are counted from.
      ASSERT_TRUE(coordinator_->watch(Caller::local(), id, &version, 0).ok());
      v1::Job now = coordinator_->get_job(Caller::local(), id).value();
      if (now.state() != v1::JOB_STATE_RUNNING) return;
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << "the job never finished";
      std::vector<v1::Lease> ls = acquire(2);
      if (ls.empty()) {
        // Nothing to lease until the refill thread plans the next batch or the job ends: both
        // change the version seen above, which ends this wait at once (a change made since that
        // look included).
        uint64_t seen = version;
        ASSERT_TRUE(coordinator_->watch(Caller::local(), id, &seen, 10'000).ok());
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
      p.lines = result_lines(r);
      stats->set_position(p);
    }
  }

  std::string dir_;
  std::string worker_;
};

}  // namespace c960::cluster
