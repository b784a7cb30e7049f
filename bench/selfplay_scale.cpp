// c960-bench-selfplay-scale: one coordinator (in process, with its SQLite store on disk) driven
// through a study-sized self-play job with synthetic games: legal games from a random mover over
// core's move generator, made by the driver threads outside the coordinator, then checked by the
// coordinator as a worker's would be (replayed, endings verified) and accepted. Prints the
// coordinator process's RSS over time, the store's bytes per game, the accept rate and the time
// of `results` (counts only, and with every stored game as PGN). A benchmark, not a test.
//
//   c960-bench-selfplay-scale --positions 960 --games 1000 --store-games all --max-plies 150
//
// The driver holds one unit's games at a time per thread, so the RSS it prints is the
// coordinator's (plus a constant).
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/proc_stats.h"
#include "cluster/selfplay_proto.h"
#include "coordinator/coordinator.h"
#include "core/movegen.h"
#include "core/startpos.h"

ABSL_FLAG(int, positions, 960, "start positions 0..N-1");
ABSL_FLAG(int, games, 1000, "games per position");
ABSL_FLAG(int, games_per_unit, 16, "games per unit");
ABSL_FLAG(std::string, store_games, "all", "all|none|sample:N");
ABSL_FLAG(int, max_plies, 150, "ply limit of the synthetic games (most random games reach it)");
ABSL_FLAG(int, threads, 2, "driver threads (each a worker)");
ABSL_FLAG(std::string, store, "/tmp/c960-selfplay-scale.db", "the coordinator's store (replaced)");
ABSL_FLAG(double, sample_seconds, 5, "RSS sample interval");
ABSL_FLAG(bool, pgn, true, "also time results with every stored game as PGN");
ABSL_FLAG(int, uci_options, 0,
          "give the job this many UCI options of 255-character names and values (engine 'sf'; implies --plan_only: "
          "no worker offers it here)");
ABSL_FLAG(bool, plan_only, false, "stop after planning: RSS and store bytes per unit");

namespace c960::cluster {
namespace {

int64_t rss_bytes() { return bench::rss_bytes(getpid()); }

int64_t file_bytes(const std::string& path) {
  int64_t total = 0;
  for (const char* suffix : {"", "-wal"}) {
    std::error_code ec;
    const auto n = std::filesystem::file_size(path + suffix, ec);
    if (!ec) total += int64_t(n);
  }
  return total;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A random legal game: the spec's opening, then uniformly random legal moves until the rules
// end it (the ply limit at the latest).
v1::SelfPlayGame synthetic_game(const selfplay::SelfPlaySpec& spec, int sp, int index) {
  const selfplay::GameOptions options = *selfplay::game_options(spec, *selfplay::chess960_position(sp), index);
  selfplay::GameRecord g;
  g.start_fen = *startpos_fen(sp, true);
  g.white = g.black = "random";
  selfplay::Referee referee(*Position::from_fen(g.start_fen), spec.max_plies);
  std::optional<selfplay::Ending> ending = referee.start_ending();
  uint64_t x = (uint64_t(sp) << 32 | uint64_t(index)) * 0x9E3779B97F4A7C15ULL + 1;
  while (!ending) {
    Move m;
    if (size_t(g.plies()) < options.opening.size()) {
      m = options.opening[size_t(g.plies())];
      ++g.opening_plies;
    } else {
      MoveList legal;
      generate_legal(referee.position(), legal);
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      m = legal.moves[x % uint64_t(legal.size())];
    }
    g.moves.push_back(m);
    ending = referee.play(m);
  }
  g.result = ending->result;
  g.termination = ending->termination;
  g.detail = ending->detail;
  v1::SelfPlayGame out;
  selfplay::game_to_proto(index, g, &out);
  return out;
}

int run() {
  const std::string path = absl::GetFlag(FLAGS_store);
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(path + suffix);
  auto store = Store::open(path);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  SystemClock clock;
  CoordinatorOptions options;
  options.max_planned_units = int64_t(1) << 40;
  Coordinator c(store->get(), &clock, options);
  if (!c.load().ok()) return 1;

  v1::SelfPlayJobSpec s;
  s.set_start_positions(absl::StrCat("0-", absl::GetFlag(FLAGS_positions) - 1));
  s.set_games_per_position(absl::GetFlag(FLAGS_games));
  s.set_engine("builtin");
  s.set_depth(1);
  s.set_max_plies(absl::GetFlag(FLAGS_max_plies));
  s.set_games_per_unit(absl::GetFlag(FLAGS_games_per_unit));
  const std::string mode = absl::GetFlag(FLAGS_store_games);
  if (mode == "none") {
    s.set_store_games(v1::STORE_GAMES_NONE);
  } else if (mode.rfind("sample:", 0) == 0) {
    int n = 0;
    if (!absl::SimpleAtoi(mode.substr(7), &n)) return 2;
    s.set_store_games(v1::STORE_GAMES_SAMPLE);
    s.set_store_games_sample(n);
  } else if (mode != "all") {
    std::fprintf(stderr, "--store_games: all, none or sample:N\n");
    return 2;
  }
  if (const int n = absl::GetFlag(FLAGS_uci_options); n > 0) {
    s.set_engine("sf");
    for (int i = 0; i < n; ++i) {
      v1::UciOption* o = s.add_options();
      o->set_name(absl::StrCat("Option ", i, " ", std::string(240, 'x')).substr(0, 255));
      o->set_value(std::string(255, 'v'));
    }
  }
  const selfplay::SelfPlaySpec spec = *selfplay::spec_from_proto(s);
  const int64_t rss_start = rss_bytes();
  v1::SubmitJobRequest req;
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  *req.mutable_spec()->mutable_selfplay() = s;
  auto t_submit = std::chrono::steady_clock::now();
  auto job = c.submit(Caller::local(), req);
  if (!job.ok()) {
    std::fprintf(stderr, "submit: %s\n", std::string(job.status().message()).c_str());
    return 1;
  }
  const int64_t units = job->progress().units_total();
  const int64_t total_games = int64_t(absl::GetFlag(FLAGS_positions)) * absl::GetFlag(FLAGS_games);
  (*store)->exec_for_test("PRAGMA wal_checkpoint(TRUNCATE)").IgnoreError();
  const int64_t store_planned = file_bytes(path);
  const int64_t rss_planned = rss_bytes();
  std::printf("# %lld games (%d positions x %d), %lld units, store-games %s, max plies %d; planned in %.1f s\n",
              (long long)total_games, absl::GetFlag(FLAGS_positions), absl::GetFlag(FLAGS_games), (long long)units,
              mode.c_str(), absl::GetFlag(FLAGS_max_plies), seconds_since(t_submit));
  std::printf("# rss before submit %.1f MB, after planning %.1f MB; store after planning %.1f MB\n", rss_start / 1e6,
              rss_planned / 1e6, store_planned / 1e6);
  if (absl::GetFlag(FLAGS_plan_only) || absl::GetFlag(FLAGS_uci_options) > 0) {
    std::printf("spec %zu bytes; per unit: %.0f bytes of RSS, %.0f bytes of store\n", req.spec().ByteSizeLong(),
                double(rss_planned - rss_start) / double(units), double(store_planned) / double(units));
    return 0;
  }
  std::printf("seconds,games,rss_mb,store_mb\n");

  std::atomic<int64_t> games{0}, plies{0};
  std::atomic<bool> done{false}, failed{false};
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> drivers;
  for (int t = 0; t < absl::GetFlag(FLAGS_threads); ++t)
    drivers.emplace_back([&, t] {
      v1::HelloRequest h;
      h.set_name(absl::StrCat("driver-", t));
      h.set_threads(1);
      h.add_capabilities("selfplay");
      h.set_protocol_version(kProtocolVersion);
      const std::string w = c.hello(Caller::local(), h)->worker_id();
      for (;;) {
        v1::AcquireWorkRequest a;
        a.set_worker_id(w);
        a.set_max_units(4);
        auto got = c.acquire(Caller::local(), a);
        if (!got.ok() || got->leases().empty()) return;
        for (const v1::Lease& l : got->leases()) {
          const v1::SelfPlayUnitSpec& u = l.spec().selfplay();
          v1::CompleteUnitRequest r;
          r.set_worker_id(w);
          r.set_unit_id(l.unit_id());
          r.set_attempt(l.attempt());
          int64_t p = 0;
          for (int k = 0; k < u.games(); ++k) {
            *r.mutable_result()->mutable_selfplay()->add_games() =
                synthetic_game(spec, u.start_position(), u.first_game() + k);
            p += r.result().selfplay().games(k).moves_size();
          }
          auto resp = c.complete(Caller::local(), r);
          if (!resp.ok() || resp->outcome() != v1::COMPLETION_OUTCOME_ACCEPTED) {
            std::fprintf(stderr, "complete %s: %s\n", l.unit_id().c_str(),
                         resp.ok() ? v1::CompletionOutcome_Name(resp->outcome()).c_str()
                                   : std::string(resp.status().message()).c_str());
            failed = true;
            return;
          }
          games += u.games();
          plies += p;
        }
      }
    });
  int64_t rss_peak = 0;
  std::thread sampler([&] {
    while (!done) {
      const int64_t rss = rss_bytes();
      rss_peak = std::max(rss_peak, rss);
      std::printf("%.0f,%lld,%.1f,%.1f\n", seconds_since(t0), (long long)games.load(), rss / 1e6,
                  file_bytes(path) / 1e6);
      std::fflush(stdout);
      for (int i = 0; i < 100 && !done; ++i)
        std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_sample_seconds) / 100));
    }
  });
  for (std::thread& d : drivers) d.join();
  const double play_s = seconds_since(t0);
  done = true;
  sampler.join();
  if (failed) return 1;
  const int64_t rss_end = rss_bytes();
  (*store)->exec_for_test("PRAGMA wal_checkpoint(TRUNCATE)").IgnoreError();
  const int64_t store_end = file_bytes(path);
  auto state = c.get_job(Caller::local(), job->id());
  std::printf(
      "# %s: %lld games, %.1f plies a game, in %.1f s: %.0f games/s accepted (%d driver threads making "
      "the games too)\n",
      v1::JobState_Name(state->state()).c_str(), (long long)games.load(), games ? double(plies) / double(games) : 0.0,
      play_s, double(games) / play_s, absl::GetFlag(FLAGS_threads));
  std::printf("# rss: peak %.1f MB, end %.1f MB (after planning %.1f MB)\n", rss_peak / 1e6, rss_end / 1e6,
              rss_planned / 1e6);
  std::printf("# store: %.1f MB, %.1f bytes a game (%.1f bytes a game beyond the planned job's %.1f MB)\n",
              store_end / 1e6, double(store_end) / double(games), double(store_end - store_planned) / double(games),
              store_planned / 1e6);

  for (bool omit : {true, false}) {
    if (!omit && !absl::GetFlag(FLAGS_pgn)) break;
    const auto t = std::chrono::steady_clock::now();
    int64_t chunks = 0, records = 0, bytes = 0;
    absl::Status st = c.results(Caller::local(), job->id(), false, omit, [&](const v1::ResultChunk& ch) {
      ++chunks;
      records += ch.selfplay().game_records_size();
      for (const v1::SelfPlayGame& g : ch.selfplay().game_records()) bytes += int64_t(g.pgn().size());
      return true;
    });
    std::printf("# results%s: %.2f s, %lld chunks, %lld games, %.1f MB of PGN; rss after %.1f MB%s\n",
                omit ? " (counts only)" : " with games", seconds_since(t), (long long)chunks, (long long)records,
                bytes / 1e6, rss_bytes() / 1e6, st.ok() ? "" : (" ERROR " + std::string(st.message())).c_str());
  }
  return 0;
}

}  // namespace
}  // namespace c960::cluster

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return c960::cluster::run();
}
