// c960 watch JOB: the job's progress until it ends; exit 0 when it succeeds, 1 when it fails or
// is cancelled.
#include <chrono>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "watch";
// Without a terminal, a new line at most this often (and only when units were done).
constexpr auto kLineInterval = std::chrono::seconds(2);
// Self-play: the leaders come from a second call, at most this often.
constexpr auto kLeadersInterval = std::chrono::seconds(2);

const CommandSpec kSpec = {kName, "c960 watch JOB",
                           "Shows the job's progress (units, nodes or games, rate, ETA, workers) until it ends; for a "
                           "self-play job also the positions leading and trailing so far (White's score). Exits 0 when "
                           "it succeeds, 1 when it fails or is cancelled. Rides out coordinator restarts.",
                           with_cluster_options({}), 1};

}  // namespace

int cmd_watch(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1) return fail(io, kName, "give the job id");
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  const bool tty = io.out_is_tty;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  int64_t last_done = -1;
  std::string leaders;
  auto leaders_at = std::chrono::steady_clock::now() - std::chrono::hours(1);
  const auto line = [&](const v1::Job& job, bool final) {
    if (!job.spec().has_selfplay()) return progress_line(job);
    const auto now = std::chrono::steady_clock::now();
    if (final || now - leaders_at > kLeadersInterval) {
      std::vector<v1::ResultChunk> chunks;
      if (client.results(job.id(), false, true, &chunks).ok()) leaders = leaders_line(chunks);
      leaders_at = now;
    }
    return absl::StrCat(progress_line(job), "; ", leaders);
  };
  const auto show = [&](const v1::Job& job) {
    const auto now = std::chrono::steady_clock::now();
    const bool final = job.state() != v1::JOB_STATE_RUNNING;
    if (tty) {
      io.out << "\r" << line(job, final) << "   " << std::flush;
    } else if (final || (job.progress().units_done() != last_done && now - last_print > kLineInterval)) {
      io.out << line(job, final) << std::endl;
      last_print = now;
      last_done = job.progress().units_done();
    }
  };
  v1::Job job;
  const absl::Status s = client.watch(p.positional()[0], show, &job);
  if (tty) io.out << "\n";
  if (!s.ok()) return rpc_fail(io, kName, client, s);
  if (job.result_mismatches() > 0)
    io.out << "RESULT MISMATCHES: " << job.result_mismatches() << "; first: " << job.mismatch_detail() << "\n";
  if (job.state() == v1::JOB_STATE_FAILED) io.out << "FAILED: " << job.failure_detail() << "\n";
  return job.state() == v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitCheckFailed;
}

}  // namespace c960::cli
