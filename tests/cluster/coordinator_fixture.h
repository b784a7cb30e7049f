// The coordinator's logic driven directly, no sockets: a store (in memory unless a test opens a
// file), a fake clock, workers that Hello (with the capabilities and engines a test names), lease
// and complete units (honestly, or perft off by some leaf nodes). Every coordinator test file that
// drives a Coordinator builds on this fixture.
#pragma once

#include <gtest/gtest.h>
#include <map>
#include <memory>
#include <optional>
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

  // Opens the coordinator again over the current store (a restart), with 30 s leases and a fixed
  // seed whatever `o` says; opens an in-memory store first if there is none.
  void open(CoordinatorOptions o = {}) {
    o.lease_ms = 30'000;
    o.seed = 42;
    options_ = o;
    coordinator_.reset();
    if (!store_) store_ = std::move(Store::open(":memory:").value());
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, o);
    const absl::Status loaded = coordinator_->load();
    ASSERT_TRUE(loaded.ok()) << loaded;
  }

  // Closes the coordinator and its store and opens the store at `path` (":memory:": a new, empty
  // one); open() then starts a coordinator over it.
  void open_store(const std::string& path) {
    coordinator_.reset();
    store_.reset();
    auto s = Store::open(path);
    ASSERT_TRUE(s.ok()) << s.status();
    store_ = std::move(*s);
  }

  // What a worker offers at Hello. The defaults: a perft worker with room for the units tests
  // lease at once (the lease cap: threads x 2).
  struct HelloOptions {
    int threads = 32;
    std::vector<std::string> capabilities = {"perft"};
    std::vector<std::string> engines;  // engine names offered besides the built-in one
  };
  // A perft worker with `threads` threads.
  static HelloOptions perft_offer(int threads) {
    HelloOptions o;
    o.threads = threads;
    return o;
  }
  static v1::HelloRequest hello_request(const std::string& name, const HelloOptions& o) {
    v1::HelloRequest req;
    req.set_name(name);
    req.set_threads(o.threads);
    for (const std::string& c : o.capabilities) req.add_capabilities(c);
    for (const std::string& e : o.engines) req.add_engines(e);
    req.set_protocol_version(kProtocolVersion);
    return req;
  }

  // A session for `name` offering hello_options_; its id, or "" (a failed expectation) if refused.
  std::string hello(const std::string& name, const Caller& caller = Caller::local()) {
    return hello(hello_request(name, hello_options_), caller);
  }
  std::string hello(const v1::HelloRequest& req, const Caller& caller = Caller::local()) {
    auto r = coordinator_->hello(caller, req);
    EXPECT_TRUE(r.ok()) << r.status();
    if (r.ok()) callers_[r->worker_id()] = caller;
    return r.ok() ? r->worker_id() : "";
  }

  static v1::SubmitJobRequest perft_request(v1::VerifyMode verify, int depth, const std::string& sps, int split = 0,
                                            const std::string& request_id = "") {
    v1::SubmitJobRequest req;
    req.mutable_spec()->set_verify(verify);
    req.mutable_spec()->mutable_perft()->set_depth(depth);
    req.mutable_spec()->mutable_perft()->set_start_positions(sps);
    req.mutable_spec()->mutable_perft()->set_split_depth(split);
    req.set_request_id(request_id);
    return req;
  }

  // The job the coordinator made of `req`, or an empty one (a failed expectation) if refused.
  v1::Job submit(const v1::SubmitJobRequest& req, const Caller& caller = Caller::local()) {
    auto j = coordinator_->submit(caller, req);
    EXPECT_TRUE(j.ok()) << j.status();
    return j.ok() ? *j : v1::Job();
  }

  // Units of depth depth - split; with split 1 they carry no divide, and at 4 plies and more a
  // count off by a little passes every check the coordinator can make alone: only other workers
  // can tell.
  v1::Job submit(v1::VerifyMode verify, int depth = 3, const std::string& sps = "0-5",
                 const Caller& caller = Caller::local(), int split = 0) {
    return submit(perft_request(verify, depth, sps, split), caller);
  }

  std::vector<v1::Lease> acquire(const std::string& w, int n, const Caller& caller = Caller::local()) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w);
    req.set_max_units(n);
    auto r = coordinator_->acquire(caller, req);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? std::vector<v1::Lease>(r->leases().begin(), r->leases().end()) : std::vector<v1::Lease>();
  }

  // The right result (perft or self-play: the worker's compute path), or a perft result off by
  // `lie` leaf nodes.
  v1::UnitResult result(const v1::Lease& l, int lie = 0) {
    absl::StatusOr<v1::UnitResult> computed = compute_unit(l.spec(), nullptr);
    EXPECT_TRUE(computed.ok()) << computed.status();
    if (!computed.ok()) return v1::UnitResult();
    v1::UnitResult r = *std::move(computed);
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
  // With the right result.
  absl::StatusOr<v1::CompletionOutcome> complete(const std::string& w, const v1::Lease& l) {
    return complete(w, l, result(l), callers_.count(w) ? callers_.at(w) : Caller::local());
  }

  // Completes every unit the worker can get, each accepted.
  void drain(const std::string& w) {
    for (std::vector<v1::Lease> ls; !(ls = acquire(w, 64)).empty();)
      for (const v1::Lease& l : ls) ASSERT_EQ(complete(w, l).value(), v1::COMPLETION_OUTCOME_ACCEPTED);
  }

  v1::Job job(const std::string& id) {
    auto j = coordinator_->get_job(Caller::local(), id);
    EXPECT_TRUE(j.ok()) << j.status();
    return j.ok() ? *j : v1::Job();
  }

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
  HelloOptions hello_options_;             // what hello(name) offers
  std::map<std::string, Caller> callers_;  // by session: whom hello() registered it as (run() acts as it)
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
};

}  // namespace c960::cluster
