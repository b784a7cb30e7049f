// A fleet of simulated workers against one coordinator: N workers (default 10,000), each with
// its own connection (TLS) and token, driven from one process by gRPC's asynchronous client API
// (a completion queue per client thread, no thread per worker). Each worker says Hello, then
// loops: AcquireWork (long poll, up to --batch units), holds its units for --unit-ms (the time a
// real worker computes), and delivers them in one CompleteUnits call. Units are perft 1 of a
// position 2 plies from a start position, so that the coordinator does the work of a real
// completion (check, store, settle) and the client almost none.
//
// Reports sustained completions per second, p50/p99/max of every RPC (AcquireWork split into
// calls that got units and calls that waited and got none), the coordinator's CPU and RSS, and
// the client's own CPU (it shares the machine). Not a test: the figures go in the notes.
//   build/release/bench/c960-bench-fleet [--workers 10000] [--unit_ms 2000] [--batch 1]
//                                        [--seconds 30] [--client_threads 2] [--plaintext]
//                                        [--db postgresql://...]
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <sys/resource.h>
#include <thread>
#include <vector>

#include <grpcpp/alarm.h>
#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/proc_stats.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/auth.h"
#include "cluster/config.h"
#include "tests/process.h"
#include "tests/test_paths.h"
#include "worker/compute.h"

ABSL_FLAG(int32_t, workers, 10'000, "simulated workers, one connection each");
ABSL_FLAG(int32_t, unit_ms, 2'000, "how long a worker holds its units before completing them");
ABSL_FLAG(int32_t, batch, 1, "units per AcquireWork and per CompleteUnits call (a worker's threads)");
ABSL_FLAG(int32_t, seconds, 30, "measured window, after every worker said Hello and a warm-up");
ABSL_FLAG(int32_t, client_threads, 2, "client threads, one completion queue each");
ABSL_FLAG(int32_t, ramp, 200, "workers connecting at once while the fleet comes up");
ABSL_FLAG(bool, plaintext, false, "no TLS and no tokens (to see what security costs)");
ABSL_FLAG(std::string, db, "",
          "the coordinator's --db: an empty PostgreSQL database's postgresql:// URL; default an SQLite file in a "
          "scratch directory");
ABSL_FLAG(std::string, coordinator_bin, std::string(c960::test::binary_dir()) + "/coordinator/c960-coordinator",
          "the daemon to load");

namespace v1 = c960::v1;
using Clock = std::chrono::steady_clock;

namespace {

using c960::bench::cpu_seconds;
using c960::bench::slurp;
using c960::bench::status_field;

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, size_t(p * double(v.size())));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

enum Kind { kHello, kAcquireGot, kAcquireEmpty, kComplete, kKinds };
constexpr const char* kKindNames[kKinds] = {"Hello", "AcquireWork (units)", "AcquireWork (waited, none)",
                                            "CompleteUnits"};

// Per client thread: touched by that thread only, merged at the end.
struct Stats {
  std::vector<double> ms[kKinds];
  int64_t completed = 0;  // units accepted while measuring
  int64_t errors = 0;
  std::string first_error, last_error;
};

std::atomic<bool> g_measuring{false}, g_stop{false};
std::atomic<int> g_helloed{0}, g_active{0}, g_failed{0};

class Sim;

// A completion-queue tag: an RPC or an alarm of one simulated worker.
struct Tag {
  virtual ~Tag() = default;
  virtual void done(bool ok) = 0;
};

class Sim {
 public:
  Sim(int id, std::shared_ptr<grpc::Channel> ch, grpc::CompletionQueue* cq, Stats* stats, int batch, int unit_ms)
      : id_(id), stub_(v1::WorkerService::NewStub(ch)), cq_(cq), stats_(stats), batch_(batch), unit_ms_(unit_ms) {}

  void start() {
    ++g_active;
    v1::HelloRequest req;
    req.set_name(absl::StrCat("sim-", id_));
    req.set_version("bench");
    req.set_threads(batch_);
    req.add_capabilities("perft");
    req.set_protocol_version(c960::cluster::kProtocolVersion);
    call<v1::HelloResponse>(
        kHello, 30'000,
        [&](grpc::ClientContext* c, grpc::CompletionQueue* q) { return stub_->PrepareAsyncHello(c, req, q); },
        [this](const grpc::Status& s, v1::HelloResponse& r) {
          if (!s.ok()) return fail(s, "hello");
          worker_id_ = r.worker_id();
          ++g_helloed;
          acquire();
        });
  }

 private:
  template <typename Resp>
  struct Rpc final : Tag {
    grpc::ClientContext ctx;
    Resp resp;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<Resp>> reader;
    Clock::time_point t0;
    std::function<void(const grpc::Status&, Resp&, double)> then;
    void done(bool) override {
      then(status, resp, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      delete this;
    }
  };
  struct Wait final : Tag {
    grpc::Alarm alarm;
    std::function<void()> then;
    void done(bool) override {
      then();
      delete this;
    }
  };

  template <typename Resp, typename Prepare, typename Then>
  void call(Kind kind, int64_t deadline_ms, Prepare prepare, Then then) {
    auto* rpc = new Rpc<Resp>;
    rpc->ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(deadline_ms));
    rpc->t0 = Clock::now();
    rpc->then = [this, kind, then](const grpc::Status& s, Resp& r, double ms) {
      Kind k = kind;
      if constexpr (std::is_same_v<Resp, v1::AcquireWorkResponse>)
        if (s.ok() && r.leases_size() == 0) k = kAcquireEmpty;
      if ((g_measuring || k == kHello) && s.ok()) stats_->ms[k].push_back(ms);
      then(s, r);
    };
    rpc->reader = prepare(&rpc->ctx, cq_);
    rpc->reader->StartCall();
    rpc->reader->Finish(&rpc->resp, &rpc->status, rpc);
  }

  void fail(const grpc::Status& s, const char* what) {
    if (!g_stop) {
      ++stats_->errors;
      if (stats_->first_error.empty()) stats_->first_error = absl::StrCat(what, ": ", s.error_message());
      stats_->last_error = absl::StrCat(what, ": ", s.error_message());
    }
    --g_active;  // this worker stops
    ++g_failed;
  }

  void acquire() {
    if (g_stop) {
      --g_active;
      return;
    }
    v1::AcquireWorkRequest req;
    req.set_worker_id(worker_id_);
    req.set_max_units(batch_);
    req.set_wait_seconds(c960::cluster::kWorkerAcquireWaitSeconds);
    call<v1::AcquireWorkResponse>(
        kAcquireGot, c960::cluster::kWorkerAcquireWaitSeconds * 1000 + c960::cluster::kRpcDeadlineMs,
        [&](grpc::ClientContext* c, grpc::CompletionQueue* q) { return stub_->PrepareAsyncAcquireWork(c, req, q); },
        [this](const grpc::Status& s, v1::AcquireWorkResponse& r) {
          if (!s.ok()) return fail(s, "acquire");
          if (r.leases_size() == 0) return acquire();
          // "Compute" for unit_ms, then complete them all at once.
          auto batch = std::make_shared<v1::CompleteUnitsRequest>();
          batch->set_worker_id(worker_id_);
          for (const v1::Lease& l : r.leases()) {
            v1::CompleteUnitRequest* c = batch->add_completions();
            c->set_unit_id(l.unit_id());
            c->set_attempt(l.attempt());
            *c->mutable_result() = *c960::cluster::compute_unit(l.spec(), nullptr);
          }
          auto* w = new Wait;
          w->then = [this, batch] { complete(*batch); };
          w->alarm.Set(cq_, std::chrono::system_clock::now() + std::chrono::milliseconds(unit_ms_), w);
        });
  }

  void complete(const v1::CompleteUnitsRequest& req) {
    call<v1::CompleteUnitsResponse>(
        kComplete, c960::cluster::kRpcDeadlineMs,
        [&](grpc::ClientContext* c, grpc::CompletionQueue* q) { return stub_->PrepareAsyncCompleteUnits(c, req, q); },
        [this](const grpc::Status& s, v1::CompleteUnitsResponse& r) {
          if (!s.ok()) return fail(s, "complete");
          for (const v1::CompletionStatus& st : r.statuses())
            if (st.code() == 0 && st.outcome() == v1::COMPLETION_OUTCOME_ACCEPTED) {
              if (g_measuring) ++stats_->completed;
            } else if (!g_stop) {
              ++stats_->errors;
              stats_->last_error = absl::StrCat("completion: code ", st.code(), " ", st.message(), " outcome ",
                                                v1::CompletionOutcome_Name(st.outcome()));
            }
          acquire();
        });
  }

  int id_;
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  grpc::CompletionQueue* cq_;
  Stats* stats_;
  int batch_, unit_ms_;
  std::string worker_id_;
};

std::shared_ptr<grpc::ChannelCredentials> credentials(const std::string& ca_pem, const std::string& token) {
  if (ca_pem.empty()) return grpc::InsecureChannelCredentials();
  grpc::SslCredentialsOptions ssl;
  ssl.pem_root_certs = ca_pem;
  return grpc::CompositeChannelCredentials(grpc::SslCredentials(ssl), grpc::AccessTokenCredentials(token));
}

double self_cpu_seconds() {
  rusage ru{};
  getrusage(RUSAGE_SELF, &ru);
  return double(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) + double(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n = absl::GetFlag(FLAGS_workers), batch = absl::GetFlag(FLAGS_batch);
  const int unit_ms = absl::GetFlag(FLAGS_unit_ms), seconds = absl::GetFlag(FLAGS_seconds);
  const int threads = std::max(1, absl::GetFlag(FLAGS_client_threads));
  const bool secure = !absl::GetFlag(FLAGS_plaintext);
  if (n < 1 || batch < 1 || batch > c960::cluster::kMaxCompletionsPerCall || unit_ms < 0 || seconds < 1) {
    std::fprintf(stderr, "c960-bench-fleet: --workers, --batch (1..%d), --unit-ms, --seconds out of range\n",
                 c960::cluster::kMaxCompletionsPerCall);
    return 2;
  }
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(), "/c960-fleet-", getpid());
  std::filesystem::create_directories(dir);
  std::vector<std::string> daemon = {
      absl::GetFlag(FLAGS_coordinator_bin), "--listen=127.0.0.1:0", "--port-file=" + dir + "/port",
      "--db=" + (absl::GetFlag(FLAGS_db).empty() ? dir + "/c.db" : absl::GetFlag(FLAGS_db)), "--lease-seconds=120"};
  std::string ca_pem, admin_token;
  std::vector<std::string> tokens;
  if (secure) {
    const std::string cmd = absl::StrCat(
        "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
        "-addext subjectAltName=IP:127.0.0.1 -keyout ",
        dir, "/key.pem -out ", dir, "/cert.pem 2>/dev/null");
    if (std::system(cmd.c_str()) != 0) {
      std::fprintf(stderr, "c960-bench-fleet: openssl could not make a certificate in %s\n", dir.c_str());
      return 1;
    }
    ca_pem = slurp(dir + "/cert.pem");
    std::ofstream file(dir + "/tokens");
    admin_token = *c960::cluster::new_token();
    file << "admin feeder " << c960::cluster::token_hash(admin_token) << "\n";
    for (int w = 0; w < n; ++w) {
      tokens.push_back(*c960::cluster::new_token());
      file << "worker sim-" << w << " " << c960::cluster::token_hash(tokens.back()) << "\n";
    }
    daemon.insert(daemon.end(),
                  {"--tls-cert=" + dir + "/cert.pem", "--tls-key=" + dir + "/key.pem", "--tokens=" + dir + "/tokens"});
  }
  c960::test::Process coordinator(daemon, dir + "/coordinator.log");
  const int port = c960::bench::wait_for_port_file(dir + "/port");
  if (port == 0) {
    std::fprintf(stderr, "c960-bench-fleet: the coordinator did not start; see %s/coordinator.log\n", dir.c_str());
    return 1;
  }
  const std::string address = absl::StrCat("127.0.0.1:", port);

  // Keeps units queued: perft 3 of 40 start positions split at ply 2 (about 16,000 units of
  // perft 1 each) per job, submitted while fewer than --workers x --batch x 3 wait.
  auto jobs = v1::JobService::NewStub(
      grpc::CreateChannel(address, secure ? credentials(ca_pem, admin_token) : grpc::InsecureChannelCredentials()));
  std::thread feeder([&] {
    int next = 0;
    while (!g_stop) {
      v1::ListJobsResponse list;
      int64_t queued = 0;
      grpc::ClientContext lc;
      lc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
      if (jobs->ListJobs(&lc, v1::ListJobsRequest(), &list).ok())
        for (const v1::Job& j : list.jobs())
          if (j.state() == v1::JOB_STATE_RUNNING)
            queued += j.progress().units_total() - j.progress().units_done() - j.progress().units_leased();
      if (queued < int64_t(n) * batch * 3) {
        v1::SubmitJobRequest req;
        req.mutable_spec()->mutable_perft()->set_depth(3);
        req.mutable_spec()->mutable_perft()->set_split_depth(2);
        req.mutable_spec()->mutable_perft()->set_start_positions(absl::StrCat(next % 920, "-", next % 920 + 39));
        req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
        next += 40;
        grpc::ClientContext sc;
        sc.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
        v1::Job job;
        if (grpc::Status s = jobs->SubmitJob(&sc, req, &job); !s.ok())
          std::fprintf(stderr, "submit: %s\n", s.error_message().c_str());
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  std::vector<std::unique_ptr<grpc::CompletionQueue>> cqs;
  std::vector<Stats> stats(static_cast<size_t>(threads));
  for (int t = 0; t < threads; ++t) cqs.push_back(std::make_unique<grpc::CompletionQueue>());
  std::vector<std::unique_ptr<Sim>> sims;
  const auto t_start = Clock::now();
  for (int w = 0; w < n; ++w) {
    grpc::ChannelArguments args;
    args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, like a real worker
    args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, int(c960::cluster::kClientKeepaliveTimeMs));
    auto ch = grpc::CreateCustomChannel(
        address, secure ? credentials(ca_pem, tokens[size_t(w)]) : grpc::InsecureChannelCredentials(), args);
    sims.push_back(
        std::make_unique<Sim>(w, ch, cqs[size_t(w % threads)].get(), &stats[size_t(w % threads)], batch, unit_ms));
  }
  std::vector<std::thread> loops;
  for (int t = 0; t < threads; ++t)
    loops.emplace_back([cq = cqs[size_t(t)].get()] {
      void* tag;
      bool ok;
      while (cq->Next(&tag, &ok)) static_cast<Tag*>(tag)->done(ok);
    });
  // A fleet comes up over time, not in one instant: at most --ramp Hellos (TLS handshakes) in
  // flight at once.
  for (size_t k = 0; k < sims.size(); ++k) {
    while (int(k) - g_helloed - g_failed >= absl::GetFlag(FLAGS_ramp))
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    sims[k]->start();
  }
  // Every worker connected and registered (TLS handshakes take a while), then a warm-up.
  while (g_helloed + g_failed < n && Clock::now() - t_start < std::chrono::seconds(300))
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  const double connect_s = std::chrono::duration<double>(Clock::now() - t_start).count();
  std::this_thread::sleep_for(std::chrono::milliseconds(3 * unit_ms + 2000));
  const double cpu0 = cpu_seconds(coordinator.pid()), self0 = self_cpu_seconds();
  const auto t0 = Clock::now();
  g_measuring = true;
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  g_measuring = false;
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds(coordinator.pid()) - cpu0, self = self_cpu_seconds() - self0;
  const std::string rss = status_field(coordinator.pid(), "VmRSS"), hwm = status_field(coordinator.pid(), "VmHWM");
  const std::string threads_now = status_field(coordinator.pid(), "Threads");
  const int held = g_active;
  g_stop = true;
  feeder.join();
  coordinator.kill_now();  // outstanding calls fail at once
  while (g_active > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::milliseconds(unit_ms + 200));  // pending alarms fire
  for (auto& cq : cqs) cq->Shutdown();
  for (std::thread& t : loops) t.join();

  Stats all;
  for (Stats& s : stats) {
    for (int k = 0; k < kKinds; ++k) all.ms[k].insert(all.ms[k].end(), s.ms[k].begin(), s.ms[k].end());
    all.completed += s.completed;
    all.errors += s.errors;
    if (!s.last_error.empty()) all.last_error = s.last_error;
    if (all.first_error.empty()) all.first_error = s.first_error;
  }
  std::printf(
      "fleet load: %d simulated workers (%d held to the end), %d units per call, units held %d ms, %s, "
      "%d client threads, %u CPUs on this machine\n",
      n, held, batch, unit_ms, secure ? "TLS + tokens" : "plaintext", threads, std::thread::hardware_concurrency());
  std::printf("  connected and registered in %.1f s; measured %.1f s\n", connect_s, wall);
  std::printf("  completions       %lld  (%.0f /s; %lld errors%s%s%s%s)\n", static_cast<long long>(all.completed),
              double(all.completed) / wall, static_cast<long long>(all.errors),
              all.first_error.empty() ? "" : ", first: ", all.first_error.c_str(),
              all.last_error.empty() ? "" : ", last: ", all.last_error.c_str());
  for (int k = 0; k < kKinds; ++k)
    std::printf("  %-27s n %-8zu p50 %7.2f ms  p99 %7.2f ms  max %8.2f ms\n", kKindNames[k], all.ms[k].size(),
                percentile(all.ms[k], 0.5), percentile(all.ms[k], 0.99), percentile(all.ms[k], 1.0));
  std::printf("  coordinator CPU   %.1f s in %.1f s (%.0f%% of one core); RSS %s, peak %s; %s threads\n", cpu, wall,
              100 * cpu / wall, rss.c_str(), hwm.c_str(), threads_now.c_str());
  std::printf("  client CPU        %.1f s (%.0f%% of one core)\n", self, 100 * self / wall);
  std::filesystem::remove_all(dir);
  return 0;
}
