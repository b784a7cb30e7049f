// What a worker needs from its coordinator: the WorkerService calls, each with a deadline.
// The worker's retry, re-registration and keep-results-until-acknowledged logic talks to this
// interface only, so that tests drive it with an in-process coordinator and injected failures.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "c960/v1/cluster.pb.h"
#include "cluster/coordinator_set.h"

namespace c960::cluster {

class CoordinatorConnection {
 public:
  virtual ~CoordinatorConnection() = default;
  virtual grpc::Status hello(const v1::HelloRequest& req, v1::HelloResponse* resp, int64_t deadline_ms) = 0;
  virtual grpc::Status acquire(const v1::AcquireWorkRequest& req, v1::AcquireWorkResponse* resp,
                               int64_t deadline_ms) = 0;
  virtual grpc::Status renew(const v1::RenewLeasesRequest& req, v1::RenewLeasesResponse* resp, int64_t deadline_ms) = 0;
  virtual grpc::Status complete(const v1::CompleteUnitRequest& req, v1::CompleteUnitResponse* resp,
                                int64_t deadline_ms) = 0;
  // Several completions in one call; UNIMPLEMENTED where the coordinator (or the connection)
  // has no such call, and the worker then sends them one by one.
  virtual grpc::Status complete_units(const v1::CompleteUnitsRequest& /*req*/, v1::CompleteUnitsResponse* /*resp*/,
                                      int64_t /*deadline_ms*/) {
    return grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "complete_units");
  }
  // Ends a waiting acquire (long poll) at once, and every later one, from any thread: the
  // worker is stopping.
  virtual void cancel_waits() {}
  virtual grpc::Status release(const v1::ReleaseUnitsRequest& req, v1::ReleaseUnitsResponse* resp,
                               int64_t deadline_ms) = 0;
  // After a call that failed as "not there": true when the next try may go at once, because it
  // goes to a coordinator not tried since the last success (CoordinatorSet::After); false when
  // every one was (or there is one): the worker backs off first.
  virtual bool retry_at_once() const { return false; }
  // The coordinators calls go to, for messages ("" when not known).
  virtual std::string where() const { return ""; }
};

// The real thing: WorkerService over a gRPC channel.
std::unique_ptr<CoordinatorConnection> grpc_connection(std::shared_ptr<grpc::Channel> channel);
// The same over a leader and its standbys: each call goes to the one that leads.
std::unique_ptr<CoordinatorConnection> grpc_connection(std::shared_ptr<CoordinatorSet> coordinators);

}  // namespace c960::cluster
