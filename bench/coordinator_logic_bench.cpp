// The coordinator's logic alone, no gRPC: acquire + complete cycles of trivial units, one unit
// a call or a batch of them (AcquireWork for `batch` units, one CompleteUnits), with the store in
// memory and in a WAL file. The ceiling the daemon's throughput is measured against; a figure is
// per unit.
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <filesystem>

#include "cluster/config.h"
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
    const int batch = int(state.range(1));
    v1::HelloRequest h;
    h.set_name("bench");
    h.set_threads(batch);
    h.add_capabilities("perft");
    h.set_protocol_version(kProtocolVersion);  // refused without it
    absl::StatusOr<v1::HelloResponse> hello = c.hello(Caller::local(), h);
    if (!hello.ok()) {
      state.SkipWithError(std::string(hello.status().message()).c_str());
      return;
    }
    const std::string w = hello->worker_id();
    // Units of remaining depth 1: what is measured is the coordinator, not the count.
    v1::SubmitJobRequest s;
    s.mutable_spec()->mutable_perft()->set_depth(3);
    s.mutable_spec()->mutable_perft()->set_split_depth(2);
    s.mutable_spec()->mutable_perft()->set_start_positions("0-9");  // about 4,000 units a job
    s.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    v1::AcquireWorkRequest a;
    a.set_worker_id(w);
    a.set_max_units(batch);
    for (auto _ : state) {
      auto got = c.acquire(Caller::local(), a);
      if (!got.ok() || got->leases_size() < batch) {
        state.PauseTiming();
        if (got.ok() && got->leases_size() > 0) {  // the job's last units: given back
          v1::ReleaseUnitsRequest r;
          r.set_worker_id(w);
          for (const v1::Lease& l : got->leases()) r.add_unit_ids(l.unit_id());
          if (!c.release(Caller::local(), r).ok()) state.SkipWithError("release");
        }
        if (!c.submit(Caller::local(), s).ok()) state.SkipWithError("submit");
        state.ResumeTiming();
        got = c.acquire(Caller::local(), a);
        if (!got.ok() || got->leases_size() < batch) {
          state.SkipWithError("acquire");
          break;
        }
      }
      v1::CompleteUnitsRequest r;
      r.set_worker_id(w);
      for (const v1::Lease& l : got->leases()) {
        v1::CompleteUnitRequest* one = r.add_completions();
        one->set_unit_id(l.unit_id());
        one->set_attempt(l.attempt());
        *one->mutable_result() = *compute_unit(l.spec(), nullptr);
      }
      benchmark::DoNotOptimize(c.complete_units(Caller::local(), r));
    }
    state.SetItemsProcessed(state.iterations() * batch);
  }
  if (on_disk)
    for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
}
BENCHMARK(BM_AcquireComplete)->ArgsProduct({{0, 1}, {1, 8}})->ArgNames({"on_disk", "batch"});

}  // namespace
}  // namespace c960::cluster

BENCHMARK_MAIN();
