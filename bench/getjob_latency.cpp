// GetJob latency while the coordinator does heavy work: a reader thread asks for a small job's
// state every millisecond (as `c960 watch` and the dashboard do) while another thread
//   submit   submits a perft job near the plan cap (planning and storing ~1.9M units), or
//   selfplay completes self-play units whose games are long (each game replayed on accept).
// Prints p50, p99 and max of the reader's GetJob calls during the heavy work. In-process, no
// gRPC: the figure is the coordinator's own lock, not the network.
//
//   c960-bench-getjob [submit|selfplay|both] [--sps 0-199] [--depth 9] [--split 3]
//                     [--units 20] [--games-per-unit 50]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "cluster/selfplay_proto.h"
#include "coordinator/coordinator.h"
#include "core/startpos.h"
#include "selfplay/game.h"
#include "selfplay/players.h"

namespace c960::cluster {
namespace {

using Clock = std::chrono::steady_clock;

struct Args {
  std::string mode = "both";
  std::string sps = "0-199";
  int depth = 9, split = 3;
  int units = 20, games_per_unit = 50;
};

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Calls get_job(probe) on a schedule of one call per millisecond until `done`; returns each
// call's latency in ms, measured from when it was due (not from when it could start), so that
// a stall counts once for every call it held up, as it would for many independent clients.
std::vector<double> probe_until(Coordinator& c, const std::string& probe, const std::atomic<bool>& done) {
  std::vector<double> out;
  const auto start = Clock::now();
  for (int64_t k = 0; !done; ++k) {
    const auto due = start + std::chrono::milliseconds(k);
    if (Clock::now() < due) std::this_thread::sleep_until(due);
    if (!c.get_job(Caller::local(), probe).ok()) std::fprintf(stderr, "get_job failed\n");
    out.push_back(ms_since(due));
  }
  return out;
}

void report(const char* what, std::vector<double> v, double heavy_ms) {
  std::sort(v.begin(), v.end());
  auto q = [&](double p) { return v.empty() ? 0.0 : v[std::min(v.size() - 1, size_t(p * double(v.size())))]; };
  std::printf("%-9s heavy work %8.0f ms | GetJob n=%zu p50 %.3f ms  p99 %.3f ms  max %.3f ms\n", what, heavy_ms,
              v.size(), q(0.5), q(0.99), v.empty() ? 0.0 : v.back());
}

std::string hello(Coordinator& c) {
  v1::HelloRequest h;
  h.set_name("bench");
  h.set_threads(1);
  h.add_capabilities("selfplay");  // not the probe job's perft units
  return c.hello(Caller::local(), h)->worker_id();
}

void run_submit(Coordinator& c, const std::string& probe, const Args& a) {
  v1::SubmitJobRequest s;
  s.mutable_spec()->mutable_perft()->set_depth(a.depth);
  s.mutable_spec()->mutable_perft()->set_start_positions(a.sps);
  s.mutable_spec()->mutable_perft()->set_split_depth(a.split);
  std::atomic<bool> done{false};
  double heavy_ms = 0;
  int64_t units = 0;
  std::thread heavy([&] {
    const auto t = Clock::now();
    absl::StatusOr<v1::Job> j = c.submit(Caller::local(), s);
    heavy_ms = ms_since(t);
    if (!j.ok())
      std::fprintf(stderr, "submit: %s\n", std::string(j.status().message()).c_str());
    else
      units = j->progress().units_total();
    done = true;
  });
  std::vector<double> lat = probe_until(c, probe, done);
  heavy.join();
  std::printf("submit: %lld units\n", static_cast<long long>(units));
  report("submit", std::move(lat), heavy_ms);
}

void run_selfplay(Coordinator& c, const std::string& probe, const Args& a) {
  // Long games: a random mover's (hundreds of plies, ended by the rules), made here; the
  // coordinator replays every one of them when it accepts the unit.
  v1::SubmitJobRequest s;
  v1::SelfPlayJobSpec* sp = s.mutable_spec()->mutable_selfplay();
  sp->set_start_positions("0");
  sp->set_games_per_position(a.units * a.games_per_unit);
  sp->set_games_per_unit(a.games_per_unit);
  sp->set_engine("builtin");
  sp->set_nodes(1);
  sp->set_seed(7);
  const std::string w = hello(c);
  if (!c.submit(Caller::local(), s).ok()) return;
  v1::AcquireWorkRequest acq;
  acq.set_worker_id(w);
  acq.set_max_units(a.units);
  absl::StatusOr<v1::AcquireWorkResponse> leases = c.acquire(Caller::local(), acq);
  std::vector<v1::CompleteUnitRequest> done_units;
  int64_t plies = 0, games = 0;
  for (const v1::Lease& l : leases->leases()) {  // computed before the clock starts
    v1::CompleteUnitRequest r;
    r.set_worker_id(w);
    r.set_unit_id(l.unit_id());
    r.set_attempt(l.attempt());
    const v1::SelfPlayUnitSpec& u = l.spec().selfplay();
    for (int k = 0; k < u.games(); ++k) {
      selfplay::RandomPlayer white(2 * uint64_t(u.first_game() + k) + 1), black(2 * uint64_t(u.first_game() + k) + 2);
      absl::StatusOr<selfplay::GameRecord> g =
          selfplay::play_game(*startpos_fen(u.start_position(), true), white, black, {1, 0, 0}, {1, 0, 0}, {});
      if (!g.ok()) return;
      selfplay::game_to_proto(u.first_game() + k, *g, r.mutable_result()->mutable_selfplay()->add_games());
      plies += int64_t(g->moves.size());
      ++games;
    }
    done_units.push_back(std::move(r));
  }
  std::printf("selfplay: %zu units of %d games, %.0f plies per game on average\n", done_units.size(), a.games_per_unit,
              games ? double(plies) / double(games) : 0.0);
  std::atomic<bool> finished{false};
  double heavy_ms = 0;
  std::thread heavy([&] {
    const auto t = Clock::now();
    for (const v1::CompleteUnitRequest& r : done_units)
      if (absl::StatusOr<v1::CompleteUnitResponse> x = c.complete(Caller::local(), r); !x.ok())
        std::fprintf(stderr, "complete: %s\n", std::string(x.status().message()).c_str());
    heavy_ms = ms_since(t);
    finished = true;
  });
  std::vector<double> lat = probe_until(c, probe, finished);
  heavy.join();
  report("selfplay", std::move(lat), heavy_ms);
}

int run(const Args& a) {
  const std::string path =
      std::filesystem::temp_directory_path().string() + "/c960-bench-getjob-" + std::to_string(getpid()) + ".db";
  {
    auto store = Store::open(path);
    if (!store.ok()) {
      std::fprintf(stderr, "%s\n", std::string(store.status().message()).c_str());
      return 1;
    }
    SystemClock clock;
    Coordinator c(store->get(), &clock);
    if (!c.load().ok()) return 1;
    v1::SubmitJobRequest small;
    small.mutable_spec()->mutable_perft()->set_depth(3);
    small.mutable_spec()->mutable_perft()->set_start_positions("0-9");
    const std::string probe = c.submit(Caller::local(), small)->id();
    if (a.mode == "submit" || a.mode == "both") run_submit(c, probe, a);
    if (a.mode == "selfplay" || a.mode == "both") run_selfplay(c, probe, a);
  }
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  return 0;
}

}  // namespace
}  // namespace c960::cluster

int main(int argc, char** argv) {
  c960::cluster::Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string s = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (s == "--sps")
      a.sps = next();
    else if (s == "--depth")
      a.depth = std::stoi(next());
    else if (s == "--split")
      a.split = std::stoi(next());
    else if (s == "--units")
      a.units = std::stoi(next());
    else if (s == "--games-per-unit")
      a.games_per_unit = std::stoi(next());
    else if (s == "submit" || s == "selfplay" || s == "both")
      a.mode = s;
    else {
      std::fprintf(stderr,
                   "usage: c960-bench-getjob [submit|selfplay|both] [--sps R] [--depth D] [--split K] "
                   "[--units N] [--games-per-unit G]\n");
      return 2;
    }
  }
  return c960::cluster::run(a);
}
