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

InFlight::Slot::~Slot() {
  if (!f_) return;
  std::lock_guard lock(f_->mu_);
  if (--f_->n_[identity_] <= 0) f_->n_.erase(identity_);
}

absl::StatusOr<InFlight::Slot> InFlight::enter(const std::string& identity, int limit, absl::string_view flag,
                                               absl::string_view what) {
  std::lock_guard lock(mu_);
  int& n = n_[identity];
  if (n >= limit) {
    const int held = n;
    if (n == 0) n_.erase(identity);
    return absl::ResourceExhaustedError(absl::StrCat(flag, ": ", held, " ", what, " in flight for ",
                                                     identity.empty() ? "anonymous callers" : identity, ", the cap"));
  }
  ++n;
  return Slot(this, identity);
}

int InFlight::in_flight(const std::string& identity) const {
  std::lock_guard lock(mu_);
  auto it = n_.find(identity);
  return it == n_.end() ? 0 : it->second;
}

namespace {

// Runs call(caller) in one of the caller's unary call slots: a caller's calls in flight at once
// are capped (authenticated callers: without authentication every caller is the operator).
template <typename F>
grpc::Status unary(InFlight& calls, int limit, const Caller& caller, F&& call) {
  if (!caller.authenticated) return call(caller);
  absl::StatusOr<InFlight::Slot> slot = calls.enter(caller.identity, limit, "max-calls-per-caller", "calls");
  if (!slot.ok()) return to_grpc(slot.status());
  return call(caller);
}

}  // namespace

grpc::Status JobServiceImpl::SubmitJob(grpc::ServerContext* ctx, const v1::SubmitJobRequest* req, v1::Job* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx), [&](const Caller& caller) {
    return reply(c_->submit(caller, *req, [ctx] { return ctx->IsCancelled(); }), resp);
  });
}

grpc::Status JobServiceImpl::GetJob(grpc::ServerContext* ctx, const v1::GetJobRequest* req, v1::Job* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->get_job(caller, req->job_id()), resp); });
}

grpc::Status JobServiceImpl::ListJobs(grpc::ServerContext* ctx, const v1::ListJobsRequest* req,
                                      v1::ListJobsResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->list_jobs(caller, *req), resp); });
}

grpc::Status JobServiceImpl::ListWorkers(grpc::ServerContext* ctx, const v1::ListWorkersRequest* req,
                                         v1::ListWorkersResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->list_workers(caller, *req), resp); });
}

grpc::Status JobServiceImpl::CancelJob(grpc::ServerContext* ctx, const v1::CancelJobRequest* req, v1::Job* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->cancel(caller, req->job_id()), resp); });
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
  // Chunks go out as the coordinator reads them (self-play: page by page from the store). Each
  // stream holds a server thread while it lasts: a caller's are capped (anonymous callers share).
  const Caller caller = caller_of(ctx);
  absl::StatusOr<InFlight::Slot> slot = result_streams_.enter(caller.identity, limits_.max_result_streams_per_caller,
                                                              "max-result-streams-per-caller", "GetResults streams");
  if (!slot.ok()) return to_grpc(slot.status());
  bool closed = false;
  absl::Status s = c_->results(caller, req->job_id(), req->divide(), req->omit_games(), [&](const v1::ResultChunk& c) {
    closed = ctx->IsCancelled() || !writer->Write(c);
    return !closed;
  });
  if (!s.ok()) return to_grpc(s);
  if (closed) return grpc::Status(grpc::StatusCode::CANCELLED, "stream closed");
  return grpc::Status::OK;
}

grpc::Status WorkerServiceImpl::Hello(grpc::ServerContext* ctx, const v1::HelloRequest* req, v1::HelloResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->hello(caller, *req), resp); });
}

grpc::Status WorkerServiceImpl::Enroll(grpc::ServerContext* ctx, const v1::EnrollRequest* req,
                                       v1::EnrollResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->enroll(caller, *req), resp); });
}

namespace {

// One AcquireWork call: answered when the coordinator calls back (at once, or when its long poll
// ends); a client that goes away ends the wait. Not counted in the caller's calls in flight: a
// session has one waiting call at most (a newer call of the session ends the older), so a
// credential has at most as many as its workers (--max-workers-per-credential), and a waiting
// call holds no thread.
class AcquireReactor final : public grpc::ServerUnaryReactor {
 public:
  AcquireReactor(Coordinator* c, v1::AcquireWorkResponse* resp) : c_(c), resp_(resp), ticket_(c->new_ticket()) {}
  void start(const Caller& caller, const v1::AcquireWorkRequest& req, const CallAuthenticator* auth,
             const grpc::CallbackServerContext* ctx) {
    // A credential revoked while the call waits (a reload) ends it, without a lease. The context
    // outlives every call of `authorized`: they come before `done`, which finishes the call.
    Coordinator::StillAuthorized authorized;
    if (auth) authorized = [auth, ctx] { return auth->still_authorized(*ctx); };
    // May finish (and delete this) before it returns: nothing touches members after it.
    c_->acquire_async(
        caller, req, ticket_,
        [this](absl::StatusOr<v1::AcquireWorkResponse> r) {
          if (!r.ok()) return Finish(to_grpc(r.status()));
          *resp_ = std::move(*r);
          Finish(grpc::Status::OK);
        },
        std::move(authorized));
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
  reactor->start(caller_of(ctx), *req, auth_.get(), ctx);
  return reactor;
}

grpc::Status WorkerServiceImpl::RenewLeases(grpc::ServerContext* ctx, const v1::RenewLeasesRequest* req,
                                            v1::RenewLeasesResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->renew(caller, *req), resp); });
}

grpc::Status WorkerServiceImpl::CompleteUnit(grpc::ServerContext* ctx, const v1::CompleteUnitRequest* req,
                                             v1::CompleteUnitResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->complete(caller, *req), resp); });
}

grpc::Status WorkerServiceImpl::CompleteUnits(grpc::ServerContext* ctx, const v1::CompleteUnitsRequest* req,
                                              v1::CompleteUnitsResponse* resp) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return reply(c_->complete_units(caller, *req), resp); });
}

grpc::Status WorkerServiceImpl::ReleaseUnits(grpc::ServerContext* ctx, const v1::ReleaseUnitsRequest* req,
                                             v1::ReleaseUnitsResponse*) {
  return unary(calls_, limits_.max_calls_per_caller, caller_of(ctx),
               [&](const Caller& caller) { return to_grpc(c_->release(caller, *req)); });
}

grpc::Status AdminServiceImpl::BackupStore(grpc::ServerContext*, const v1::BackupStoreRequest*,
                                           v1::BackupStoreResponse* resp) {
  if (!backups_ && !embedded_)
    return to_grpc(absl::FailedPreconditionError(
        "backup: the store is a PostgreSQL database: back it up with PostgreSQL's own tools (pg_basebackup, pg_dump, "
        "or the managed database's backups)"));
  if (!backups_) return to_grpc(absl::FailedPreconditionError("backup: this coordinator's store has no backups"));
  absl::StatusOr<BackupMade> made = backups_->backup_now();
  if (!made.ok()) return to_grpc(made.status());
  resp->set_path(made->path);
  resp->set_bytes(made->bytes);
  resp->set_seconds(made->seconds);
  for (const std::string& r : made->removed) resp->add_removed(r);
  return grpc::Status::OK;
}

}  // namespace c960::cluster
