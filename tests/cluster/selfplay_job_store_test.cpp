// The self-play job kind in the coordinator, without sockets: the store: self-play tables settled and taken back, and
// stores of older schemas converted.
#include "tests/cluster/pg_server.h"
#include "tests/cluster/selfplay_job_fixture.h"

namespace c960::cluster {
namespace {

// The self-play tables on each backend: a fresh SQLite file, or a fresh database on the test
// process's PostgreSQL server (skipped when PostgreSQL is not installed).
class SelfPlayStoreBackends : public ::testing::TestWithParam<bool> {
 protected:
  std::string fresh(const std::string& name) {
    if (GetParam()) {
      std::string why;
      bool installed = false;
      test::PgServer* pg = test::PgServer::shared(&why, &installed);
      if (!installed) return "";
      EXPECT_NE(pg, nullptr) << why;
      return pg ? pg->fresh_database("selfplay") : "";
    }
    const std::string path = absl::StrCat(::testing::TempDir(), "/", name, "-", getpid(), ".db");
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
    return path;
  }
};

INSTANTIATE_TEST_SUITE_P(Backends, SelfPlayStoreBackends, ::testing::Bool(),
                         [](const ::testing::TestParamInfo<bool>& p) { return p.param ? "PostgreSQL" : "SQLite"; });

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
TEST_P(SelfPlayStoreBackends, TakingAUnitBackUndoesItsCountsAndGames) {
  const std::string where = fresh("c960-selfplay-undo");
  if (where.empty()) GTEST_SKIP() << "PostgreSQL is not installed";
  auto store = Store::open(where);
  ASSERT_TRUE(store.ok()) << store.status();
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
      s.games.push_back({0, 0, 10, hash, true, std::nullopt});
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
  ASSERT_TRUE(settle_with_games(store->get(), "job-1", 0, "r0", std::nullopt, 0, a).ok())
      << settle_with_games(store->get(), "job-1", 0, "r0", std::nullopt, 0, a);
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

// The store counts a match unit's pairs, and takes them back, as MatchStats counts them: a pair
// that repeats another is a duplicate whichever settles first, and goes with its last copy.
TEST_P(SelfPlayStoreBackends, PairsAreCountedOnceAndTakenBack) {
  const std::string path = fresh("c960-match-store");
  if (path.empty()) GTEST_SKIP() << "PostgreSQL is not installed";
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
  ASSERT_TRUE(apply_settlement(store->get(), "j", a, 1).ok()) << apply_settlement(store->get(), "j", a, 1);
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
  if (!GetParam())
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
}

}  // namespace
}  // namespace c960::cluster
