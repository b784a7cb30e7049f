#include "coordinator/long_polls.h"

namespace c960::cluster::coord {

void LongPolls::park(uint64_t ticket, Waiter w) {
  by_session_[w.session] = ticket;
  waiters_[ticket] = std::move(w);
}

std::optional<LongPolls::Waiter> LongPolls::take_session(const std::string& session) {
  auto s = by_session_.find(session);
  if (s == by_session_.end()) return std::nullopt;
  auto it = waiters_.find(s->second);
  Waiter w = std::move(it->second);
  waiters_.erase(it);
  by_session_.erase(s);
  return w;
}

std::optional<LongPolls::Waiter> LongPolls::take(uint64_t ticket) {
  auto it = waiters_.find(ticket);
  if (it == waiters_.end()) return std::nullopt;
  Waiter w = std::move(it->second);
  by_session_.erase(w.session);
  waiters_.erase(it);
  return w;
}

void LongPolls::work_arrived() {
  if (waiters_.empty()) return;
  events_.work = true;
  cv_.notify_one();
}

void LongPolls::credentials_changed() {
  if (waiters_.empty()) return;
  events_.auth = true;
  cv_.notify_one();
}

void LongPolls::refill_wanted() {
  events_.refill = true;
  cv_.notify_one();
}

LongPolls::Events LongPolls::take_served() {
  Events e = events_;
  events_.work = events_.auth = false;
  return e;
}

void LongPolls::join() {
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace c960::cluster::coord
