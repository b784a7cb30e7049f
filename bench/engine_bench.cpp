// Built-in engine speed: nodes per second of a fixed-node search from start positions.
#include <benchmark/benchmark.h>

#include "core/engine/search.h"
#include "core/startpos.h"

namespace {

void BM_Search(benchmark::State& state) {
  c960::engine::Engine engine(16);
  uint64_t nodes = 0;
  for (auto _ : state) {
    for (int sp : {0, 226, 518, 959}) {
      c960::Position pos = *c960::Position::from_fen(*c960::startpos_fen(sp));
      engine.new_game();
      nodes += engine.search(pos, c960::engine::Limits{uint64_t(state.range(0)), 0, 0}).nodes;
    }
  }
  state.counters["nps"] = benchmark::Counter(double(nodes), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_Search)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
