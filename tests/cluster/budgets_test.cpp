// Budgets per principal (issue 34): worker names per credential and per owner, lost workers'
// records forgotten (but never a quarantine or an owner's earned trust, nor a worker a job still
// names), a revoked credential's waiting AcquireWork ended without a lease, calls in flight per
// caller, and a watch that does not carry a job's megabytes of positions.
#include <atomic>
#include <chrono>
#include <functional>
#include <gtest/gtest.h>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/errors.h"
#include "coordinator/service.h"
#include "tests/cluster/coordinator_fixture.h"

namespace c960::cluster {
namespace {

using namespace std::chrono_literals;

Caller worker_caller(const std::string& identity, const std::string& owner) {
  return Caller{identity, Role::kWorker, true, 0, owner};
}

class BudgetsTest : public CoordinatorFixture {
 protected:
  absl::StatusOr<v1::HelloResponse> try_hello(const std::string& name, const Caller& caller) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_threads(1);
    req.add_capabilities("perft");
    req.set_protocol_version(kProtocolVersion);
    return coordinator_->hello(caller, req);
  }
  size_t stored_workers() { return store_->load_workers().value().size(); }
  // Past the forgetting time, with the sweeps that mark sessions lost, forget them, then the
  // workers (each sweep looks for workers to forget at most once a kForgetWorkersIntervalMs).
  void silence(int64_t ms) {
    clock_.advance_ms(options_.lease_ms + 1);
    coordinator_->sweep();
    clock_.advance_ms(options_.forget_lost_ms + 1);
    coordinator_->sweep();
    clock_.advance_ms(ms);
    coordinator_->sweep();
  }
};

TEST_F(BudgetsTest, WorkerNamesPerCredentialAreCapped) {
  const Caller fleet = worker_caller("fleet:1", "alice");
  int accepted = 0;
  for (int k = 0; k < 20'000; ++k) {
    absl::StatusOr<v1::HelloResponse> r = try_hello(absl::StrCat("made-up-", k), fleet);
    if (r.ok()) {
      ++accepted;
      continue;
    }
    ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
    ASSERT_TRUE(absl::StrContains(r.status().message(), "max-workers-per-credential")) << r.status();
    ASSERT_TRUE(absl::StrContains(r.status().message(), absl::StrCat("(", kDefaultMaxWorkersPerCredential, ")")))
        << r.status();
  }
  EXPECT_EQ(accepted, kDefaultMaxWorkersPerCredential);
  // Nothing of the refused ones in the store or in memory.
  EXPECT_EQ(stored_workers(), size_t(kDefaultMaxWorkersPerCredential));
  EXPECT_EQ(coordinator_->workers(), size_t(kDefaultMaxWorkersPerCredential));
  EXPECT_EQ(coordinator_->sessions(), size_t(kDefaultMaxWorkersPerCredential));
  // A restart under a known name is never refused, and counts nothing new.
  for (int k = 0; k < 3; ++k) EXPECT_TRUE(try_hello("made-up-0", fleet).ok());
  EXPECT_EQ(stored_workers(), size_t(kDefaultMaxWorkersPerCredential));
  // Another credential of the same owner has its own names.
  EXPECT_TRUE(try_hello("made-up-0", worker_caller("fleet:2", "alice")).ok());
  // The caps hold across a restart of the coordinator (they count the stored records).
  open(options_);
  absl::StatusOr<v1::HelloResponse> r = try_hello("one-more", fleet);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
  EXPECT_TRUE(try_hello("made-up-31", fleet).ok());
}

TEST_F(BudgetsTest, WorkerNamesPerOwnerAreCapped) {
  int accepted = 0;
  for (int k = 0; k < 20'000; ++k) {
    // Sixteen names per credential, under the credential's cap: the owner's cap is what stops them.
    absl::StatusOr<v1::HelloResponse> r =
        try_hello(absl::StrCat("h", k), worker_caller(absl::StrCat("join:", k / 16), "mallory"));
    if (r.ok()) {
      ++accepted;
      continue;
    }
    ASSERT_EQ(r.status().code(), absl::StatusCode::kResourceExhausted) << r.status();
    ASSERT_TRUE(absl::StrContains(r.status().message(), "max-workers-per-owner")) << r.status();
    ASSERT_TRUE(absl::StrContains(r.status().message(), absl::StrCat("(", kDefaultMaxWorkersPerOwner, ")")))
        << r.status();
  }
  EXPECT_EQ(accepted, kDefaultMaxWorkersPerOwner);
  EXPECT_EQ(stored_workers(), size_t(kDefaultMaxWorkersPerOwner));
  EXPECT_EQ(coordinator_->workers(), size_t(kDefaultMaxWorkersPerOwner));
  EXPECT_TRUE(try_hello("h0", worker_caller("join:0", "mallory")).ok()) << "a restart is refused";
  EXPECT_TRUE(try_hello("h0", worker_caller("other:1", "bob")).ok()) << "another owner is refused";
  // Without authentication there is no principal: no caps.
  for (int k = 0; k < 100; ++k) EXPECT_TRUE(try_hello(absl::StrCat("local-", k), Caller::local()).ok());
}

TEST_F(BudgetsTest, LostWorkersAreForgottenAndTheirNamesCountNoMore) {
  CoordinatorOptions o;
  o.max_workers_per_credential = 2;
  o.forget_workers_ms = 86'400'000;
  open(o);
  const Caller c = worker_caller("host:1", "");
  ASSERT_TRUE(try_hello("a", c).ok());
  ASSERT_TRUE(try_hello("b", c).ok());
  EXPECT_EQ(try_hello("c", c).status().code(), absl::StatusCode::kResourceExhausted);
  silence(86'400'000 - 3'700'000);  // a little less than a day in all
  EXPECT_EQ(coordinator_->workers(), 2u) << "forgotten before its time";
  clock_.advance_ms(kForgetWorkersIntervalMs + 100'000);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->workers(), 0u);
  EXPECT_EQ(stored_workers(), 0u) << "the rows stay";
  EXPECT_TRUE(try_hello("c", c).ok()) << "forgotten names still count";
  EXPECT_TRUE(try_hello("a", c).ok());
  EXPECT_EQ(stored_workers(), 2u);
}

TEST_F(BudgetsTest, AWorkerAJobNamesIsNotForgotten) {
  CoordinatorOptions o;
  o.forget_workers_ms = 86'400'000;
  open(o);
  const Caller c1 = worker_caller("one", ""), c2 = worker_caller("two", "");
  const std::string w1 = hello("a", c1), w2 = hello("b", c2);
  const v1::Job j = submit(v1::VERIFY_MODE_HOSTS, 3, "0", Caller::local(), 1);
  // w1 completes one unit (its result waits for a second owner's), and holds a lease of another
  // when it falls silent; w2 never computes anything.
  std::vector<v1::Lease> got = acquire(w1, 2, c1);
  ASSERT_EQ(got.size(), 2u);
  ASSERT_EQ(complete(w1, got[0], result(got[0]), c1).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  ASSERT_FALSE(w2.empty());
  silence(2 * 86'400'000);
  const std::map<std::string, v1::WorkerInfo> ws = workers();
  EXPECT_EQ(ws.count("one/a"), 1u) << "a worker whose vote a running job needs was forgotten";
  EXPECT_EQ(ws.count("two/b"), 0u);
  EXPECT_EQ(stored_workers(), 1u);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_RUNNING);
}

TEST_F(BudgetsTest, ForgettingKeepsQuarantinesAndAnOwnersTrust) {
  store_ = std::move(Store::open(":memory:").value());
  const int64_t long_ago = clock_.now_ms() - 30LL * 86'400'000;
  const auto stored = [&](const std::string& identity, const std::string& host, const std::string& owner,
                          v1::TrustState trust, int64_t seen) {
    StoredWorker w;
    w.key = absl::StrCat(identity, "/", host);
    w.identity = identity;
    w.host = host;
    w.owner = owner;
    w.threads = 1;
    w.trust = trust;
    w.trust_reason = trust == v1::TRUST_STATE_QUARANTINED ? "outvoted" : "";
    w.last_seen_ms = seen;
    ASSERT_TRUE(store_->upsert_worker(w).ok());
  };
  stored("carol:1", "a", "carol", v1::TRUST_STATE_TRUSTED, long_ago);
  stored("carol:2", "b", "carol", v1::TRUST_STATE_TRUSTED, long_ago);
  stored("dave:1", "c", "dave", v1::TRUST_STATE_QUARANTINED, long_ago);
  stored("erin:1", "d", "erin", v1::TRUST_STATE_NEW, long_ago);
  stored("erin:1", "e", "erin", v1::TRUST_STATE_NEW, clock_.now_ms());
  CoordinatorOptions o;
  o.forget_workers_ms = 7LL * 86'400'000;
  open(o);
  coordinator_->sweep();
  std::map<std::string, v1::WorkerInfo> ws = workers();
  EXPECT_EQ(ws.count("carol:1/a") + ws.count("carol:2/b"), 1u) << "an owner's last trusted worker was forgotten";
  EXPECT_EQ(ws.count("dave:1/c"), 1u) << "a quarantined worker was forgotten";
  EXPECT_EQ(ws.count("erin:1/d"), 0u);
  EXPECT_EQ(ws.count("erin:1/e"), 1u) << "forgotten before its time";
  // After a restart: the owner still trusted, the quarantined owner still barred.
  open(o);
  ws = workers();
  const v1::WorkerInfo& carol = ws.count("carol:1/a") ? ws["carol:1/a"] : ws["carol:2/b"];
  EXPECT_EQ(carol.trust(), v1::TRUST_STATE_TRUSTED);
  EXPECT_EQ(reason_of(try_hello("new-name", worker_caller("dave:1", "dave")).status()),
            v1::ErrorInfo::REASON_QUARANTINED);
  EXPECT_EQ(reason_of(try_hello("c", worker_caller("dave:2", "dave")).status()), v1::ErrorInfo::REASON_QUARANTINED);
}

// A revoked credential's waiting AcquireWork ends with UNAUTHENTICATED on the reload, and gets no
// lease even when work arrives before the reload is noticed.
TEST_F(BudgetsTest, ARevokedCredentialsWaitingAcquireEndsWithoutALease) {
  const Caller c = worker_caller("host:1", "");
  const std::string w = hello("a", c);
  struct Waiting {
    std::atomic<bool> answered{false};
    absl::StatusOr<v1::AcquireWorkResponse> answer = v1::AcquireWorkResponse();
  };
  std::atomic<bool> valid{true};
  const auto wait = [&](Waiting* out) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w);
    req.set_max_units(4);
    req.set_wait_seconds(30);
    coordinator_->acquire_async(
        c, req, coordinator_->new_ticket(),
        [out](absl::StatusOr<v1::AcquireWorkResponse> r) {
          out->answer = std::move(r);
          out->answered = true;
        },
        [&valid] { return valid.load(); });
  };
  const auto eventually = [](const std::function<bool()>& f) {
    for (int i = 0; i < 500; ++i, std::this_thread::sleep_for(10ms))
      if (f()) return true;
    return false;
  };
  // The reload: the waiting call ends at once (the waiter thread looks).
  Waiting first;
  wait(&first);
  ASSERT_EQ(coordinator_->waiting_acquires(), 1u);
  valid = false;
  coordinator_->credentials_changed();
  ASSERT_TRUE(eventually([&] { return first.answered.load(); }));
  EXPECT_EQ(first.answer.status().code(), absl::StatusCode::kUnauthenticated) << first.answer.status();
  // Work arriving before the reload is noticed: still no lease.
  valid = true;
  Waiting second;
  wait(&second);
  ASSERT_EQ(coordinator_->waiting_acquires(), 1u);
  valid = false;
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-3");
  ASSERT_TRUE(eventually([&] { return second.answered.load(); }));
  EXPECT_EQ(second.answer.status().code(), absl::StatusCode::kUnauthenticated) << second.answer.status();
  EXPECT_EQ(job(j.id()).progress().units_leased(), 0);
}

// One waiting AcquireWork per session: a credential's waiting calls never outnumber its workers.
TEST_F(BudgetsTest, ACredentialsWaitingAcquiresAreAtMostItsSessions) {
  const Caller c = worker_caller("host:1", "");
  const std::string a = hello("a", c), b = hello("b", c);
  std::atomic<int> answered{0};
  for (int k = 0; k < 100; ++k)
    for (const std::string& w : {a, b}) {
      v1::AcquireWorkRequest req;
      req.set_worker_id(w);
      req.set_max_units(1);
      req.set_wait_seconds(30);
      coordinator_->acquire_async(c, req, coordinator_->new_ticket(),
                                  [&answered](absl::StatusOr<v1::AcquireWorkResponse>) { ++answered; });
    }
  EXPECT_EQ(coordinator_->waiting_acquires(), 2u);
  EXPECT_EQ(answered.load(), 198) << "each newer call of a session ends its older one";
  coordinator_->shutdown();  // the waiter thread answers the two waiting
  for (int i = 0; i < 500 && answered.load() < 200; ++i) std::this_thread::sleep_for(10ms);
  EXPECT_EQ(answered.load(), 200);
}

TEST(InFlightTest, ACallersCallsInFlightAreCapped) {
  InFlight f;
  std::vector<InFlight::Slot> held;
  for (int k = 0; k < 3; ++k) {
    absl::StatusOr<InFlight::Slot> s = f.enter("alice", 3, "max-calls-per-caller", "calls");
    ASSERT_TRUE(s.ok()) << s.status();
    held.push_back(std::move(*s));
  }
  absl::StatusOr<InFlight::Slot> over = f.enter("alice", 3, "max-calls-per-caller", "calls");
  ASSERT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_EQ(over.status().message(), "max-calls-per-caller: 3 calls in flight for alice, the cap");
  EXPECT_TRUE(f.enter("bob", 3, "max-calls-per-caller", "calls").ok()) << "another caller is held up";
  EXPECT_EQ(f.in_flight("alice"), 3);
  held.pop_back();
  EXPECT_EQ(f.in_flight("alice"), 2);
  EXPECT_TRUE(f.enter("alice", 3, "max-calls-per-caller", "calls").ok()) << "a call that ended still counts";
  held.clear();
  EXPECT_EQ(f.in_flight("alice"), 0);
  EXPECT_EQ(f.in_flight("bob"), 0);
}

// A watch's first message carries the spec without its positions: 64 watchers of a job with
// megabytes of positions do not each hold a copy of them (GetJob still has them).
TEST_F(BudgetsTest, AWatchCarriesNoPositions) {
  v1::SubmitJobRequest req;
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
  v1::PerftJobSpec* p = req.mutable_spec()->mutable_perft();
  p->set_depth(1);
  for (int k = 0; k < 200; ++k)
    p->add_fens(absl::StrCat("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 ", k + 1));
  absl::StatusOr<v1::Job> j = coordinator_->submit(Caller::local(), req);
  ASSERT_TRUE(j.ok()) << j.status();
  uint64_t version = 0;
  absl::StatusOr<v1::Job> first = coordinator_->watch(Caller::local(), j->id(), &version, 0, true);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_TRUE(first->has_spec());
  EXPECT_EQ(first->spec().perft().depth(), 1);
  EXPECT_EQ(first->spec().perft().fens_size(), 0);
  EXPECT_LT(first->ByteSizeLong(), 1000u);
  EXPECT_EQ(job(j->id()).spec().perft().fens_size(), 200) << "GetJob lost the positions";
  absl::StatusOr<v1::Job> later = coordinator_->watch(Caller::local(), j->id(), &version, 0, false);
  ASSERT_TRUE(later.ok());
  EXPECT_FALSE(later->has_spec());
}

}  // namespace
}  // namespace c960::cluster
