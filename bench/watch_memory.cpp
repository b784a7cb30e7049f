// What watches cost the coordinator: a self-play job with many explicit positions (a spec of
// megabytes), then N watchers (c960 watch) of it, each reading every update; the coordinator's
// resident memory (VmRSS) and its peak (VmHWM) before and with them, against the real
// c960-coordinator binary. Not a test: the figures go in the notes.
//   build/release/bench/c960-bench-watch-memory [--watchers 64] [--positions 10000]
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "bench/proc_stats.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/config.h"
#include "tests/process.h"
#include "tests/test_paths.h"

ABSL_FLAG(int32_t, watchers, 64, "watch streams, one thread each");
ABSL_FLAG(int32_t, positions, 10000, "explicit positions of the job (each about 130 bytes of spec)");
ABSL_FLAG(std::string, coordinator_bin, std::string(c960::test::binary_dir()) + "/coordinator/c960-coordinator",
          "the daemon to measure");

namespace v1 = c960::v1;

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n_watchers = absl::GetFlag(FLAGS_watchers), n_positions = absl::GetFlag(FLAGS_positions);
  const std::string dir = absl::StrCat(std::filesystem::temp_directory_path().string(), "/c960-watch-mem-", getpid());
  std::filesystem::create_directories(dir);
  c960::test::Process coordinator({absl::GetFlag(FLAGS_coordinator_bin), "--listen=127.0.0.1:0",
                                   "--port-file=" + dir + "/port", "--db=" + dir + "/c.db"},
                                  dir + "/coordinator.log");
  const int port = c960::bench::wait_for_port_file(dir + "/port");
  if (port == 0) {
    std::fprintf(stderr, "coordinator did not start; see %s/coordinator.log\n", dir.c_str());
    return 1;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(c960::cluster::kMaxMessageBytes);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  auto jobs = v1::JobService::NewStub(grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args));

  v1::SubmitJobRequest req;
  v1::SelfPlayJobSpec* sp = req.mutable_spec()->mutable_selfplay();
  sp->set_engine("builtin");
  sp->set_nodes(1000);
  sp->set_games_per_position(1);
  for (int i = 0; i < n_positions; ++i) {
    v1::SelfPlayPosition* p = sp->add_positions();
    // Ids of 64 characters (the most allowed), the start position's FEN with its move number.
    p->set_id(absl::StrCat(std::string(56, 'p'), 10'000'000 + i));
    p->set_fen(absl::StrCat("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 ", i + 1));
  }
  v1::Job job;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(120));
    const grpc::Status s = jobs->SubmitJob(&ctx, req, &job);
    if (!s.ok()) {
      std::fprintf(stderr, "SubmitJob: %s\n", s.error_message().c_str());
      return 1;
    }
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const pid_t pid = coordinator.pid();
  const int64_t before = c960::bench::rss_bytes(pid);

  std::atomic<int> first_messages{0};
  std::atomic<int64_t> first_bytes{0};
  std::atomic<bool> stop{false};
  std::vector<std::unique_ptr<grpc::ClientContext>> contexts;
  for (int i = 0; i < n_watchers; ++i) contexts.push_back(std::make_unique<grpc::ClientContext>());
  std::vector<std::thread> threads;
  for (int i = 0; i < n_watchers; ++i)
    threads.emplace_back([&, i] {
      v1::WatchJobRequest w;
      w.set_job_id(job.id());
      std::unique_ptr<grpc::ClientReader<v1::Job>> reader = jobs->WatchJob(contexts[size_t(i)].get(), w);
      v1::Job update;
      for (bool first = true; reader->Read(&update); first = false)
        if (first) {
          first_bytes += int64_t(update.ByteSizeLong());
          ++first_messages;
        }
      reader->Finish().IgnoreError();
    });
  while (first_messages < n_watchers) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  std::this_thread::sleep_for(std::chrono::seconds(3));
  const int64_t with = c960::bench::rss_bytes(pid);
  const std::string hwm = c960::bench::status_field(pid, "VmHWM");
  std::printf(
      "spec %zu bytes (%d positions); %d watchers, first messages %lld bytes each: coordinator RSS %.1f MiB -> "
      "%.1f MiB (%+.2f MiB per watcher), peak %s\n",
      req.spec().ByteSizeLong(), n_positions, n_watchers, static_cast<long long>(first_bytes / n_watchers),
      double(before) / (1 << 20), double(with) / (1 << 20), double(with - before) / (1 << 20) / n_watchers,
      hwm.c_str());
  stop = true;
  for (auto& c : contexts) c->TryCancel();
  for (std::thread& t : threads) t.join();
  std::filesystem::remove_all(dir);
  return 0;
}
