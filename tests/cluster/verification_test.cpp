// Verified results in the coordinator's logic, no sockets: replicas on different workers with
// different Zobrist key sets, majority decisions, trust and spot checks, quarantine and the
// recomputation it brings, who may complete what, identities, caps and pages.
#include <filesystem>
#include <gtest/gtest.h>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "cluster/errors.h"
#include "cluster/u128.h"
#include "tests/cluster/coordinator_fixture.h"

namespace c960::cluster {
namespace {

class VerificationTest : public CoordinatorFixture {};

TEST_F(VerificationTest, AllComputesEveryUnitTwiceWithDifferentKeySets) {
  const std::string a = hello("a"), b = hello("b");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 4, "0-3");
  std::vector<v1::Lease> la = acquire(a, 4);
  ASSERT_EQ(la.size(), 4u);
  EXPECT_TRUE(acquire(a, 4).empty()) << "a worker may not verify itself";
  std::vector<v1::Lease> lb = acquire(b, 4);
  ASSERT_EQ(lb.size(), 4u);
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(la[i].unit_id(), lb[i].unit_id());
    EXPECT_NE(la[i].spec().perft().zobrist_seed(), lb[i].spec().perft().zobrist_seed());
  }
  for (const v1::Lease& l : la)
    EXPECT_EQ(complete(a, l, result(l)).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  EXPECT_EQ(job(j.id()).progress().units_verifying(), 4);
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  for (const v1::Lease& l : lb) EXPECT_EQ(complete(b, l, result(l)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  expect_exact(j.id(), 4);
  EXPECT_EQ(workers()["a"].agreeing_results(), 4);
  EXPECT_EQ(workers()["b"].agreeing_results(), 4);
}

// A job no connected worker can run says why: no worker at all, none that computes its kind of
// unit, or none that offers its engine (a lone worker under verify: AJobWaitingForASecondWorkerSaysSo).
TEST_F(VerificationTest, ANoticeSaysWhenNoWorkerCanRunAJob) {
  const v1::Job j = submit(v1::VERIFY_MODE_OFF, 3, "0-1");
  EXPECT_EQ(job(j.id()).notice(), "waiting: no worker is connected");
  const std::string a = hello("a");
  EXPECT_EQ(job(j.id()).notice(), "");
  run({a});
  EXPECT_EQ(job(j.id()).state(), v1::JOB_STATE_SUCCEEDED);
  // Workers that compute perft only cannot play games.
  v1::SubmitJobRequest req;
  v1::SelfPlayJobSpec* sp = req.mutable_spec()->mutable_selfplay();
  sp->set_start_positions("518");
  sp->set_games_per_position(1);
  sp->set_engine("builtin");
  sp->set_nodes(100);
  req.mutable_spec()->set_verify(v1::VERIFY_MODE_ALL);
  auto games = coordinator_->submit(Caller::local(), req);
  ASSERT_TRUE(games.ok()) << games.status();
  EXPECT_EQ(job(games->id()).notice(), "waiting: no connected worker computes selfplay units");
  const v1::HelloRequest player =
      hello_request("player", HelloOptions{.threads = 1, .capabilities = {"selfplay"}, .engines = {"builtin"}});
  ASSERT_TRUE(coordinator_->hello(Caller::local(), player).ok());
  // One worker (one owner) under verify all: every unit will need a second owner, and the notice
  // says so from the start (as c960 submit prints it).
  EXPECT_NE(job(games->id()).notice().find("checked by a second owner"), std::string::npos)
      << job(games->id()).notice();
  sp->set_engine("sf");
  auto sf = coordinator_->submit(Caller::local(), req);
  ASSERT_TRUE(sf.ok()) << sf.status();
  EXPECT_EQ(job(sf->id()).notice(), "waiting: no connected worker offers engine 'sf' (c960-worker --engine sf=PATH)");
}

TEST_F(VerificationTest, AThirdWorkerDecidesADisagreementAndTheLiarIsQuarantined) {
  const std::string honest1 = hello("honest1"), liar = hello("liar"), honest2 = hello("honest2");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 5, "0-1", Caller::local(), 1);
  run({liar, honest1, honest2}, {liar});
  expect_exact(j.id(), 5);
  const v1::Job done = job(j.id());
  EXPECT_GE(done.progress().disagreements(), 1);
  EXPECT_GE(done.result_mismatches(), 1);
  auto w = workers();
  EXPECT_EQ(w["liar"].trust(), v1::TRUST_STATE_QUARANTINED) << w["liar"].trust_reason();
  EXPECT_TRUE(absl::StrContains(w["liar"].trust_reason(), "outvoted")) << w["liar"].trust_reason();
  EXPECT_NE(w["honest1"].trust(), v1::TRUST_STATE_QUARANTINED);
  EXPECT_NE(w["honest2"].trust(), v1::TRUST_STATE_QUARANTINED);
  // A quarantined worker gets no more work, and is told why.
  v1::AcquireWorkRequest req;
  req.set_worker_id(liar);
  req.set_max_units(1);
  EXPECT_EQ(reason_of(coordinator_->acquire(Caller::local(), req).status()), v1::ErrorInfo::REASON_QUARANTINED);
}

// Under adaptive an untrusted owner's units are computed twice; owners that confirm each other
// earn nothing, and an owner earns trust only by agreeing with a trusted one (here the operator's
// trust root). Once trusted, with no spot checks, its units are computed once.
TEST_F(VerificationTest, AdaptiveTrustsAfterAgreementsWithATrustRootThenSpotChecks) {
  CoordinatorOptions o;
  o.trust_after = 3;
  o.spot_check_rate = 0;
  o.trust_roots = {"ops"};
  o.audit_rate = 0;
  open(o);
  const Caller alice{"alice", Role::kWorker, true, 0, ""}, bob{"bob", Role::kWorker, true, 0, ""};
  const Caller ops{"ops-1", Role::kWorker, true, 0, "ops"};
  const std::string a = hello("a", alice), b = hello("b", bob);
  const v1::Job first = submit(v1::VERIFY_MODE_ADAPTIVE, 3, "0-2");
  EXPECT_EQ(run({a, b}), 6) << "untrusted owners: every unit twice";
  expect_exact(first.id(), 3);
  EXPECT_EQ(workers()["alice/a"].trust(), v1::TRUST_STATE_NEW) << "confirmed only by an untrusted owner";
  EXPECT_EQ(workers()["alice/a"].agreeing_results(), 0);
  EXPECT_EQ(workers()["bob/b"].trust(), v1::TRUST_STATE_NEW);
  // The root's units settle on its word; a's and b's are confirmed by it.
  const std::string r = hello("r", ops);
  EXPECT_TRUE(workers()["ops-1/r"].trust_root());
  EXPECT_EQ(workers()["ops-1/r"].owner(), "ops");
  const v1::Job second = submit(v1::VERIFY_MODE_ADAPTIVE, 3, "10-59");
  run({a, b, r});
  expect_exact(second.id(), 3);
  EXPECT_EQ(workers()["alice/a"].trust(), v1::TRUST_STATE_TRUSTED) << workers()["alice/a"].trust_reason();
  EXPECT_EQ(workers()["bob/b"].trust(), v1::TRUST_STATE_TRUSTED) << workers()["bob/b"].trust_reason();
  const v1::Job third = submit(v1::VERIFY_MODE_ADAPTIVE, 3, "100-107");
  EXPECT_EQ(run({a, b, r}), 8) << "trusted owners and a root, no spot checks: every unit once";
  expect_exact(third.id(), 3);
}

TEST_F(VerificationTest, QuarantineTakesBackAWorkersUnconfirmedResults) {
  CoordinatorOptions o;
  o.trust_after = 2;
  o.spot_check_rate = 0;
  open(o);
  // Without authentication every worker is a trust root (the operator's own machines): a's
  // results settle on its word alone, and it lies on units nobody checks.
  const std::string a = hello("a"), b = hello("b"), c = hello("c");
  EXPECT_TRUE(workers()["a"].trust_root());
  const v1::Job j = submit(v1::VERIFY_MODE_ADAPTIVE, 5, "20-23");
  std::vector<v1::Lease> ls = acquire(a, 4);
  ASSERT_EQ(ls.size(), 4u);
  for (size_t i = 0; i < 3; ++i)  // the fourth stays leased: the job is still running when a is caught
    EXPECT_EQ(complete(a, ls[i], result(ls[i], 5)).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(job(j.id()).progress().units_done(), 3);
  // Caught on a unit of a job verified in full: outvoted by b and c.
  const v1::Job all = submit(v1::VERIFY_MODE_ALL, 5, "30");
  std::vector<v1::Lease> x = acquire(a, 1);
  ASSERT_EQ(x.size(), 1u);
  ASSERT_EQ(x[0].unit_id(), all.id() + "/0");
  EXPECT_EQ(complete(a, x[0], result(x[0], 7)).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  std::vector<v1::Lease> y = acquire(b, 1);
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(y[0].unit_id(), x[0].unit_id());
  EXPECT_EQ(complete(b, y[0], result(y[0])).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  std::vector<v1::Lease> z = acquire(c, 1);
  ASSERT_EQ(z.size(), 1u);
  ASSERT_EQ(z[0].unit_id(), x[0].unit_id());
  EXPECT_EQ(complete(c, z[0], result(z[0])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(workers()["a"].trust(), v1::TRUST_STATE_QUARANTINED);
  // Its three unconfirmed results were taken back; the others recompute them, exactly.
  EXPECT_EQ(job(j.id()).progress().units_done(), 0);
  run({b, c});
  expect_exact(j.id(), 5);
  expect_exact(all.id(), 5);
}

TEST_F(VerificationTest, OnlyAHolderMayCompleteRenewOrFailAUnit) {
  const std::string a = hello("a"), b = hello("b");
  const v1::Job j = submit(v1::VERIFY_MODE_OFF);
  std::vector<v1::Lease> l = acquire(a, 1);
  ASSERT_EQ(l.size(), 1u);
  absl::StatusOr<v1::CompletionOutcome> foreign = complete(b, l[0], result(l[0]));
  EXPECT_EQ(foreign.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(reason_of(foreign.status()), v1::ErrorInfo::REASON_NOT_LEASED);
  v1::CompleteUnitRequest fail;
  fail.set_worker_id(b);
  fail.set_unit_id(l[0].unit_id());
  fail.set_attempt(1);
  fail.set_failure("forged");
  EXPECT_EQ(coordinator_->complete(Caller::local(), fail).status().code(), absl::StatusCode::kPermissionDenied);
  v1::RenewLeasesRequest renew;
  renew.set_worker_id(b);
  renew.add_unit_ids(l[0].unit_id());
  auto r = coordinator_->renew(Caller::local(), renew);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->renewals(0).status(), v1::LEASE_STATUS_LOST);
  EXPECT_EQ(job(j.id()).unit_failures(), 0);
  EXPECT_EQ(complete(a, l[0], result(l[0])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
}

TEST_F(VerificationTest, AWorkersSessionBelongsToItsIdentity) {
  const Caller alice{"alice", Role::kWorker, true}, mallory{"mallory", Role::kWorker, true};
  const std::string sa = hello("vm1", alice);
  EXPECT_EQ(workers().count("alice/vm1"), 1u);
  // Another identity cannot use alice's session, and Hello with her name makes its own worker.
  v1::AcquireWorkRequest req;
  req.set_worker_id(sa);
  req.set_max_units(1);
  EXPECT_EQ(reason_of(coordinator_->acquire(mallory, req).status()), v1::ErrorInfo::REASON_UNKNOWN_WORKER);
  const std::string sm = hello("vm1", mallory);
  EXPECT_NE(sm, sa);
  EXPECT_TRUE(coordinator_->acquire(alice, req).ok()) << "alice's session was taken over";
  EXPECT_EQ(workers().count("mallory/vm1"), 1u);
  // Alice's own new session supersedes her previous one.
  const std::string sa2 = hello("vm1", alice);
  EXPECT_EQ(reason_of(coordinator_->acquire(alice, req).status()), v1::ErrorInfo::REASON_UNKNOWN_WORKER);
  req.set_worker_id(sa2);
  EXPECT_TRUE(coordinator_->acquire(alice, req).ok());
}

TEST_F(VerificationTest, ImpossibleCountsAreRefusedWithoutAnyOtherWorker) {
  const std::string a = hello("a");
  submit(v1::VERIFY_MODE_OFF, 2, "518");
  std::vector<v1::Lease> l = acquire(a, 1);
  ASSERT_EQ(l.size(), 1u);
  v1::UnitResult huge = result(l[0]);
  huge.mutable_perft()->mutable_nodes()->set_hi(~0ULL);
  huge.mutable_perft()->mutable_nodes()->set_lo(~0ULL);
  absl::StatusOr<v1::CompletionOutcome> r = complete(a, l[0], huge);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument) << r.status();
  EXPECT_EQ(workers()["a"].trust(), v1::TRUST_STATE_QUARANTINED);
}

TEST_F(VerificationTest, SettledResultsCopiesAndTrustSurviveARestart) {
  const std::string path = ::testing::TempDir() + "/verification_restart.db";
  for (const char* suffix : {"", "-wal", "-shm"}) std::filesystem::remove(std::filesystem::path(path).concat(suffix));
  coordinator_.reset();
  store_ = std::move(Store::open(path).value());
  open();
  const std::string a = hello("a"), b = hello("b");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 4, "0-1");
  std::vector<v1::Lease> la = acquire(a, 2), lb = acquire(b, 2);
  ASSERT_EQ(la.size(), 2u);
  ASSERT_EQ(lb.size(), 2u);
  EXPECT_EQ(complete(a, la[0], result(la[0])).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  EXPECT_EQ(complete(b, lb[0], result(lb[0])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  EXPECT_EQ(complete(a, la[1], result(la[1])).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  coordinator_.reset();
  store_.reset();
  store_ = std::move(Store::open(path).value());
  open();
  EXPECT_EQ(job(j.id()).progress().units_done(), 1);
  EXPECT_EQ(job(j.id()).progress().units_verifying(), 1);
  EXPECT_EQ(workers()["a"].agreeing_results(), 1);
  // The workers come back with new sessions; b completes the unit it held before the restart.
  const std::string b2 = hello("b");
  EXPECT_EQ(complete(b2, lb[1], result(lb[1])).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  expect_exact(j.id(), 4);
}

TEST_F(VerificationTest, CallerCapsAndOwnJobs) {
  CoordinatorOptions o;
  o.max_active_jobs = 2;
  o.max_planned_units = 10;
  open(o);
  const Caller alice{"alice", Role::kSubmit, true}, bob{"bob", Role::kSubmit, true};
  const v1::Job a1 = submit(v1::VERIFY_MODE_OFF, 3, "0-3", alice);
  submit(v1::VERIFY_MODE_OFF, 3, "4-7", alice);
  v1::SubmitJobRequest third;
  third.mutable_spec()->mutable_perft()->set_depth(3);
  third.mutable_spec()->mutable_perft()->set_start_positions("8");
  absl::StatusOr<v1::Job> over = coordinator_->submit(alice, third);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(over.status().message(), "max-active-jobs")) << over.status();
  third.mutable_spec()->mutable_perft()->set_start_positions("0-10");
  over = coordinator_->submit(bob, third);
  EXPECT_EQ(over.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_TRUE(absl::StrContains(over.status().message(), "max-planned-units")) << over.status();
  // The submit role sees and cancels its own jobs only.
  EXPECT_EQ(coordinator_->get_job(bob, a1.id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(coordinator_->cancel(bob, a1.id()).status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(coordinator_->list_jobs(bob, {})->jobs_size(), 0);
  EXPECT_EQ(coordinator_->list_jobs(alice, {})->jobs_size(), 2);
  EXPECT_EQ(coordinator_->get_job(alice, a1.id())->owner(), "alice");
  EXPECT_TRUE(coordinator_->cancel(alice, a1.id()).ok());
}

TEST_F(VerificationTest, JobListsComeInPages) {
  for (int i = 0; i < 5; ++i) submit(v1::VERIFY_MODE_OFF, 1, std::to_string(i));
  v1::ListJobsRequest req;
  req.set_page_size(2);
  std::vector<std::string> seen;
  for (int page = 0; page < 5; ++page) {
    auto r = coordinator_->list_jobs(Caller::local(), req);
    ASSERT_TRUE(r.ok()) << r.status();
    for (const v1::Job& j : r->jobs()) seen.push_back(j.id());
    if (r->next_page_token().empty()) break;
    req.set_page_token(r->next_page_token());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"job-5", "job-4", "job-3", "job-2", "job-1"}));
  req.set_page_token("garbage");
  EXPECT_EQ(coordinator_->list_jobs(Caller::local(), req).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(VerificationTest, WatchStreamsAreCapped) {
  CoordinatorOptions o;
  o.max_watches_per_caller = 2;
  o.max_watches = 3;
  open(o);
  const Caller a{"a", Role::kRead, true}, b{"b", Role::kRead, true};
  auto w1 = coordinator_->open_watch(a);
  auto w2 = coordinator_->open_watch(a);
  ASSERT_TRUE(w1.ok() && w2.ok());
  EXPECT_EQ(coordinator_->open_watch(a).status().code(), absl::StatusCode::kResourceExhausted);
  auto w3 = coordinator_->open_watch(b);
  ASSERT_TRUE(w3.ok());
  EXPECT_EQ(coordinator_->open_watch(b).status().code(), absl::StatusCode::kResourceExhausted);  // all 3 open
  w1->reset();
  EXPECT_TRUE(coordinator_->open_watch(b).ok()) << "a closed watch frees its place";
}

TEST_F(VerificationTest, OldWorkersAreRefusedWithTheReason) {
  v1::HelloRequest req;
  req.set_name("old");
  req.set_threads(32);
  req.set_protocol_version(1);
  absl::StatusOr<v1::HelloResponse> r = coordinator_->hello(Caller::local(), req);
  EXPECT_EQ(r.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(reason_of(r.status()), v1::ErrorInfo::REASON_INCOMPATIBLE_VERSION);
}

TEST_F(VerificationTest, AJobWaitingForASecondWorkerSaysSo) {
  const std::string a = hello("a");
  const v1::Job j = submit(v1::VERIFY_MODE_ALL, 3, "0");
  std::vector<v1::Lease> l = acquire(a, 1);
  ASSERT_EQ(complete(a, l[0], result(l[0])).value(), v1::COMPLETION_OUTCOME_PENDING_VERIFICATION);
  EXPECT_TRUE(absl::StrContains(job(j.id()).notice(), "second owner")) << job(j.id()).notice();
  hello("b");
  EXPECT_EQ(job(j.id()).notice(), "");
}

}  // namespace
}  // namespace c960::cluster
