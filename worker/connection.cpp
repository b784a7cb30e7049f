#include "worker/connection.h"

#include <chrono>
#include <mutex>

#include "c960/v1/cluster.grpc.pb.h"

namespace c960::cluster {
namespace {

class GrpcConnection final : public CoordinatorConnection {
 public:
  explicit GrpcConnection(const std::shared_ptr<grpc::Channel>& channel) : stub_(v1::WorkerService::NewStub(channel)) {}

  grpc::Status hello(const v1::HelloRequest& req, v1::HelloResponse* resp, int64_t deadline_ms) override {
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    return stub_->Hello(&ctx, req, resp);
  }
  grpc::Status acquire(const v1::AcquireWorkRequest& req, v1::AcquireWorkResponse* resp, int64_t deadline_ms) override {
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    {
      std::lock_guard lock(mu_);
      if (cancelled_) return grpc::Status(grpc::StatusCode::CANCELLED, "worker stopping");
      waiting_ = &ctx;
    }
    grpc::Status s = stub_->AcquireWork(&ctx, req, resp);
    std::lock_guard lock(mu_);
    waiting_ = nullptr;
    return s;
  }
  void cancel_waits() override {
    std::lock_guard lock(mu_);
    cancelled_ = true;
    if (waiting_) waiting_->TryCancel();
  }
  grpc::Status renew(const v1::RenewLeasesRequest& req, v1::RenewLeasesResponse* resp, int64_t deadline_ms) override {
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    return stub_->RenewLeases(&ctx, req, resp);
  }
  grpc::Status complete(const v1::CompleteUnitRequest& req, v1::CompleteUnitResponse* resp,
                        int64_t deadline_ms) override {
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    return stub_->CompleteUnit(&ctx, req, resp);
  }
  grpc::Status complete_units(const v1::CompleteUnitsRequest& req, v1::CompleteUnitsResponse* resp,
                              int64_t deadline_ms) override {
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    return stub_->CompleteUnits(&ctx, req, resp);
  }
  grpc::Status release(const v1::ReleaseUnitsRequest& req, v1::ReleaseUnitsResponse* resp,
                       int64_t deadline_ms) override {
    grpc::ClientContext ctx;
    set_deadline(ctx, deadline_ms);
    return stub_->ReleaseUnits(&ctx, req, resp);
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
  std::unique_ptr<v1::WorkerService::Stub> stub_;
  std::mutex mu_;
  grpc::ClientContext* waiting_ = nullptr;  // the acquire in flight
  bool cancelled_ = false;
};

}  // namespace

std::unique_ptr<CoordinatorConnection> grpc_connection(std::shared_ptr<grpc::Channel> channel) {
  return std::make_unique<GrpcConnection>(std::move(channel));
}

}  // namespace c960::cluster
