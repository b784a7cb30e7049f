// The deterministic simulation (tests/cluster/simulation.h) over many seeded schedules: every
// invariant holds in each. A failing seed is printed with the command that replays it.
#include "tests/cluster/simulation.h"

#include <cstdlib>
#include <gtest/gtest.h>

#include "absl/strings/str_join.h"
#include "tests/cluster/pg_server.h"

#ifndef C960_SIM_DEFAULT_SCHEDULES
#define C960_SIM_DEFAULT_SCHEDULES 1000
#endif
// On PostgreSQL (the ctest fixture's server): fewer, each statement being a round trip.
#ifndef C960_SIM_PG_DEFAULT_SCHEDULES
#define C960_SIM_PG_DEFAULT_SCHEDULES 10
#endif

namespace c960::cluster::sim {
namespace {

TEST(Simulation, EveryInvariantHoldsOverManySchedules) {
  // C960_SIM_SCHEDULES and C960_SIM_FIRST_SEED widen or move the run (the default fits the
  // default test run; the slow test's, C960_SIM_DEFAULT_SCHEDULES, is wider).
  const char* n = std::getenv("C960_SIM_SCHEDULES");
  const char* first = std::getenv("C960_SIM_FIRST_SEED");
  const int schedules = n ? std::atoi(n) : C960_SIM_DEFAULT_SCHEDULES;
  const uint64_t seed0 = first ? std::strtoull(first, nullptr, 10) : 1;
  int64_t faults = 0, restarts = 0, steps = 0, episodes = 0, failure_reports = 0;
  int64_t perft = 0, selfplay = 0, selfplay_failed = 0;
  int64_t colluding = 0, forged = 0, caught = 0, audited = 0;
  int64_t colluding_calm = 0, forged_calm = 0;  // of those, without a degraded-store episode
  int failed = 0;
  for (int k = 0; k < schedules && failed < 3; ++k) {
    const Report r = run(seed0 + uint64_t(k));
    faults += r.faults;
    restarts += r.restarts;
    steps += r.steps;
    episodes += r.episodes;
    failure_reports += r.failure_reports;
    (r.selfplay ? selfplay : perft) += 1;
    selfplay_failed += r.job_failed;
    if (r.colluders) {
      ++colluding;
      forged += r.forged_rows > 0;
      if (r.episodes == 0) {
        ++colluding_calm;
        forged_calm += r.forged_rows > 0;
      }
      caught += r.caught;
      audited += r.audited;
    }
    if (!r.violations.empty()) {
      ++failed;
      ADD_FAILURE() << "seed " << r.seed << " (" << r.schedule << "): " << absl::StrJoin(r.violations, "\n")
                    << "\nreplay: build/release/bench/c960-bench-simulation --seed " << r.seed
                    << " --schedules 1 --verbose";
    }
  }
  std::printf(
      "%d schedules (%lld perft, %lld self-play, %lld of them failed by failure reports), %lld steps, %lld store "
      "faults, %lld degraded-store episodes, %lld failure reports recorded, %lld coordinator restarts\n",
      schedules, static_cast<long long>(perft), static_cast<long long>(selfplay),
      static_cast<long long>(selfplay_failed), static_cast<long long>(steps), static_cast<long long>(faults),
      static_cast<long long>(episodes), static_cast<long long>(failure_reports), static_cast<long long>(restarts));
  std::printf(
      "%lld schedules with colluding owners: %lld ended with their row changed (%lld of the %lld without a "
      "degraded-store episode), %lld with a colluder quarantined, %lld units audited\n",
      static_cast<long long>(colluding), static_cast<long long>(forged), static_cast<long long>(forged_calm),
      static_cast<long long>(colluding_calm), static_cast<long long>(caught), static_cast<long long>(audited));
  EXPECT_GT(faults, 0);
  EXPECT_GT(restarts, 0);
  EXPECT_GT(episodes, 0);
  EXPECT_GT(selfplay, 0);
  EXPECT_GT(failure_reports, 0);
  // Jobs failed by reports are rare (12 in the default 1,000 schedules): looked for only where
  // there are enough schedules (sanitizer builds run 40).
  if (schedules >= 500) {
    EXPECT_GT(selfplay_failed, 0);
  }
  // Colluding groups of 2 or 3 owners among 3 or 4 honest ones, placed at random and audited at
  // 10%, change their job's row in few schedules: without placement and audits nearly every row
  // of theirs would be forged. Measured on these seeds (perft schedules only: self-play's lies
  // are not simulated): 13 of 260, 6 of the 64 without a degraded-store episode (before leases
  // and completions were planned: 20 of 260, 2 of 67; the calm sample is small, so its bound is
  // loose). docs/cluster.md has the figures over more seeds.
  ASSERT_GT(colluding, perft / 4);
  ASSERT_GT(colluding_calm, perft / 20);
  if (schedules >= 500) {  // (a rate is no bound on the sanitizer builds' few schedules)
    EXPECT_LE(double(forged), 0.10 * double(colluding)) << forged << " of " << colluding;
    EXPECT_LE(double(forged_calm), 0.12 * double(colluding_calm)) << forged_calm << " of " << colluding_calm;
  }
  EXPECT_GT(caught, 0);
}

// The same schedules on PostgreSQL (a database of the test server, emptied for each), with
// depositions: the leader's connection cut while it serves, a standby taking over. Every
// invariant holds, and a deposed leader commits nothing (simulation.h). C960_SIM_PG_SCHEDULES
// widens the run.
TEST(Simulation, EveryInvariantHoldsOnPostgresWithDeposedLeaders) {
  std::string why;
  bool installed = false;
  test::PgServer* pg = test::PgServer::shared(&why, &installed);
  if (!installed) GTEST_SKIP() << why;
  ASSERT_NE(pg, nullptr) << why;
  Config config;
  config.db = pg->fresh_database("simulation");
  ASSERT_FALSE(config.db.empty()) << "createdb failed";
  const char* n = std::getenv("C960_SIM_PG_SCHEDULES");
  const char* first = std::getenv("C960_SIM_FIRST_SEED");
  const int schedules = n ? std::atoi(n) : C960_SIM_PG_DEFAULT_SCHEDULES;
  const uint64_t seed0 = first ? std::strtoull(first, nullptr, 10) : 1;
  int64_t deposed = 0, restarts = 0, faults = 0, selfplay = 0, steps = 0;
  int failed = 0;
  for (int k = 0; k < schedules && failed < 3; ++k) {
    const Report r = run(seed0 + uint64_t(k), config);
    deposed += r.deposed;
    restarts += r.restarts;
    faults += r.faults;
    selfplay += r.selfplay;
    steps += r.steps;
    if (!r.violations.empty()) {
      ++failed;
      ADD_FAILURE() << "seed " << r.seed << " (" << r.schedule << "): " << absl::StrJoin(r.violations, "\n")
                    << "\nreplay: build/release/bench/c960-bench-simulation --db postgresql://... --seed " << r.seed
                    << " --schedules 1 --verbose";
    }
  }
  std::printf(
      "PostgreSQL: %d schedules (%lld self-play), %lld steps, %lld leaders deposed, %lld coordinator restarts, %lld "
      "store faults\n",
      schedules, static_cast<long long>(selfplay), static_cast<long long>(steps), static_cast<long long>(deposed),
      static_cast<long long>(restarts), static_cast<long long>(faults));
  EXPECT_GT(deposed, 0);
  EXPECT_GT(faults, 0);
}

}  // namespace
}  // namespace c960::cluster::sim
