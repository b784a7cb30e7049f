// c960 cancel JOB.
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "cancel";

const CommandSpec kSpec = {kName, "c960 cancel JOB", "Cancels a job; a finished job stays as it is.",
                           with_cluster_options({}), 1};

}  // namespace

int cmd_cancel(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1) return fail(io, kName, "give the job id");
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  v1::Job job;
  if (absl::Status s = client.cancel(p.positional()[0], &job); !s.ok()) return rpc_fail(io, kName, client, s);
  io.out << "job " << job.id() << " " << state_name(job.state()) << "\n";
  return kExitOk;
}

const CommandSpec& cancel_spec() { return kSpec; }

}  // namespace c960::cli
