// c960 admin backup: the coordinator's housekeeping (AdminService, admin role only).
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "admin";

const CommandSpec kSpec = {
    kName,
    "c960 admin backup",
    "The coordinator's housekeeping; needs a token of role admin. backup: the coordinator makes a consistent copy "
    "of its store now, while it serves (SQLite's online backup), in its --backup-dir, keeping the newest "
    "--backup-keep; prints the copy's path on the coordinator's machine, its size and how long it took. To "
    "restore a copy, stop the coordinator and copy it over its --db (removing the -wal and -shm files beside "
    "--db).",
    with_cluster_options({}),
    1,
    {"backup"}};

}  // namespace

int cmd_admin(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1 || p.positional()[0] != "backup")
    return fail(io, kName, "give the action: backup", kExitUsage);
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  v1::BackupStoreResponse resp;
  if (absl::Status s = client.backup_store(&resp); !s.ok()) return rpc_fail(io, kName, client, s);
  io.out << resp.path() << "\n" << absl::StrFormat("%d bytes in %.2f s", resp.bytes(), resp.seconds());
  if (resp.removed_size() > 0) io.out << absl::StrCat(", ", resp.removed_size(), " older removed");
  io.out << "\n";
  return kExitOk;
}

const CommandSpec& admin_spec() { return kSpec; }

}  // namespace c960::cli
