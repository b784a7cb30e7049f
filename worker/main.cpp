// c960-worker: computes units leased from a coordinator until SIGTERM or SIGINT.
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <new>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "cluster/channel.h"
#include "cluster/config.h"
#include "cluster/flags.h"
#include "cluster/log.h"
#include "worker/worker.h"

ABSL_FLAG(std::string, coordinator, c960::cluster::kDefaultCoordinator, "HOST:PORT of the coordinator");
ABSL_FLAG(int32_t, threads, 1, "compute threads (1..4096; 0: one per CPU)");
ABSL_FLAG(int32_t, hash, c960::cluster::kDefaultWorkerHashMb, "perft hash in MB shared by the threads (0: none)");
ABSL_FLAG(int64_t, grace_seconds, c960::cluster::kDefaultGraceSeconds,
          "on SIGTERM, finish held units for this long before releasing them");
ABSL_FLAG(std::string, name, "", "name shown by the coordinator (default: host name and pid)");

namespace {

const c960::cluster::DaemonCommand kCommand = {
    "c960-worker",
    "c960-worker [--coordinator HOST:PORT] [--threads N] [--hash MB] [--grace-seconds S] [--name NAME]",
    "Computes units of c960 cluster jobs leased from a coordinator (c960-coordinator) until SIGTERM or\n"
    "SIGINT; then it takes no new units, finishes or releases the ones it holds within --grace-seconds,\n"
    "delivers their results and exits.",
    c960::cluster::kVersion,
    {{"coordinator", "HOST:PORT", "C960_COORDINATOR"},
     {"threads", "N"},
     {"hash", "MB"},
     {"grace_seconds", "S"},
     {"name", "NAME"}},
};

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<int> rc = c960::cluster::parse_daemon_flags(argc, argv, kCommand)) return *rc;
  c960::cluster::set_log_program("c960-worker");
  int threads = absl::GetFlag(FLAGS_threads);
  if (threads == 0) threads = int(std::max(1u, std::thread::hardware_concurrency()));
  if (threads < 1 || threads > c960::cluster::kMaxThreads) {
    std::fprintf(stderr, "c960-worker: --threads: %d is not in 0..%d\n", threads, c960::cluster::kMaxThreads);
    return 2;
  }
  const int hash = absl::GetFlag(FLAGS_hash);
  if (hash < 0 || hash > (1 << 20)) {
    std::fprintf(stderr, "c960-worker: --hash: %d is not in 0..%d\n", hash, 1 << 20);
    return 2;
  }
  const int64_t grace = absl::GetFlag(FLAGS_grace_seconds);
  if (grace < 0 || grace > 86400) {
    std::fprintf(stderr, "c960-worker: --grace-seconds: not in 0..86400\n");
    return 2;
  }

  // Stop signals go to a thread of their own that asks the worker to stop.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  c960::cluster::WorkerOptions options;
  options.threads = threads;
  options.hash_mb = hash;
  options.grace_ms = grace * 1000;
  options.version = std::string(c960::cluster::kVersion);
  options.name = absl::GetFlag(FLAGS_name);
  if (options.name.empty()) {
    char host[256] = {};
    gethostname(host, sizeof host - 1);
    options.name = absl::StrCat(host, ":", getpid());
  }
  auto channel = c960::cluster::make_channel({c960::cluster::with_default_port(absl::GetFlag(FLAGS_coordinator))});
  std::unique_ptr<c960::cluster::Worker> owned;
  try {
    owned = std::make_unique<c960::cluster::Worker>(c960::cluster::grpc_connection(channel), options);
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr, "c960-worker: --hash: cannot allocate %d MB\n", hash);
    return 2;
  }
  c960::cluster::Worker& worker = *owned;
  std::thread signals([&] {
    int sig = 0;
    sigwait(&stop, &sig);
    c960::cluster::log_info(absl::StrCat("signal ", sig, ", stopping"));
    worker.request_stop();
  });
  signals.detach();  // blocked in sigwait for good when the worker ends by itself
  return worker.run();
}
