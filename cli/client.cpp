#include "cli/client.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "cluster/channel.h"

namespace c960::cli {
namespace {

void set_deadline(grpc::ClientContext& ctx, int64_t ms) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

void sleep_ms(int64_t ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

absl::Status to_absl(const grpc::Status& s) {
  return s.ok() ? absl::OkStatus() : absl::Status(absl::StatusCode(int(s.error_code())), s.error_message());
}

bool is_final(v1::JobState s) { return s != v1::JOB_STATE_RUNNING; }

}  // namespace

std::string resolve_coordinator(const std::optional<std::string>& flag, const char* env) {
  if (flag) return *flag;
  if (env && *env) return env;
  return cluster::kDefaultCoordinator;
}

bool should_retry(grpc::StatusCode code, bool idempotent) {
  return code == grpc::StatusCode::UNAVAILABLE || (idempotent && code == grpc::StatusCode::DEADLINE_EXCEEDED);
}

bool should_reconnect(grpc::StatusCode code, bool got_updates) {
  return code == grpc::StatusCode::UNAVAILABLE || code == grpc::StatusCode::DEADLINE_EXCEEDED ||
         (code == grpc::StatusCode::CANCELLED && got_updates);
}

int64_t next_backoff_ms(int64_t backoff_ms, const RetryPolicy& policy) {
  return std::min(backoff_ms * 2, policy.max_backoff_ms);
}

grpc::Status call_with_retry(const std::function<grpc::Status()>& call, bool idempotent, const RetryPolicy& policy,
                             const std::function<void(int64_t)>& sleep) {
  int64_t backoff = policy.initial_backoff_ms;
  for (int attempt = 0;; ++attempt) {
    grpc::Status s = call();
    if (!should_retry(s.error_code(), idempotent) || attempt >= policy.max_retries) return s;
    sleep(backoff);
    backoff = next_backoff_ms(backoff, policy);
  }
}

Client::Client(std::string address, RetryPolicy policy)
    : Client(cluster::ChannelOptions{std::move(address), std::nullopt, "", ""}, policy) {}

Client::Client(cluster::ChannelOptions options, RetryPolicy policy)
    : options_(std::move(options)), policy_(policy), set_(options_) {
  for (size_t k = 0; k < set_.size(); ++k) stubs_.push_back(v1::JobService::NewStub(set_.channel(k)));
}

v1::JobService::Stub* Client::stub() {
  target_ = set_.current().index;
  return stubs_[target_].get();
}

absl::Status Client::connect() {
  if (connected_) return absl::OkStatus();
  if (set_.size() > 1) {
    // Several coordinators: the first that connects within the time (a standby among them sends
    // the calls on to the leader it names).
    const int64_t rounds = std::max<int64_t>(1, cluster::kConnectTimeoutMs / cluster::kFailoverConnectMs);
    for (size_t k = 0; k < set_.size() * size_t(rounds); ++k)
      if (set_.await_current(cluster::kFailoverConnectMs)) {
        connected_ = true;
        return absl::OkStatus();
      }
    return absl::UnavailableError(absl::StrCat("none of the coordinators ", options_.address, " answered"));
  }
  const std::shared_ptr<grpc::Channel> channel = set_.channel(0);
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(cluster::kConnectTimeoutMs);
  const cluster::ClientTls* tls = options_.tls ? &*options_.tls : nullptr;
  bool probed = false;
  for (grpc_connectivity_state s = channel->GetState(true); s != GRPC_CHANNEL_READY; s = channel->GetState(true)) {
    // At the first failed attempt, look once: a TLS mismatch is said at once, while a refused
    // port may be a coordinator that is starting, so that one is waited for.
    if (s == GRPC_CHANNEL_TRANSIENT_FAILURE && !probed) {
      probed = true;
      if (cluster::ConnectionProblem p = cluster::diagnose_connection(address(), tls); p.lasting)
        return absl::UnavailableError(p.message);
    }
    if (!channel->WaitForStateChange(s, deadline)) {
      const cluster::ConnectionProblem p = cluster::diagnose_connection(address(), tls);
      return absl::UnavailableError(
          p.message.empty() ? absl::StrCat("no connection within ", cluster::kConnectTimeoutMs, " ms") : p.message);
    }
  }
  connected_ = true;
  return absl::OkStatus();
}

absl::Status Client::call(const std::function<grpc::Status()>& fn, bool idempotent) {
  if (absl::Status s = connect(); !s.ok()) return s;
  return to_absl(call_with_retry(
      [&] {
        grpc::Status s = fn();
        // A standby's answer, or no answer: the next try goes to the leader (or the next address).
        if (set_.failed(target_, s)) return grpc::Status(grpc::StatusCode::UNAVAILABLE, s.error_message());
        return s;
      },
      idempotent, policy_, sleep_ms));
}

absl::Status Client::submit(const v1::SubmitJobRequest& request, v1::Job* job) {
  return call(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kSubmitDeadlineMs);
        return stub()->SubmitJob(&ctx, request, job);
      },
      // Not re-sent past its deadline: the coordinator stopped that plan, and planning it again
      // would cost as much. (An UNAVAILABLE coordinator is asked again with the same request
      // id: a stored job is returned, one still being planned says so.)
      false);
}

absl::Status Client::get_job(const std::string& id, v1::Job* job) {
  v1::GetJobRequest req;
  req.set_job_id(id);
  return call(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kRpcDeadlineMs);
        return stub()->GetJob(&ctx, req, job);
      },
      true);
}

absl::Status Client::list_jobs(v1::ListJobsResponse* response) {
  return call(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kRpcDeadlineMs);
        return stub()->ListJobs(&ctx, v1::ListJobsRequest(), response);
      },
      true);
}

absl::Status Client::cancel(const std::string& id, v1::Job* job) {
  v1::CancelJobRequest req;
  req.set_job_id(id);
  return call(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kRpcDeadlineMs);
        return stub()->CancelJob(&ctx, req, job);
      },
      true);  // cancelling twice is cancelling once
}

absl::Status Client::backup_store(v1::BackupStoreResponse* response) {
  return call(
      [&] {
        // A stub of the channel the call goes to (which may change between tries).
        std::unique_ptr<v1::AdminService::Stub> admin = v1::AdminService::NewStub(set_.channel(set_.current().index));
        target_ = set_.current().index;
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kBackupDeadlineMs);
        return admin->BackupStore(&ctx, v1::BackupStoreRequest(), response);
      },
      // Asked again only while the coordinator is unreachable; a copy that ran out of time is not
      // started over (it would take as long again).
      false);
}

absl::Status Client::list_workers(bool include_lost, v1::ListWorkersResponse* response) {
  v1::ListWorkersRequest req;
  req.set_include_lost(include_lost);
  req.set_page_size(cluster::kMaxPageSize);
  response->Clear();
  // Every page, in name order.
  for (;;) {
    v1::ListWorkersResponse page;
    if (absl::Status s = call(
            [&] {
              page.Clear();
              grpc::ClientContext ctx;
              set_deadline(ctx, cluster::kRpcDeadlineMs);
              return stub()->ListWorkers(&ctx, req, &page);
            },
            true);
        !s.ok())
      return s;
    for (v1::WorkerInfo& w : *page.mutable_workers()) *response->add_workers() = std::move(w);
    if (page.next_page_token().empty()) return absl::OkStatus();
    req.set_page_token(page.next_page_token());
  }
}

absl::Status Client::results(const std::string& id, bool divide, bool omit_games,
                             std::vector<v1::ResultChunk>* chunks) {
  v1::GetResultsRequest req;
  req.set_job_id(id);
  req.set_divide(divide);
  req.set_omit_games(omit_games);
  return call(
      [&] {
        chunks->clear();
        grpc::ClientContext ctx;
        // Planning-sized deadline: a big job's results take a while to stream.
        set_deadline(ctx, cluster::kSubmitDeadlineMs);
        std::unique_ptr<grpc::ClientReader<v1::ResultChunk>> reader = stub()->GetResults(&ctx, req);
        v1::ResultChunk chunk;
        while (reader->Read(&chunk)) chunks->push_back(chunk);
        return reader->Finish();
      },
      true);
}

absl::Status Client::results(const std::string& id, bool divide, bool omit_games,
                             const std::function<bool(const v1::ResultChunk&)>& on_chunk) {
  v1::GetResultsRequest req;
  req.set_job_id(id);
  req.set_divide(divide);
  req.set_omit_games(omit_games);
  bool delivered = false;
  return call(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kResultsStreamDeadlineMs);
        std::unique_ptr<grpc::ClientReader<v1::ResultChunk>> reader = stub()->GetResults(&ctx, req);
        v1::ResultChunk chunk;
        while (reader->Read(&chunk)) {
          delivered = true;
          if (!on_chunk(chunk)) {
            ctx.TryCancel();
            reader->Finish().ok();
            return grpc::Status(grpc::StatusCode::CANCELLED, "results: stopped by the reader");
          }
        }
        grpc::Status st = reader->Finish();
        // Chunks already handed on cannot be taken back: no retry from the start then.
        if (!st.ok() && delivered && st.error_code() == grpc::StatusCode::UNAVAILABLE)
          return grpc::Status(grpc::StatusCode::ABORTED, absl::StrCat("results stream broke: ", st.error_message()));
        return st;
      },
      true);
}

absl::Status Client::watch(const std::string& id, const std::function<void(const v1::Job&)>& on_update,
                           v1::Job* final_job, const std::function<void(const absl::Status&)>& on_retry) {
  if (absl::Status s = connect(); !s.ok()) return s;
  v1::WatchJobRequest req;
  req.set_job_id(id);
  int64_t backoff = policy_.initial_backoff_ms;
  bool ever_got = false;
  for (int attempt = 0;; ++attempt) {
    grpc::ClientContext ctx;
    // The coordinator sends the job's state at once: until it has, a unary call's deadline.
    set_deadline(ctx, ever_got ? kWatchStreamDeadlineMs : cluster::kRpcDeadlineMs);
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader = stub()->WatchJob(&ctx, req);
    v1::Job job;
    v1::JobSpec spec;  // the stream's first message carries it, later ones not
    while (reader->Read(&job)) {
      if (job.has_spec())
        spec = job.spec();
      else
        *job.mutable_spec() = spec;
      ever_got = true;
      backoff = policy_.initial_backoff_ms;
      on_update(job);
      if (is_final(job.state())) {
        reader->Finish().IgnoreError();  // the stream ends by itself after a final state
        *final_job = job;
        return absl::OkStatus();
      }
    }
    const grpc::Status s = reader->Finish();
    if (s.ok()) return absl::InternalError("the coordinator ended the watch before the job ended");
    set_.failed(target_, s);  // a standby, or no answer: the next stream goes to the leader
    // Once any stream had updates, CANCELLED is the coordinator going away (also when a new
    // stream meets it still shutting down), not a refusal.
    if (!should_reconnect(s.error_code(), ever_got)) return to_absl(s);
    if (!ever_got && attempt >= policy_.max_retries) {
      // Never answered: said as unreachable (rpc_fail's "cannot reach the coordinator").
      return absl::UnavailableError(
          absl::StrCat("no answer to a watch after ", attempt + 1, " attempts; last: ", s.error_message()));
    }
    // A stream that lived to its deadline is renewed without a word; anything else is an outage.
    if (on_retry && (s.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED || !ever_got)) on_retry(to_absl(s));
    sleep_ms(backoff);
    backoff = next_backoff_ms(backoff, policy_);
    // Then watch the channel connect: gRPC's synchronous API moves a connection on only while
    // something polls it, so a failed call and a sleep alone left a TLS handshake unattended and
    // the watch never got back ("Handshake read failed" for ever).
    await_channel(cluster::kRpcDeadlineMs);
  }
}

void Client::await_channel(int64_t ms) {
  if (set_.size() > 1) {
    set_.await_current(std::min(ms, cluster::kFailoverConnectMs));
    return;
  }
  const std::shared_ptr<grpc::Channel> channel = set_.channel(0);
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
  for (grpc_connectivity_state s = channel->GetState(true); s != GRPC_CHANNEL_READY; s = channel->GetState(true))
    if (!channel->WaitForStateChange(s, deadline)) return;
}

}  // namespace c960::cli
