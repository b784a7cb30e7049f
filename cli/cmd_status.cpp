// c960 status [JOB] [--format text|json]: one job in detail, or the most recent jobs in a table.
#include <chrono>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "status";

const CommandSpec kSpec = {
    kName, "c960 status [JOB] [--format text|json]",
    "Without JOB, the most recent jobs (newest first, at most 100): a header and a row per job with "
    "its id, kind (perft dN or selfplay), state, percentage done, units done/total, age since it "
    "was submitted and, once finished, how long it took. With JOB, that job in detail. --format "
    "json prints an array of objects (one object with JOB) with stable keys: numbers as numbers, "
    "node counts as strings, times in ISO-8601 UTC, null where a key does not apply.",
    with_cluster_options({{"format", Arity::kOne, "text|json", "output format (default text)"}}), 1};

int64_t unix_ms_now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

int cmd_status(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  const std::string format = p.get("format", "text");
  if (format != "text" && format != "json")
    return fail(io, kName, absl::StrCat("--format: '", format.substr(0, 64), "' is not text or json"));
  const bool json = format == "json";
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  if (!p.positional().empty()) {
    v1::Job job;
    if (absl::Status s = client.get_job(p.positional()[0], &job); !s.ok()) return rpc_fail(io, kName, client, s);
    io.out << (json ? job_json(job, unix_ms_now()) + "\n"
                    : job_description(job, unix_ms_now(), cluster::stdout_columns()));
    return kExitOk;
  }
  v1::ListJobsResponse resp;
  if (absl::Status s = client.list_jobs(&resp); !s.ok()) return rpc_fail(io, kName, client, s);
  const std::vector<v1::Job> jobs(resp.jobs().begin(), resp.jobs().end());
  if (json)
    io.out << jobs_json(jobs, unix_ms_now());
  else
    io.out << (jobs.empty() ? "no jobs\n" : status_table(jobs, unix_ms_now()));
  return kExitOk;
}

const CommandSpec& status_spec() { return kSpec; }

}  // namespace c960::cli
