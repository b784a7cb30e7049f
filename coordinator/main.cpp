// c960-coordinator: serves JobService and WorkerService on --listen, state in the --db file.
#include <csignal>
#include <cstdio>
#include <fstream>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/flags.h"
#include "cluster/log.h"
#include "cluster/server.h"
#include "coordinator/coordinator.h"
#include "coordinator/service.h"

ABSL_FLAG(std::string, listen, c960::cluster::kDefaultListen, "HOST:PORT to serve on; port 0 picks a free port");
ABSL_FLAG(std::string, port_file, "", "write the port actually chosen to this file once serving");
ABSL_FLAG(std::string, db, c960::cluster::kDefaultDb, "SQLite file with jobs, units, results and workers");
ABSL_FLAG(int64_t, lease_seconds, c960::cluster::kDefaultLeaseSeconds,
          "a lease not renewed for this long returns its unit to the queue (1..3600)");

namespace {

int die(const std::string& msg) {
  std::fprintf(stderr, "c960-coordinator: %s\n", msg.c_str());
  return 2;
}

}  // namespace

const c960::cluster::DaemonCommand kCommand = {
    "c960-coordinator",
    "c960-coordinator [--listen HOST:PORT] [--db FILE] [--port-file FILE] [--lease-seconds S]",
    "Serves the c960 cluster: users submit, watch and fetch jobs (c960 submit|status|watch|results|cancel),\n"
    "workers (c960-worker) lease their units. Jobs, units, results and workers live in the SQLite file\n"
    "--db; a coordinator restarted on the same file resumes every job. Stops on SIGTERM or SIGINT.",
    c960::cluster::kVersion,
    {{"listen", "HOST:PORT"}, {"port_file", "FILE"}, {"db", "FILE"}, {"lease_seconds", "S"}},
};

int main(int argc, char** argv) {
  if (std::optional<int> rc = c960::cluster::parse_daemon_flags(argc, argv, kCommand)) return *rc;
  c960::cluster::set_log_program("c960-coordinator");
  const int64_t lease_s = absl::GetFlag(FLAGS_lease_seconds);
  if (lease_s < 1 || lease_s > 3600) return die("--lease-seconds: not in 1..3600");

  // Block the stop signals in every thread; main waits for them with sigwait.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);

  absl::StatusOr<std::unique_ptr<c960::cluster::Store>> store = c960::cluster::Store::open(absl::GetFlag(FLAGS_db));
  if (!store.ok()) return die(std::string(store.status().message()));
  c960::cluster::SystemClock clock;
  c960::cluster::Coordinator coordinator(store->get(), &clock, {lease_s * 1000});
  if (absl::Status s = coordinator.load(); !s.ok()) return die(std::string(s.message()));

  c960::cluster::JobServiceImpl jobs(&coordinator);
  c960::cluster::WorkerServiceImpl workers(&coordinator);
  grpc::ServerBuilder builder;
  int port = 0;
  c960::cluster::configure_server({c960::cluster::with_default_port(absl::GetFlag(FLAGS_listen))}, &builder, &port);
  builder.RegisterService(&jobs);
  builder.RegisterService(&workers);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  if (!server || port == 0) return die(absl::StrCat("--listen: cannot serve on '", absl::GetFlag(FLAGS_listen), "'"));
  c960::cluster::log_info(absl::StrCat("serving on port ", port, ", db ", absl::GetFlag(FLAGS_db), ", leases ", lease_s,
                                       " s, version ", c960::cluster::kVersion));
  if (const std::string pf = absl::GetFlag(FLAGS_port_file); !pf.empty()) {
    // Write then rename, so a reader never sees a half-written port.
    const std::string tmp = pf + ".tmp";
    std::ofstream(tmp) << port << "\n";
    if (std::rename(tmp.c_str(), pf.c_str()) != 0) return die(absl::StrCat("--port-file: cannot write '", pf, "'"));
  }

  std::mutex mu;
  std::condition_variable cv;
  bool stopping = false;
  std::thread sweeper([&] {
    std::unique_lock lock(mu);
    while (!cv.wait_for(lock, std::chrono::milliseconds(c960::cluster::kSweepIntervalMs), [&] { return stopping; }))
      coordinator.sweep();
  });

  int sig = 0;
  sigwait(&stop, &sig);
  c960::cluster::log_info(absl::StrCat("signal ", sig, ", shutting down"));
  coordinator.shutdown();
  server->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  {
    std::lock_guard lock(mu);
    stopping = true;
  }
  cv.notify_all();
  sweeper.join();
  return 0;
}
