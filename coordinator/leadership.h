// Which of the coordinators sharing one store leads. Exactly one holds the leader lease, a row
// of the store: its holder (the gRPC address it advertises), an epoch that grows by one at every
// change of holder, and when it expires. The holder renews it well before then; a standby takes
// it once it has expired. What fences the store is the lease's own lock, which every write of the
// leader goes through: with SQLite, the file's exclusive lock and a flock beside it
// (file_lease.h), which nobody else can take while the leader's process lives; with PostgreSQL,
// the store's advisory lock, held by the session of the one connection every write of the leader
// uses, which is never opened again once lost (store_lease.h). So a leader that lost the lease
// while paused or cut off cannot commit anything, whatever its clock says. The decisions are a
// pure function of the lease as read and the local clock (LeaderElection::decide), tested apart
// from any store or socket; LeaseStore is the one atomic step a store provides.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>

#include "absl/status/statusor.h"

namespace c960::cluster {

// The lease as the store holds it. epoch 0: never taken.
struct LeaseRow {
  std::string holder;
  int64_t epoch = 0;
  int64_t expires_ms = 0;  // in the store's clock (see LeaseStore)
};

// The store's side: one atomic step (a transaction of its own).
class LeaseStore {
 public:
  virtual ~LeaseStore() = default;
  // In one transaction: when the lease is free or expired at the store's clock, or held by
  // `holder` at `epoch` (renewal), it becomes `holder`'s until the store's now + ttl_ms (a new
  // epoch when it changes hands); otherwise it is left as it is. Returns the row as it is after
  // the step, and the store's clock at that step. ABORTED: the caller's lease is lost for good
  // (a leader's database connection, which held it, is gone): a leader is deposed at once.
  struct Step {
    LeaseRow row;
    int64_t now_ms = 0;
    bool granted = false;  // this step took or renewed the lease for the caller
  };
  virtual absl::StatusOr<Step> take_or_renew_lease(const std::string& holder, int64_t epoch, int64_t ttl_ms) = 0;
  // Gives the lease up at once (a leader shutting down cleanly), if `holder` holds it at `epoch`.
  virtual absl::Status release_lease(const std::string& holder, int64_t epoch) = 0;
};

// What a coordinator is, and what it does next.
enum class LeaderRole {
  kStandby,  // another holds the lease: answer NOT_LEADER naming it, try again later
  kLeader,   // this one holds it: serve; renew before renew_by
  kDeposed,  // it led and does not any more (another took the lease, or it could not renew in
             // time): stop serving at once, without another write
};

struct LeaderTiming {
  int64_t ttl_ms = 10'000;  // how long a lease lasts unless renewed
  // A leader renews every ttl / 3, and steps down by itself when its lease has less than
  // ttl / 5 left and it could not renew (its store unreachable): by then a standby may take it
  // over soon, and fencing stops the rest.
  int64_t renew_every_ms() const { return ttl_ms / 3; }
  int64_t margin_ms() const { return ttl_ms / 5; }
  // A standby looks at most this long after the lease became free (a takeover's delay, beside
  // the lease's expiry and the store's load).
  int64_t standby_poll_ms() const { return std::min<int64_t>(renew_every_ms(), 500); }
};

class LeaderElection {
 public:
  LeaderElection(LeaseStore* store, std::string holder, LeaderTiming timing);

  // One step, at local time now_ms: takes or renews the lease, and says what this coordinator is
  // now. A store error: a leader stays one while its lease (by the local clock, from its last
  // renewal) has more than the margin left, then is deposed; a standby stays one. ABORTED (the
  // lease lost for good): a leader is deposed at once.
  LeaderRole step(int64_t now_ms);

  LeaderRole role() const { return role_; }
  int64_t epoch() const { return epoch_; }               // while leader: the epoch that fences its writes
  const std::string& leader() const { return leader_; }  // the holder as last read ("" unknown)
  const std::string& holder() const { return holder_; }
  // The name given to clients, once known (a port picked at start): written at the next step.
  void set_holder(std::string holder) { holder_ = std::move(holder); }
  const std::string& why() const { return why_; }  // the last change of role, in words
  // How long this leader's lease has left by the local clock (measured from before its last
  // renewal: the store's expiry is no earlier); <= 0 for a standby.
  int64_t lease_left_ms(int64_t now_ms) const { return role_ == LeaderRole::kLeader ? local_expiry_ms_ - now_ms : 0; }
  // When the next step is due (local clock).
  int64_t next_step_ms() const { return next_ms_; }

  // The pure decision: what a coordinator that was `was` (leading at `epoch`) is after a step
  // that failed (!stepped) or granted the lease or not, at `row.epoch`; local_left_ms: how long
  // its lease has left by the local clock (a leader's, from its last renewal).
  static LeaderRole decide(LeaderRole was, bool stepped, bool granted, int64_t row_epoch, int64_t epoch,
                           int64_t local_left_ms, const LeaderTiming& timing);

 private:
  LeaseStore* store_;
  std::string holder_;
  LeaderTiming timing_;
  LeaderRole role_ = LeaderRole::kStandby;
  int64_t epoch_ = 0;
  std::string leader_;
  std::string why_;
  int64_t local_expiry_ms_ = 0;  // the lease's end by the local clock, from the last renewal's start
  int64_t next_ms_ = 0;
};

}  // namespace c960::cluster
