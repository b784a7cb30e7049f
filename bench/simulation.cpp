// c960-bench-simulation: runs many schedules of the deterministic simulation
// (tests/cluster/simulation.h) and prints how many, the store faults and coordinator restarts
// they injected, and every violation with its seed. One seed replays with
//   c960-bench-simulation --seed S --schedules 1 --verbose
#include "tests/cluster/simulation.h"

#include <chrono>
#include <cstdio>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"

ABSL_FLAG(uint64_t, seed, 1, "the first schedule's seed");
ABSL_FLAG(int, schedules, 10000, "schedules to run (seeds seed, seed + 1, ...)");
ABSL_FLAG(int, steps, 150, "random steps per schedule before the drain");
ABSL_FLAG(double, fault_rate, 0.05, "chance that a store commit or write fails");
ABSL_FLAG(double, restart_rate, 0.02, "chance per step that the coordinator restarts");
ABSL_FLAG(bool, verbose, false, "print every step (for replaying one seed)");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  c960::cluster::sim::Config config;
  config.steps = absl::GetFlag(FLAGS_steps);
  config.fault_rate = absl::GetFlag(FLAGS_fault_rate);
  config.restart_rate = absl::GetFlag(FLAGS_restart_rate);
  config.verbose = absl::GetFlag(FLAGS_verbose);
  const auto start = std::chrono::steady_clock::now();
  long long steps = 0, faults = 0, restarts = 0, completions = 0, checks = 0, failed = 0, violations = 0;
  const int n = absl::GetFlag(FLAGS_schedules);
  for (int k = 0; k < n; ++k) {
    const c960::cluster::sim::Report r = c960::cluster::sim::run(absl::GetFlag(FLAGS_seed) + uint64_t(k), config);
    steps += r.steps;
    faults += r.faults;
    restarts += r.restarts;
    completions += r.completions;
    checks += r.checks;
    if (config.verbose || !r.violations.empty())
      std::printf("seed %llu: %s\n", (unsigned long long)r.seed, r.schedule.c_str());
    if (!r.violations.empty()) {
      ++failed;
      violations += (long long)r.violations.size();
      for (const std::string& v : r.violations) std::printf("  VIOLATION %s\n", v.c_str());
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d schedules in %.1f s: %lld steps, %lld completions, %lld invariant checks, %lld store faults, "
      "%lld coordinator restarts; %lld schedules with violations (%lld violations)\n",
      n, secs, steps, completions, checks, faults, restarts, failed, violations);
  return failed ? 1 : 0;
}
