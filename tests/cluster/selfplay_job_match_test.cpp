// The self-play job kind in the coordinator, without sockets: matches: pairs counted as a local match counts them, and
// SPRT jobs that stop at the first look that decides.
#include "tests/cluster/selfplay_job_fixture.h"

namespace c960::cluster {
namespace {

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

}  // namespace
}  // namespace c960::cluster
