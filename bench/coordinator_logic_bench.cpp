// The coordinator's logic alone, no gRPC: one acquire + complete cycle of a trivial unit, with
// the store in memory and in a WAL file. The ceiling the daemon's throughput is measured against.
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <filesystem>

#include "coordinator/coordinator.h"
#include "worker/compute.h"

namespace c960::cluster {
namespace {

void BM_AcquireComplete(benchmark::State& state) {
  const bool on_disk = state.range(0) != 0;
  const std::string path = on_disk ? std::filesystem::temp_directory_path().string() + "/c960-bench-logic-" +
                                         std::to_string(getpid()) + ".db"
                                   : ":memory:";
  {
    auto store = Store::open(path);
    if (!store.ok()) {
      state.SkipWithError("store");
      return;
    }
    SystemClock clock;
    Coordinator c(store->get(), &clock);
    if (!c.load().ok()) state.SkipWithError("load");
    v1::HelloRequest h;
    h.set_name("bench");
    h.set_threads(1);
    h.add_capabilities("perft");
    const std::string w = c.hello(Caller::local(), h)->worker_id();
    v1::SubmitJobRequest s;
    s.mutable_spec()->mutable_perft()->set_depth(2);
    s.mutable_spec()->mutable_perft()->set_split_depth(1);
    v1::AcquireWorkRequest a;
    a.set_worker_id(w);
    a.set_max_units(1);
    for (auto _ : state) {
      auto got = c.acquire(Caller::local(), a);
      if (got->leases_size() == 0) {
        state.PauseTiming();
        if (!c.submit(Caller::local(), s).ok()) state.SkipWithError("submit");
        state.ResumeTiming();
        got = c.acquire(Caller::local(), a);
      }
      const v1::Lease& l = got->leases(0);
      v1::CompleteUnitRequest r;
      r.set_worker_id(w);
      r.set_unit_id(l.unit_id());
      r.set_attempt(l.attempt());
      *r.mutable_result() = *compute_unit(l.spec(), nullptr);
      benchmark::DoNotOptimize(c.complete(Caller::local(), r));
    }
    state.SetItemsProcessed(state.iterations());
  }
  if (on_disk)
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
}
BENCHMARK(BM_AcquireComplete)->Arg(0)->Arg(1)->ArgNames({"on_disk"});

}  // namespace
}  // namespace c960::cluster

BENCHMARK_MAIN();
