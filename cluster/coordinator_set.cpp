#include "cluster/coordinator_set.h"

#include <netdb.h>

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <sys/socket.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cluster/address.h"
#include "cluster/config.h"
#include "cluster/errors.h"
#include "cluster/log.h"

namespace c960::cluster {
namespace {

bool is_ip_literal(const std::string& host) {
  unsigned char buf[sizeof(in6_addr)];
  return inet_pton(AF_INET, host.c_str(), buf) == 1 || inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

}  // namespace

std::vector<std::string> resolve_all(const std::string& host, const std::string& port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (getaddrinfo(host.c_str(), port.c_str(), &hints, &found) != 0) return {};
  std::vector<std::string> out;
  for (const addrinfo* a = found; a; a = a->ai_next) {
    char text[INET6_ADDRSTRLEN] = {};
    std::string address;
    if (a->ai_family == AF_INET) {
      inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(a->ai_addr)->sin_addr, text, sizeof text);
      address = absl::StrCat(text, ":", port);
    } else if (a->ai_family == AF_INET6) {
      inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(a->ai_addr)->sin6_addr, text, sizeof text);
      address = absl::StrCat("[", text, "]:", port);
    } else {
      continue;
    }
    if (std::find(out.begin(), out.end(), address) == out.end()) out.push_back(std::move(address));
  }
  freeaddrinfo(found);
  return out;
}

CoordinatorSet::CoordinatorSet(ChannelOptions options, Resolver resolver) : options_(std::move(options)) {
  addresses_ = split_address_list(options_.address);
  if (addresses_.empty()) addresses_.push_back(options_.address);
  // One name that resolves to several addresses: a set of those, the name checking TLS.
  if (addresses_.size() == 1 && resolver)
    if (std::optional<HostPort> hp = split_host_port(addresses_[0]); hp && !is_ip_literal(hp->host)) {
      std::vector<std::string> all = resolver(hp->host, hp->port);
      if (all.size() > size_t(kMaxCoordinatorAddresses)) all.resize(size_t(kMaxCoordinatorAddresses));
      if (all.size() > 1) {
        addresses_ = std::move(all);
        if (options_.tls_name.empty()) options_.tls_name = hp->host;
      }
    }
  failed_.assign(addresses_.size(), false);
  for (const std::string& a : addresses_) {
    ChannelOptions one = options_;
    one.address = a;
    channels_.push_back(make_channel(one));
  }
}

CoordinatorSet::Target CoordinatorSet::current() const {
  std::lock_guard lock(mu_);
  return Target{current_, channels_[current_], addresses_[current_]};
}

size_t CoordinatorSet::size() const { return addresses_.size(); }

std::vector<std::string> CoordinatorSet::addresses() const { return addresses_; }

std::shared_ptr<grpc::Channel> CoordinatorSet::channel(size_t index) const { return channels_.at(index); }

int64_t CoordinatorSet::moves() const {
  std::lock_guard lock(mu_);
  return moves_;
}

std::string CoordinatorSet::describe() const { return absl::StrJoin(addresses_, ", "); }

void CoordinatorSet::move_to(size_t index, const std::string& why) {
  // (mu_ held)
  if (index == current_) return;
  if (!quiet_)
    log_warning(absl::StrCat("coordinator ", addresses_[current_], ": ", why, "; calls now go to ", addresses_[index]));
  current_ = index;
  ++moves_;
}

bool CoordinatorSet::count_failure() {
  // (mu_ held)
  failed_[current_] = true;
  if (std::find(failed_.begin(), failed_.end(), false) != failed_.end()) return false;
  // Every target failed: the caller waits, and the next round starts after it.
  failed_.assign(failed_.size(), false);
  quiet_ = true;
  return true;
}

CoordinatorSet::After CoordinatorSet::after(size_t index, const grpc::Status& status) {
  const v1::ErrorInfo info = error_info_of(status);
  const bool not_leader =
      status.error_code() == grpc::StatusCode::UNAVAILABLE && info.reason() == v1::ErrorInfo::REASON_NOT_LEADER;
  // Anything but "not there" (a success, a refusal, a bad request) is the leader's answer:
  // calls stay, and the rounds start again.
  if (!not_leader && status.error_code() != grpc::StatusCode::UNAVAILABLE &&
      status.error_code() != grpc::StatusCode::DEADLINE_EXCEEDED) {
    std::lock_guard lock(mu_);
    if (index == current_ && quiet_ && addresses_.size() > 1)
      log_info(absl::StrCat("coordinator ", addresses_[current_], " answers again"));
    if (index == current_) {
      quiet_ = false;
      failed_.assign(failed_.size(), false);
    }
    return {};
  }
  std::lock_guard lock(mu_);
  if (index != current_) return {};  // another call reported it already
  After out;
  const size_t before = current_;
  if (addresses_.size() < 2) {
    out.round_over = count_failure();
    return out;
  }
  std::string why;
  size_t to = (current_ + 1) % addresses_.size();
  if (not_leader && !info.leader().empty()) {
    // The leader as the standby names it: followed when it is one of the set (a name outside it
    // is not trusted as a destination; the next address is tried instead).
    const auto it = std::find(addresses_.begin(), addresses_.end(), info.leader());
    if (it != addresses_.end()) {
      to = size_t(it - addresses_.begin());
      why = absl::StrCat("a standby; it names ", info.leader(), " as the leader");
    }
  }
  if (why.empty())
    why = not_leader
              ? "a standby that names no leader of this set"
              : absl::StrCat("no answer (",
                             status.error_code() == grpc::StatusCode::UNAVAILABLE ? "UNAVAILABLE" : "DEADLINE_EXCEEDED",
                             status.error_message().empty() ? "" : ": ", status.error_message(), ")");
  out.round_over = count_failure();
  move_to(to, why);
  out.moved = current_ != before;
  return out;
}

bool CoordinatorSet::await_current(int64_t ms, After* after) {
  if (after) *after = {};
  if (addresses_.size() < 2) return true;
  const Target t = current();
  const auto deadline = std::chrono::system_clock::now() + std::chrono::milliseconds(ms);
  // Polling the channel is what moves its connection (and a TLS handshake) on. A connection that
  // fails while this waits (refused, reset, a handshake that failed) is passed over at once; one
  // that hangs, when the time is up. A channel that had failed before (on an earlier visit) is
  // waited for: gRPC reports TRANSIENT_FAILURE until its next try connects, and that try moves on
  // only while someone polls the channel, so passing it over at once left a worker unable to
  // reach a standby that had since become the leader (the failover test across namespaces).
  std::string why;
  bool failed_before = t.channel->GetState(false) == GRPC_CHANNEL_TRANSIENT_FAILURE;
  for (grpc_connectivity_state s = t.channel->GetState(true); s != GRPC_CHANNEL_READY; s = t.channel->GetState(true)) {
    if (s == GRPC_CHANNEL_TRANSIENT_FAILURE && !failed_before) {
      why = "cannot connect";
      break;
    }
    failed_before = false;
    if (!t.channel->WaitForStateChange(s, deadline)) {
      why = absl::StrCat("no connection within ", ms, " ms");
      break;
    }
  }
  if (why.empty()) return true;
  std::lock_guard lock(mu_);
  if (current_ == t.index) {
    const bool round_over = count_failure();
    move_to((current_ + 1) % addresses_.size(), why);
    if (after) *after = {true, round_over};
  }
  return false;
}

}  // namespace c960::cluster
