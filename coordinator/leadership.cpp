#include "coordinator/leadership.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"

namespace c960::cluster {

LeaderElection::LeaderElection(LeaseStore* store, std::string holder, LeaderTiming timing)
    : store_(store), holder_(std::move(holder)), timing_(timing) {}

LeaderRole LeaderElection::decide(LeaderRole was, bool stepped, bool granted, int64_t row_epoch, int64_t epoch,
                                  int64_t local_left_ms, const LeaderTiming& timing) {
  if (was == LeaderRole::kDeposed) return LeaderRole::kDeposed;  // for good: the process starts again as a standby
  if (!stepped) {
    // The store did not answer: a leader whose lease may still hold (by its own clock, with a
    // margin for the store's) goes on; fencing refuses its writes if it is wrong.
    if (was == LeaderRole::kLeader)
      return local_left_ms > timing.margin_ms() ? LeaderRole::kLeader : LeaderRole::kDeposed;
    return LeaderRole::kStandby;
  }
  if (!granted) return was == LeaderRole::kLeader ? LeaderRole::kDeposed : LeaderRole::kStandby;
  // Granted under another epoch than the one it led at: it lost the lease and took it again, and
  // another may have led meanwhile. What it holds in memory may be stale: it starts again.
  if (was == LeaderRole::kLeader && row_epoch != epoch) return LeaderRole::kDeposed;
  return LeaderRole::kLeader;
}

LeaderRole LeaderElection::step(int64_t now_ms) {
  absl::StatusOr<LeaseStore::Step> s =
      store_->take_or_renew_lease(holder_, role_ == LeaderRole::kLeader ? epoch_ : 0, timing_.ttl_ms);
  const LeaderRole was = role_;
  // A lease lost for good (its holder's connection gone): no margin to wait out, nothing can be
  // written any more.
  const bool lost = !s.ok() && absl::IsAborted(s.status()) && was == LeaderRole::kLeader;
  role_ = lost ? LeaderRole::kDeposed
               : decide(was, s.ok(), s.ok() && s->granted, s.ok() ? s->row.epoch : 0, epoch_, local_expiry_ms_ - now_ms,
                        timing_);
  if (s.ok()) leader_ = s->row.expires_ms > s->now_ms ? s->row.holder : "";
  if (role_ == LeaderRole::kLeader && s.ok()) {
    epoch_ = s->row.epoch;
    // Measured from before the step: the store's expiry is at least this late.
    local_expiry_ms_ = now_ms + timing_.ttl_ms;
  }
  if (role_ != was) {
    switch (role_) {
      case LeaderRole::kLeader: why_ = absl::StrCat("took the leader lease (epoch ", epoch_, ")"); break;
      case LeaderRole::kStandby: why_ = "another coordinator leads"; break;
      case LeaderRole::kDeposed:
        why_ = lost         ? absl::StrCat("lost the leader lease: ", s.status().message())
               : !s.ok()    ? absl::StrCat("could not renew the leader lease before it ran out: ", s.status().message())
               : s->granted ? absl::StrCat("the leader lease was lost and taken again (epoch ", epoch_, " to ",
                                           s->row.epoch, ")")
                            : absl::StrCat("another coordinator (", s->row.holder, ") took the leader lease (epoch ",
                                           s->row.epoch, ")");
        break;
    }
  } else if (!s.ok() && role_ == LeaderRole::kStandby) {
    why_ = absl::StrCat("cannot read the leader lease: ", s.status().message());
  }
  next_ms_ = now_ms + (role_ == LeaderRole::kLeader ? timing_.renew_every_ms() : timing_.standby_poll_ms());
  // A leader that could not renew looks again no later than when its margin begins.
  if (role_ == LeaderRole::kLeader && !s.ok()) next_ms_ = std::min(next_ms_, local_expiry_ms_ - timing_.margin_ms());
  return role_;
}

}  // namespace c960::cluster
