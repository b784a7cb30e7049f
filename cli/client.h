// The c960 tool's side of the JobService: where the coordinator is, a deadline on every call,
// a quick first connection (or why not), retries of transient failures with exponential
// backoff, watches that reconnect, and results
// gathered from their stream. No printing: errors come back as statuses (absl and gRPC share
// the numbering), and the commands decide what to say and how to exit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cluster/channel.h"
#include "cluster/config.h"
#include "cluster/coordinator_set.h"

namespace c960::cli {

// The coordinator's address: `flag` (--coordinator) when given, else `env`
// ($C960_COORDINATOR) when set and not empty, else cluster::kDefaultCoordinator.
std::string resolve_coordinator(const std::optional<std::string>& flag, const char* env);

// A watch stream is closed after this long and opened again, so that no call is without a
// deadline and a silently dead connection is noticed.
inline constexpr int64_t kWatchStreamDeadlineMs = 60'000;

struct RetryPolicy {
  int max_retries = 8;  // with the backoff below: about half a minute in all
  int64_t initial_backoff_ms = cluster::kBackoffInitialMs;
  int64_t max_backoff_ms = cluster::kBackoffMaxMs;
};

// Whether a unary or result call that ended with `code` is tried again: only UNAVAILABLE (the
// coordinator is not reachable, e.g. restarting), and DEADLINE_EXCEEDED when repeating the call
// cannot do anything twice.
bool should_retry(grpc::StatusCode code, bool idempotent);
// Whether a watch whose stream ended with `code` is opened again: UNAVAILABLE,
// DEADLINE_EXCEEDED (the stream's own deadline), and CANCELLED after updates arrived (the
// coordinator shutting down; CANCELLED before any update is a refusal).
bool should_reconnect(grpc::StatusCode code, bool got_updates);
// The wait after `backoff_ms`: doubled, at most policy.max_backoff_ms.
int64_t next_backoff_ms(int64_t backoff_ms, const RetryPolicy& policy);

// Runs `call` until it succeeds, fails for good (should_retry) or policy.max_retries retries
// are spent, waiting through `sleep_ms` between attempts. Returns the last status.
grpc::Status call_with_retry(const std::function<grpc::Status()>& call, bool idempotent, const RetryPolicy& policy,
                             const std::function<void(int64_t)>& sleep_ms);

class Client {
 public:
  // A plaintext client of `address`.
  explicit Client(std::string address, RetryPolicy policy = {});
  // A client as the options say (TLS, token): cluster_command.h's connection_options().
  explicit Client(cluster::ChannelOptions options, RetryPolicy policy = {});

  const std::string& address() const { return options_.address; }

  // Idempotent through the request id: a retried submit returns the job the first one made.
  absl::Status submit(const v1::SubmitJobRequest& request, v1::Job* job);
  absl::Status get_job(const std::string& id, v1::Job* job);
  absl::Status list_jobs(v1::ListJobsResponse* response);
  absl::Status cancel(const std::string& id, v1::Job* job);
  absl::Status list_workers(bool include_lost, v1::ListWorkersResponse* response);
  // AdminService.BackupStore: a copy of the coordinator's store made now (admin role).
  absl::Status backup_store(v1::BackupStoreResponse* response);
  // Every result chunk of the job, in the coordinator's order; with omit_games the self-play
  // chunks carry counts only. A retry starts the stream again from the beginning.
  absl::Status results(const std::string& id, bool divide, bool omit_games, std::vector<v1::ResultChunk>* chunks);
  // The same chunks handed to on_chunk as they arrive (constant memory); retried only while none
  // arrived. A false from on_chunk ends the stream (CANCELLED).
  absl::Status results(const std::string& id, bool divide, bool omit_games,
                       const std::function<bool(const v1::ResultChunk&)>& on_chunk);
  // Follows the job until it reaches a final state, calling `on_update` with every state the
  // coordinator sends, the final one last, and reconnecting (should_reconnect) for as long as
  // it takes, e.g. through coordinator restarts. OK once a final state arrived; *final_job
  // holds it. `on_retry`, when given, hears why the stream broke before each wait to reconnect.
  // A watch that never received a state gives up after policy.max_retries reconnects with the
  // last status, so that an address where no coordinator answers is said, not waited on.
  absl::Status watch(const std::string& id, const std::function<void(const v1::Job&)>& on_update, v1::Job* final_job,
                     const std::function<void(const absl::Status&)>& on_retry = nullptr);

 private:
  absl::Status call(const std::function<grpc::Status()>& call, bool idempotent);
  // The first call waits at most cluster::kConnectTimeoutMs for a connection, so that a wrong
  // address is said within seconds, and a TLS mismatch at once, with what to fix
  // (cluster::diagnose_connection); later calls retry through restarts as usual.
  absl::Status connect();
  // Polls the channel until it is READY, at most `ms`: this is what moves a (TLS) connection on
  // between a watch's attempts.
  void await_channel(int64_t ms);

  // The stub of the coordinator calls go to now; remembers which, for failed().
  v1::JobService::Stub* stub();

  cluster::ChannelOptions options_;
  RetryPolicy policy_;
  cluster::CoordinatorSet set_;  // one coordinator, or a leader and its standbys
  std::vector<std::unique_ptr<v1::JobService::Stub>> stubs_;
  size_t target_ = 0;  // the target of the call in flight
  bool connected_ = false;
};

}  // namespace c960::cli
