// Trust by construction, each test a way the coordinator was once fooled: one credential under
// two names is one voter (for replicas, majorities, deciding copies and failure reports); a
// quarantine inside a batch stops the batch; a failed commit accepts nothing and memory stays
// what the store holds; a failed re-Hello leaves the old session working; one credential
// cannot hoard the queue; a stalled results reader holds up no one; lost sessions go.
#include <chrono>
#include <future>
#include <gtest/gtest.h>
#include <set>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/errors.h"
#include "tests/cluster/coordinator_fixture.h"

namespace c960::cluster {
namespace {

const Caller kHonest1{"honest1", Role::kWorker, true};
const Caller kHonest2{"honest2", Role::kWorker, true};
const Caller kEvil{"evil", Role::kWorker, true};

class TrustTest : public CoordinatorFixture {
 protected:
  // A store failure on the next `n`-th commit of an outermost transaction (1: the next one).
  void fail_commit(int n) {
    countdown_ = n;
    store_->set_fault_injector([this](const char* what) {
      if (std::string(what) == "commit" && countdown_ > 0 && --countdown_ == 0)
        return absl::InternalError("store: the disk is full (injected)");
      return absl::OkStatus();
    });
  }
  // A coordinator freshly loaded from the same store holds the same durable state.
  void expect_durable() {
    Coordinator fresh(store_.get(), &clock_, options_);
    ASSERT_TRUE(fresh.load().ok());
    EXPECT_EQ(fresh.durable_state(), coordinator_->durable_state());
  }
  v1::CompleteUnitsRequest batch(const std::string& w, const std::vector<std::pair<v1::Lease, v1::UnitResult>>& rs) {
    v1::CompleteUnitsRequest req;
    req.set_worker_id(w);
    for (const auto& [l, r] : rs) {
      v1::CompleteUnitRequest* c = req.add_completions();
      c->set_unit_id(l.unit_id());
      c->set_attempt(l.attempt());
      *c->mutable_result() = r;
    }
    return req;
  }
  int countdown_ = 0;
};

// Two names on one token got the two copies of a unit and agreed on a lie (issue 18: 862 of 960
// rows wrong under --verify all). Now the second name never gets a copy of the first's units,
// placement (not the fastest caller) decides which units the owner computes at all, and a trust
// root outvotes the lie.
class TwoNamesTest : public TrustTest, public ::testing::WithParamInterface<v1::VerifyMode> {
 protected:
  // Workers acquire and complete (honestly) until nothing is left for them.
  void drain(const std::vector<std::pair<std::string, Caller>>& ws) {
    for (bool any = true; any;) {
      any = false;
      for (const auto& [w, c] : ws)
        for (const v1::Lease& l : acquire(w, 1000, c)) {
          complete(w, l, result(l), c).IgnoreError();
          any = true;
        }
    }
  }
};

TEST_P(TwoNamesTest, TwoNamesOfOneCredentialAreOneVoter) {
  CoordinatorOptions o;
  o.trust_roots = {"honest1", "honest2"};
  o.audit_rate = 0;
  open(o);
  const std::string x = hello("x", kEvil), y = hello("y", kEvil);
  const std::string h1 = hello("h1", kHonest1), h2 = hello("h2", kHonest2);
  // Units of 4 plies without a divide: only other workers can tell a count off by one. Under
  // adaptive the untrusted owner's units are all computed twice, as under all.
  const v1::Job j = submit(GetParam(), 5, "0", Caller::local(), 1);
  const size_t n = size_t(job(j.id()).progress().units_total());
  std::vector<v1::Lease> lx = acquire(x, 1000, kEvil);
  ASSERT_FALSE(lx.empty());
  EXPECT_LT(lx.size(), n) << "the fastest caller took every unit: placement is not the coordinator's";
  EXPECT_TRUE(acquire(y, 1000, kEvil).empty()) << "the owner's second name got copies of its first name's units";
  for (const v1::Lease& l : lx)
    EXPECT_EQ(complete(x, l, result(l, 1), kEvil).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  EXPECT_TRUE(acquire(y, 1000, kEvil).empty()) << "the liar's second name was given a second copy";
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  // The trust roots compute the rest and outvote the lie.
  drain({{h1, kHonest1}, {h2, kHonest2}});
  expect_exact(j.id(), 5);
  std::map<std::string, v1::WorkerInfo> ws = workers();
  EXPECT_EQ(ws["evil/x"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_EQ(ws["evil/y"].trust(), v1::TRUST_STATE_QUARANTINED) << "an owner is quarantined whole";
  EXPECT_NE(ws["honest1/h1"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_NE(ws["honest2/h2"].trust(), v1::TRUST_STATE_QUARANTINED);
  // And none of its names may join again.
  v1::HelloRequest req;
  req.set_name("z");
  req.set_threads(32);
  req.add_capabilities("perft");
  req.set_protocol_version(kProtocolVersion);
  EXPECT_EQ(reason_of(coordinator_->hello(kEvil, req).status()), v1::ErrorInfo::REASON_QUARANTINED);
  expect_durable();
}

INSTANTIATE_TEST_SUITE_P(Verify, TwoNamesTest, ::testing::Values(v1::VERIFY_MODE_ALL, v1::VERIFY_MODE_ADAPTIVE));

// The pair that framed honest workers: an honest copy, then the pair's two names voting 2:1
// against it. With one vote per owner the pair is one vote: 1:1 between untrusted owners, which
// nothing but a trusted owner decides (the unit waits, and says so); the honest worker is never
// quarantined, and the trust root that joins later outvotes the lie.
TEST_F(TrustTest, OneCredentialCannotQuarantineAnHonestWorker) {
  CoordinatorOptions o;
  o.trust_roots = {"honest2"};
  o.audit_rate = 0;
  open(o);
  const std::string h1 = hello("h1", kHonest1);
  const std::string x = hello("x", kEvil), y = hello("y", kEvil);
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 5, "0", Caller::local(), 1);
  // Both owners compute what is placed with them, then the other's units' second copies.
  for (bool any = true; any;) {
    any = false;
    for (const v1::Lease& l : acquire(h1, 1000, kHonest1)) {
      complete(h1, l, result(l), kHonest1).IgnoreError();
      any = true;
    }
    for (const v1::Lease& l : acquire(x, 1000, kEvil)) {
      complete(x, l, result(l, 7), kEvil).IgnoreError();
      any = true;
    }
  }
  EXPECT_TRUE(acquire(y, 1000, kEvil).empty());
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  EXPECT_NE(workers()["honest1/h1"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_NE(workers()["evil/x"].trust(), v1::TRUST_STATE_QUARANTINED) << "decided by untrusted owners";
  const std::string notice = job(j.id()).notice();
  EXPECT_TRUE(absl::StrContains(notice, "wait for an owner that may decide them")) << notice;
  const std::string h2 = hello("h2", kHonest2);
  std::vector<v1::Lease> l2 = acquire(h2, 1000, kHonest2);
  ASSERT_FALSE(l2.empty());
  for (const v1::Lease& l : l2) complete(h2, l, result(l), kHonest2).IgnoreError();
  expect_exact(j.id(), 5);
  EXPECT_NE(workers()["honest1/h1"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_GT(workers()["honest1/h1"].agreeing_results(), 0) << "confirmed by the trust root";
  EXPECT_EQ(workers()["evil/x"].trust(), v1::TRUST_STATE_QUARANTINED);
  expect_durable();
}

// Found by the simulation (seeds 2006448, 2039389, ...): under adaptive, a unit first leased
// to a trusted worker wanted one result; its lease expired, a new (lying) worker got it, and
// its lone result settled the unit. Only a trusted credential's result settles alone.
TEST_F(TrustTest, AnUntrustedWorkersLoneResultNeverSettles) {
  CoordinatorOptions o;
  o.trust_after = 1;
  o.spot_check_rate = 0;
  o.trust_roots = {"honest1"};
  o.audit_rate = 0;
  open(o);
  const std::string t = hello("t", kHonest1), h = hello("h", kHonest2), x = hello("x", kEvil);
  ASSERT_TRUE(workers()["honest1/t"].trust_root());
  // t, a trust root, leases units that want its result alone; its leases expire, and placement
  // gives some of them to the untrusted x: x's lone results never settle them.
  const v1::Job j = submit(v1::VERIFY_MODE_ADAPTIVE, 5, "1", Caller::local(), 1);
  std::vector<v1::Lease> lt = acquire(t, 1000, kHonest1);
  ASSERT_FALSE(lt.empty());
  clock_.advance_ms(options_.lease_ms + 1);
  coordinator_->sweep();
  std::vector<v1::Lease> lx = acquire(x, 1000, kEvil);
  ASSERT_FALSE(lx.empty());
  for (const v1::Lease& l : lx)
    EXPECT_EQ(complete(x, l, result(l, 1), kEvil).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  for (const v1::Lease& l : lt) complete(t, l, result(l), kHonest1).IgnoreError();
  for (const v1::Lease& l : acquire(h, 1000, kHonest2)) complete(h, l, result(l), kHonest2).IgnoreError();
  expect_exact(j.id(), 5);
  EXPECT_EQ(workers()["evil/x"].trust(), v1::TRUST_STATE_QUARANTINED);
  expect_durable();
}

// Perft units run no engine: a failure report for one is refused, so no number of names can
// FAIL a perft job with forged reports.
TEST_F(TrustTest, PerftUnitsTakeNoFailureReports) {
  const std::string x = hello("x", kEvil), y = hello("y", kEvil);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-7");
  for (int round = 0; round < 4; ++round)
    for (const auto& [w, n] : {std::pair{x, "x"}, std::pair{y, "y"}}) {
      std::vector<v1::Lease> l = acquire(w, 1, kEvil);
      if (l.empty()) continue;
      v1::CompleteUnitRequest fail;
      fail.set_worker_id(w);
      fail.set_unit_id(l[0].unit_id());
      fail.set_attempt(l[0].attempt());
      fail.set_failure(absl::StrCat("forged by ", n));
      absl::StatusOr<v1::CompleteUnitResponse> r = coordinator_->complete(kEvil, fail);
      EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
      EXPECT_TRUE(absl::StrContains(r.status().message(), "failure:")) << r.status();
    }
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_RUNNING);
  EXPECT_EQ(job(j.id()).unit_failures(), 0);
}

// One name leased 1,024 units a call and renewed them for ever: the job stalled while honest
// workers idled. A credential now holds at most max_leases_per_credential leases.
TEST_F(TrustTest, OneCredentialCannotHoardTheQueue) {
  CoordinatorOptions o;
  o.max_leases_per_credential = 3;
  open(o);
  const std::string x = hello("x", kEvil), y = hello("y", kEvil), h = hello("h", kHonest1);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-9");
  EXPECT_EQ(acquire(x, 1024, kEvil).size(), 3u);
  EXPECT_TRUE(acquire(y, 1024, kEvil).empty()) << "the cap is the credential's, not each name's";
  // The honest worker computes everything else, within the same cap.
  const int64_t total = job(j.id()).progress().units_total();
  ASSERT_GT(total, 3);
  for (int round = 0; round < 1000; ++round) {
    std::vector<v1::Lease> l = acquire(h, 1024, kHonest1);
    if (l.empty()) break;
    EXPECT_LE(l.size(), 3u);
    for (const v1::Lease& le : l) EXPECT_TRUE(complete(h, le, result(le), kHonest1).ok());
  }
  EXPECT_EQ(job(j.id()).progress().units_done(), total - 3);
}

// A credential within its lease cap renewed its leases for ever and the units never finished.
// Now a lease is held at most what the unit's size explains (JobKind::max_hold_ms: for these
// small perft units the one-hour floor); then the unit goes to another credential, never back.
TEST_F(TrustTest, RenewalsAreBoundedByTheUnitsSize) {
  const std::string x = hello("x", kEvil), h = hello("h", kHonest1);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 2, "0");
  std::vector<v1::Lease> held = acquire(x, 1024, kEvil);
  ASSERT_FALSE(held.empty());
  // h computes everything else.
  for (std::vector<v1::Lease> l = acquire(h, 1024, kHonest1); !l.empty(); l = acquire(h, 1024, kHonest1))
    for (const v1::Lease& le : l) ASSERT_TRUE(complete(h, le, result(le), kHonest1).ok());
  v1::RenewLeasesRequest renew;
  renew.set_worker_id(x);
  for (const v1::Lease& l : held) renew.add_unit_ids(l.unit_id());
  const int64_t step_ms = kDefaultLeaseSeconds * 1000 / 2;
  int64_t held_ms = 0;
  for (; held_ms <= (kMinLeaseHoldSeconds + 60) * 1000; held_ms += step_ms) {
    auto r = coordinator_->renew(kEvil, renew);
    ASSERT_TRUE(r.ok()) << r.status();
    if (r->renewals(0).status() != v1::LEASE_STATUS_ACTIVE) break;
    clock_.advance_ms(step_ms);
  }
  EXPECT_GT(held_ms, (kMinLeaseHoldSeconds - 60) * 1000) << "cut off before the unit's bound";
  EXPECT_LE(held_ms, (kMinLeaseHoldSeconds + 60) * 1000) << "renewed past the unit's bound";
  EXPECT_TRUE(acquire(x, 1024, kEvil).empty()) << "the units it sat on went back to it";
  std::vector<v1::Lease> again = acquire(h, 1024, kHonest1);
  ASSERT_EQ(again.size(), held.size());
  for (const v1::Lease& le : again) ASSERT_TRUE(complete(h, le, result(le), kHonest1).ok());
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  expect_durable();
}

// 4,000 Hellos made ListWorkers 18.5 MB, over gRPC's 16 MiB limit, for good. Now it is paged:
// by name, at most page_size (and 4 MiB) a page, every worker once over the pages.
TEST_F(TrustTest, ListWorkersIsPaged) {
  for (int k = 0; k < 250; ++k) hello(absl::StrCat("w", k));
  v1::ListWorkersRequest req;
  req.set_page_size(100);
  std::set<std::string> seen;
  std::vector<int> sizes;
  for (int page = 0; page < 10; ++page) {
    absl::StatusOr<v1::ListWorkersResponse> r = coordinator_->list_workers(Caller::local(), req);
    ASSERT_TRUE(r.ok()) << r.status();
    sizes.push_back(r->workers_size());
    for (const v1::WorkerInfo& w : r->workers()) EXPECT_TRUE(seen.insert(w.name()).second) << w.name() << " twice";
    if (r->next_page_token().empty()) break;
    req.set_page_token(r->next_page_token());
  }
  EXPECT_EQ(sizes, (std::vector<int>{100, 100, 50}));
  EXPECT_EQ(seen.size(), 250u);
  // The default page, and the bounds of the fields, each named.
  req.Clear();
  EXPECT_EQ(coordinator_->list_workers(Caller::local(), req)->workers_size(), kDefaultPageSize);
  req.set_page_size(kMaxPageSize + 1);
  absl::StatusOr<v1::ListWorkersResponse> bad = coordinator_->list_workers(Caller::local(), req);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "page_size")) << bad.status();
  req.set_page_size(0);
  req.set_page_token(std::string(1000, 'x'));
  bad = coordinator_->list_workers(Caller::local(), req);
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_TRUE(absl::StrContains(bad.status().message(), "page_token")) << bad.status();
}

// A worker quarantined by its first completion in a CompleteUnits call settled the later ones
// on its lone vote (an off-by-one count was ACCEPTED). Now the rest of the batch is refused.
TEST_F(TrustTest, AQuarantineInsideABatchStopsTheBatch) {
  const std::string x = hello("x", kEvil);
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 2, "0-1");
  std::vector<v1::Lease> l = acquire(x, 2, kEvil);
  ASSERT_EQ(l.size(), 2u);
  v1::UnitResult impossible = result(l[0]);
  impossible.mutable_perft()->mutable_nodes()->set_hi(~0ULL);
  impossible.mutable_perft()->mutable_nodes()->set_lo(~0ULL);
  auto r = coordinator_->complete_units(kEvil, batch(x, {{l[0], impossible}, {l[1], result(l[1], 1)}}));
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->statuses_size(), 2);
  EXPECT_EQ(r->statuses(0).code(), int(absl::StatusCode::kInvalidArgument));
  EXPECT_EQ(r->statuses(1).code(), int(absl::StatusCode::kPermissionDenied));
  EXPECT_EQ(r->statuses(1).reason(), v1::ErrorInfo::REASON_QUARANTINED);
  EXPECT_EQ(job(j.id()).progress().units_done(), 0) << "the lie after the quarantine was counted";
  expect_durable();
}

// The commit of a completion failed (disk full), memory counted the unit anyway, the worker's
// retry was answered DUPLICATE and the result was never stored. Now the call fails UNAVAILABLE,
// nothing of it stays, the retry is ACCEPTED, and a restart finds the job exact.
TEST_F(TrustTest, AFailedCommitAcceptsNothing) {
  const std::string a = hello("a");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-1");
  std::vector<v1::Lease> l = acquire(a, 2);
  ASSERT_EQ(l.size(), 2u);
  const std::string before = coordinator_->durable_state();
  // A full disk for the whole call (a fault that passes at once is met by the call's own probe
  // and retry: degraded_store_test.cpp).
  store_->set_fault_injector([](const char*) { return absl::InternalError("store: the disk is full (injected)"); });
  auto r = coordinator_->complete_units(Caller::local(), batch(a, {{l[0], result(l[0])}, {l[1], result(l[1])}}));
  EXPECT_EQ(r.status().code(), absl::StatusCode::kUnavailable) << r.status();
  EXPECT_EQ(coordinator_->durable_state(), before) << "memory kept what the store did not";
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  fail_commit(0);  // space again; the next probe of the store is due after the backoff
  clock_.advance_ms(kStoreProbeMaxMs);
  expect_durable();
  r = coordinator_->complete_units(Caller::local(), batch(a, {{l[0], result(l[0])}, {l[1], result(l[1])}}));
  ASSERT_TRUE(r.ok()) << r.status();
  for (const v1::CompletionStatus& st : r->statuses()) EXPECT_EQ(st.outcome(), v1::COMPLETION_OUTCOME_ACCEPTED);
  expect_exact(j.id(), 3);
  expect_durable();
  open();  // a restart
  expect_exact(j.id(), 3);
}

// A failed lease commit gives out nothing: the units are leased again afterwards.
TEST_F(TrustTest, AFailedLeaseCommitLeasesNothing) {
  const std::string a = hello("a");
  submit(v1::VERIFY_MODE_OFF, 3, "0-1");
  fail_commit(1);
  v1::AcquireWorkRequest req;
  req.set_worker_id(a);
  req.set_max_units(2);
  EXPECT_EQ(coordinator_->acquire(Caller::local(), req).status().code(), absl::StatusCode::kUnavailable);
  expect_durable();
  EXPECT_EQ(acquire(a, 2).size(), 2u);
}

// A re-Hello whose write failed left a session without a worker: metrics() and list_workers()
// threw map::at for as long as the disk stayed full. Now the old session goes on.
TEST_F(TrustTest, AFailedReHelloLeavesTheOldSession) {
  const std::string a = hello("a", kHonest1);
  submit(v1::VERIFY_MODE_OFF, 3, "0-1");
  fail_commit(1);
  v1::HelloRequest req;
  req.set_name("a");
  req.set_threads(32);
  req.add_capabilities("perft");
  req.set_protocol_version(kProtocolVersion);
  EXPECT_EQ(coordinator_->hello(kHonest1, req).status().code(), absl::StatusCode::kUnavailable);
  req.set_name("b");  // a new worker whose first Hello fails is not half there either
  fail_commit(1);
  EXPECT_EQ(coordinator_->hello(kHonest1, req).status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NO_THROW(coordinator_->metrics());
  EXPECT_EQ(workers().size(), 1u);
  clock_.advance_ms(kStoreProbeMaxMs);  // the store's next probe is due (degraded mode)
  EXPECT_EQ(acquire(a, 1, kHonest1).size(), 1u) << "the old session stopped working";
  expect_durable();
}

// A perft GetResults wrote to its stream under the coordinator's lock: a client that stopped
// reading blocked every call.
TEST_F(TrustTest, AStalledResultsReaderHoldsUpNoOne) {
  const std::string a = hello("a");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 2, "0-3");
  run({a});
  std::promise<void> release;
  std::shared_future<void> released = release.get_future().share();
  std::promise<void> reading;
  auto reader = std::async(std::launch::async, [&] {
    bool first = true;
    return coordinator_->results(Caller::local(), j.id(), false, false, [&](const v1::ResultChunk&) {
      if (first) {
        first = false;
        reading.set_value();
        released.wait();  // a client that stopped reading
      }
      return true;
    });
  });
  reading.get_future().wait();
  auto other = std::async(std::launch::async, [&] { return coordinator_->get_job(Caller::local(), j.id()); });
  const bool served = other.wait_for(std::chrono::seconds(20)) == std::future_status::ready;
  release.set_value();
  EXPECT_TRUE(served) << "GetJob waited for a stalled results reader";
  EXPECT_TRUE(reader.get().ok());
  EXPECT_TRUE(other.get().ok());
}

// Found by the simulation (seed 1001264): a late copy that contradicted a finished job's unit,
// settled on one vote, took the result back; the job stayed SUCCEEDED with a unit unsettled,
// and the next start found the store damaged and FAILED the job. A finished job's results are
// final: the disagreement is recorded, nothing is taken back.
TEST_F(TrustTest, ALateDisagreementLeavesAFinishedJobAsItIs) {
  const std::string a = hello("a"), b = hello("b");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 5, "0", Caller::local(), 1);
  std::vector<v1::Lease> la = acquire(a, 1000);
  ASSERT_FALSE(la.empty());
  clock_.advance_ms(options_.lease_ms + 1);
  coordinator_->sweep();  // a's leases expire: b gets the units too
  std::vector<v1::Lease> lb = acquire(b, 1000);
  ASSERT_EQ(lb.size(), la.size());
  for (const v1::Lease& l : la) EXPECT_EQ(complete(a, l, result(l)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  ASSERT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(complete(b, lb[0], result(lb[0], 1)).value(), v1::COMPLETION_OUTCOME_DISCARDED);
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  EXPECT_EQ(job(j.id()).result_mismatches(), 1);
  expect_exact(j.id(), 5);
  expect_durable();
  open();  // a restart finds it as it was
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  expect_exact(j.id(), 5);
}

// A join token is traded for at most `uses` credentials, each new and named JOIN:N, counted
// across restarts; a failed store write issues nothing; other roles cannot enroll.
TEST_F(TrustTest, EnrollmentIssuesOneCredentialPerWorkerWithinItsUses) {
  TokenTable table(*TokenSet::parse("", "tokens"));
  coordinator_->set_token_table(&table);
  const Caller join{"fleet", Role::kEnroll, true, 2};
  v1::EnrollRequest req;
  req.set_name("vm1");
  absl::StatusOr<v1::EnrollResponse> first = coordinator_->enroll(join, req);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->identity(), "fleet:1");
  ASSERT_TRUE(table.find(first->token()).has_value());
  EXPECT_EQ(table.find(first->token())->identity, "fleet:1");
  EXPECT_EQ(table.find(first->token())->role, Role::kWorker);
  fail_commit(1);
  EXPECT_EQ(coordinator_->enroll(join, req).status().code(), absl::StatusCode::kUnavailable);
  // A restart counts what was issued, and accepts the credentials it issued.
  TokenTable after(*TokenSet::parse("", "tokens"));
  options_.seed = 42;
  coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, options_);
  coordinator_->set_token_table(&after);
  ASSERT_TRUE(coordinator_->load().ok());
  EXPECT_EQ(after.find(first->token())->identity, "fleet:1");
  absl::StatusOr<v1::EnrollResponse> second = coordinator_->enroll(join, req);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->identity(), "fleet:2");
  EXPECT_NE(second->token(), first->token());
  absl::StatusOr<v1::EnrollResponse> third = coordinator_->enroll(join, req);
  EXPECT_EQ(third.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(third.status().message(), "uses=2")) << third.status();
  EXPECT_EQ(coordinator_->enroll(kHonest1, req).status().code(), absl::StatusCode::kPermissionDenied);
  // The two credentials of one join token are one owner, so one voter: the second never gets a
  // copy of the first's units, and the job says it waits for a second owner.
  const Caller w1 = *after.find(first->token()), w2 = *after.find(second->token());
  EXPECT_EQ(w1.owner_or_identity(), "fleet");
  EXPECT_EQ(w2.owner_or_identity(), "fleet");
  const std::string s1 = hello("vm1", w1), s2 = hello("vm2", w2);
  EXPECT_EQ(workers()["fleet:2/vm2"].owner(), "fleet");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 5, "0", Caller::local(), 1);
  std::vector<v1::Lease> l1 = acquire(s1, 100, w1);
  ASSERT_FALSE(l1.empty());
  for (const v1::Lease& l : l1)
    EXPECT_EQ(complete(s1, l, result(l, 1), w1).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  EXPECT_TRUE(acquire(s2, 100, w2).empty()) << "two credentials of one join token voted twice";
  EXPECT_TRUE(absl::StrContains(job(j.id()).notice(), "1 owner can compute this job")) << job(j.id()).notice();
  // Another owner's join token (an outside contributor's, named in the tokens file) is a second
  // voter; its credentials inherit its owner, stored with them.
  const Caller alice_join{"alice-join", Role::kEnroll, true, 1, "alice"};
  absl::StatusOr<v1::EnrollResponse> alice = coordinator_->enroll(alice_join, req);
  ASSERT_TRUE(alice.ok()) << alice.status();
  const Caller w3 = *after.find(alice->token());
  EXPECT_EQ(w3.owner_or_identity(), "alice");
  const std::string s3 = hello("vm3", w3);
  std::vector<v1::Lease> l3 = acquire(s3, 100, w3);
  ASSERT_EQ(l3.size(), l1.size());
  for (const v1::Lease& l : l3)
    EXPECT_EQ(complete(s3, l, result(l), w3).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION)
        << "untrusted owners disagree: a trust root decides";
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  // After a restart the issued credentials keep their owners.
  TokenTable again(*TokenSet::parse("", "tokens"));
  coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, options_);
  coordinator_->set_token_table(&again);
  ASSERT_TRUE(coordinator_->load().ok());
  EXPECT_EQ(again.find(alice->token())->owner_or_identity(), "alice");
  EXPECT_EQ(again.find(first->token())->owner_or_identity(), "fleet");
}

// Two workers of one credential cannot verify each other, and the job says so.
TEST_F(TrustTest, AJobWaitingForASecondCredentialSaysSo) {
  const std::string x = hello("x", kHonest1), y = hello("y", kHonest1);
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 3, "0");
  for (const v1::Lease& l : acquire(x, 100, kHonest1)) complete(x, l, result(l), kHonest1).IgnoreError();
  EXPECT_TRUE(acquire(y, 100, kHonest1).empty());
  const std::string notice = job(j.id()).notice();
  EXPECT_TRUE(absl::StrContains(notice, "1 owner can compute this job")) << notice;
  hello("z", kHonest2);
  EXPECT_EQ(job(j.id()).notice(), "");
}

// Sessions lost long ago are forgotten; the worker's record (and its trust) stays.
TEST_F(TrustTest, LostSessionsAreForgotten) {
  CoordinatorOptions o;
  o.forget_lost_ms = 600'000;
  open(o);
  for (int k = 0; k < 20; ++k) hello(absl::StrCat("host:", 1000 + k));
  EXPECT_EQ(coordinator_->sessions(), 20u);
  clock_.advance_ms(options_.lease_ms + 1);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->sessions(), 20u) << "lost, not forgotten yet";
  clock_.advance_ms(600'000);
  coordinator_->sweep();
  EXPECT_EQ(coordinator_->sessions(), 0u);
  EXPECT_EQ(workers().size(), 20u);
  const std::string again = hello("host:1000");
  EXPECT_EQ(coordinator_->sessions(), 1u);
  EXPECT_FALSE(again.empty());
}

// Issue 33: two credentials enrolled from one outside contributor's join token, beside the
// operator's workers (trust roots), lie alike where they can under --verify all: one owner, one
// voter, so they never hold both copies of a unit, and every row stays exact.
TEST_F(TrustTest, TwoCredentialsOfOneContributorChangeNoRow) {
  CoordinatorOptions o;
  o.trust_roots = {"ops"};
  o.audit_rate = 0;
  open(o);
  TokenTable table(*TokenSet::parse("", "tokens"));
  coordinator_->set_token_table(&table);
  const Caller join{"mallory-join", Role::kEnroll, true, 16, "mallory"};
  v1::EnrollRequest req;
  req.set_name("vm");
  const Caller m1 = *table.find(coordinator_->enroll(join, req)->token());
  const Caller m2 = *table.find(coordinator_->enroll(join, req)->token());
  EXPECT_EQ(m1.owner_or_identity(), "mallory");
  EXPECT_NE(m1.identity, m2.identity);
  const Caller ops1{"ops-1", Role::kWorker, true, 0, "ops"}, ops2{"ops-2", Role::kWorker, true, 0, "ops"};
  const Caller alice{"alice", Role::kWorker, true, 0, ""};
  const std::string a = hello("a", m1), b = hello("b", m2), r1 = hello("r1", ops1), r2 = hello("r2", ops2),
                    c = hello("c", alice);
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 5, "0-3", Caller::local(), 1);
  std::set<std::string> mallory_units;
  for (int round = 0; round < 200; ++round) {
    bool any = false;
    // Mallory's two credentials ask first and right after each other, and lie on every unit
    // (until quarantined).
    const bool barred = workers()["mallory-join:1/a"].trust() == v1::TRUST_STATE_QUARANTINED;
    for (const auto& [w, caller] : {std::pair{a, m1}, std::pair{b, m2}})
      for (const v1::Lease& l : barred ? std::vector<v1::Lease>{} : acquire(w, 1000, caller)) {
        EXPECT_TRUE(mallory_units.insert(l.unit_id()).second) << "both credentials got " << l.unit_id();
        complete(w, l, result(l, 3), caller).IgnoreError();
        any = true;
      }
    for (const auto& [w, caller] : {std::pair{c, alice}, std::pair{r1, ops1}, std::pair{r2, ops2}})
      for (const v1::Lease& l : acquire(w, 1000, caller)) {
        complete(w, l, result(l), caller).IgnoreError();
        any = true;
      }
    if (!any) break;
  }
  expect_exact(j.id(), 5);
  EXPECT_EQ(workers()["mallory-join:1/a"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_EQ(workers()["mallory-join:2/b"].trust(), v1::TRUST_STATE_QUARANTINED) << "its owner is quarantined whole";
  EXPECT_NE(workers()["alice/c"].trust(), v1::TRUST_STATE_QUARANTINED);
}

// Issue 33: two colluding owners frame an honest contributor (2:1 against it on every unit). No
// copies of owners that are not trust roots decide anything: the honest owner is never
// quarantined, the units wait (and the job says so), and a trust root that joins decides.
TEST_F(TrustTest, TwoOwnersFramingQuarantineNoHonestWorker) {
  CoordinatorOptions o;
  o.trust_roots = {"ops"};
  o.audit_rate = 0;
  open(o);
  const Caller honest{"carol", Role::kWorker, true, 0, ""};
  const Caller x{"x", Role::kWorker, true, 0, "eve"}, y{"y", Role::kWorker, true, 0, "trudy"};
  const std::string h = hello("h", honest), e = hello("e", x), t = hello("t", y);
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 5, "0", Caller::local(), 1);
  for (int round = 0; round < 200; ++round) {
    bool any = false;
    for (const v1::Lease& l : acquire(h, 1000, honest)) {
      complete(h, l, result(l), honest).IgnoreError();
      any = true;
    }
    for (const auto& [w, caller] : {std::pair{e, x}, std::pair{t, y}})
      for (const v1::Lease& l : acquire(w, 1000, caller)) {
        complete(w, l, result(l, 5), caller).IgnoreError();
        any = true;
      }
    if (!any) break;
  }
  EXPECT_NE(workers()["carol/h"].trust(), v1::TRUST_STATE_QUARANTINED) << workers()["carol/h"].trust_reason();
  EXPECT_LT(job(j.id()).progress().units_done(), job(j.id()).progress().units_total());
  EXPECT_TRUE(absl::StrContains(job(j.id()).notice(), "wait for an owner that may decide them"))
      << job(j.id()).notice();
  const Caller ops{"ops-1", Role::kWorker, true, 0, "ops"};
  const std::string r = hello("r", ops);
  for (std::vector<v1::Lease> l = acquire(r, 1000, ops); !l.empty(); l = acquire(r, 1000, ops))
    for (const v1::Lease& le : l) complete(r, le, result(le), ops).IgnoreError();
  for (std::vector<v1::Lease> l = acquire(h, 1000, honest); !l.empty(); l = acquire(h, 1000, honest))
    for (const v1::Lease& le : l) complete(h, le, result(le), honest).IgnoreError();
  for (std::vector<v1::Lease> l = acquire(r, 1000, ops); !l.empty(); l = acquire(r, 1000, ops))
    for (const v1::Lease& le : l) complete(r, le, result(le), ops).IgnoreError();
  expect_exact(j.id(), 5);
  EXPECT_NE(workers()["carol/h"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_EQ(workers()["x/e"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_EQ(workers()["y/t"].trust(), v1::TRUST_STATE_QUARANTINED);
  expect_durable();
}

// Issue 33: a hoarder (one thread declared, so two leases at most) that leases all it can and
// renews for ever holds back only its own few units, and those only as long as their size
// explains: the honest owners finish the job.
TEST_F(TrustTest, AHoarderCannotHoldAJobBack) {
  CoordinatorOptions o;
  o.trust_roots = {"ops"};
  o.audit_rate = 0;
  open(o);
  const Caller hoarder{"hoard", Role::kWorker, true, 0, ""}, ops{"ops-1", Role::kWorker, true, 0, "ops"};
  const Caller alice{"alice", Role::kWorker, true, 0, ""};
  v1::HelloRequest one;
  one.set_name("w");
  one.set_threads(1);
  one.add_capabilities("perft");
  one.set_protocol_version(kProtocolVersion);
  auto hr = coordinator_->hello(hoarder, one);
  ASSERT_TRUE(hr.ok()) << hr.status();
  const std::string x = hr->worker_id();
  const std::string r = hello("r", ops), a = hello("a", alice);
  const v1::Job j = submit(v1::VERIFY_MODE_ADAPTIVE, 5, "0-1", Caller::local(), 1);
  const int64_t total = job(j.id()).progress().units_total();
  std::vector<v1::Lease> held = acquire(x, 1024, hoarder);
  EXPECT_LE(held.size(), 2u) << "threads x (1 + prefetch)";
  v1::RenewLeasesRequest renew;
  renew.set_worker_id(x);
  for (const v1::Lease& l : held) renew.add_unit_ids(l.unit_id());
  int64_t elapsed = 0;
  for (int step = 0; step < 200 && job(j.id()).state() == v1::JOB_STATE_RUNNING; ++step) {
    // The hoarder renews and asks for more; the honest owners compute what they get.
    coordinator_->renew(hoarder, renew).IgnoreError();
    for (const v1::Lease& l : acquire(x, 1024, hoarder)) renew.add_unit_ids(l.unit_id());
    EXPECT_LE(job(j.id()).progress().units_leased(), total);
    for (const auto& [w, caller] : {std::pair{r, ops}, std::pair{a, alice}})
      for (const v1::Lease& l : acquire(w, 1000, caller)) complete(w, l, result(l), caller).IgnoreError();
    clock_.advance_ms(10'000);
    elapsed += 10'000;
    coordinator_->sweep();
  }
  expect_exact(j.id(), 5);
  EXPECT_LE(elapsed, (kMinLeaseHoldSeconds + 120) * 1000) << "the job waited on the hoarder";
}

}  // namespace
}  // namespace c960::cluster
