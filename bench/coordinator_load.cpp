// Coordinator throughput: N simulated workers (default 200), each with its own connection,
// acquire one trivial unit at a time (perft 1 of a position 1 ply from a start position),
// compute it and complete it, against the real c960-coordinator binary with a file store.
// Reports units per second sustained, acquire/complete latency percentiles, and the
// coordinator's CPU time and memory. Not a test: the figures go in the notes.
//   build/release/bench/c960-bench-coordinator [--workers 200] [--seconds 20] [--tls] [--tokens]
// --tls serves and connects with TLS (a throwaway certificate made with `openssl`), --tokens adds
// bearer tokens (one per simulated worker, role worker; the feeder's role admin); compare the
// figures with and without to see what security costs.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

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

ABSL_FLAG(int32_t, workers, 200, "simulated workers, one connection and thread each");
ABSL_FLAG(int32_t, seconds, 20, "measured window, after a warm-up of 3 s");
ABSL_FLAG(std::string, coordinator_bin, std::string(c960::test::binary_dir()) + "/coordinator/c960-coordinator",
          "the daemon to load");
ABSL_FLAG(bool, tls, false, "TLS on every connection (a throwaway self-signed certificate)");
ABSL_FLAG(bool, tokens, false, "a bearer token on every call (needs --tls)");
ABSL_FLAG(std::string, verify, "adaptive",
          "the jobs' verification: off, adaptive (new workers' results wait for a second copy) or all");

namespace v1 = c960::v1;
using Clock = std::chrono::steady_clock;

namespace {

using c960::bench::cpu_seconds;
using c960::bench::slurp;
using c960::bench::status_field;

std::unique_ptr<grpc::ClientContext> ctx() {
  auto c = std::make_unique<grpc::ClientContext>();
  c->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(30));
  return c;
}

// What the clients need to connect: the certificate to trust and the tokens to send.
struct Security {
  std::string ca_pem;                      // empty: plaintext
  std::string admin_token;                 // empty: no tokens
  std::vector<std::string> worker_tokens;  // one per simulated worker
};

std::shared_ptr<grpc::Channel> channel(const std::string& address, const Security& sec, const std::string& token,
                                       const grpc::ChannelArguments& args) {
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!sec.ca_pem.empty()) {
    grpc::SslCredentialsOptions ssl;
    ssl.pem_root_certs = sec.ca_pem;
    creds = grpc::SslCredentials(ssl);
    if (!token.empty()) creds = grpc::CompositeChannelCredentials(creds, grpc::AccessTokenCredentials(token));
  }
  return grpc::CreateCustomChannel(address, creds, args);
}

// Makes the certificate and the tokens file in `dir`; adds the coordinator's flags to *argv.
bool make_security(const std::string& dir, int n_workers, Security* sec, std::vector<std::string>* argv) {
  if (!absl::GetFlag(FLAGS_tls)) return true;
  const std::string cmd = absl::StrCat(
      "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=127.0.0.1 "
      "-addext subjectAltName=IP:127.0.0.1 -keyout ",
      dir, "/key.pem -out ", dir, "/cert.pem 2>/dev/null");
  if (std::system(cmd.c_str()) != 0) return false;
  sec->ca_pem = slurp(dir + "/cert.pem");
  argv->push_back("--tls-cert=" + dir + "/cert.pem");
  argv->push_back("--tls-key=" + dir + "/key.pem");
  if (!absl::GetFlag(FLAGS_tokens)) return true;
  std::ofstream tokens(dir + "/tokens");
  sec->admin_token = *c960::cluster::new_token();
  tokens << "admin feeder " << c960::cluster::token_hash(sec->admin_token) << "\n";
  for (int w = 0; w < n_workers; ++w) {
    sec->worker_tokens.push_back(*c960::cluster::new_token());
    tokens << "worker sim-" << w << " " << c960::cluster::token_hash(sec->worker_tokens.back()) << "\n";
  }
  argv->push_back("--tokens=" + dir + "/tokens");
  return bool(tokens);
}

double percentile(std::vector<double>& v, double p) {
  if (v.empty()) return 0;
  const size_t k = std::min(v.size() - 1, size_t(p * double(v.size())));
  std::nth_element(v.begin(), v.begin() + long(k), v.end());
  return v[k];
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n_workers = absl::GetFlag(FLAGS_workers);
  const int seconds = absl::GetFlag(FLAGS_seconds);
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(), "/c960-bench-", getpid());
  std::filesystem::create_directories(dir);
  if (absl::GetFlag(FLAGS_tokens) && !absl::GetFlag(FLAGS_tls)) {
    std::fprintf(stderr, "--tokens needs --tls\n");
    return 2;
  }
  v1::VerifyMode verify = v1::VERIFY_MODE_UNSPECIFIED;
  if (!v1::VerifyMode_Parse(absl::StrCat("VERIFY_MODE_", absl::AsciiStrToUpper(absl::GetFlag(FLAGS_verify))),
                            &verify) ||
      verify == v1::VERIFY_MODE_UNSPECIFIED) {
    std::fprintf(stderr, "--verify: '%s' is not off, adaptive or all\n", absl::GetFlag(FLAGS_verify).c_str());
    return 2;
  }
  std::vector<std::string> daemon = {absl::GetFlag(FLAGS_coordinator_bin), "--listen=127.0.0.1:0",
                                     "--port-file=" + dir + "/port", "--db=" + dir + "/c.db", "--lease-seconds=120"};
  Security sec;
  if (!make_security(dir, n_workers, &sec, &daemon)) {
    std::fprintf(stderr, "cannot make the certificate or the tokens in %s (is openssl installed?)\n", dir.c_str());
    return 1;
  }
  c960::test::Process coordinator(daemon, dir + "/coordinator.log");
  const int port = c960::bench::wait_for_port_file(dir + "/port");
  if (port == 0) {
    std::fprintf(stderr, "coordinator did not start; see %s/coordinator.log\n", dir.c_str());
    return 1;
  }
  const std::string address = absl::StrCat("127.0.0.1:", port);
  auto jobs = v1::JobService::NewStub(channel(address, sec, sec.admin_token, grpc::ChannelArguments()));

  // Keeps enough units queued: each job is perft 2 of all 960 split at ply 1 (~19,000 units
  // of perft 1 each).
  std::atomic<bool> stop{false};
  std::thread feeder([&] {
    while (!stop) {
      v1::ListJobsResponse list;
      int64_t queued = 0;
      if (jobs->ListJobs(ctx().get(), v1::ListJobsRequest(), &list).ok())
        for (const v1::Job& j : list.jobs())
          if (j.state() == v1::JOB_STATE_RUNNING)
            queued += j.progress().units_total() - j.progress().units_done() - j.progress().units_leased();
      if (queued < 30'000) {
        v1::SubmitJobRequest req;
        req.mutable_spec()->mutable_perft()->set_depth(2);
        req.mutable_spec()->mutable_perft()->set_split_depth(1);
        req.mutable_spec()->set_verify(verify);
        v1::Job job;
        grpc::Status s = jobs->SubmitJob(ctx().get(), req, &job);
        if (!s.ok()) std::fprintf(stderr, "submit: %s\n", s.error_message().c_str());
        continue;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });

  std::atomic<bool> measuring{false};
  // Results the coordinator took (accepted, or stored until a second worker agrees), other
  // outcomes (duplicates, mismatches: a copy that lost a race), and failed calls.
  std::atomic<int64_t> completed{0}, pending{0}, other_outcomes{0}, empty_acquires{0}, errors{0};
  std::mutex mu;
  std::vector<double> acquire_ms, complete_ms;
  std::vector<std::thread> threads;
  for (int w = 0; w < n_workers; ++w) {
    threads.emplace_back([&, w] {
      grpc::ChannelArguments args;
      args.SetInt(GRPC_ARG_USE_LOCAL_SUBCHANNEL_POOL, 1);  // a connection of its own, like a real worker
      auto stub = v1::WorkerService::NewStub(
          channel(address, sec, sec.worker_tokens.empty() ? "" : sec.worker_tokens[size_t(w)], args));
      v1::HelloRequest hello;
      hello.set_name(absl::StrCat("sim-", w));
      hello.set_threads(1);
      hello.add_capabilities("perft");
      hello.set_protocol_version(c960::cluster::kProtocolVersion);  // refused without it
      v1::HelloResponse hr;
      if (!stub->Hello(ctx().get(), hello, &hr).ok()) {
        ++errors;
        return;
      }
      std::vector<double> acq, comp;
      while (!stop) {
        v1::AcquireWorkRequest areq;
        areq.set_worker_id(hr.worker_id());
        areq.set_max_units(1);
        v1::AcquireWorkResponse aresp;
        auto t0 = Clock::now();
        grpc::Status s = stub->AcquireWork(ctx().get(), areq, &aresp);
        auto t1 = Clock::now();
        if (!s.ok()) {
          ++errors;
          continue;
        }
        if (measuring) acq.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
        if (aresp.leases_size() == 0) {
          ++empty_acquires;
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
          continue;
        }
        const v1::Lease& l = aresp.leases(0);
        v1::CompleteUnitRequest creq;
        creq.set_worker_id(hr.worker_id());
        creq.set_unit_id(l.unit_id());
        creq.set_attempt(l.attempt());
        *creq.mutable_result() = *c960::cluster::compute_unit(l.spec(), nullptr);
        v1::CompleteUnitResponse cresp;
        t0 = Clock::now();
        s = stub->CompleteUnit(ctx().get(), creq, &cresp);
        t1 = Clock::now();
        if (!s.ok()) {
          ++errors;
          continue;
        }
        const bool taken = cresp.outcome() == v1::COMPLETION_OUTCOME_ACCEPTED ||
                           cresp.outcome() == v1::COMPLETION_OUTCOME_PENDING_VERIFICATION;
        if (measuring) {
          comp.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
          if (taken) ++completed;
          if (cresp.outcome() == v1::COMPLETION_OUTCOME_PENDING_VERIFICATION) ++pending;
          if (!taken) ++other_outcomes;
        }
      }
      std::lock_guard lock(mu);
      acquire_ms.insert(acquire_ms.end(), acq.begin(), acq.end());
      complete_ms.insert(complete_ms.end(), comp.begin(), comp.end());
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(3));  // connections up, first job planned
  const double cpu0 = cpu_seconds(coordinator.pid());
  const auto t0 = Clock::now();
  measuring = true;
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  measuring = false;
  const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
  const double cpu = cpu_seconds(coordinator.pid()) - cpu0;
  const int64_t done = completed;
  const std::string rss = status_field(coordinator.pid(), "VmRSS"), hwm = status_field(coordinator.pid(), "VmHWM");
  stop = true;
  for (std::thread& t : threads) t.join();
  feeder.join();

  std::printf("coordinator load: %d simulated workers, %.1f s measured, %u CPUs on this machine, %s\n", n_workers, wall,
              std::thread::hardware_concurrency(),
              sec.ca_pem.empty()        ? "plaintext"
              : sec.admin_token.empty() ? "TLS"
                                        : "TLS + tokens");
  std::printf("  results taken     %lld  (%.0f/s; %lld of them waiting for a second worker's copy, verify %s)\n",
              static_cast<long long>(done), double(done) / wall, static_cast<long long>(pending.load()),
              absl::GetFlag(FLAGS_verify).c_str());
  std::printf("  other outcomes    %lld  (duplicates, mismatches); %lld empty acquires, %lld failed calls\n",
              static_cast<long long>(other_outcomes.load()), static_cast<long long>(empty_acquires.load()),
              static_cast<long long>(errors.load()));
  std::printf("  AcquireWork ms    p50 %.2f  p99 %.2f  max %.2f\n", percentile(acquire_ms, 0.5),
              percentile(acquire_ms, 0.99), percentile(acquire_ms, 1.0));
  std::printf("  CompleteUnit ms   p50 %.2f  p99 %.2f  max %.2f\n", percentile(complete_ms, 0.5),
              percentile(complete_ms, 0.99), percentile(complete_ms, 1.0));
  std::printf("  coordinator CPU   %.1f s in %.1f s (%.0f%% of one core); RSS %s, peak %s\n", cpu, wall,
              100 * cpu / wall, rss.c_str(), hwm.c_str());
  coordinator.kill_now();
  std::filesystem::remove_all(dir);
  return 0;
}
