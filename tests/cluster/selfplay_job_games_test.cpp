// The self-play job kind in the coordinator, without sockets: games and statistics: games played by the worker's
// compute path equal a local run's, duplicate and differing completions never counted twice (also across a restart),
// adaptive jobs, failure reports of engines, provenance.
#include "tests/cluster/selfplay_job_fixture.h"

namespace c960::cluster {
namespace {

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

}  // namespace
}  // namespace c960::cluster
