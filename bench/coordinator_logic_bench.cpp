// The coordinator's logic alone, no gRPC: acquire + complete cycles of trivial units, one unit
// a call or a batch of them (AcquireWork for `batch` units, one CompleteUnits), with the store in
// memory and in a WAL file. The ceiling the daemon's throughput is measured against; a figure is
// per unit. The *WithFinishedJobs benchmarks keep `finished` final jobs in the table beside one
// running job: what a sweep, a Hello (a worker's new session) and an acquire + complete cost as
// finished jobs pile up (the hot paths walk only the running jobs: JobTable::running).
#include <unistd.h>

#include <benchmark/benchmark.h>
#include <filesystem>
#include <memory>

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

// A coordinator (store in memory) with `finished` jobs cancelled a lease period ago (a sweep
// has folded what they had), then one running job of about 4,000 units, and a worker. The clock
// stands still while measured. Empty on success, else what failed.
struct WithFinishedJobs {
  std::unique_ptr<Store> store;
  FakeClock clock;
  std::unique_ptr<Coordinator> c;
  v1::HelloRequest hello;
  std::string worker;

  std::string setup(int64_t finished) {
    auto opened = Store::open(":memory:");
    if (!opened.ok()) return "store";
    store = std::move(*opened);
    CoordinatorOptions o;
    o.plan_budget_ms = int64_t(1) << 40;  // thousands of submits in a row
    o.waiter_thread = false;
    c = std::make_unique<Coordinator>(store.get(), &clock, o);
    if (!c->load().ok()) return "load";
    hello.set_name("bench");
    hello.set_threads(1);
    hello.add_capabilities("perft");
    hello.set_protocol_version(kProtocolVersion);
    absl::StatusOr<v1::HelloResponse> h = c->hello(Caller::local(), hello);
    if (!h.ok()) return std::string(h.status().message());
    worker = h->worker_id();
    v1::SubmitJobRequest small;
    small.mutable_spec()->mutable_perft()->set_depth(2);
    small.mutable_spec()->mutable_perft()->set_split_depth(1);
    small.mutable_spec()->mutable_perft()->set_start_positions("0");
    for (int64_t k = 0; k < finished; ++k) {
      absl::StatusOr<v1::Job> j = c->submit(Caller::local(), small);
      if (!j.ok()) return std::string(j.status().message());
      if (!c->cancel(Caller::local(), j->id()).ok()) return "cancel";
    }
    clock.advance_ms(o.lease_ms + 1);
    c->sweep();
    h = c->hello(Caller::local(), hello);  // the sweep found the worker silent: a new session
    if (!h.ok()) return std::string(h.status().message());
    worker = h->worker_id();
    v1::SubmitJobRequest big;
    big.mutable_spec()->mutable_perft()->set_depth(3);
    big.mutable_spec()->mutable_perft()->set_split_depth(2);
    big.mutable_spec()->mutable_perft()->set_start_positions("0-9");
    big.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    if (!c->submit(Caller::local(), big).ok()) return "submit";
    return "";
  }
};

void BM_SweepWithFinishedJobs(benchmark::State& state) {
  WithFinishedJobs f;
  if (std::string e = f.setup(state.range(0)); !e.empty()) {
    state.SkipWithError(e.c_str());
    return;
  }
  for (auto _ : state) f.c->sweep();
}
BENCHMARK(BM_SweepWithFinishedJobs)->Arg(0)->Arg(1'000)->Arg(10'000)->ArgName("finished")->Iterations(20'000);

void BM_HelloWithFinishedJobs(benchmark::State& state) {
  WithFinishedJobs f;
  if (std::string e = f.setup(state.range(0)); !e.empty()) {
    state.SkipWithError(e.c_str());
    return;
  }
  // The same worker again: each Hello replaces its session (and looks for the old one's leases).
  for (auto _ : state) benchmark::DoNotOptimize(f.c->hello(Caller::local(), f.hello));
}
BENCHMARK(BM_HelloWithFinishedJobs)->Arg(0)->Arg(1'000)->Arg(10'000)->ArgName("finished")->Iterations(5'000);

void BM_AcquireCompleteWithFinishedJobs(benchmark::State& state) {
  WithFinishedJobs f;
  if (std::string e = f.setup(state.range(0)); !e.empty()) {
    state.SkipWithError(e.c_str());
    return;
  }
  v1::AcquireWorkRequest a;
  a.set_worker_id(f.worker);
  a.set_max_units(1);
  for (auto _ : state) {
    auto got = f.c->acquire(Caller::local(), a);
    if (!got.ok() || got->leases_size() != 1) {
      state.SkipWithError("acquire");
      break;
    }
    v1::CompleteUnitsRequest r;
    r.set_worker_id(f.worker);
    v1::CompleteUnitRequest* one = r.add_completions();
    one->set_unit_id(got->leases(0).unit_id());
    one->set_attempt(got->leases(0).attempt());
    *one->mutable_result() = *compute_unit(got->leases(0).spec(), nullptr);
    benchmark::DoNotOptimize(f.c->complete_units(Caller::local(), r));
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_AcquireCompleteWithFinishedJobs)->Arg(0)->Arg(1'000)->Arg(10'000)->ArgName("finished")->Iterations(3'000);

}  // namespace
}  // namespace c960::cluster

BENCHMARK_MAIN();
