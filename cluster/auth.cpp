#include "cluster/auth.h"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <openssl/sha.h>
#include <sstream>
#include <sys/random.h>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace c960::cluster {
namespace {

constexpr Role kAllRoles[] = {Role::kAdmin, Role::kSubmit, Role::kRead, Role::kWorker, Role::kEnroll};
constexpr absl::string_view kHashPrefix = "sha256:";
constexpr size_t kMaxTokenLength = 4096;

constexpr uint32_t bit(Role r) { return 1u << unsigned(r); }

std::string sha256(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

// "sha256:<64 hex>" -> the 32 raw bytes, or nullopt.
std::optional<std::string> parse_hash(absl::string_view h) {
  if (!absl::ConsumePrefix(&h, kHashPrefix) || h.size() != 2 * SHA256_DIGEST_LENGTH) return std::nullopt;
  for (char c : h)
    if (!absl::ascii_isxdigit(static_cast<unsigned char>(c))) return std::nullopt;
  return absl::HexStringToBytes(h);
}

// Who may call what. A rule whose method ends in '/' covers every method of that service.
struct MethodRule {
  absl::string_view method;
  Permission permission;
};
constexpr Permission kOpen = {true, 0};
constexpr Permission kAnyRole = {false, bit(Role::kSubmit) | bit(Role::kRead) | bit(Role::kWorker)};
constexpr MethodRule kMethodRules[] = {
    // The coordinator restricts a submitter's reads and cancels to its own jobs.
    {"/c960.v1.JobService/SubmitJob", {false, bit(Role::kSubmit)}},
    {"/c960.v1.JobService/CancelJob", {false, bit(Role::kSubmit)}},
    {"/c960.v1.JobService/GetJob", {false, bit(Role::kSubmit) | bit(Role::kRead)}},
    {"/c960.v1.JobService/ListJobs", {false, bit(Role::kSubmit) | bit(Role::kRead)}},
    {"/c960.v1.JobService/WatchJob", {false, bit(Role::kSubmit) | bit(Role::kRead)}},
    {"/c960.v1.JobService/GetResults", {false, bit(Role::kSubmit) | bit(Role::kRead)}},
    {"/c960.v1.JobService/ListWorkers", {false, bit(Role::kRead)}},
    // A join token does one thing: trade itself for a worker's own credential.
    {"/c960.v1.WorkerService/Enroll", {false, bit(Role::kEnroll)}},
    {"/c960.v1.WorkerService/", {false, bit(Role::kWorker)}},
    // Backups and other housekeeping: the admin role only (no other role's bit).
    {"/c960.v1.AdminService/", {false, 0}},
    // Probes (load balancers, Kubernetes) carry no credentials.
    {"/grpc.health.v1.Health/", kOpen},
    // The schema is no secret, but it is nobody's business who has no token.
    {"/grpc.reflection.v1alpha.ServerReflection/", kAnyRole},
    {"/grpc.reflection.v1.ServerReflection/", kAnyRole},
};

}  // namespace

absl::string_view role_name(Role role) {
  switch (role) {
    case Role::kAdmin: return "admin";
    case Role::kSubmit: return "submit";
    case Role::kRead: return "read";
    case Role::kWorker: return "worker";
    case Role::kEnroll: return "enroll";
  }
  return "?";
}

std::optional<Role> parse_role(absl::string_view name) {
  for (Role r : kAllRoles)
    if (role_name(r) == name) return r;
  return std::nullopt;
}

bool valid_caller_name(absl::string_view name) {
  if (name.empty() || name.size() > kMaxCallerNameLength) return false;
  for (char c : name)
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') return false;
  return true;
}

absl::StatusOr<std::string> new_token() {
  unsigned char bytes[32];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(absl::StrCat("getrandom: ", std::strerror(errno)));
    got += size_t(n);
  }
  return absl::StrCat(kTokenPrefix, absl::WebSafeBase64Escape(absl::string_view(reinterpret_cast<char*>(bytes), 32)));
}

std::string token_hash(absl::string_view token) {
  return absl::StrCat(kHashPrefix, absl::BytesToHexString(sha256(token)));
}

bool valid_token_text(absl::string_view token) {
  if (token.empty() || token.size() > kMaxTokenLength) return false;
  for (char c : token)
    if (c <= ' ' || c > '~') return false;
  return true;
}

absl::StatusOr<TokenSet> TokenSet::parse(absl::string_view text, absl::string_view file) {
  TokenSet set;
  std::unordered_map<std::string, int> name_line, digest_line;
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    const auto error = [&](const std::string& problem) {
      return absl::InvalidArgumentError(absl::StrCat(file, ":", line_no, ": ", problem));
    };
    if (const size_t hash = line.find('#'); hash != absl::string_view::npos) line = line.substr(0, hash);
    std::vector<absl::string_view> fields = absl::StrSplit(line, absl::ByAnyChar(" \t\r"), absl::SkipEmpty());
    if (fields.empty()) continue;
    if (fields[0] == "revoke") {
      // revoke JOIN:K (one credential issued by Enroll) or revoke JOIN (every one issued for
      // the join token JOIN).
      if (fields.size() != 2) return error(absl::StrCat("expected 'revoke NAME', found ", fields.size(), " fields"));
      const std::vector<absl::string_view> parts = absl::StrSplit(fields[1], ':');
      int64_t k = 0;
      if (parts.size() > 2 || !valid_caller_name(parts[0]) ||
          (parts.size() == 2 && (!absl::SimpleAtoi(parts[1], &k) || k < 1)))
        return error(absl::StrCat("bad name '", fields[1],
                                  "' to revoke: expected a join token's name, or NAME:K for the K-th worker "
                                  "credential it was traded for (as c960 workers shows)"));
      set.revoked_.insert(std::string(fields[1]));
      continue;
    }
    const bool enroll = fields[0] == role_name(Role::kEnroll);
    const bool owned = fields[0] == role_name(Role::kWorker) || enroll;
    // A worker or enroll line may end with owner=NAME.
    std::string owner;
    if (owned && fields.size() == (enroll ? 5u : 4u)) {
      absl::string_view o = fields.back();
      if (!absl::ConsumePrefix(&o, "owner=") || !valid_caller_name(o))
        return error(absl::StrCat("bad '", fields.back(), "': expected owner=NAME, NAME 1..", kMaxCallerNameLength,
                                  " characters of A-Z a-z 0-9 . _ - (the person or organisation behind it)"));
      owner = std::string(o);
      fields.pop_back();
    }
    if (fields.size() != (enroll ? 4 : 3))
      return error(absl::StrCat("expected '",
                                enroll                                  ? "enroll NAME HASH uses=N [owner=OWNER]"
                                : fields[0] == role_name(Role::kWorker) ? "worker NAME HASH [owner=OWNER]"
                                                                        : "ROLE NAME HASH",
                                "', found ", fields.size(), " field", fields.size() == 1 ? "" : "s"));
    const std::optional<Role> role = parse_role(fields[0]);
    if (!role) return error(absl::StrCat("unknown role '", fields[0], "' (admin, submit, read, worker or enroll)"));
    int32_t uses = 0;
    if (enroll) {
      absl::string_view u = fields[3];
      if (!absl::ConsumePrefix(&u, "uses=") || !absl::SimpleAtoi(u, &uses) || uses < 1 || uses > kMaxEnrollUses)
        return error(absl::StrCat("bad '", fields[3], "': expected uses=N, N in 1..", kMaxEnrollUses,
                                  " (the worker credentials the join token may be traded for)"));
    }
    if (!valid_caller_name(fields[1]))
      return error(
          absl::StrCat("bad name '", fields[1], "': 1..", kMaxCallerNameLength, " characters of A-Z a-z 0-9 . _ -"));
    const std::optional<std::string> digest = parse_hash(fields[2]);
    if (!digest)
      return error(absl::StrCat("bad hash '", fields[2], "': expected sha256: and 64 hex digits (c960 token new)"));
    const std::string name(fields[1]);
    if (auto [it, fresh] = name_line.emplace(name, line_no); !fresh)
      return error(absl::StrCat("duplicate name '", name, "' (also on line ", it->second, ")"));
    if (auto [it, fresh] = digest_line.emplace(*digest, line_no); !fresh)
      return error(absl::StrCat("duplicate hash (also on line ", it->second, "): one token, two names"));
    set.by_digest_[*digest] = TokenEntry{*role, name, uses, owner};
  }
  return set;
}

absl::StatusOr<TokenSet> TokenSet::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read: ", std::strerror(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(path, ": cannot read"));
  return parse(ss.str(), path);
}

bool TokenSet::revokes(absl::string_view issued_name) const {
  if (revoked_.count(std::string(issued_name))) return true;
  const size_t colon = issued_name.find(':');
  return colon != absl::string_view::npos && revoked_.count(std::string(issued_name.substr(0, colon)));
}

const TokenEntry* TokenSet::find(absl::string_view token) const { return find_digest(sha256(token)); }

const TokenEntry* TokenSet::find_digest(absl::string_view digest) const {
  auto it = by_digest_.find(std::string(digest));
  return it == by_digest_.end() ? nullptr : &it->second;
}

namespace {

std::optional<Caller> caller_in(const std::shared_ptr<const TokenSet>& set, const std::string& digest) {
  const TokenEntry* e = set ? set->find_digest(digest) : nullptr;
  if (!e) return std::nullopt;
  return Caller{e->name, e->role, true, e->uses, e->owner};
}

}  // namespace

std::optional<Caller> TokenTable::find(absl::string_view token) const {
  return find_digest(sha256(token));  // hashed outside the lock
}

std::optional<Caller> TokenTable::find_hash(absl::string_view hash) const {
  const std::optional<std::string> digest = parse_hash(hash);
  if (!digest) return std::nullopt;
  return find_digest(*digest);
}

std::optional<Caller> TokenTable::find_digest(const std::string& digest) const {
  std::shared_ptr<const TokenSet> set;
  {
    std::lock_guard lock(mu_);
    set = set_;
  }
  if (std::optional<Caller> c = caller_in(set, digest)) return c;
  return issued(digest);
}

std::optional<Caller> TokenTable::issued(const std::string& digest) const {
  std::lock_guard lock(mu_);
  auto it = issued_.find(digest);
  if (it == issued_.end() || set_->revokes(it->second.name)) return std::nullopt;
  // An issued credential's owner is its join token's: the owner named when it was issued, else
  // the join token itself (all credentials of one join token are one owner).
  const std::string& name = it->second.name;
  std::string owner = it->second.owner;
  if (owner.empty()) owner = name.substr(0, name.find(':'));
  return Caller{name, Role::kWorker, true, 0, std::move(owner)};
}

void TokenTable::add_issued(absl::string_view hash, const std::string& name, const std::string& owner) {
  const std::optional<std::string> digest = parse_hash(hash);
  if (!digest) return;
  std::lock_guard lock(mu_);
  issued_[*digest] = Issued{name, owner};
  ++generation_;
}

std::optional<Caller> TokenTable::find_recent(absl::string_view token) const {
  const std::string digest = sha256(token);
  std::shared_ptr<const TokenSet> set, previous;
  {
    std::lock_guard lock(mu_);
    set = set_;
    previous = previous_;
  }
  if (std::optional<Caller> c = caller_in(set, digest)) return c;
  if (std::optional<Caller> c = issued(digest)) return c;
  return caller_in(previous, digest);
}

void TokenTable::replace(TokenSet set) {
  auto fresh = std::make_shared<const TokenSet>(std::move(set));
  std::lock_guard lock(mu_);
  previous_ = std::move(set_);
  set_ = std::move(fresh);
  ++generation_;
}

uint64_t TokenTable::generation() const {
  std::lock_guard lock(mu_);
  return generation_;
}

size_t TokenTable::size() const {
  std::lock_guard lock(mu_);
  return set_->size();
}

Permission permission_for(absl::string_view method) {
  for (const MethodRule& r : kMethodRules) {
    const bool service_wide = r.method.back() == '/';
    if (service_wide ? absl::StartsWith(method, r.method) : method == r.method) return r.permission;
  }
  return {};  // unknown: admin only
}

bool role_may_call(Role role, absl::string_view method) {
  const Permission p = permission_for(method);
  return p.open || role == Role::kAdmin || (p.roles & bit(role)) != 0;
}

std::string roles_allowed(absl::string_view method) {
  const Permission p = permission_for(method);
  if (p.open) return "any caller";
  std::vector<absl::string_view> names;
  for (Role r : kAllRoles)
    if (r != Role::kAdmin && (p.roles & bit(r))) names.push_back(role_name(r));
  names.push_back(role_name(Role::kAdmin));
  if (names.size() == 1) return std::string(names[0]);
  return absl::StrCat(absl::StrJoin(names.begin(), names.end() - 1, ", "), " or ", names.back());
}

absl::StatusOr<std::optional<Caller>> authorize(absl::string_view method, const absl::StatusOr<Caller>& caller) {
  if (permission_for(method).open) return caller.ok() ? std::optional<Caller>(*caller) : std::nullopt;
  if (!caller.ok()) return absl::UnauthenticatedError(caller.status().message());
  if (!role_may_call(caller->role, method))
    return absl::PermissionDeniedError(absl::StrCat("'", caller->identity, "' (role ", role_name(caller->role),
                                                    ") may not call ", method, ": that needs role ",
                                                    roles_allowed(method)));
  return std::optional<Caller>(*caller);
}

}  // namespace c960::cluster
