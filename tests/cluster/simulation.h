// A deterministic simulation of the coordinator (as FoundationDB and TigerBeetle test
// themselves): one seeded driver runs the real Coordinator on a fake clock over the real SQLite
// store (in memory, kept across coordinator restarts as a file would be) against simulated
// workers: honest (one owner of them the operator's trust root, the others outside contributors),
// slow, crashing and restarting, lying alone, two names of one credential colluding, hoarding,
// groups of 2 or 3 colluding owners (several credentials each) that ask right after each other
// and lie only where the group holds every copy (smart), lie everywhere (framing) or turn to
// lying halfway (honest, then lying); audits; completions in random batches, orders and sizes, resent; store writes
// failing at random points; coordinator restarts from the store at random steps. After every
// step it checks the invariants:
//  - accepted means durable: a coordinator loaded from the store holds the same durable state
//    as the one running (Coordinator::durable_state);
//  - an honest worker is never quarantined; a job never FAILS; a unit whose copies disagree and
//    that no connected owner may decide is named in the job's notice;
//  - units done never exceed the units planned; the leases counted per credential (the
//    hoarding cap) are the leases out;
// and at the end, after a drain with honest workers only and no faults: the job SUCCEEDED and
// its counts equal the core's perft exactly, each unit counted once; with colluding owners the
// rows they changed are counted (Report::forged_rows), for the bound the test checks over seeds.
//
// Everything follows from the seed: a failing seed replays with
//   build/release/bench/c960-bench-simulation --seed S --schedules 1 --verbose
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace c960::cluster::sim {

struct Config {
  int steps = 150;             // steps of the random phase (the drain follows)
  double fault_rate = 0.05;    // chance that a store commit or write fails
  double restart_rate = 0.02;  // chance per step that the coordinator restarts
  bool verbose = false;        // print every step
};

struct Report {
  uint64_t seed = 0;
  std::string schedule;  // what the seed chose: verify mode, workers, job
  int64_t steps = 0, faults = 0, restarts = 0, completions = 0, checks = 0;
  std::vector<std::string> violations;  // empty when every invariant held
  int colluders = 0;                    // owners in a colluding group (0: none)
  int64_t rows = 0, forged_rows = 0;    // the job's rows, and those the colluders changed
  int64_t audited = 0;                  // units settled through an audit
  bool caught = false;                  // a colluding owner was quarantined
};

Report run(uint64_t seed, const Config& config = {});

}  // namespace c960::cluster::sim
