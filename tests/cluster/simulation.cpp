#include "tests/cluster/simulation.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "cluster/u128.h"
#include "coordinator/coordinator.h"
#include "core/perft.h"
#include "core/position.h"
#include "worker/compute.h"

namespace c960::cluster::sim {
namespace {

// Honest results of units and perft of roots, shared by all schedules (they are pure).
class Answers {
 public:
  v1::UnitResult unit(const v1::UnitSpec& spec) {
    v1::UnitSpec key = spec;
    if (key.has_perft()) key.mutable_perft()->set_zobrist_seed(0);
    const std::string k = key.SerializeAsString();
    std::lock_guard lock(mu_);
    auto it = units_.find(k);
    if (it == units_.end()) it = units_.emplace(k, compute_unit(spec, nullptr).value()).first;
    return it->second;
  }
  NodeCount root(const std::string& fen, int depth) {
    const std::string k = absl::StrCat(fen, "|", depth);
    std::lock_guard lock(mu_);
    auto it = roots_.find(k);
    if (it == roots_.end()) it = roots_.emplace(k, perft(*Position::from_fen(fen), depth)).first;
    return it->second;
  }

 private:
  std::mutex mu_;
  std::map<std::string, v1::UnitResult> units_;
  std::map<std::string, NodeCount> roots_;
};

Answers& answers() {
  static Answers a;
  return a;
}

enum class Kind { kHonest, kCrasher, kSlow, kLiar, kPair, kHoarder, kReckless, kColluder };
// How a colluding group lies: only on units every copy of which the group holds (smart), on
// every unit (framing: against honest copies too), or honestly until halfway, then smart.
enum class Strategy { kSmart, kFraming, kTurncoat };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::kHonest: return "honest";
    case Kind::kCrasher: return "crasher";
    case Kind::kSlow: return "slow";
    case Kind::kLiar: return "liar";
    case Kind::kPair: return "pair";
    case Kind::kHoarder: return "hoarder";
    case Kind::kReckless: return "reckless";
    case Kind::kColluder: return "colluder";
  }
  return "?";
}

struct SimWorker {
  std::string name;
  Caller caller;
  Kind kind = Kind::kHonest;
  uint64_t lie = 0;  // leaf nodes added to every count (liars; the pair's two names agree)
  std::string session;
  bool barred = false;
  std::vector<v1::Lease> held;
  std::vector<v1::CompleteUnitRequest> outbox;  // results sent, not answered yet
  bool honest() const { return kind == Kind::kHonest || kind == Kind::kCrasher || kind == Kind::kSlow; }
  std::string key() const { return absl::StrCat(caller.identity, "/", name); }
  std::string owner() const { return caller.owner_or_identity(); }
};

class Simulation {
 public:
  Simulation(uint64_t seed, const Config& config) : seed_(seed), config_(config), rng_(seed) {
    options_.lease_ms = 10'000;
    options_.trust_after = 2;
    options_.spot_check_rate = 0.3;
    options_.seed = seed | 1;
    options_.max_leases_per_credential = 12;
    options_.trust_roots = {"ops"};  // the operator's own workers: h0 and its second name
    options_.audit_rate = 0.1;
    options_.waiter_thread = false;  // nobody long-polls here
    store_ = std::move(Store::open(":memory:").value());
    store_->set_fault_injector([this](const char*) {
      if (!faults_on_ || !chance(config_.fault_rate)) return absl::OkStatus();
      ++report_.faults;
      return absl::InternalError("store: the disk is full (simulated)");
    });
  }

  Report run() {
    report_.seed = seed_;
    setup();
    start();
    faults_on_ = true;
    for (int s = 0; s < config_.steps && report_.violations.empty(); ++s) {
      step(false);
      ++report_.steps;
      check();
    }
    faults_on_ = false;
    if (report_.violations.empty()) drain();
    return report_;
  }

 private:
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  void log(const std::string& s) {
    if (config_.verbose) std::printf("[seed %llu] %s\n", static_cast<unsigned long long>(seed_), s.c_str());
  }
  void violation(const std::string& what) {
    report_.violations.push_back(absl::StrCat("step ", report_.steps, ": ", what));
    log(absl::StrCat("VIOLATION ", what));
  }

  void setup() {
    static const int kRoots[] = {0, 518, 959, 100};
    const int root = kRoots[pick(4)];
    const int honest = 2 + pick(2);
    const bool liar = chance(0.5), pair = chance(0.5), hoarder = chance(0.3), reckless = chance(0.4);
    const int mode = pick(5);  // all, all, adaptive, adaptive, off (off only among honest workers)
    verify_ = mode < 2                   ? v1::VERIFY_MODE_ALL
              : mode < 4 || liar || pair ? v1::VERIFY_MODE_ADAPTIVE
                                         : v1::VERIFY_MODE_OFF;
    auto add = [&](const std::string& cred, const std::string& name, Kind k, uint64_t lie,
                   const std::string& owner = "") {
      SimWorker w;
      w.name = name;
      w.caller = Caller{cred, Role::kWorker, true, 0, owner};
      w.kind = k;
      w.lie = lie;
      workers_.push_back(std::move(w));
    };
    // h0 is the operator's (a trust root, with a second credential of the same owner); the other
    // honest workers are outside contributors, each its own owner.
    for (int i = 0; i < honest; ++i)
      add(absl::StrCat("h", i), "w",
          i == 0   ? Kind::kCrasher
          : i == 1 ? Kind::kSlow
                   : Kind::kHonest,
          0, i == 0 ? "ops" : "");
    add("h0b", "w", Kind::kHonest, 0, "ops");
    // A colluding group of 2 or 3 owners, each with one or two credentials, lying alike.
    if (chance(0.5)) {
      const int owners = 2 + pick(2);
      strategy_ = Strategy(pick(3));
      for (int g = 0; g < owners; ++g)
        for (int c = 0, n = 1 + pick(2); c < n; ++c)
          add(absl::StrCat("c", g, "-", c), "w", Kind::kColluder, 3, absl::StrCat("c", g));
      report_.colluders = owners;
      if (verify_ == v1::VERIFY_MODE_OFF) verify_ = v1::VERIFY_MODE_ADAPTIVE;  // off only among honest workers
    }
    if (liar) add("liar", "w", Kind::kLiar, 2);
    if (pair) {
      add("pair", "p1", Kind::kPair, 1);
      add("pair", "p2", Kind::kPair, 1);
    }
    if (hoarder) add("hoard", "w", Kind::kHoarder, 0);
    // Honest, until one batch that starts with an impossible count (it is quarantined at once)
    // and goes on with counts off by one: none of those may count, even without verification.
    if (reckless) add("reckless", "w", Kind::kReckless, 0);
    root_ = root;
    report_.schedule =
        absl::StrCat("verify ", v1::VerifyMode_Name(verify_), ", root ", root,
                     report_.colluders ? absl::StrCat(", colluders ", kStrategy[int(strategy_)]) : "", ", workers");
    for (const SimWorker& w : workers_) absl::StrAppend(&report_.schedule, " ", w.key(), " (", kind_name(w.kind), ")");
    log(report_.schedule);
  }

  void start() {
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, options_);
    if (absl::Status s = coordinator_->load(); !s.ok()) violation(absl::StrCat("load: ", s.message()));
    if (job_.empty()) {
      v1::SubmitJobRequest req;
      req.mutable_spec()->set_verify(verify_);
      req.mutable_spec()->mutable_perft()->set_depth(kDepth);
      req.mutable_spec()->mutable_perft()->set_start_positions(absl::StrCat(root_));
      req.mutable_spec()->mutable_perft()->set_split_depth(1);
      absl::StatusOr<v1::Job> j = coordinator_->submit(Caller::local(), req);
      if (!j.ok()) return violation(absl::StrCat("submit: ", j.status().message()));
      job_ = j->id();
    }
  }

  void restart() {
    ++report_.restarts;
    log("coordinator restarts");
    coordinator_.reset();
    start();
    for (SimWorker& w : workers_) w.held.clear();  // their sessions are gone; leases come back by renewal
  }

  bool hello(SimWorker& w) {
    v1::HelloRequest req;
    req.set_name(w.name);
    req.set_threads(8);
    req.add_capabilities("perft");
    req.set_protocol_version(kProtocolVersion);
    absl::StatusOr<v1::HelloResponse> r = coordinator_->hello(w.caller, req);
    if (!r.ok()) {
      if (reason_of(r.status()) == v1::ErrorInfo::REASON_QUARANTINED) w.barred = true;
      log(absl::StrCat(w.key(), " hello: ", r.status().ToString()));
      return false;
    }
    w.session = r->worker_id();
    return true;
  }

  // The worker's reaction to a call's error: UNKNOWN_WORKER (a restart, a superseded session)
  // means Hello again; QUARANTINED, stop.
  void on_error(SimWorker& w, const absl::Status& s) {
    if (reason_of(s) == v1::ErrorInfo::REASON_UNKNOWN_WORKER) w.session.clear();
    if (reason_of(s) == v1::ErrorInfo::REASON_QUARANTINED) w.barred = true;
  }

  v1::UnitResult result_for(const SimWorker& w, const v1::Lease& l) {
    v1::UnitResult r = answers().unit(l.spec());
    bool lies = w.lie != 0;
    if (w.kind == Kind::kColluder) {
      // The group knows which of its owners leased the unit: a smart group lies only where it
      // holds every copy it has seen (two owners at least), a framing one everywhere.
      const bool both = group_leased_[l.unit_id()].size() >= 2;
      lies = strategy_ == Strategy::kFraming ? true
             : strategy_ == Strategy::kSmart ? both
                                             : both && report_.steps * 2 >= config_.steps;
    }
    if (lies) {
      v1::PerftUnitResult* p = r.mutable_perft();
      p->mutable_nodes()->set_lo(p->nodes().lo() + w.lie);
      if (p->divide_size()) p->mutable_divide(0)->mutable_nodes()->set_lo(p->divide(0).nodes().lo() + w.lie);
    }
    return r;
  }

  void acquire(SimWorker& w, int max_units) {
    v1::AcquireWorkRequest req;
    req.set_worker_id(w.session);
    req.set_max_units(max_units);
    absl::StatusOr<v1::AcquireWorkResponse> r = coordinator_->acquire(w.caller, req);
    if (!r.ok()) return on_error(w, r.status());
    for (const v1::Lease& l : r->leases()) {
      w.held.push_back(l);
      if (w.kind == Kind::kColluder) group_leased_[l.unit_id()].insert(w.owner());
    }
    if (r->leases_size()) log(absl::StrCat(w.key(), " leased ", r->leases_size()));
  }

  void complete(SimWorker& w, bool all) {
    // Results of some held leases join the ones not answered yet; sent in a random order,
    // sometimes with one twice.
    if (w.kind == Kind::kReckless && w.held.size() >= 2 && chance(0.2)) return reckless(w);
    std::shuffle(w.held.begin(), w.held.end(), rng_);
    const size_t n = all ? w.held.size() : size_t(pick(int(w.held.size()) + 1));
    for (size_t k = 0; k < n; ++k) {
      v1::CompleteUnitRequest c;
      c.set_unit_id(w.held[k].unit_id());
      c.set_attempt(w.held[k].attempt());
      *c.mutable_result() = result_for(w, w.held[k]);
      w.outbox.push_back(std::move(c));
    }
    w.held.erase(w.held.begin(), w.held.begin() + long(n));
    if (w.outbox.empty()) return;
    std::shuffle(w.outbox.begin(), w.outbox.end(), rng_);
    v1::CompleteUnitsRequest req;
    req.set_worker_id(w.session);
    const size_t batch = std::min<size_t>(w.outbox.size(), size_t(1 + pick(std::min(16, kMaxCompletionsPerCall))));
    for (size_t k = 0; k < batch; ++k) *req.add_completions() = w.outbox[k];
    if (batch > 0 && chance(0.1)) *req.add_completions() = w.outbox[0];
    absl::StatusOr<v1::CompleteUnitsResponse> r = coordinator_->complete_units(w.caller, req);
    if (!r.ok()) {
      log(absl::StrCat(w.key(), " complete x", req.completions_size(), ": ", r.status().ToString()));
      return on_error(w, r.status());  // kept, sent again later
    }
    report_.completions += r->statuses_size();
    std::vector<v1::CompleteUnitRequest> left;
    for (size_t k = 0; k < w.outbox.size(); ++k) {
      if (k >= batch) {
        left.push_back(w.outbox[k]);
        continue;
      }
      const v1::CompletionStatus& st = r->statuses(int(k));
      if (st.code() == int(absl::StatusCode::kUnavailable)) left.push_back(w.outbox[k]);
      if (st.reason() == v1::ErrorInfo::REASON_QUARANTINED) w.barred = true;
      if (st.code() == 0 && st.outcome() == v1::COMPLETION_OUTCOME_ACCEPTED)
        log(absl::StrCat(w.key(), " accepted ", st.unit_id()));
    }
    w.outbox = std::move(left);
  }

  void reckless(SimWorker& w) {
    v1::CompleteUnitsRequest req;
    req.set_worker_id(w.session);
    for (size_t k = 0; k < w.held.size(); ++k) {
      v1::CompleteUnitRequest* c = req.add_completions();
      c->set_unit_id(w.held[k].unit_id());
      c->set_attempt(w.held[k].attempt());
      *c->mutable_result() = answers().unit(w.held[k].spec());
      v1::PerftUnitResult* p = c->mutable_result()->mutable_perft();
      if (k == 0) {
        p->mutable_nodes()->set_hi(~0ULL);
        p->mutable_nodes()->set_lo(~0ULL);
      } else {
        p->mutable_nodes()->set_lo(p->nodes().lo() + 1);
      }
    }
    log(absl::StrCat(w.key(), " sends a reckless batch of ", req.completions_size()));
    w.held.clear();
    absl::StatusOr<v1::CompleteUnitsResponse> r = coordinator_->complete_units(w.caller, req);
    if (!r.ok()) on_error(w, r.status());
    w.barred = true;  // it stops here, whatever the answer
  }

  void renew(SimWorker& w) {
    v1::RenewLeasesRequest req;
    req.set_worker_id(w.session);
    for (const v1::Lease& l : w.held) req.add_unit_ids(l.unit_id());
    absl::StatusOr<v1::RenewLeasesResponse> r = coordinator_->renew(w.caller, req);
    if (!r.ok()) return on_error(w, r.status());
    std::vector<v1::Lease> kept;
    for (int k = 0; k < r->renewals_size(); ++k)
      if (r->renewals(k).status() == v1::LEASE_STATUS_ACTIVE) kept.push_back(w.held[size_t(k)]);
    w.held = std::move(kept);
  }

  void act(SimWorker& w, bool drain) {
    if (w.barred) return;
    if (w.session.empty() && !hello(w)) return;
    if (w.kind == Kind::kHoarder) {
      if (chance(0.5))
        acquire(w, kMaxAcquire);
      else
        renew(w);
      return;
    }
    const int a = drain ? 0 : pick(100);
    if (w.kind == Kind::kColluder && a < 35) {
      // The group asks right after each other (the order that let speed choose placement).
      for (SimWorker& o : workers_)
        if (o.kind == Kind::kColluder && !o.barred && (!o.session.empty() || hello(o))) acquire(o, 1 + pick(8));
      for (SimWorker& o : workers_)
        if (o.kind == Kind::kColluder && !o.barred && !o.session.empty()) complete(o, false);
      return;
    }
    if (drain || a < 35) {
      acquire(w, 1 + pick(8));
      if (drain || w.kind != Kind::kSlow || chance(0.3)) complete(w, drain);
    } else if (a < 70) {
      if (w.kind != Kind::kSlow || chance(0.3)) complete(w, false);
    } else if (a < 85) {
      renew(w);
    } else if (a < 92 || (w.kind == Kind::kCrasher && a < 97)) {
      // A crash: leases and unsent results gone; the process comes back under the same name.
      log(absl::StrCat(w.key(), " crashes"));
      w.held.clear();
      w.outbox.clear();
      w.session.clear();
    } else {
      v1::ReleaseUnitsRequest req;
      req.set_worker_id(w.session);
      for (const v1::Lease& l : w.held) req.add_unit_ids(l.unit_id());
      if (absl::Status s = coordinator_->release(w.caller, req); !s.ok()) return on_error(w, s);
      w.held.clear();
    }
  }

  void step(bool drain) {
    if (!drain && chance(config_.restart_rate)) restart();
    if (!drain && chance(0.15)) {
      clock_.advance_ms(pick(int(options_.lease_ms * 3 / 2)));
      coordinator_->sweep();
      return;
    }
    SimWorker& w = workers_[size_t(pick(int(workers_.size())))];
    if (drain && !w.honest()) return;
    act(w, drain);
  }

  void check() {
    ++report_.checks;
    const bool faults = faults_on_;
    faults_on_ = false;
    // A coordinator loaded from the store holds what memory holds (read back only when memory
    // changed: every store write comes with one, and a failed one puts memory back).
    const std::string memory = coordinator_->durable_state();
    if (memory != last_checked_) {
      Coordinator fresh(store_.get(), &clock_, options_);
      if (absl::Status s = fresh.load(); !s.ok()) violation(absl::StrCat("load for the check: ", s.message()));
      const std::string stored = fresh.durable_state();
      if (stored != memory)
        violation(absl::StrCat("memory differs from the store:\n--- memory\n", memory, "--- store\n", stored));
      last_checked_ = memory;
    }
    if (const std::string leases = coordinator_->check_lease_counts(); !leases.empty()) violation(leases);
    v1::ListWorkersRequest lw;
    lw.set_include_lost(true);
    absl::StatusOr<v1::ListWorkersResponse> ws = coordinator_->list_workers(Caller::local(), lw);
    if (!ws.ok()) violation(absl::StrCat("ListWorkers: ", ws.status().message()));
    if (ws.ok())
      for (const v1::WorkerInfo& i : ws->workers())
        for (const SimWorker& w : workers_)
          if (w.honest() && w.key() == i.name() && i.trust() == v1::TRUST_STATE_QUARANTINED)
            violation(absl::StrCat("honest worker ", i.name(), " quarantined: ", i.trust_reason()));
    absl::StatusOr<v1::Job> j = coordinator_->get_job(Caller::local(), job_);
    if (!j.ok()) {
      violation(absl::StrCat("GetJob: ", j.status().message()));
    } else {
      if (j->state() == v1::JOB_STATE_FAILED) violation(absl::StrCat("the job FAILED: ", j->failure_detail()));
      if (j->progress().units_done() > j->progress().units_total())
        violation(absl::StrCat(j->progress().units_done(), " units done of ", j->progress().units_total()));
    }
    faults_on_ = faults;
  }

  void drain() {
    // Leases of workers that stop (liars, the hoarder) expire; honest workers finish the job.
    for (int round = 0; round < 4000; ++round) {
      absl::StatusOr<v1::Job> j = coordinator_->get_job(Caller::local(), job_);
      if (!j.ok() || j->state() != v1::JOB_STATE_RUNNING) break;
      if (round % 50 == 49) {
        clock_.advance_ms(options_.lease_ms + 1);
        coordinator_->sweep();
      }
      step(true);
    }
    check();
    absl::StatusOr<v1::Job> j = coordinator_->get_job(Caller::local(), job_);
    if (!j.ok() || j->state() != v1::JOB_STATE_SUCCEEDED) {
      if (config_.verbose) std::printf("%s", coordinator_->durable_state().c_str());
      return violation(absl::StrCat("the job did not succeed after the drain: ",
                                    j.ok()
                                        ? absl::StrCat(v1::JobState_Name(j->state()), " ", j->progress().units_done(),
                                                       "/", j->progress().units_total(), " ", j->notice())
                                        : j.status().ToString()));
    }
    report_.audited = j->progress().units_audited();
    v1::ListWorkersRequest lw;
    lw.set_include_lost(true);
    if (absl::StatusOr<v1::ListWorkersResponse> ws = coordinator_->list_workers(Caller::local(), lw); ws.ok())
      for (const v1::WorkerInfo& i : ws->workers())
        for (const SimWorker& w : workers_)
          if (w.kind == Kind::kColluder && w.key() == i.name() && i.trust() == v1::TRUST_STATE_QUARANTINED)
            report_.caught = true;
    absl::StatusOr<std::vector<v1::ResultChunk>> chunks = coordinator_->results(Caller::local(), job_, false);
    if (!chunks.ok()) return violation(absl::StrCat("results: ", chunks.status().message()));
    NodeCount sum = 0;
    for (const v1::ResultChunk& c : *chunks) {
      const NodeCount want = answers().root(c.perft().fen(), kDepth);
      ++report_.rows;
      if (from_proto(c.perft().nodes()) != want) {
        ++report_.forged_rows;
        // Colluding owners may change rows within the bound the test checks over seeds; nobody
        // else may change any.
        if (!report_.colluders)
          violation(absl::StrCat("row ", c.perft().fen(), ": ", to_string(from_proto(c.perft().nodes())),
                                 " instead of ", to_string(want)));
      }
      sum += want;
    }
    if (!report_.colluders && from_proto(j->progress().nodes_done()) != sum)
      violation(absl::StrCat("nodes done ", to_string(from_proto(j->progress().nodes_done())), " instead of ",
                             to_string(sum)));
  }

  static constexpr int kDepth = 5;
  uint64_t seed_;
  Config config_;
  std::mt19937_64 rng_;
  FakeClock clock_;
  CoordinatorOptions options_;
  std::unique_ptr<Store> store_;
  std::unique_ptr<Coordinator> coordinator_;
  std::vector<SimWorker> workers_;
  v1::VerifyMode verify_ = v1::VERIFY_MODE_ALL;
  Strategy strategy_ = Strategy::kSmart;
  static constexpr const char* kStrategy[] = {"smart", "framing", "turncoat"};
  std::map<std::string, std::set<std::string>> group_leased_;  // unit -> colluding owners that leased it
  int root_ = 0;
  std::string job_;
  bool faults_on_ = false;
  std::string last_checked_;
  Report report_;
};

}  // namespace

Report run(uint64_t seed, const Config& config) {
  set_log_silenced(!config.verbose);
  Report r = Simulation(seed, config).run();
  set_log_silenced(false);
  return r;
}

}  // namespace c960::cluster::sim
