// The self-play job kind in the coordinator, without sockets: planning and validation: units planned from a spec, bad
// specs and results refused naming the field, jobs whose games would all repeat, engines named never as paths, the spec
// kept once.
#include "tests/cluster/selfplay_job_fixture.h"

namespace c960::cluster {
namespace {

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

}  // namespace
}  // namespace c960::cluster
