// The coordinator's logic driven directly, no sockets: an in-memory store, a fake clock, workers
// that Hello, lease and complete perft units (honestly, or off by some leaf nodes).
#pragma once

#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cluster/u128.h"
#include "coordinator/coordinator.h"
#include "core/perft.h"
#include "core/position.h"
#include "worker/compute.h"

namespace c960::cluster {

class CoordinatorFixture : public ::testing::Test {
 protected:
  void SetUp() override { open(); }

  void open(CoordinatorOptions o = {}) {
    o.lease_ms = 30'000;
    o.seed = 42;
    options_ = o;
    coordinator_.reset();
    if (!store_) store_ = std::move(Store::open(":memory:").value());
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, o);
    ASSERT_TRUE(coordinator_->load().ok());
  }

  std::string hello(const std::string& name, const Caller& caller = Caller::local()) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_threads(32);  // room for the units tests lease at once (the lease cap: threads x 2)
    req.add_capabilities("perft");
    req.set_protocol_version(kProtocolVersion);
    auto r = coordinator_->hello(caller, req);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) callers_[r->worker_id()] = caller;
    return r.ok() ? r->worker_id() : "";
  }

  // Units of depth depth - split; with split 1 they carry no divide, and at 4 plies and more a
  // count off by a little passes every check the coordinator can make alone: only other workers
  // can tell.
  v1::Job submit(v1::VerifyMode verify, int depth = 3, const std::string& sps = "0-5",
                 const Caller& caller = Caller::local(), int split = 0) {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(verify);
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(split);
    auto j = coordinator_->submit(caller, req);
    EXPECT_TRUE(j.ok()) << j.status();
    return j.ok() ? *j : v1::Job();
  }

  std::vector<v1::Lease> acquire(const std::string& w, int n, const Caller& caller = Caller::local()) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w);
    req.set_max_units(n);
    auto r = coordinator_->acquire(caller, req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::vector<v1::Lease>(r->leases().begin(), r->leases().end()) : std::vector<v1::Lease>();
  }

  // The right result, or one off by `lie` leaf nodes.
  v1::UnitResult result(const v1::Lease& l, int lie = 0) {
    v1::UnitResult r = compute_unit(l.spec(), nullptr).value();
    if (lie) {
      v1::PerftUnitResult* p = r.mutable_perft();
      p->mutable_nodes()->set_lo(p->nodes().lo() + uint64_t(lie));
      if (p->divide_size()) p->mutable_divide(0)->mutable_nodes()->set_lo(p->divide(0).nodes().lo() + uint64_t(lie));
    }
    return r;
  }

  absl::StatusOr<v1::CompletionOutcome> complete(const std::string& w, const v1::Lease& l, const v1::UnitResult& r,
                                                 const Caller& caller = Caller::local()) {
    v1::CompleteUnitRequest req;
    req.set_worker_id(w);
    req.set_unit_id(l.unit_id());
    req.set_attempt(l.attempt());
    *req.mutable_result() = r;
    auto resp = coordinator_->complete(caller, req);
    if (!resp.ok()) return resp.status();
    return resp->outcome();
  }

  v1::Job job(const std::string& id) { return coordinator_->get_job(Caller::local(), id).value(); }

  std::map<std::string, v1::WorkerInfo> workers() {
    v1::ListWorkersRequest req;
    req.set_include_lost(true);
    std::map<std::string, v1::WorkerInfo> out;
    absl::StatusOr<v1::ListWorkersResponse> r = coordinator_->list_workers(Caller::local(), req);
    EXPECT_TRUE(r.ok()) << r.status();
    if (!r.ok()) return out;
    for (const v1::WorkerInfo& w : r->workers()) out[w.name()] = w;
    return out;
  }

  // Every root of the job equals the core's perft, and the progress adds each unit once.
  void expect_exact(const std::string& id, int depth) {
    const v1::Job j = job(id);
    EXPECT_EQ(j.state(), v1::JOB_STATE_SUCCEEDED);
    NodeCount sum = 0;
    auto chunks = coordinator_->results(Caller::local(), id, false);
    ASSERT_TRUE(chunks.ok());
    for (const v1::ResultChunk& c : *chunks) {
      const NodeCount want = perft(*Position::from_fen(c.perft().fen()), depth);
      EXPECT_EQ(from_proto(c.perft().nodes()), want) << c.perft().fen();
      sum += want;
    }
    EXPECT_EQ(from_proto(j.progress().nodes_done()), sum);
  }

  // Lets the workers take turns acquiring one unit and completing it (liar: off by one on every
  // unit it completes) until nothing is left; returns the completions made.
  int run(const std::vector<std::string>& ws, const std::set<std::string>& liars = {}) {
    int made = 0;
    for (bool any = true; any;) {
      any = false;
      for (const std::string& w : ws) {
        v1::AcquireWorkRequest req;
        req.set_worker_id(w);
        req.set_max_units(1);
        const Caller caller = callers_.count(w) ? callers_.at(w) : Caller::local();
        auto got = coordinator_->acquire(caller, req);
        if (!got.ok() || got->leases_size() == 0) continue;
        any = true;
        const v1::Lease& l = got->leases(0);
        complete(w, l, result(l, liars.count(w) ? 1 : 0), caller).IgnoreError();
        ++made;
      }
    }
    return made;
  }

  FakeClock clock_;
  CoordinatorOptions options_;
  std::map<std::string, Caller> callers_;  // by session: whom hello() registered it as (run() acts as it)
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
};

}  // namespace c960::cluster
