#include "coordinator/service.h"

#include <chrono>
#include <thread>

namespace c960::cluster {
namespace {

// Copies the value into *out, or returns the error.
template <typename T>
grpc::Status reply(absl::StatusOr<T> v, T* out) {
  if (!v.ok()) return to_grpc(v.status());
  *out = std::move(*v);
  return grpc::Status::OK;
}

// Watch streams send at most this often, so a busy job does not flood a slow client.
constexpr auto kWatchMinInterval = std::chrono::milliseconds(250);
constexpr int64_t kWatchPollMs = 1000;

}  // namespace

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req, v1::Job* resp) {
  return reply(c_->submit(caller_of(ctx), *req, [ctx] { return ctx->IsCancelled(); }), resp);
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::Job* resp) {
  return reply(c_->get_job(caller_of(ctx), req->job_id()), resp);
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                      v1::ListJobsResponse* resp) {
  return reply(c_->list_jobs(caller_of(ctx), *req), resp);
}

grpc::Status JobServiceImpl::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                                         v1::ListWorkersResponse* resp) {
  return reply(c_->list_workers(caller_of(ctx), *req), resp);
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req, v1::Job* resp) {
  return reply(c_->cancel(caller_of(ctx), req->job_id()), resp);
}

grpc::Status JobServiceImpl::WatchJob(grpc::ServerContext* ctx, const v1::WatchJobRequest* req,
                                      grpc::ServerWriter<v1::Job>* writer) {
  const Caller caller = caller_of(ctx);
  absl::StatusOr<std::unique_ptr<Coordinator::WatchSlot>> slot = c_->open_watch(caller);
  if (!slot.ok()) return to_grpc(slot.status());
  uint64_t version = 0;
  for (bool first = true;; first = false) {
    absl::StatusOr<v1::Job> job = c_->watch(caller, req->job_id(), &version, kWatchPollMs, first);
    if (!job.ok()) return to_grpc(job.status());
    if (ctx->IsCancelled()) return grpc::Status(grpc::StatusCode::CANCELLED, "client went away");
    if (!writer->Write(*job)) return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
    if (Coordinator::is_final(job->state())) return grpc::Status::OK;
    if (c_->shutting_down()) return grpc::Status(grpc::StatusCode::CANCELLED, "coordinator shutting down");
    // A token revoked (or taken out of the tokens file) while its watch is open ends the watch:
    // a reload reaches open streams, not only new calls.
    if (!cluster::still_authorized(auth_.get(), *ctx))
      return grpc::Status(grpc::StatusCode::UNAUTHENTICATED, "token: revoked while the watch was open");
    std::this_thread::sleep_for(kWatchMinInterval);
  }
}

grpc::Status JobServiceImpl::GetResults(grpc::ServerContext* ctx, const v1::GetResultsRequest* req,
                                        grpc::ServerWriter<v1::ResultChunk>* writer) {
  // Chunks go out as the coordinator reads them (self-play: page by page from the store).
  bool closed = false;
  absl::Status s =
      c_->results(caller_of(ctx), req->job_id(), req->divide(), req->omit_games(), [&](const v1::ResultChunk& c) {
        closed = ctx->IsCancelled() || !writer->Write(c);
        return !closed;
      });
  if (!s.ok()) return to_grpc(s);
  if (closed) return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req, v1::HelloResponse* resp) {
  return reply(c_->hello(caller_of(ctx), *req), resp);
}

grpc::Status WorkerServiceImpl::Enroll(grpc::ServerContext* ctx, const v1::EnrollRequest* req,
                                       v1::EnrollResponse* resp) {
  return reply(c_->enroll(caller_of(ctx), *req), resp);
}

namespace {

// One AcquireWork call: answered when the coordinator calls back (at once, or when its long poll
// ends); a client that goes away ends the wait.
class AcquireReactor final : public grpc::ServerUnaryReactor {
 public:
  AcquireReactor(Coordinator* c, v1::AcquireWorkResponse* resp) : c_(c), resp_(resp), ticket_(c->new_ticket()) {}
  void start(const Caller& caller, const v1::AcquireWorkRequest& req) {
    // May finish (and delete this) before it returns: nothing touches members after it.
    c_->acquire_async(caller, req, ticket_, [this](absl::StatusOr<v1::AcquireWorkResponse> r) {
      if (!r.ok()) return Finish(to_grpc(r.status()));
      *resp_ = std::move(*r);
      Finish(grpc::Status::OK);
    });
  }
  void OnCancel() override { c_->cancel_acquire(ticket_); }
  void OnDone() override { delete this; }

 private:
  Coordinator* c_;
  v1::AcquireWorkResponse* resp_;
  const uint64_t ticket_;
};

}  // namespace

grpc::ServerUnaryReactor* WorkerServiceImpl::AcquireWork(grpc::CallbackServerContext* ctx,
                                                         const v1::AcquireWorkRequest* req,
                                                         v1::AcquireWorkResponse* resp) {
  auto* reactor = new AcquireReactor(c_, resp);
  reactor->start(caller_of(ctx), *req);
  return reactor;
}

grpc::Status WorkerServiceImpl::RenewLeases(grpc::ServerContext* ctx, const v1::RenewLeasesRequest* req,
                                            v1::RenewLeasesResponse* resp) {
  return reply(c_->renew(caller_of(ctx), *req), resp);
}

grpc::Status WorkerServiceImpl::CompleteUnit(grpc::ServerContext* ctx, const v1::CompleteUnitRequest* req,
                                             v1::CompleteUnitResponse* resp) {
  return reply(c_->complete(caller_of(ctx), *req), resp);
}

grpc::Status WorkerServiceImpl::CompleteUnits(grpc::ServerContext* ctx, const v1::CompleteUnitsRequest* req,
                                              v1::CompleteUnitsResponse* resp) {
  return reply(c_->complete_units(caller_of(ctx), *req), resp);
}

grpc::Status WorkerServiceImpl::ReleaseUnits(grpc::ServerContext* ctx, const v1::ReleaseUnitsRequest* req,
                                             v1::ReleaseUnitsResponse*) {
  return to_grpc(c_->release(caller_of(ctx), *req));
}

}  // namespace c960::cluster
