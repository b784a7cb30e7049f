#include "worker/connection.h"

#include <algorithm>
#include <chrono>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/config.h"

namespace c960::cluster {
namespace {

class GrpcConnection final : public CoordinatorConnection {
 public:
  explicit GrpcConnection(const std::shared_ptr<grpc::Channel>& channel) {
    stubs_.push_back(v1::WorkerService::NewStub(channel));
  }
  explicit GrpcConnection(std::shared_ptr<CoordinatorSet> set) : set_(std::move(set)) {
    for (size_t k = 0; k < set_->size(); ++k) stubs_.push_back(v1::WorkerService::NewStub(set_->channel(k)));
  }

  grpc::Status hello(const v1::HelloRequest& req, v1::HelloResponse* resp, int64_t deadline_ms) override {
    return send(deadline_ms,
                [&](v1::WorkerService::Stub& stub, grpc::ClientContext& ctx) { return stub.Hello(&ctx, req, resp); });
  }
  grpc::Status acquire(const v1::AcquireWorkRequest& req, v1::AcquireWorkResponse* resp, int64_t deadline_ms) override {
    return send(deadline_ms, [&](v1::WorkerService::Stub& stub, grpc::ClientContext& ctx) {
      {
        std::lock_guard lock(mu_);
        if (cancelled_) return grpc::Status(grpc::StatusCode::CANCELLED, "worker stopping");
        waiting_ = &ctx;
      }
      grpc::Status s = stub.AcquireWork(&ctx, req, resp);
      std::lock_guard lock(mu_);
      waiting_ = nullptr;
      return s;
    });
  }
  void cancel_waits() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    if (waiting_) waiting_->TryCancel();
  }
  grpc::Status renew(const v1::RenewLeasesRequest& req, v1::RenewLeasesResponse* resp, int64_t deadline_ms) override {
    return send(deadline_ms, [&](v1::WorkerService::Stub& stub, grpc::ClientContext& ctx) {
      return stub.RenewLeases(&ctx, req, resp);
    });
  }
  grpc::Status complete(const v1::CompleteUnitRequest& req, v1::CompleteUnitResponse* resp,
                        int64_t deadline_ms) override {
    return send(deadline_ms, [&](v1::WorkerService::Stub& stub, grpc::ClientContext& ctx) {
      return stub.CompleteUnit(&ctx, req, resp);
    });
  }
  grpc::Status complete_units(const v1::CompleteUnitsRequest& req, v1::CompleteUnitsResponse* resp,
                              int64_t deadline_ms) override {
    return send(deadline_ms, [&](v1::WorkerService::Stub& stub, grpc::ClientContext& ctx) {
      return stub.CompleteUnits(&ctx, req, resp);
    });
  }
  grpc::Status release(const v1::ReleaseUnitsRequest& req, v1::ReleaseUnitsResponse* resp,
                       int64_t deadline_ms) override {
    return send(deadline_ms, [&](v1::WorkerService::Stub& stub, grpc::ClientContext& ctx) {
      return stub.ReleaseUnits(&ctx, req, resp);
    });
  }

 private:
  // Every call waits for a connection until its deadline (wait_for_ready) instead of failing at
  // once while the channel is reconnecting. gRPC's synchronous API makes progress on a
  // connection only while some call polls it: a call that failed fast, followed by the worker's
  // backoff sleep, left a TLS handshake (several round trips) unattended until its connect
  // deadline passed, so a worker started before its coordinator, or one whose coordinator
  // restarted, never got through again (the Swarm test caught it).
  static void set_deadline(grpc::ClientContext& ctx, int64_t ms) {
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
    ctx.set_wait_for_ready(true);
  }
  // One call to the coordinator calls go to (with several, after waiting a little for its
  // connection: one that does not answer is passed over), reported to the set when it fails, so
  // that the worker's next try goes to the leader.
  template <typename F>
  grpc::Status send(int64_t deadline_ms, F&& call) {
    if (!set_) {
      grpc::ClientContext ctx;
      set_deadline(ctx, deadline_ms);
      return call(*stubs_[0], ctx);
    }
    const CoordinatorSet::Target t = set_->current();
    CoordinatorSet::After after;
    if (!set_->await_current(std::min(deadline_ms, kFailoverConnectMs), &after)) {
      note(after);
      return grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat("coordinator ", t.address, " does not answer; trying ", set_->current().address, " next"));
    }
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    grpc::Status s = call(*stubs_[t.index], ctx);
    note(set_->after(t.index, s));
    return s;
  }
  void note(const CoordinatorSet::After& after) {
    std::lock_guard lock(mu_);
    at_once_ = after.moved && !after.round_over;
  }

 public:
  bool retry_at_once() const override {
    std::lock_guard lock(mu_);
    return at_once_;
  }
  std::string where() const override { return set_ ? set_->describe() : ""; }

 private:
  std::shared_ptr<CoordinatorSet> set_;  // null: one channel
  std::vector<std::unique_ptr<v1::WorkerService::Stub>> stubs_;
  mutable std::mutex mu_;
  grpc::ClientContext* waiting_ = nullptr;  // the acquire in flight
  bool cancelled_ = false;
  bool at_once_ = false;  // the last call moved on to a coordinator not tried since the last success
};

}  // namespace

std::unique_ptr<CoordinatorConnection> grpc_connection(std::shared_ptr<grpc::Channel> channel) {
  return std::make_unique<GrpcConnection>(std::move(channel));
}

std::unique_ptr<CoordinatorConnection> grpc_connection(std::shared_ptr<CoordinatorSet> coordinators) {
  return std::make_unique<GrpcConnection>(std::move(coordinators));
}

}  // namespace c960::cluster
