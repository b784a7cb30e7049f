// c960-bench-lazy-fold: a lazily planned perft job through one coordinator (in process, its
// SQLite store on disk) and driver threads that compute units as workers would (worker/compute.h)
// and deliver them in batches. Prints over time the units done, the unit rows in the store, the
// store's size on disk and the process's RSS, with folding of finished roots on or off (--fold):
// what folding bounds. A benchmark, not a test.
//
//   c960-bench-lazy-fold --depth 6 --positions 0-19 --split 3 --fold=true
//
// The drivers hold one batch each, so the RSS it prints is the coordinator's (plus a constant).
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
#include "cluster/u128.h"
#include "coordinator/coordinator.h"
#include "worker/compute.h"

ABSL_FLAG(int, depth, 6, "perft depth");
ABSL_FLAG(std::string, positions, "0-19", "start positions");
ABSL_FLAG(int, split, 3, "split depth");
ABSL_FLAG(int64_t, window, c960::cluster::kLazyWindowUnits, "lazy window (units)");
ABSL_FLAG(int64_t, low_water, c960::cluster::kLazyLowWaterUnits, "lazy low-water mark (units)");
ABSL_FLAG(bool, fold, true, "fold finished roots");
ABSL_FLAG(int, threads, 2, "driver threads (each a worker)");
ABSL_FLAG(int, batch, 8, "units per acquire and per CompleteUnits");
ABSL_FLAG(std::string, store, "/tmp/c960-lazy-fold.db", "the coordinator's store (replaced)");
ABSL_FLAG(double, sample_seconds, 2, "sample interval");

namespace c960::cluster {
namespace {

int64_t rss_bytes() { return bench::rss_bytes(getpid()); }

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
  options.lazy_plan_walk = 0;  // lazy whatever the size
  options.lazy_window_units = absl::GetFlag(FLAGS_window);
  options.lazy_low_water_units = absl::GetFlag(FLAGS_low_water);
  options.fold = absl::GetFlag(FLAGS_fold);
  options.max_planned_units = int64_t(1) << 40;
  Coordinator coordinator(store->get(), &clock, options);
  if (!coordinator.load().ok()) return 1;
  v1::SubmitJobRequest req;
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  req.mutable_spec()->mutable_perft()->set_depth(absl::GetFlag(FLAGS_depth));
  req.mutable_spec()->mutable_perft()->set_start_positions(absl::GetFlag(FLAGS_positions));
  req.mutable_spec()->mutable_perft()->set_split_depth(absl::GetFlag(FLAGS_split));
  const int64_t rss0 = rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  auto job = coordinator.submit(Caller::local(), req);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", std::string(job.status().message()).c_str());
    return 1;
  }
  const std::string id = job->id();
  std::atomic<bool> stop{false};
  std::vector<std::thread> drivers;
  for (int t = 0; t < absl::GetFlag(FLAGS_threads); ++t)
    drivers.emplace_back([&, t] {
      v1::HelloRequest hello;
      hello.set_name(absl::StrCat("driver-", t));
      hello.set_threads(1);
      hello.add_capabilities("perft");
      hello.set_protocol_version(kProtocolVersion);
      auto session = coordinator.hello(Caller::local(), hello);
      if (!session.ok()) return;
      while (!stop) {
        v1::AcquireWorkRequest a;
        a.set_worker_id(session->worker_id());
        a.set_max_units(absl::GetFlag(FLAGS_batch));
        a.set_wait_seconds(1);
        auto leases = coordinator.acquire(Caller::local(), a);
        if (!leases.ok() || leases->leases_size() == 0) continue;
        v1::CompleteUnitsRequest c;
        c.set_worker_id(session->worker_id());
        for (const v1::Lease& l : leases->leases()) {
          v1::CompleteUnitRequest* one = c.add_completions();
          one->set_unit_id(l.unit_id());
          one->set_attempt(l.attempt());
          *one->mutable_result() = *compute_unit(l.spec(), nullptr);
        }
        coordinator.complete_units(Caller::local(), c).IgnoreError();
      }
    });
  std::printf("fold %s: depth %d of %s split %d, window %lld, low water %lld; RSS before submit %.1f MB\n",
              options.fold ? "on" : "off", absl::GetFlag(FLAGS_depth), absl::GetFlag(FLAGS_positions).c_str(),
              absl::GetFlag(FLAGS_split), (long long)options.lazy_window_units, (long long)options.lazy_low_water_units,
              double(rss0) / 1e6);
  std::printf("%8s %10s %10s %10s %10s %10s\n", "seconds", "done", "total", "unit_rows", "store_MB", "rss_MB");
  auto sample = [&](const v1::Job& j) {
    const Store::FileSizes sizes = (*store)->file_sizes();
    std::printf("%8.1f %10lld %10lld %10lld %10.1f %10.1f\n",
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                (long long)j.progress().units_done(), (long long)j.progress().units_total(),
                (long long)*(*store)->unit_rows(id), double(sizes.db + sizes.wal) / 1e6, double(rss_bytes()) / 1e6);
    std::fflush(stdout);
  };
  for (;;) {
    std::this_thread::sleep_for(std::chrono::duration<double>(absl::GetFlag(FLAGS_sample_seconds)));
    auto j = coordinator.get_job(Caller::local(), id);
    if (!j.ok()) return 1;
    sample(*j);
    if (j->state() != v1::JOB_STATE_RUNNING) break;
  }
  stop = true;
  for (std::thread& t : drivers) t.join();
  auto results = coordinator.results(Caller::local(), id, false);
  NodeCount total = 0;
  if (results.ok())
    for (const v1::ResultChunk& c : *results) total += from_proto(c.perft().nodes());
  std::printf("total nodes %s\n", to_string(total).c_str());
  coordinator.shutdown();
  return 0;
}

}  // namespace
}  // namespace c960::cluster

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return c960::cluster::run();
}
