// A deterministic simulation of the coordinator (as FoundationDB and TigerBeetle test
// themselves): one seeded driver runs the real Coordinator on a fake clock over the real store
// (SQLite in memory, kept across coordinator restarts as a file would be, or a PostgreSQL
// database: Config::db) against simulated
// workers: honest (one owner of them the operator's trust root, the others outside contributors),
// slow, crashing and restarting, lying alone, two names of one credential colluding, hoarding,
// groups of 2 or 3 colluding owners (several credentials each) that ask right after each other
// and lie only where the group holds every copy (smart), lie everywhere (framing) or turn to
// lying halfway (honest, then lying); failers (honest workers whose engine "crashes" on some
// units: failure reports); audits; completions in random batches, orders and sizes, resent;
// store writes failing at random points; degraded-store episodes (every write fails for a
// stretch of steps, as on a full disk); coordinator restarts from the store at random steps.
// The job is a perft job or a small self-play job (the built-in engine at depth 1; some
// schedules' games repeat each other exactly). After every step it checks the invariants:
//  - accepted means durable: a coordinator loaded from the store holds the same durable state
//    as the one running (Coordinator::durable_state);
//  - an honest worker (a failer too) is never quarantined; a job FAILS only by failure reports
//    (a self-play job, after kMaxUnitFailures recorded, naming the report) and stays FAILED,
//    restarts included; a failure report for a perft unit is refused;
//  - units done never exceed the units planned; the leases counted per credential (the
//    hoarding cap) are the leases out;
//  - self-play: each position's totals recounted from the settled units' game summaries in the
//    store (a distinct game's result once, an exact repeat as a duplicate; games, plies,
//    terminations, uncounted and stored games) equal the store's totals and the coordinator's
//    results;
//  - while the disk is full: nothing durable changes (no result or failure report is taken); a
//    call refused UNAVAILABLE leaves the coordinator not ready (Coordinator::store_degraded and
//    the metric agree); a process reloads from the store at most once per episode, not per
//    retry; when the disk has room again the coordinator resumes by itself (a sweep after the
//    probe's longest backoff), with no reload;
//  - PostgreSQL: a leader whose connection was cut commits nothing more (its calls fail, its
//    memory stays what the store held before the cut, which is what the standby loads), and its
//    next renewal deposes it;
// and at the end, after a drain with honest workers only and no faults: the job SUCCEEDED and
// its counts equal the core's perft exactly, each unit counted once, or a self-play job's
// statistics equal a local run's of its spec (or it FAILED, as above, and is FAILED when loaded
// from the store); with colluding owners the rows they changed are counted
// (Report::forged_rows), for the bound the test checks over seeds.
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
  double selfplay_rate = 0.5;  // chance that the schedule's job is a self-play job
  double episode_rate = 0.01;  // chance per step that a degraded-store episode begins
  int episode_steps = 30;      // an episode lasts 2 to 2 + this - 1 steps
  // Failers' engines are mended for the drain, where they compute like honest workers. Off, they
  // stop at the drain like liars do.
  bool failers_drain = true;
  // One failer may be the operator's (the trust root's owner). Off by default: a worker of the
  // root's owner that reports a unit failed, or stops with a lease of it out, bars the root's
  // other workers from that unit, and a unit whose deciding vote must be the root's (next_rank)
  // then waits for ever; the seeds that show it stall in the drain.
  bool root_failers = false;
  bool verbose = false;  // print every step
  // The store: "" for SQLite (in memory), or a postgresql:// URL of a scratch database, emptied
  // (every table in its schema dropped) at the start of each schedule. On PostgreSQL the
  // coordinator leads by the store's lease (StoreLease, LeaderElection), and a deposition may
  // happen: the leader's database session is ended from outside (as a server restart or a
  // network cut would end it), a standby takes the lease and the store while the deposed leader
  // still serves its workers a few calls, and then the deposed leader's next renewal deposes it.
  std::string db;
  double depose_rate = 0.02;  // chance per step of a deposition (PostgreSQL only)
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
  bool selfplay = false;                // the job was a self-play job
  int failers = 0;                      // failing workers
  int64_t episodes = 0;                 // degraded-store episodes
  int64_t failure_reports = 0;          // failure reports recorded
  bool job_failed = false;              // the job FAILED (by failure reports)
  int64_t deposed = 0;                  // leaders deposed by a cut connection (PostgreSQL)
};

Report run(uint64_t seed, const Config& config = {});

}  // namespace c960::cluster::sim
