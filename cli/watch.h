// Following a job until it ends, as `c960 watch` and `c960 submit --watch` do: a block of lines
// redrawn in place on a terminal (cli/job_format.h's watch_lines), plain throttled lines
// otherwise, and what the connection is doing while the coordinator is away.
#pragma once

#include <string>

#include "absl/strings/string_view.h"
#include "cli/client.h"
#include "cli/command.h"

namespace c960::cli {

// Shows job `id` until it ends. Exit code: 0 when it succeeds, 1 when it fails or is cancelled
// or the coordinator cannot be reached, 2 when the coordinator refuses the request (unknown
// job, token). Problems are reported as "c960 COMMAND: ...".
int follow_job(Client& client, const std::string& id, const Io& io, absl::string_view command);

}  // namespace c960::cli
