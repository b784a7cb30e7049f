// The gRPC edge of the coordinator: one thin class per proto service, translating requests to
// Coordinator calls and absl::Status to grpc::Status (the codes share their numbering). Each
// call's caller comes from caller_of(ctx): what the server's authentication (cluster/server.h)
// established, or Caller::local() on a server that authenticates nobody.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/errors.h"
#include "cluster/server.h"
#include "coordinator/coordinator.h"
#include "coordinator/store_backup.h"

namespace c960::cluster {

// Calls in flight per caller on one service (cluster/config.h says why these defaults).
struct ServiceLimits {
  int max_calls_per_caller = kDefaultMaxCallsPerCaller;
  int max_result_streams_per_caller = kDefaultMaxResultStreamsPerCaller;
};

// What each caller has in flight: a call past its caller's limit is refused at once
// (RESOURCE_EXHAUSTED naming the limit's flag) instead of holding a server thread.
class InFlight {
 public:
  // One call counted while it lives.
  class Slot {
   public:
    Slot(InFlight* f, std::string identity) : f_(f), identity_(std::move(identity)) {}
    Slot(Slot&& o) noexcept : f_(std::exchange(o.f_, nullptr)), identity_(std::move(o.identity_)) {}
    Slot& operator=(Slot&&) = delete;
    ~Slot();

   private:
    InFlight* f_;
    std::string identity_;
  };
  // A slot for `identity` while fewer than `limit` are taken; else RESOURCE_EXHAUSTED:
  // "FLAG: N WHAT in flight for WHO, the cap".
  absl::StatusOr<Slot> enter(const std::string& identity, int limit, absl::string_view flag, absl::string_view what);
  int in_flight(const std::string& identity) const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, int> n_;
};

class JobServiceImpl final : public v1::JobService::Service {
 public:
  // `auth`: what configure_server returned.
  explicit JobServiceImpl(Coordinator* c, std::shared_ptr<const CallAuthenticator> auth = nullptr,
                          ServiceLimits limits = {})
      : c_(c), auth_(std::move(auth)), limits_(limits) {}
  grpc::Status SubmitJob(grpc::ServerContext*, const v1::SubmitJobRequest* req, v1::Job* resp) override;
  grpc::Status GetJob(grpc::ServerContext*, const v1::GetJobRequest* req, v1::Job* resp) override;
  grpc::Status ListJobs(grpc::ServerContext*, const v1::ListJobsRequest* req, v1::ListJobsResponse* resp) override;
  grpc::Status CancelJob(grpc::ServerContext*, const v1::CancelJobRequest* req, v1::Job* resp) override;
  grpc::Status WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                        grpc::ServerWriter<v1::Job>* writer) override;
  grpc::Status GetResults(grpc::ServerContext* ctx, const v1::GetResultsRequest* req,
                          grpc::ServerWriter<v1::ResultChunk>* writer) override;
  grpc::Status ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                           v1::ListWorkersResponse* resp) override;

 private:
  Caller caller_of(const grpc::ServerContextBase* ctx) const { return cluster::caller_of(auth_.get(), *ctx); }

  Coordinator* c_;
  std::shared_ptr<const CallAuthenticator> auth_;
  ServiceLimits limits_;
  InFlight calls_;
  InFlight result_streams_;
};

// AcquireWork is served by the callback API: a long-polling worker holds no server thread while
// it waits (10,000 idle workers would otherwise hold 10,000 threads).
class WorkerServiceImpl final : public v1::WorkerService::WithCallbackMethod_AcquireWork<v1::WorkerService::Service> {
 public:
  explicit WorkerServiceImpl(Coordinator* c, std::shared_ptr<const CallAuthenticator> auth = nullptr,
                             ServiceLimits limits = {})
      : c_(c), auth_(std::move(auth)), limits_(limits) {}
  grpc::Status Hello(grpc::ServerContext*, const v1::HelloRequest* req, v1::HelloResponse* resp) override;
  grpc::Status Enroll(grpc::ServerContext*, const v1::EnrollRequest* req, v1::EnrollResponse* resp) override;
  grpc::ServerUnaryReactor* AcquireWork(grpc::CallbackServerContext* ctx, const v1::AcquireWorkRequest* req,
                                        v1::AcquireWorkResponse* resp) override;
  grpc::Status RenewLeases(grpc::ServerContext*, const v1::RenewLeasesRequest* req,
                           v1::RenewLeasesResponse* resp) override;
  grpc::Status CompleteUnit(grpc::ServerContext*, const v1::CompleteUnitRequest* req,
                            v1::CompleteUnitResponse* resp) override;
  grpc::Status CompleteUnits(grpc::ServerContext*, const v1::CompleteUnitsRequest* req,
                             v1::CompleteUnitsResponse* resp) override;
  grpc::Status ReleaseUnits(grpc::ServerContext*, const v1::ReleaseUnitsRequest* req,
                            v1::ReleaseUnitsResponse* resp) override;

 private:
  Caller caller_of(const grpc::ServerContextBase* ctx) const { return cluster::caller_of(auth_.get(), *ctx); }

  Coordinator* c_;
  std::shared_ptr<const CallAuthenticator> auth_;
  ServiceLimits limits_;
  InFlight calls_;
};

// The coordinator's housekeeping (admin role only, cluster/auth.cpp): backups of the store.
// `backups` may be null (a store that StoreBackups cannot copy): BackupStore is then
// FAILED_PRECONDITION.
class AdminServiceImpl final : public v1::AdminService::Service {
 public:
  // backups: nullptr when the coordinator keeps none; `embedded`: whether its store is an SQLite
  // file (a PostgreSQL one is backed up with PostgreSQL's tools).
  explicit AdminServiceImpl(StoreBackups* backups, bool embedded = true) : backups_(backups), embedded_(embedded) {}
  grpc::Status BackupStore(grpc::ServerContext*, const v1::BackupStoreRequest* req,
                           v1::BackupStoreResponse* resp) override;

 private:
  StoreBackups* backups_;
  bool embedded_;
};

}  // namespace c960::cluster
