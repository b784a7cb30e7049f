// c960 token new --role R --name N: a new bearer token for a coordinator's --tokens file.
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cluster/auth.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "token";

const CommandSpec kSpec = {
    kName,
    "c960 token new --role admin|submit|read|worker|enroll --name NAME [--uses N] [--owner OWNER]",
    "Makes a new token: prints the token on the first line and, on the second, the line to add to the "
    "coordinator's --tokens file (ROLE NAME sha256:HASH; the file holds only the hash). Give the token to "
    "its holder (c960 --token-file FILE, c960-worker --token-file FILE, or C960_TOKEN) and keep it secret; "
    "send the coordinator SIGHUP to load the new line. Roles: admin (everything), submit (submit, and read "
    "and cancel its own jobs), read (jobs, results and workers), worker (the worker service, one token per "
    "worker: each credential is one voter when results are verified), enroll (a join token that workers "
    "trade, once each, for a worker credential of their own: c960-worker --enroll-token-file; --uses N "
    "bounds how many, default 1). NAME: 1..64 "
    "characters of A-Z a-z 0-9 . _ -, unique in the file; it names the holder in the coordinator's logs and "
    "a worker's identity.",
    {{"role", Arity::kOne, "admin|submit|read|worker|enroll", "the role the token gives its holder"},
     {"name", Arity::kOne, "NAME", "the token holder's name"},
     {"uses", Arity::kOne, "N", "enroll: the worker credentials the join token may be traded for (default 1)"},
     {"owner", Arity::kOne, "OWNER",
      "worker, enroll: the person or organisation behind the credential (default: NAME); all credentials of one "
      "owner, and those traded for its join tokens, are one voter"}},
    1,
    {"new"}};

}  // namespace

int cmd_token(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1 || p.positional()[0] != "new") return fail(io, kName, "give the action: new");
  if (!p.has("role")) return fail(io, kName, "--role: give admin, submit, read, worker or enroll");
  if (!p.has("name")) return fail(io, kName, "--name: give the token holder's name");
  const std::optional<cluster::Role> role = cluster::parse_role(p.get("role"));
  if (!role)
    return fail(io, kName, absl::StrCat("--role: '", p.get("role"), "' is not admin, submit, read, worker or enroll"));
  int32_t uses = 1;
  if (p.has("uses")) {
    if (*role != cluster::Role::kEnroll) return fail(io, kName, "--uses: only for --role enroll");
    if (!absl::SimpleAtoi(p.get("uses"), &uses) || uses < 1 || uses > cluster::kMaxEnrollUses)
      return fail(io, kName, absl::StrCat("--uses: '", p.get("uses"), "' is not in 1..", cluster::kMaxEnrollUses));
  }
  if (!cluster::valid_caller_name(p.get("name")))
    return fail(io, kName, absl::StrCat("--name: '", p.get("name"), "' is not 1..64 characters of A-Z a-z 0-9 . _ -"));
  if (p.has("owner")) {
    if (*role != cluster::Role::kWorker && *role != cluster::Role::kEnroll)
      return fail(io, kName, "--owner: only for --role worker or enroll");
    if (!cluster::valid_caller_name(p.get("owner")))
      return fail(io, kName,
                  absl::StrCat("--owner: '", p.get("owner"), "' is not 1..64 characters of A-Z a-z 0-9 . _ -"));
  }
  absl::StatusOr<std::string> token = cluster::new_token();
  if (!token.ok()) return fail(io, kName, token.status(), kExitCheckFailed);
  io.out << *token << "\n"
         << cluster::role_name(*role) << " " << p.get("name") << " " << cluster::token_hash(*token)
         << (*role == cluster::Role::kEnroll ? absl::StrCat(" uses=", uses) : "")
         << (p.has("owner") ? absl::StrCat(" owner=", p.get("owner")) : "") << "\n";
  return kExitOk;
}

const CommandSpec& token_spec() { return kSpec; }

}  // namespace c960::cli
