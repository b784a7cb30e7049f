#include "coordinator/http_sessions.h"

#include <algorithm>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace c960::cluster {
namespace {

std::string sha256(absl::string_view data) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), digest);
  return std::string(reinterpret_cast<const char*>(digest), sizeof digest);
}

// Whether `id` could be one this table made: kSessionIdLength characters of base64url.
bool valid_id_text(absl::string_view id) {
  if (id.size() != kSessionIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) { return absl::ascii_isalnum(c) || c == '-' || c == '_'; });
}

}  // namespace

SessionTable::SessionTable(const Clock* clock, SessionLimits limits) : clock_(clock), limits_(limits) {}

bool SessionTable::expired(const Session& s, int64_t now_ms) const {
  return now_ms - s.created_ms >= limits_.lifetime_ms || now_ms - s.used_ms >= limits_.idle_ms;
}

void SessionTable::erase_locked(const std::string& digest) {
  auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) return;
  auto c = by_credential_.find(it->second.credential);
  if (c != by_credential_.end()) {
    std::vector<std::string>& ids = c->second;
    ids.erase(std::remove(ids.begin(), ids.end(), digest), ids.end());
    if (ids.empty()) by_credential_.erase(c);
  }
  by_digest_.erase(it);
}

size_t SessionTable::expire_locked(int64_t now_ms) {
  std::vector<std::string> gone;
  for (const auto& [digest, s] : by_digest_)
    if (expired(s, now_ms)) gone.push_back(digest);
  for (const std::string& d : gone) erase_locked(d);
  return gone.size();
}

absl::StatusOr<std::string> SessionTable::create(const std::string& credential, const std::string& identity) {
  unsigned char bytes[kSessionIdBytes];
  if (RAND_bytes(bytes, sizeof bytes) != 1) return absl::InternalError("no random bytes for a session id (RAND_bytes)");
  std::string id = absl::WebSafeBase64Escape(absl::string_view(reinterpret_cast<const char*>(bytes), sizeof bytes));
  const std::string digest = sha256(id);
  const int64_t now = clock_->now_ms();
  std::lock_guard lock(mu_);
  expire_locked(now);
  // The credential's own oldest make room first: that never needs the table's room.
  for (auto c = by_credential_.find(credential);
       c != by_credential_.end() && c->second.size() >= size_t(std::max(limits_.per_credential, 1));
       c = by_credential_.find(credential))
    erase_locked(c->second.front());
  if (by_digest_.size() >= size_t(std::max(limits_.total, 1)))
    return absl::ResourceExhaustedError(absl::StrCat(
        "the coordinator holds ", by_digest_.size(), " dashboard sessions, its most (", limits_.total,
        "): log in again when one has ended (at a log out, or after ", limits_.idle_ms / 60'000, " minutes unused)"));
  by_credential_[credential].push_back(digest);
  by_digest_.emplace(digest, Session{credential, identity, now, now});
  return id;
}

std::optional<Session> SessionTable::resolve(absl::string_view id) {
  if (!valid_id_text(id)) return std::nullopt;
  const std::string digest = sha256(id);
  const int64_t now = clock_->now_ms();
  std::lock_guard lock(mu_);
  auto it = by_digest_.find(digest);
  if (it == by_digest_.end()) return std::nullopt;
  if (expired(it->second, now)) {
    erase_locked(digest);
    return std::nullopt;
  }
  it->second.used_ms = std::max(it->second.used_ms, now);
  return it->second;
}

bool SessionTable::end(absl::string_view id) {
  if (!valid_id_text(id)) return false;
  const std::string digest = sha256(id);
  std::lock_guard lock(mu_);
  if (!by_digest_.count(digest)) return false;
  erase_locked(digest);
  return true;
}

size_t SessionTable::end_for_credential(const std::string& credential) {
  std::lock_guard lock(mu_);
  auto c = by_credential_.find(credential);
  if (c == by_credential_.end()) return 0;
  const std::vector<std::string> ids = c->second;
  for (const std::string& d : ids) erase_locked(d);
  return ids.size();
}

size_t SessionTable::end_unless(const std::function<bool(const std::string& credential)>& keep) {
  std::vector<std::string> credentials;
  {
    std::lock_guard lock(mu_);
    for (const auto& [credential, ids] : by_credential_) credentials.push_back(credential);
  }
  size_t ended = 0;
  for (const std::string& c : credentials)
    if (!keep(c)) ended += end_for_credential(c);
  return ended;
}

size_t SessionTable::expire() {
  const int64_t now = clock_->now_ms();
  std::lock_guard lock(mu_);
  return expire_locked(now);
}

size_t SessionTable::size() const {
  std::lock_guard lock(mu_);
  return by_digest_.size();
}

size_t SessionTable::size_for(const std::string& credential) const {
  std::lock_guard lock(mu_);
  auto c = by_credential_.find(credential);
  return c == by_credential_.end() ? 0 : c->second.size();
}

}  // namespace c960::cluster
