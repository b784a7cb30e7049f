// c960-bench-simulation: runs many schedules of the deterministic simulation
// (tests/cluster/simulation.h) and prints how many (perft and self-play), the store faults,
// degraded-store episodes, failure reports and coordinator restarts they injected, and every
// violation with its seed. One seed replays with
//   c960-bench-simulation --seed S --schedules 1 --verbose
#include "tests/cluster/simulation.h"

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <random>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/log.h"
#include "cluster/u128.h"
#include "coordinator/coordinator.h"
#include "core/perft.h"
#include "core/position.h"
#include "worker/compute.h"

ABSL_FLAG(uint64_t, seed, 1, "the first schedule's seed");
ABSL_FLAG(int, schedules, 10000, "schedules to run (seeds seed, seed + 1, ...)");
ABSL_FLAG(int, steps, 150, "random steps per schedule before the drain");
ABSL_FLAG(double, fault_rate, 0.05, "chance that a store commit or write fails");
ABSL_FLAG(double, restart_rate, 0.02, "chance per step that the coordinator restarts");
ABSL_FLAG(double, selfplay_rate, 0.5, "chance that a schedule's job is a self-play job");
ABSL_FLAG(double, episode_rate, 0.01, "chance per step that a degraded-store episode (every write fails) begins");
ABSL_FLAG(int, episode_steps, 30, "an episode lasts 2 to 1 + this many steps");
ABSL_FLAG(bool, failers_drain, true,
          "failers compute honestly in the drain (false: they stop there, as a retired machine would)");
ABSL_FLAG(bool, root_failers, false, "one failer may be the operator's (the trust root's owner)");
ABSL_FLAG(bool, verbose, false, "print every step (for replaying one seed)");
ABSL_FLAG(std::string, db, "",
          "the store: empty for SQLite in memory, or a postgresql:// URL of a scratch database (emptied for each "
          "schedule; its leaders may be deposed)");
ABSL_FLAG(double, depose_rate, 0.02, "PostgreSQL: chance per step that the leader's connection is cut");
ABSL_FLAG(int, collusion_roots, 0,
          "instead: perft(5) of start positions 0..N-1 with 4 honest owners (one of them the operator's trust "
          "root) and 2 that collude (the same lie): how many rows they change");
ABSL_FLAG(std::string, collusion_verify, "all", "the collusion run's verification: all or adaptive");
ABSL_FLAG(double, collusion_audit_rate, 0.05, "the collusion run's audit rate");

namespace {

// Two colluding owners among four honest ones (one of them the operator's, a trust root), taking
// turns in a random order, each asking for one unit at a time: a unit whose two copies both go to
// the colluders settles on their lie unless an audit reaches it.
int collusion(int roots, uint64_t seed, int verify, double audit_rate) {
  using namespace c960::cluster;
  namespace v1 = c960::v1;
  set_log_silenced(true);
  FakeClock clock;
  std::unique_ptr<Store> store = std::move(Store::open(":memory:").value());
  CoordinatorOptions o;
  o.seed = seed;
  o.waiter_thread = false;
  o.trust_roots = {"honest0"};
  o.audit_rate = audit_rate;
  Coordinator c(store.get(), &clock, o);
  if (!c.load().ok()) return 1;
  v1::SubmitJobRequest req;
  req.mutable_spec()->set_verify(v1::VerifyMode(verify));
  req.mutable_spec()->mutable_perft()->set_depth(5);
  req.mutable_spec()->mutable_perft()->set_start_positions(absl::StrCat("0-", roots - 1));
  req.mutable_spec()->mutable_perft()->set_split_depth(1);
  const std::string job = c.submit(Caller::local(), req).value().id();
  struct W {
    Caller caller;
    std::string session;
    bool liar;
  };
  std::vector<W> ws;
  for (int i = 0; i < 6; ++i) {
    W w{Caller{i < 4 ? absl::StrCat("honest", i) : absl::StrCat("colluder", i - 4), Role::kWorker, true, 0, ""}, "",
        i >= 4};
    v1::HelloRequest h;
    h.set_name("w");
    h.set_threads(32);
    h.add_capabilities("perft");
    h.set_protocol_version(kProtocolVersion);
    w.session = c.hello(w.caller, h).value().worker_id();
    ws.push_back(w);
  }
  std::mt19937_64 rng(seed);
  std::map<std::string, v1::UnitResult> cache;
  auto complete = [&](const W& w, const v1::Lease& l, bool lie) {
    v1::UnitSpec key = l.spec();
    key.mutable_perft()->set_zobrist_seed(0);
    auto it = cache.find(key.SerializeAsString());
    if (it == cache.end()) it = cache.emplace(key.SerializeAsString(), compute_unit(l.spec(), nullptr).value()).first;
    v1::CompleteUnitRequest done;
    done.set_worker_id(w.session);
    done.set_unit_id(l.unit_id());
    done.set_attempt(l.attempt());
    *done.mutable_result() = it->second;
    if (lie) done.mutable_result()->mutable_perft()->mutable_nodes()->set_lo(it->second.perft().nodes().lo() + 1);
    c.complete(w.caller, done).IgnoreError();
  };
  // The colluders lie only where they hold both copies (they tell each other what they hold),
  // and are honest everywhere else, so nobody ever sees them disagree: they hold a unit for a
  // while to see whether the other gets its second copy.
  std::map<std::string, int> held_by_colluders;                    // unit -> colluders holding it
  std::vector<std::vector<std::pair<v1::Lease, int>>> pending(6);  // a colluder's (lease, turn)
  int lies = 0;
  for (int turn = 0, idle = 0; idle < 500; ++turn) {
    const size_t k = std::uniform_int_distribution<size_t>(0, ws.size() - 1)(rng);
    W& w = ws[k];
    if (w.liar) {
      std::vector<std::pair<v1::Lease, int>> keep;
      for (auto& [l, since] : pending[k]) {
        const bool both = held_by_colluders[l.unit_id()] == 2;
        if (both || turn - since > 60) {
          complete(w, l, both);
          lies += both;
        } else {
          keep.emplace_back(l, since);
        }
      }
      pending[k] = std::move(keep);
    }
    v1::AcquireWorkRequest a;
    a.set_worker_id(w.session);
    a.set_max_units(1);
    absl::StatusOr<v1::AcquireWorkResponse> got = c.acquire(w.caller, a);
    if (!got.ok() || got->leases_size() == 0) {
      ++idle;
      continue;
    }
    idle = 0;
    const v1::Lease& l = got->leases(0);
    if (w.liar) {
      ++held_by_colluders[l.unit_id()];
      pending[k].emplace_back(l, turn);
    } else {
      complete(w, l, false);
    }
  }
  const v1::Job j = c.get_job(Caller::local(), job).value();
  int wrong = 0, rows = 0;
  const std::vector<v1::ResultChunk> chunks = c.results(Caller::local(), job, false).value();
  for (const v1::ResultChunk& r : chunks) {
    ++rows;
    wrong += from_proto(r.perft().nodes()) != c960::perft(*c960::Position::from_fen(r.perft().fen()), 5);
  }
  int caught = 0;
  v1::ListWorkersRequest lw;
  if (absl::StatusOr<v1::ListWorkersResponse> listed = c.list_workers(Caller::local(), lw); listed.ok())
    for (const v1::WorkerInfo& i : listed->workers())
      caught += absl::StartsWith(i.name(), "colluder") && i.trust() == v1::TRUST_STATE_QUARANTINED;
  std::printf(
      "collusion: %s, %lld units; 4 honest owners (1 trust root) and 2 colluding ones under --verify %s, audit "
      "rate %.2f: %d of %d rows wrong (%d lies sent), %lld units audited, %d colluders quarantined\n",
      v1::JobState_Name(j.state()).c_str(), (long long)j.progress().units_total(),
      verify == int(v1::VERIFY_MODE_ALL) ? "all" : "adaptive", audit_rate, wrong, rows, lies,
      (long long)j.progress().units_audited(), caught);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const int roots = absl::GetFlag(FLAGS_collusion_roots); roots > 0)
    return collusion(std::min(roots, 960), absl::GetFlag(FLAGS_seed),
                     absl::GetFlag(FLAGS_collusion_verify) == "adaptive" ? int(c960::v1::VERIFY_MODE_ADAPTIVE)
                                                                         : int(c960::v1::VERIFY_MODE_ALL),
                     absl::GetFlag(FLAGS_collusion_audit_rate));
  c960::cluster::sim::Config config;
  config.steps = absl::GetFlag(FLAGS_steps);
  config.fault_rate = absl::GetFlag(FLAGS_fault_rate);
  config.restart_rate = absl::GetFlag(FLAGS_restart_rate);
  config.selfplay_rate = absl::GetFlag(FLAGS_selfplay_rate);
  config.episode_rate = absl::GetFlag(FLAGS_episode_rate);
  config.episode_steps = absl::GetFlag(FLAGS_episode_steps);
  config.failers_drain = absl::GetFlag(FLAGS_failers_drain);
  config.root_failers = absl::GetFlag(FLAGS_root_failers);
  config.verbose = absl::GetFlag(FLAGS_verbose);
  config.db = absl::GetFlag(FLAGS_db);
  config.depose_rate = absl::GetFlag(FLAGS_depose_rate);
  const auto start = std::chrono::steady_clock::now();
  long long steps = 0, faults = 0, restarts = 0, completions = 0, checks = 0, failed = 0, violations = 0;
  long long selfplay = 0, episodes = 0, failure_reports = 0, jobs_failed = 0, deposed = 0;
  long long colluding = 0, forged = 0, colluding_calm = 0, forged_calm = 0;
  const int n = absl::GetFlag(FLAGS_schedules);
  for (int k = 0; k < n; ++k) {
    const c960::cluster::sim::Report r = c960::cluster::sim::run(absl::GetFlag(FLAGS_seed) + uint64_t(k), config);
    steps += r.steps;
    faults += r.faults;
    restarts += r.restarts;
    completions += r.completions;
    checks += r.checks;
    selfplay += r.selfplay;
    episodes += r.episodes;
    failure_reports += r.failure_reports;
    jobs_failed += r.job_failed;
    deposed += r.deposed;
    if (r.colluders) {
      ++colluding;
      forged += r.forged_rows > 0;
      colluding_calm += r.episodes == 0;
      forged_calm += r.episodes == 0 && r.forged_rows > 0;
      if (config.verbose && r.forged_rows > 0)
        std::printf("seed %llu: the colluders changed %lld of %lld rows (%lld degraded-store episodes)\n",
                    (unsigned long long)r.seed, (long long)r.forged_rows, (long long)r.rows, (long long)r.episodes);
    }
    if (config.verbose || !r.violations.empty())
      std::printf("seed %llu: %s\n", (unsigned long long)r.seed, r.schedule.c_str());
    if (!r.violations.empty()) {
      ++failed;
      violations += (long long)r.violations.size();
      for (const std::string& v : r.violations) std::printf("  VIOLATION %s\n", v.c_str());
      std::printf("  replay: c960-bench-simulation%s --seed %llu --schedules 1 --verbose\n",
                  config.db.empty() ? "" : " --db URL", (unsigned long long)r.seed);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf(
      "%d schedules (%lld self-play) in %.1f s: %lld steps, %lld completions, %lld invariant checks, %lld store "
      "faults, %lld degraded-store episodes, %lld failure reports recorded (%lld jobs failed), %lld coordinator "
      "restarts, %lld leaders deposed; %lld schedules with violations (%lld violations)\n",
      n, selfplay, secs, steps, completions, checks, faults, episodes, failure_reports, jobs_failed, restarts, deposed,
      failed, violations);
  std::printf(
      "%lld schedules with colluding owners: %lld ended with their row changed (%lld of the %lld without a "
      "degraded-store episode)\n",
      colluding, forged, forged_calm, colluding_calm);
  return failed ? 1 : 0;
}
