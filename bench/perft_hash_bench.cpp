// Deep hashed perft, timed: one line per run with the count, the seconds of each phase, Mnps and
// the load average, for bench/perft_hash_bench.sh. Uses only the public perft API, so the script
// can build the same driver against an older core for an A/B comparison.
//   perft_hash_bench (--sps 518 | --fen FEN) --depth 8 --threads 2 --hash 1024 [--mode table|units]
// Phases: setup_s (making the table), count_s (the count), teardown_s (freeing the table);
// total_s is their sum, what a process pays beyond its start-up. cpu_s is the user + system
// time of all three.
// table: perft_parallel over the start positions, as `c960 perft --table` runs it.
// units: as cluster workers run a job split at ply 1: each child of each root is a unit, taken in
// order by the next free thread and counted by perft(child, depth - 1, hash); one shared table.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <new>
#include <string>
#include <sys/resource.h>
#include <thread>
#include <vector>

#include "core/movegen.h"
#include "core/perft.h"
#include "core/startpos.h"

namespace c960 {
namespace {

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

NodeCount run_units(const std::vector<Position>& roots, int depth, int threads, PerftHash* hash) {
  std::vector<Position> units;
  for (Position pos : roots) {
    MoveList list;
    generate_legal(pos, list);
    for (Move m : list) {
      StateInfo st;
      pos.do_move(m, st);
      units.push_back(Position(pos));
      pos.undo_move(m);
    }
  }
  std::vector<uint64_t> counts(units.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < units.size();) counts[i] = perft(units[i], depth - 1, hash);
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();
  NodeCount n = 0;
  for (uint64_t c : counts) n += c;
  return n;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "perft_hash_bench: %s\nusage: perft_hash_bench (--sps LIST | --fen FEN) --depth D --threads N --hash MB "
               "[--mode table|units]\n",
               why);
  return 2;
}

int main_impl(int argc, char** argv) {
  std::string sps_arg, fen, mode = "table";
  long depth = -1, threads = 1, hash_mb = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    const bool number = *v && !*end;
    if (a == "--sps")
      sps_arg = v;
    else if (a == "--fen")
      fen = v;
    else if (a == "--mode")
      mode = v;
    else if (!number)
      return usage((a + ": not a number").c_str());
    else if (a == "--depth")
      depth = n;
    else if (a == "--threads")
      threads = n;
    else if (a == "--hash")
      hash_mb = n;
    else
      return usage(("unknown option " + a).c_str());
  }
  if (depth < 1 || depth > 12) return usage("--depth: not in 1..12");
  if (threads < 1 || threads > 256) return usage("--threads: not in 1..256");
  if (hash_mb < 0 || hash_mb > (1 << 20)) return usage("--hash: not in 0..1048576");
  if (mode != "table" && mode != "units") return usage("--mode: not table or units");
  std::vector<Position> roots;
  if (fen.empty() == sps_arg.empty()) return usage("give one of --sps and --fen");
  if (!fen.empty()) {
    absl::StatusOr<Position> pos = Position::from_fen(fen);
    if (!pos.ok()) return usage(("--fen: " + std::string(pos.status().message())).c_str());
    roots.push_back(*pos);
  } else {
    const absl::StatusOr<std::vector<int>> sps = parse_sp_ranges(sps_arg);
    if (!sps.ok() || sps->empty()) return usage("--sps: not a list of start positions");
    for (int sp : *sps) roots.push_back(*Position::from_fen(*startpos_fen(sp)));
  }

  const double cpu0 = cpu_seconds();
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<PerftHash> hash;
  try {
    if (hash_mb) hash = std::make_unique<PerftHash>(size_t(hash_mb));
  } catch (const std::bad_alloc&) {
    return usage("--hash: cannot allocate");
  }
  const auto t1 = std::chrono::steady_clock::now();
  NodeCount nodes = 0;
  if (mode == "units") {
    nodes = run_units(roots, int(depth), int(threads), hash.get());
  } else {
    PerftOptions opt;
    opt.threads = int(threads);
    for (const PerftResult& r : perft_parallel(roots, int(depth), opt, hash.get())) nodes += r.nodes;
  }
  const auto t2 = std::chrono::steady_clock::now();
  hash.reset();
  const auto t3 = std::chrono::steady_clock::now();
  const double cpu = cpu_seconds() - cpu0;
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  const double setup = secs(t0, t1), count = secs(t1, t2), teardown = secs(t2, t3), total = secs(t0, t3);
  double load[1] = {0};
  getloadavg(load, 1);
  std::printf(
      "mode=%s root=%s depth=%ld threads=%ld hash_mb=%ld nodes=%s setup_s=%.3f count_s=%.3f teardown_s=%.3f "
      "total_s=%.3f cpu_s=%.3f mnps_count=%.0f mnps_total=%.0f load=%.2f\n",
      mode.c_str(), fen.empty() ? sps_arg.c_str() : "fen", depth, threads, hash_mb, to_string(nodes).c_str(), setup,
      count, teardown, total, cpu, double(nodes) / count / 1e6, double(nodes) / total / 1e6, load[0]);
  return 0;
}

}  // namespace
}  // namespace c960

int main(int argc, char** argv) { return c960::main_impl(argc, argv); }
