#include "coordinator/standby_service.h"

#include "absl/strings/str_cat.h"
#include "cluster/errors.h"

namespace c960::cluster {

void StandbyService::set_leader(std::string leader) {
  std::lock_guard lock(mu_);
  leader_ = std::move(leader);
}

std::string StandbyService::leader() const {
  std::lock_guard lock(mu_);
  return leader_;
}

grpc::ServerGenericBidiReactor* StandbyService::CreateReactor(grpc::GenericCallbackServerContext* ctx) {
  class Refusal final : public grpc::ServerGenericBidiReactor {
   public:
    explicit Refusal(const grpc::Status& s) { Finish(s); }
    void OnDone() override { delete this; }
  };
  const std::string leader = this->leader();
  return new Refusal(
      to_grpc(not_leader(absl::StrCat(ctx->method(), ": this coordinator is a standby; ",
                                      leader.empty() ? "no leader is known yet (one takes over within the lease time)"
                                                     : absl::StrCat("the leader is ", leader)),
                         leader)));
}

}  // namespace c960::cluster
