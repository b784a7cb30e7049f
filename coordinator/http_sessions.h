// Dashboard sessions: what a browser holds instead of a token. Logging in (HttpApi's POST
// /login) trades a token for a session: an id of kSessionIdBytes random bytes (OpenSSL's
// RAND_bytes), base64url, which the browser keeps in a cookie. The token never goes back to the
// browser, so whatever else sees the browser's cookies for this host name (another HTTPS service
// on another port of it: cookies do not keep to a port) gets at most a session id, which works on
// this dashboard only, not on the gRPC side, and ends at log out, at expiry, or when its token
// goes.
//
// The table's invariants:
//   - It holds no session id, only each id's SHA-256: a memory dump or a log of the table gives
//     no id that a browser could send.
//   - A session names the credential it was made from by its token_hash() (cluster/auth.h),
//     never by the token. HttpApi looks that credential up in the live token table on every
//     request (TokenTable::find_hash), so a token taken out of --tokens, or an issued credential
//     revoked, by a reload takes the power of its sessions at once; HttpApi then ends them.
//   - A session ends SessionLimits::lifetime_ms after it was made whatever its use, or idle_ms
//     after its last request; resolve() never returns one past either.
//   - One credential holds per_credential sessions at most: its next login ends its oldest (the
//     token's holder can only crowd out its own browsers). All credentials together hold `total`
//     at most: a login past it, once the expired sessions are ended, is refused
//     (RESOURCE_EXHAUSTED), not paid for with another credential's session.
//   - Sessions live in memory only: a restart of the coordinator ends them all.
// Thread-safe: every member takes one mutex, and calls nothing outside the table under it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "cluster/config.h"
#include "coordinator/clock.h"

namespace c960::cluster {

// A session id's random bytes (256 bits), and its length as base64url without padding.
inline constexpr size_t kSessionIdBytes = 32;
inline constexpr size_t kSessionIdLength = 43;

struct SessionLimits {
  int64_t lifetime_ms = kHttpSessionLifetimeMs;  // from the login, whatever its use
  int64_t idle_ms = kHttpSessionIdleMs;          // from the last request
  int per_credential = kHttpMaxSessionsPerCredential;
  int total = kHttpMaxSessions;
};

// What a session remembers.
struct Session {
  std::string credential;  // token_hash() of the token it was made from
  std::string identity;    // that token's name at the login (for logs)
  int64_t created_ms = 0;  // the login (the clock's Unix milliseconds)
  int64_t used_ms = 0;     // the last request
};

class SessionTable {
 public:
  // `clock` must outlive the table.
  explicit SessionTable(const Clock* clock, SessionLimits limits = {});

  // A new session for `credential` (a token_hash()): its id, which only the answer to the login
  // carries. Ends the credential's oldest session when it holds per_credential; expired sessions
  // are ended first. RESOURCE_EXHAUSTED when the table still holds `total`; INTERNAL when no
  // random bytes could be had.
  absl::StatusOr<std::string> create(const std::string& credential, const std::string& identity);
  // The session `id` names, its idle time restarted; nullopt when there is none: never made
  // here (any other text, a token included), ended, or expired (then ended now).
  std::optional<Session> resolve(absl::string_view id);
  // Ends the session `id` names; whether there was one.
  bool end(absl::string_view id);
  // Ends every session made from `credential`; how many.
  size_t end_for_credential(const std::string& credential);
  // Ends every session whose credential `keep` says no to; how many. `keep` is called once per
  // credential, outside the table's lock.
  size_t end_unless(const std::function<bool(const std::string& credential)>& keep);
  // Ends every expired session; how many.
  size_t expire();

  size_t size() const;
  // The sessions of one credential (tests).
  size_t size_for(const std::string& credential) const;
  const SessionLimits& limits() const { return limits_; }

 private:
  bool expired(const Session& s, int64_t now_ms) const;
  // The session under `digest` ended; the lock held.
  void erase_locked(const std::string& digest);
  size_t expire_locked(int64_t now_ms);

  const Clock* clock_;
  const SessionLimits limits_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, Session> by_digest_;  // raw SHA-256 of the id -> its session
  // credential -> the digests of its sessions, oldest first (per_credential at most).
  std::unordered_map<std::string, std::vector<std::string>> by_credential_;
};

}  // namespace c960::cluster
