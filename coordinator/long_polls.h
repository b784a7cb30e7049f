// The coordinator's long polls: AcquireWork calls parked until units can be leased, their wait
// ends, their session calls again, or the coordinator stops; and the events that wake the
// waiter thread. Guarded by the coordinator's lock (the condition variable waits on it); the
// waiter thread itself, and what answers a wait, stay in Coordinator.
//
// Invariants:
//  - waits are held by ticket (arrival order), at most one per session: `by_session` maps each
//    session with a wait to its ticket, and nothing else;
//  - a wait leaves by one of take_session, take or serve, which hand its `done` to the caller:
//    each is answered exactly once, never under the coordinator's lock;
//  - the work and credential events are raised only while a wait is parked (nobody else
//    listens); the refill event is raised whenever a job wants its next units planned.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "cluster/auth.h"

namespace c960::cluster::coord {

class LongPolls {
 public:
  using Done = std::function<void(absl::StatusOr<v1::AcquireWorkResponse>)>;
  using StillAuthorized = std::function<bool()>;
  using Answer = std::pair<Done, absl::StatusOr<v1::AcquireWorkResponse>>;
  // A waiting acquire.
  struct Waiter {
    Caller caller;
    std::string session;
    int max_units = 1;
    int64_t deadline_ms = 0;
    Done done;
    StillAuthorized authorized;
  };

  // Parks a wait; its session must have none (take_session first).
  void park(uint64_t ticket, Waiter w);
  // The session's wait, taken out; none when it has none.
  std::optional<Waiter> take_session(const std::string& session);
  // The wait with this ticket, taken out; none when it was answered already.
  std::optional<Waiter> take(uint64_t ticket);
  // Walks the waits in arrival order: `answer(w)` gives the answer of a wait that ends now (and
  // none for one that waits on); those that end are taken out and their answers added to *out.
  template <typename Fn>
  void serve(Fn&& answer, std::vector<Answer>* out) {
    for (auto it = waiters_.begin(); it != waiters_.end();) {
      std::optional<absl::StatusOr<v1::AcquireWorkResponse>> a = answer(it->second);
      if (!a) {
        ++it;
        continue;
      }
      out->emplace_back(std::move(it->second.done), *std::move(a));
      by_session_.erase(it->second.session);
      it = waiters_.erase(it);
    }
  }
  bool waiting(const std::string& session) const { return by_session_.count(session) > 0; }
  size_t size() const { return waiters_.size(); }
  bool empty() const { return waiters_.empty(); }

  // Events (under the coordinator's lock). Units were queued: waits may be served now (only
  // raised while one waits).
  void work_arrived();
  // Credentials were revoked: waits' credentials are looked at again (only while one waits).
  void credentials_changed();
  // A lazily planned job wants its next units: the waiter thread plans them.
  void refill_wanted();
  struct Events {
    bool work = false, refill = false, auth = false;
  };
  const Events& events() const { return events_; }
  // Takes the work and credential events (the waiter thread serves the waits once for both).
  Events take_served();
  void clear_refill() { events_.refill = false; }
  // What a staged completion batch kept, put back when its commit fails.
  void restore(Events e) { events_ = e; }

  // The waiter thread: started with `loop`, stopped by stop() (under the lock) then join()
  // (without it).
  void start(std::function<void()> loop) { thread_ = std::thread(std::move(loop)); }
  void stop() { stop_ = true; }
  bool stopping() const { return stop_; }
  void join();
  std::condition_variable& cv() { return cv_; }

 private:
  std::map<uint64_t, Waiter> waiters_;
  std::map<std::string, uint64_t> by_session_;
  Events events_;
  bool stop_ = false;
  std::condition_variable cv_;
  std::thread thread_;
};

}  // namespace c960::cluster::coord
