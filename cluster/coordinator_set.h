// The client side of a leader and its standbys: the coordinators a client was given (a comma-
// separated list in --coordinator or $C960_COORDINATOR, or one name that resolves to several
// addresses), one gRPC channel to each, and which one calls go to. Every client of the
// coordinator (the worker's connection, the c960 tool) sends each call to current() and reports
// a failed call with failed(): a standby's UNAVAILABLE naming the leader (REASON_NOT_LEADER)
// moves calls to that leader when it is one of the set; a coordinator that does not answer, or
// a standby that names no leader, moves them to the next address, round the list. The caller's
// own retry and backoff then send the call again: at once while the set moves to an address that
// has not failed since the last success, after a backoff (cluster/backoff.h) once every address
// has (a round). With one address nothing moves, and every failure ends a round.
// Moves are logged until the first round fails; after that the caller logs one line per wait
// (naming every address: describe()), and the set one line when a coordinator answers again.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "cluster/channel.h"

namespace c960::cluster {

// Resolves a host name to its addresses ("HOST:PORT" each, IPv6 in brackets), in the resolver's
// order, without duplicates; empty when it does not resolve. Replaceable in tests.
using Resolver = std::vector<std::string> (*)(const std::string& host, const std::string& port);
std::vector<std::string> resolve_all(const std::string& host, const std::string& port);

class CoordinatorSet {
 public:
  // options.address: one address or a list check_address_list made. One address whose host is a
  // name resolving to several addresses becomes a set of those (the name still checks TLS).
  explicit CoordinatorSet(ChannelOptions options, Resolver resolver = resolve_all);

  struct Target {
    size_t index = 0;
    std::shared_ptr<grpc::Channel> channel;
    std::string address;
  };
  Target current() const;
  size_t size() const;
  // Every address of the set, in its order.
  std::vector<std::string> addresses() const;
  // The channel to target `index` (for stubs made once per target).
  std::shared_ptr<grpc::Channel> channel(size_t index) const;

  // What a call's end means for the next try.
  struct After {
    bool moved = false;       // calls now go to another target
    bool round_over = false;  // every target failed since the last success: back off, then try
  };
  // After a call sent to target `index` ended with `status` (OK included: a success starts the
  // rounds again). A coordinator that is not there (UNAVAILABLE, DEADLINE_EXCEEDED, a standby)
  // counts as failed in this round; any other answer is the leader's and moves nothing. Only a
  // failure of the current target moves anything or counts (calls from several threads may
  // report the same failure).
  After after(size_t index, const grpc::Status& status);
  // after(...).moved.
  bool failed(size_t index, const grpc::Status& status) { return after(index, status).moved; }

  // With several targets: waits at most `ms` for the current one's channel to connect, and when
  // it does not, moves to the next (a failure in this round, said in *after when given) and
  // returns false. One target: true at once (its calls wait for their connection within their
  // own deadlines).
  bool await_current(int64_t ms, After* after = nullptr);

  // "a, b, c": every address, for messages.
  std::string describe() const;

  // How many times calls moved to another target (for logs and tests).
  int64_t moves() const;

 private:
  void move_to(size_t index, const std::string& why);
  // Counts a failure of the current target (mu_ held); true when it ends a round.
  bool count_failure();
  ChannelOptions options_;
  std::vector<std::string> addresses_;
  std::vector<std::shared_ptr<grpc::Channel>> channels_;
  mutable std::mutex mu_;
  size_t current_ = 0;
  int64_t moves_ = 0;
  std::vector<bool> failed_;  // per target: failed in this round
  bool quiet_ = false;        // a round failed since the last success: moves are not logged
};

}  // namespace c960::cluster
