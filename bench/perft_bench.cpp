// Micro-benchmarks of the hot path, with nodes (or positions) per second as rate counters.
//   build/release/bench/perft_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
#include <benchmark/benchmark.h>
#include <fstream>
#include <sstream>

#include "core/movegen.h"
#include "core/perft.h"
#include "core/startpos.h"
#include "core/suite.h"
#include "tests/test_paths.h"

namespace c960 {
namespace {

std::vector<Position> midgame_positions() {
  std::ifstream in(std::string(c960::test::data_dir()) + "/chess960_midgame.epd");
  std::stringstream ss;
  ss << in.rdbuf();
  std::vector<Position> out;
  if (absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(ss.str()); cases.ok())
    for (const PerftCase& c : *cases)
      if (absl::StatusOr<Position> p = Position::from_fen(c.fen); p.ok()) out.push_back(*p);
  return out;
}

void BM_CountLegal(benchmark::State& state) {
  const std::vector<Position> positions = midgame_positions();
  uint64_t n = 0;
  for (auto _ : state)
    for (const Position& p : positions) n += uint64_t(count_legal(p));
  benchmark::DoNotOptimize(n);
  state.counters["positions/s"] =
      benchmark::Counter(double(state.iterations() * positions.size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_CountLegal);

void BM_GenerateLegal(benchmark::State& state) {
  const std::vector<Position> positions = midgame_positions();
  MoveList list;
  for (auto _ : state)
    for (const Position& p : positions) {
      generate_legal(p, list);
      benchmark::DoNotOptimize(list.count);
    }
  state.counters["positions/s"] =
      benchmark::Counter(double(state.iterations() * positions.size()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_GenerateLegal);

// Perft of the midgame suite's first 50 positions at the given depth, no hash.
void BM_PerftMidgame(benchmark::State& state) {
  std::vector<Position> positions = midgame_positions();
  positions.resize(std::min<size_t>(positions.size(), 50));
  const int depth = int(state.range(0));
  uint64_t nodes = 0;
  for (auto _ : state)
    for (const Position& p : positions) nodes += perft(p, depth);
  state.counters["nodes/s"] = benchmark::Counter(double(nodes), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PerftMidgame)->Arg(4)->Unit(benchmark::kMillisecond);

// Perft 5 of start position 518, with and without a 64 MB hash table.
void BM_PerftStart(benchmark::State& state) {
  const Position pos = *Position::from_fen(*startpos_fen(518));
  std::unique_ptr<PerftHash> hash = state.range(0) ? std::make_unique<PerftHash>(64) : nullptr;
  uint64_t nodes = 0;
  for (auto _ : state) {
    if (hash) {
      state.PauseTiming();  // clearing is not what is measured
      hash->clear();
      state.ResumeTiming();
    }
    nodes += perft(pos, 5, hash.get());
  }
  state.counters["nodes/s"] = benchmark::Counter(double(nodes), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PerftStart)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace c960

BENCHMARK_MAIN();
