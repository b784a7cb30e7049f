// The deterministic simulation (tests/cluster/simulation.h) over many seeded schedules: every
// invariant holds in each. A failing seed is printed with the command that replays it.
#include "tests/cluster/simulation.h"

#include <cstdlib>
#include <gtest/gtest.h>

#include "absl/strings/str_join.h"

namespace c960::cluster::sim {
namespace {

TEST(Simulation, EveryInvariantHoldsOverManySchedules) {
  // C960_SIM_SCHEDULES and C960_SIM_FIRST_SEED widen or move the run (the default fits the
  // default test run).
  const char* n = std::getenv("C960_SIM_SCHEDULES");
  const char* first = std::getenv("C960_SIM_FIRST_SEED");
  const int schedules = n ? std::atoi(n) : 2000;
  const uint64_t seed0 = first ? std::strtoull(first, nullptr, 10) : 1;
  int64_t faults = 0, restarts = 0, steps = 0;
  int failed = 0;
  for (int k = 0; k < schedules && failed < 3; ++k) {
    const Report r = run(seed0 + uint64_t(k));
    faults += r.faults;
    restarts += r.restarts;
    steps += r.steps;
    if (!r.violations.empty()) {
      ++failed;
      ADD_FAILURE() << "seed " << r.seed << " (" << r.schedule << "): " << absl::StrJoin(r.violations, "\n")
                    << "\nreplay: build/release/bench/c960-bench-simulation --seed " << r.seed
                    << " --schedules 1 --verbose";
    }
  }
  std::printf("%d schedules, %lld steps, %lld store faults, %lld coordinator restarts\n", schedules,
              static_cast<long long>(steps), static_cast<long long>(faults), static_cast<long long>(restarts));
  EXPECT_GT(faults, 0);
  EXPECT_GT(restarts, 0);
}

}  // namespace
}  // namespace c960::cluster::sim
