#include "coordinator/store_lease.h"

#include <chrono>
#include <optional>

namespace c960::cluster {
namespace {

int64_t wall_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

absl::StatusOr<LeaseStore::Step> StoreLease::take_or_renew_lease(const std::string& holder, int64_t epoch,
                                                                 int64_t ttl_ms) {
  Step step;
  step.now_ms = wall_ms();
  Store* held = held_ ? held_ : store_.get();
  if (held) {
    if (absl::Status s = held->check_alive(); !s.ok()) return s;
    // A holder that learned its own address since (a port picked at start) is written down for
    // the standbys.
    if (holder != holder_)
      if (absl::Status s = held->set_leader_holder(holder); !s.ok()) return s;
    holder_ = holder;
    step.granted = epoch == epoch_;
    step.row = {holder_, epoch_, step.now_ms + ttl_ms};
    return step;
  }
  absl::StatusOr<std::unique_ptr<Store>> opened = open_();
  last_error_ = opened.ok() || absl::IsAborted(opened.status()) ? absl::OkStatus() : opened.status();
  if (!opened.ok()) {
    if (!absl::IsAborted(opened.status())) return opened.status();
    // Held by a live session: who, as its holder wrote (nobody when the row is not that
    // session's: Store::leader_of).
    const std::optional<Store::Leader> leader = Store::leader_of(opened.status());
    step.row = {leader ? leader->holder : "", leader ? leader->epoch : 0, step.now_ms + ttl_ms};
    return step;
  }
  // A cut network fails the leader's round trips within half its lease (it is deposed before
  // the lease ends), and the server ends its session, and so the lock, as soon.
  if (absl::Status s = (*opened)->limit_silence(ttl_ms / 2); !s.ok()) {
    last_error_ = s;
    return s;
  }
  // The lock is this session's: its address and the next epoch, for the standbys. (One holding
  // per process: a lost lock is never taken again by the same process.)
  absl::StatusOr<int64_t> claimed = (*opened)->claim_leader(holder);
  if (!claimed.ok()) return claimed.status();  // the store closes, and the lock goes with it
  store_ = std::move(*opened);
  epoch_ = *claimed;
  holder_ = holder;
  step.granted = true;
  step.row = {holder_, epoch_, step.now_ms + ttl_ms};
  return step;
}

}  // namespace c960::cluster
