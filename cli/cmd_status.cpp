// c960 status [JOB]: one job in detail, or the most recent jobs a line each.
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "status";

const CommandSpec kSpec = {kName, "c960 status [JOB]",
                           "Shows one job in detail, or the most recent jobs with their progress.",
                           with_cluster_options({}), 1};

}  // namespace

int cmd_status(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  if (!p.positional().empty()) {
    v1::Job job;
    if (absl::Status s = client.get_job(p.positional()[0], &job); !s.ok()) return rpc_fail(io, kName, client, s);
    io.out << job_description(job);
    return kExitOk;
  }
  v1::ListJobsResponse resp;
  if (absl::Status s = client.list_jobs(&resp); !s.ok()) return rpc_fail(io, kName, client, s);
  if (resp.jobs_size() == 0) io.out << "no jobs\n";
  for (const v1::Job& j : resp.jobs()) io.out << progress_line(j) << "\n";
  return kExitOk;
}

}  // namespace c960::cli
