// Who calls, as the coordinator's logic sees it: an identity (the name of the caller's token, or
// of its TLS client certificate) and the role it may act in. The gRPC edge establishes the caller
// of every call before it reaches a service; the logic uses it for ownership (a submitter's own
// jobs) and for worker identity (never taken from a request field).
//
// Also here, free of gRPC so that they are tested without sockets: role names, bearer tokens and
// the tokens file, and the one table of which role may call which RPC method.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960::cluster {

enum class Role {
  kAdmin,   // everything
  kSubmit,  // submit jobs; read and cancel its own
  kRead,    // read every job and the workers
  kWorker,  // the worker service only
  kEnroll,  // a join token: Enroll only, traded once per worker for a worker credential of its own
};

struct Caller {
  std::string identity;  // "" when the coordinator authenticates nobody
  Role role = Role::kAdmin;
  // False when the coordinator has neither tokens nor client certificates (loopback, or
  // --insecure): every caller is then an anonymous admin.
  bool authenticated = false;
  // An enroll token's bound: how many worker credentials it may be traded for in all.
  int32_t uses = 0;
  // The person or organisation behind the credential (the tokens file's owner=NAME; a credential
  // issued by Enroll inherits its join token's). Verification counts owners, not credentials:
  // every credential and worker name of one owner is one voter. "" means the identity itself.
  std::string owner{};

  static Caller local() { return {}; }
  // The owner, or the identity where none was named (each such credential its own owner).
  const std::string& owner_or_identity() const { return owner.empty() ? identity : owner; }
};

// "admin", "submit", "read", "worker".
absl::string_view role_name(Role role);
std::optional<Role> parse_role(absl::string_view name);

// A token's or certificate's name: [A-Za-z0-9._-], 1..kMaxCallerNameLength characters.
inline constexpr size_t kMaxCallerNameLength = 64;
bool valid_caller_name(absl::string_view name);

// ---------------------------------------------------------------------------------------------
// Tokens

// Every token starts with this, so that a leaked one is recognisable (e.g. by secret scanners).
inline constexpr absl::string_view kTokenPrefix = "c960_";
// A new token: kTokenPrefix and 32 random bytes from the OS (getrandom), base64url, no padding.
absl::StatusOr<std::string> new_token();
// "sha256:" and the 64 lowercase hex digits of the token's SHA-256: what the tokens file holds.
std::string token_hash(absl::string_view token);
// Whether `token` may travel in an `authorization` header: 1..4096 printable ASCII characters, no
// spaces.
bool valid_token_text(absl::string_view token);

// The tokens file (coordinator --tokens): one token per line, `ROLE NAME HASH`, where HASH is
// token_hash() of the token (the file never holds a token itself). `#` starts a comment; blank
// lines are ignored. Names and hashes are unique.
// A join token (role enroll) carries a fourth field, `uses=N`: the worker credentials it may be
// traded for (Enroll), 1..kMaxEnrollUses.
// Worker and enroll lines may end with `owner=OWNER`: the person or organisation behind the
// credential (a name as for tokens). Without it a credential is its own owner. Credentials that
// Enroll issues for a join token inherit its owner.
// `revoke NAME` lines revoke credentials that Enroll issued (they live in the coordinator's
// store, not in the file): `revoke JOIN:K` the one named so, `revoke JOIN` every one issued for
// the join token JOIN. From the next call on (SIGHUP), they authenticate nobody.
struct TokenEntry {
  Role role = Role::kRead;
  std::string name;
  int32_t uses = 0;
  std::string owner;  // worker and enroll lines: owner=NAME ("" when not given)
};
inline constexpr int32_t kMaxEnrollUses = 100000;
class TokenSet {
 public:
  // Parses the text of a tokens file; every error names `file`, the line and the problem.
  static absl::StatusOr<TokenSet> parse(absl::string_view text, absl::string_view file);
  static absl::StatusOr<TokenSet> load(const std::string& path);

  // The entry whose hash is the token's, or nullptr.
  const TokenEntry* find(absl::string_view token) const;
  // The entry whose hash is `digest` (the raw 32 bytes of a token's SHA-256), or nullptr.
  const TokenEntry* find_digest(absl::string_view digest) const;
  size_t size() const { return by_digest_.size(); }
  // Whether a `revoke` line names this issued credential ("JOIN:K") or its join token.
  bool revokes(absl::string_view issued_name) const;

 private:
  std::unordered_map<std::string, TokenEntry> by_digest_;  // raw 32-byte SHA-256 -> entry
  std::set<std::string> revoked_;
};

// The tokens the coordinator accepts now: read by every call, replaced whole on SIGHUP, so a call
// sees either the old set or the new one, never a mixture.
class TokenTable {
 public:
  explicit TokenTable(TokenSet set) : set_(std::make_shared<const TokenSet>(std::move(set))) {}
  // The caller the token authenticates, or nullopt when the table does not hold it.
  std::optional<Caller> find(absl::string_view token) const;
  // find(), else the token's caller in the set before the last replace(): for a call that was
  // let in just before a reload and asks who it is just after.
  std::optional<Caller> find_recent(absl::string_view token) const;
  // find() for a credential remembered by its token_hash() only (a dashboard session keeps no
  // token): the caller it authenticates now, or nullopt when the table does not hold it (or
  // `hash` is not a token_hash()).
  std::optional<Caller> find_hash(absl::string_view hash) const;
  void replace(TokenSet set);
  // Counts replace() and add_issued() calls: whoever keeps credentials' hashes knows by it when
  // to look them up again.
  uint64_t generation() const;
  size_t size() const;
  // A worker credential issued by Enroll (kept in the coordinator's store, added at start and
  // when issued): `hash` as token_hash() gives it. Kept across replace().
  // `owner` is the join token's owner when it was issued ("" for the join token's name).
  void add_issued(absl::string_view hash, const std::string& name, const std::string& owner);

 private:
  // By the token's raw SHA-256.
  std::optional<Caller> find_digest(const std::string& digest) const;
  std::optional<Caller> issued(const std::string& digest) const;
  struct Issued {
    std::string name, owner;
  };
  mutable std::mutex mu_;
  std::shared_ptr<const TokenSet> set_, previous_;
  std::unordered_map<std::string, Issued> issued_;  // raw SHA-256 -> its name and owner (role worker)
  uint64_t generation_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Permissions: the one table of who may call what (proto/c960/v1/cluster.proto's header comment
// says the same in words). Methods are full gRPC names, "/c960.v1.JobService/SubmitJob".

struct Permission {
  bool open = false;   // anyone, even without credentials (health checks)
  uint32_t roles = 0;  // bit (1 << Role) per role allowed; admin is always allowed
};
Permission permission_for(absl::string_view method);
// Whether a caller in `role` may call `method` (admin: any method; unknown methods: admin only).
bool role_may_call(Role role, absl::string_view method);
// The roles that may call `method`, for messages: "submit, read or admin".
std::string roles_allowed(absl::string_view method);

// The decision for one call. `caller` is who the credentials proved, or the reason they proved
// nobody (no token, unknown token, ...). OK carries the caller (nullopt: an open method called
// without credentials); otherwise UNAUTHENTICATED (nobody proved) or PERMISSION_DENIED (a role
// that may not make the call), with a message for the client.
absl::StatusOr<std::optional<Caller>> authorize(absl::string_view method, const absl::StatusOr<Caller>& caller);

}  // namespace c960::cluster
