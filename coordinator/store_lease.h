// The leader lease of coordinators sharing one PostgreSQL database: the store's own advisory
// lock (store.cpp), held by its connection for as long as that connection lives. Taking the
// lease is opening the store: the open takes the lock before it reads or migrates anything, and
// answers ABORTED while another coordinator's session holds it (a standby then stays one). Every
// write of the leader goes through the connection that holds the lock, and a connection lost is
// never reopened, so a leader that lost its lock can commit nothing: the lock is the fence.
// Renewing is one round trip on that connection (Store::check_alive); a leader that cannot make
// it within its lease is deposed (leadership.h) and exits. The database server drops a dead
// leader's session, and with it the lock, when the connection closes (a killed process: at once;
// a cut network: at the server's TCP keepalive, which the docs say how to shorten).
// The lock does not say who holds it: the holder writes its advertised address in the row of
// table c960_leader on taking it, with an epoch one more than the last holder's and its session's
// pid (Store::claim_leader). A standby, refused the lock, reads the row on the same connection
// and names its holder only while that pid holds the lock (Store::leader_of): a row a dead
// leader left names nobody.
#pragma once

#include <functional>
#include <memory>

#include "coordinator/leadership.h"
#include "coordinator/store.h"

namespace c960::cluster {

class StoreLease final : public LeaseStore {
 public:
  using Opener = std::function<absl::StatusOr<std::unique_ptr<Store>>()>;
  explicit StoreLease(Opener open) : open_(std::move(open)) {}

  absl::StatusOr<Step> take_or_renew_lease(const std::string& holder, int64_t epoch, int64_t ttl_ms) override;
  // Closes nothing: a clean shutdown closes the store, which releases the lock.
  absl::Status release_lease(const std::string&, int64_t) override { return absl::OkStatus(); }

  // Why the last try to open the store failed, other than another coordinator holding it (OK:
  // it did not fail so). A standby's first step with such an error is a start-up error.
  const absl::Status& last_error() const { return last_error_; }
  // The store opened when the lease was taken (null before): the leader's.
  std::unique_ptr<Store> take_store() { return std::move(store_); }
  // The leader's store, for renewals, once main has taken it (it outlives the lease's use).
  void watch(Store* store) { held_ = store; }

 private:
  Opener open_;
  std::unique_ptr<Store> store_;
  Store* held_ = nullptr;
  absl::Status last_error_;
  int64_t epoch_ = 0;
  std::string holder_;
};

}  // namespace c960::cluster
