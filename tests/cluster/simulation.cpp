#include "tests/cluster/simulation.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "c960/v1/store.pb.h"
#include "cluster/config.h"
#include "cluster/errors.h"
#include "cluster/log.h"
#include "cluster/results_export.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "coordinator/coordinator.h"
#include "coordinator/selfplay_codec.h"
#include "coordinator/selfplay_store.h"
#include "coordinator/store_db.h"
#include "coordinator/store_lease.h"
#include "core/perft.h"
#include "core/position.h"
#include "selfplay/local_runner.h"
#include "selfplay/positions.h"
#include "selfplay/stats.h"
#include "worker/compute.h"

namespace c960::cluster::sim {
namespace {

// What a failing worker reports for a self-play unit (its engine "crashed").
constexpr const char* kFailureText = "engine builtin crashed (simulated)";

// Honest results of units, perft of roots and local runs of self-play specs, shared by all
// schedules (they are pure).
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
  // The statistics table (selfplay::SelfPlayStats::to_csv) of a local run of `spec`.
  std::string local_csv(const v1::SelfPlayJobSpec& p) {
    const std::string k = p.SerializeAsString();
    {
      std::lock_guard lock(mu_);
      if (auto it = local_.find(k); it != local_.end()) return it->second;
    }
    std::string csv;
    absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(p);
    absl::StatusOr<std::vector<selfplay::PlayedGame>> games =
        spec.ok() ? selfplay::play_local(*spec, 1) : absl::StatusOr<std::vector<selfplay::PlayedGame>>(spec.status());
    if (!games.ok()) {
      csv = absl::StrCat("local run: ", games.status().ToString());
    } else {
      selfplay::SelfPlayStats stats;
      for (const selfplay::PlayedGame& g : *games) stats.add(spec->positions[g.position], g.record);
      csv = stats.to_csv();
    }
    std::lock_guard lock(mu_);
    return local_.emplace(k, csv).first->second;
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
  std::map<std::string, std::string> local_;
};

Answers& answers() {
  static Answers a;
  return a;
}

// A failer is honest but for failure reports (its engine "crashes" on some units).
enum class Kind { kHonest, kCrasher, kSlow, kLiar, kPair, kHoarder, kReckless, kColluder, kFailer };
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
    case Kind::kFailer: return "failer";
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
  // Those that finish the job in the drain; and those never to be quarantined (failers too: a
  // failure report is no lie).
  bool drains() const { return kind == Kind::kHonest || kind == Kind::kCrasher || kind == Kind::kSlow; }
  bool honest() const { return drains() || kind == Kind::kFailer; }
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
    if (config_.db.empty()) {
      store_ = std::move(Store::open(":memory:").value());
      arm(store_.get());
      return;
    }
    // PostgreSQL: the schedule's database emptied, then led as a coordinator leads it.
    pg_ = true;
    if (absl::Status s = empty_database(); !s.ok()) {
      violation(absl::StrCat("emptying the database: ", s.message()));
      return;
    }
    lease_ = std::make_unique<StoreLease>([this] { return Store::open(config_.db); });
    election_ = std::make_unique<LeaderElection>(lease_.get(), "leader", timing_);
    if (election_->step(clock_.now_ms()) != LeaderRole::kLeader) {
      violation(absl::StrCat("the first coordinator did not take the lease: ", election_->why(), " ",
                             lease_->last_error().ToString()));
      return;
    }
    store_ = lease_->take_store();
    lease_->watch(store_.get());
    arm(store_.get());
  }

  Report run() {
    report_.seed = seed_;
    if (!store_) return report_;
    setup();
    start();
    faults_on_ = true;
    for (int s = 0; s < config_.steps && report_.violations.empty(); ++s) {
      if (!full_ && chance_of(extra_, config_.episode_rate)) begin_episode();
      step(false);
      ++report_.steps;
      check();
      if (full_ && report_.steps >= episode_end_ && report_.violations.empty()) end_episode();
    }
    if (full_ && report_.violations.empty()) end_episode();
    faults_on_ = false;
    if (report_.violations.empty()) drain();
    return report_;
  }

 private:
  bool chance(double p) { return chance_of(rng_, p); }
  int pick(int n) { return pick_of(rng_, n); }
  // The draws of what the perft-only simulation did not have (the job's kind, failers,
  // degraded-store episodes) come from a second generator, so that they do not move the first
  // one's draws.
  static bool chance_of(std::mt19937_64& g, double p) { return std::uniform_real_distribution<double>(0, 1)(g) < p; }
  static int pick_of(std::mt19937_64& g, int n) { return std::uniform_int_distribution<int>(0, n - 1)(g); }

  // Store faults as the schedule draws them (set on each store the schedule uses).
  void arm(Store* store) {
    store->set_fault_injector([this](const char*) {
      // A degraded-store episode: every write fails while it lasts (the check's read-backs only
      // read).
      if (full_) return absl::InternalError("store: the disk is full (simulated episode)");
      if (!faults_on_ || !chance(config_.fault_rate)) return absl::OkStatus();
      ++report_.faults;
      return absl::InternalError("store: the disk is full (simulated)");
    });
  }

  // SQL run on a connection of its own to the schedule's database.
  absl::Status on_the_side(const char* sql) {
    absl::StatusOr<std::unique_ptr<store_db::Connection>> c = store_db::open_postgres(config_.db, "");
    if (!c.ok()) return c.status();
    if (!(*c)->exec(sql)) return absl::InternalError((*c)->describe());
    return absl::OkStatus();
  }

  // Every table of the database's schema dropped: each schedule starts from an empty database.
  absl::Status empty_database() {
    return on_the_side(
        "DO $$ DECLARE r record; BEGIN FOR r IN SELECT tablename FROM pg_tables WHERE schemaname = "
        "current_schema() LOOP EXECUTE 'DROP TABLE ' || quote_ident(r.tablename) || ' CASCADE'; END LOOP; END $$");
  }

  // The leader's database session ended from outside (a server restart, or a network cut the
  // server noticed, ends it alike), waiting until it is gone: its advisory lock, the lease, with it.
  absl::Status cut_leader() {
    return on_the_side(
        "SELECT pg_terminate_backend(pid, 10000) FROM pg_stat_activity WHERE datname = current_database() AND "
        "pid <> pg_backend_pid() AND application_name = 'c960-coordinator'");
  }

  // A deposition (PostgreSQL): the leader's connection is cut and a standby takes the lease and
  // the store; the deposed leader still serves a few of its workers' calls (it has not renewed
  // yet), and none of them commits: its memory stays what the store held before the cut, which
  // the standby loads. Its next renewal deposes it, and the standby leads from then on.
  void depose() {
    ++report_.deposed;
    log("the leader's database connection is cut; a standby takes over");
    const bool faults = faults_on_;
    faults_on_ = false;  // only the cut fails writes here
    const std::string before = coordinator_->durable_state();
    if (absl::Status s = cut_leader(); !s.ok()) return violation(absl::StrCat("cutting the leader: ", s.message()));
    auto lease = std::make_unique<StoreLease>([this] { return Store::open(config_.db); });
    auto election = std::make_unique<LeaderElection>(lease.get(), "standby", timing_);
    if (election->step(clock_.now_ms()) != LeaderRole::kLeader)
      return violation(absl::StrCat("the standby did not take the lease after the cut: ", election->why(), " ",
                                    lease->last_error().ToString()));
    std::unique_ptr<Store> store = lease->take_store();
    lease->watch(store.get());
    for (int k = 0; k < 4; ++k) act(workers_[size_t(pick(int(workers_.size())))], false);
    if (const std::string now = coordinator_->durable_state(); now != before)
      violation(absl::StrCat("the deposed leader's memory changed after its connection was cut:\n--- before\n", before,
                             "--- now\n", now));
    Coordinator standby(store.get(), &clock_, options_);
    if (absl::Status s = standby.load(); !s.ok()) return violation(absl::StrCat("the standby's load: ", s.message()));
    if (const std::string loaded = standby.durable_state(); loaded != before)
      violation(absl::StrCat("the store changed after the leader's connection was cut:\n--- before\n", before,
                             "--- the standby loaded\n", loaded));
    if (election_->step(clock_.now_ms()) != LeaderRole::kDeposed)
      violation(absl::StrCat("the leader was not deposed at its renewal after the cut: ", election_->why()));
    else
      log(absl::StrCat("deposed: ", election_->why()));
    // The deposed process exits; the standby leads.
    coordinator_.reset();
    store_ = std::move(store);
    election_ = std::move(election);
    lease_ = std::move(lease);
    arm(store_.get());
    start();
    refused_ = false;
    for (SimWorker& w : workers_) w.held.clear();  // their sessions were the deposed leader's
    last_checked_.clear();
    faults_on_ = faults;
  }

  void log(const std::string& s) {
    if (config_.verbose) std::printf("[seed %llu] %s\n", static_cast<unsigned long long>(seed_), s.c_str());
  }
  void violation(const std::string& what) {
    report_.violations.push_back(absl::StrCat("step ", report_.steps, ": ", what));
    log(absl::StrCat("VIOLATION ", what));
  }

  // Small self-play specs (the built-in engine at depth 1, short games): one random ply of
  // about 20, so that some games repeat others exactly (duplicates); their units' results are
  // computed once for all schedules.
  static v1::SelfPlayJobSpec selfplay_spec(int variant) {
    struct Variant {
      const char* positions;
      int games, per_unit, random_plies, max_plies;
      v1::StoreGames store;
    };
    // Games of 40 plies end at the limit (drawn); of up to 300, mostly by mate.
    static const Variant kVariants[] = {
        {"518,0", 5, 2, 1, 300, v1::STORE_GAMES_UNSPECIFIED},
        {"518,0", 8, 1, 1, 40, v1::STORE_GAMES_SAMPLE},
        {"959", 6, 3, 1, 300, v1::STORE_GAMES_NONE},
        {"100,518,7", 4, 2, 1, 40, v1::STORE_GAMES_UNSPECIFIED},
    };
    const Variant& v = kVariants[variant];
    v1::SelfPlayJobSpec s;
    s.set_start_positions(v.positions);
    s.set_games_per_position(v.games);
    s.set_games_per_unit(v.per_unit);
    s.set_random_plies(v.random_plies);
    s.set_store_games(v.store);
    if (v.store == v1::STORE_GAMES_SAMPLE) s.set_store_games_sample(2);
    s.set_engine("builtin");
    s.set_depth(1);
    s.set_seed(7);
    s.set_max_plies(v.max_plies);
    s.set_draw_score_cp(10);
    s.set_resign_score_cp(1000);
    s.set_hash_mb(1);
    s.set_engine_timeout_ms(30000);
    return s;
  }
  static constexpr int kSelfPlayVariants = 4;

  void setup() {
    selfplay_ = chance_of(extra_, config_.selfplay_rate);
    static const int kRoots[] = {0, 518, 959, 100};
    const int root = kRoots[pick(4)];
    const int honest = 2 + pick(2);
    bool liar = chance(0.5), pair = chance(0.5);
    const bool hoarder = chance(0.3);
    bool reckless = chance(0.4);
    // Self-play's lies are not simulated (a result is games the coordinator replays and checks):
    // its schedules have honest workers, failers, a hoarder and the reckless worker, whose
    // impossible result (a game short) quarantines it, taking back the units it settled alone.
    if (selfplay_) liar = pair = false;
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
    if (chance(0.5) && !selfplay_) {
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
    // Honest, until one batch that starts with an impossible result (it is quarantined at once)
    // and goes on with counts off by one (self-play: a game short): none of those may count,
    // even without verification.
    if (reckless) add("reckless", "w", Kind::kReckless, 0);
    // Failers: 1 to 3 owners (one of them, at times, the operator, with root_failers) whose
    // workers report some units failed. Three owners, or two trusted workers, may fail a self-play job; a perft
    // unit cannot fail (its report is refused).
    if (chance_of(extra_, 0.4)) {
      fail_rate_ = 0.2 + 0.8 * std::uniform_real_distribution<double>(0, 1)(extra_);
      const bool ops = chance_of(extra_, 0.3) && config_.root_failers;
      for (int i = 0, n = 1 + pick_of(extra_, 3); i < n; ++i)
        add(absl::StrCat("f", i), "w", Kind::kFailer, 0, i == 0 && ops ? "ops" : ""), ++report_.failers;
      // A failure report bars its owner from the unit (another owner may have the engine): with
      // the operator's worker failing, two outside owners can still verify each other.
      if (ops) add("h9", "w", Kind::kHonest, 0);
    }
    root_ = root;
    if (selfplay_) {
      variant_ = pick_of(extra_, kSelfPlayVariants);
      spec_ = selfplay_spec(variant_);
    }
    report_.selfplay = selfplay_;
    report_.schedule = absl::StrCat(
        selfplay_ ? absl::StrCat("self-play variant ", variant_) : absl::StrCat("perft root ", root), ", verify ",
        v1::VerifyMode_Name(verify_), report_.colluders ? absl::StrCat(", colluders ", kStrategy[int(strategy_)]) : "",
        fail_rate_ > 0 ? absl::StrCat(", failure rate ", fail_rate_) : "", ", workers");
    for (const SimWorker& w : workers_)
      absl::StrAppend(&report_.schedule, " ", w.key(), " (", kind_name(w.kind),
                      w.caller.owner.empty() ? "" : absl::StrCat(", owner ", w.caller.owner), ")");
    log(report_.schedule);
  }

  void start() {
    coordinator_ = std::make_unique<Coordinator>(store_.get(), &clock_, options_);
    if (absl::Status s = coordinator_->load(); !s.ok()) violation(absl::StrCat("load: ", s.message()));
    if (job_.empty()) {
      v1::SubmitJobRequest req;
      req.mutable_spec()->set_verify(verify_);
      if (selfplay_) {
        *req.mutable_spec()->mutable_selfplay() = spec_;
      } else {
        req.mutable_spec()->mutable_perft()->set_depth(kDepth);
        req.mutable_spec()->mutable_perft()->set_start_positions(absl::StrCat(root_));
        req.mutable_spec()->mutable_perft()->set_split_depth(1);
      }
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
    refused_ = false;                              // a new process: not degraded until a write of its own fails
    for (SimWorker& w : workers_) w.held.clear();  // their sessions are gone; leases come back by renewal
  }

  bool hello(SimWorker& w) {
    v1::HelloRequest req;
    req.set_name(w.name);
    req.set_threads(8);
    req.add_capabilities("perft");
    req.add_capabilities("selfplay");
    req.set_protocol_version(kProtocolVersion);
    absl::StatusOr<v1::HelloResponse> r = coordinator_->hello(w.caller, req);
    if (!r.ok()) {
      if (r.status().code() == absl::StatusCode::kUnavailable) refused_ = true;
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
    log(absl::StrCat(w.key(), ": ", s.ToString()));
    if (s.code() == absl::StatusCode::kUnavailable) refused_ = true;
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
    // (In self-play, not before a third of the steps: by then it settled units alone, which its
    // quarantine takes back.)
    if (w.kind == Kind::kReckless && w.held.size() >= 2 && chance(0.2) &&
        (!selfplay_ || report_.steps * 3 >= config_.steps))
      return reckless(w);
    std::shuffle(w.held.begin(), w.held.end(), rng_);
    const size_t n = all ? w.held.size() : size_t(pick(int(w.held.size()) + 1));
    for (size_t k = 0; k < n; ++k) {
      v1::CompleteUnitRequest c;
      c.set_unit_id(w.held[k].unit_id());
      c.set_attempt(w.held[k].attempt());
      if (w.kind == Kind::kFailer && !draining_ && chance_of(extra_, fail_rate_))
        c.set_failure(kFailureText);
      else
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
      if (st.code() == int(absl::StatusCode::kUnavailable)) {
        left.push_back(w.outbox[k]);
        refused_ = true;
      }
      answered(w, st);
    }
    // The first completion sent twice: its second answer counts too (the first may have been
    // refused UNAVAILABLE by a failed commit, and the second kept after a probe).
    if (req.completions_size() > int(batch)) answered(w, r->statuses(int(batch)));
    w.outbox = std::move(left);
  }

  // What one answer of a CompleteUnits call tells.
  void answered(SimWorker& w, const v1::CompletionStatus& st) {
    if (st.reason() == v1::ErrorInfo::REASON_QUARANTINED) w.barred = true;
    if (st.code() == 0 && st.outcome() == v1::COMPLETION_OUTCOME_ACCEPTED) {
      log(absl::StrCat(w.key(), " accepted ", st.unit_id()));
      if (full_) violation(absl::StrCat(w.key(), "'s result for ", st.unit_id(), " accepted while the disk is full"));
    }
    if (st.code() == 0 && st.outcome() == v1::COMPLETION_OUTCOME_FAILURE_RECORDED) {
      log(absl::StrCat(w.key(), "'s failure report for ", st.unit_id(), " recorded"));
      ++report_.failure_reports;
      if (full_) violation(absl::StrCat(w.key(), "'s failure report recorded while the disk is full"));
      // A perft unit cannot fail: its report is refused (and not sent again).
      if (!selfplay_) violation(absl::StrCat("a failure report for perft unit ", st.unit_id(), " was recorded"));
    }
  }

  void reckless(SimWorker& w) {
    v1::CompleteUnitsRequest req;
    req.set_worker_id(w.session);
    for (size_t k = 0; k < w.held.size(); ++k) {
      v1::CompleteUnitRequest* c = req.add_completions();
      c->set_unit_id(w.held[k].unit_id());
      c->set_attempt(w.held[k].attempt());
      *c->mutable_result() = answers().unit(w.held[k].spec());
      if (c->result().has_selfplay()) {
        c->mutable_result()->mutable_selfplay()->mutable_games()->RemoveLast();
        continue;
      }
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
    if (!drain && pg_ && !full_ && chance_of(extra_, config_.depose_rate)) depose();
    if (!drain && chance(0.15)) {
      clock_.advance_ms(pick(int(options_.lease_ms * 3 / 2)));
      coordinator_->sweep();
      return;
    }
    SimWorker& w = workers_[size_t(pick(int(workers_.size())))];
    // Failers' engines are mended for the drain (unless failers_drain is off: then they stop).
    if (drain && !w.drains() && !(w.kind == Kind::kFailer && config_.failers_drain)) return;
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
    // The parts' own invariants (the job table, the registry, each job's queues and their marks).
    if (const std::string parts = coordinator_->check_parts(); !parts.empty())
      violation(absl::StrCat("parts: ", parts));
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
      check_failed(*j);
      if (j->progress().units_done() > j->progress().units_total())
        violation(absl::StrCat(j->progress().units_done(), " units done of ", j->progress().units_total()));
    }
    if (selfplay_) check_totals();
    check_degraded();
    faults_on_ = faults;
  }

  // A job FAILS only by failure reports: a self-play job, after kMaxUnitFailures of them were
  // recorded, naming the report; once FAILED it stays FAILED (restarts included).
  void check_failed(const v1::Job& j) {
    if (j.state() != v1::JOB_STATE_FAILED) {
      if (failed_seen_) violation(absl::StrCat("the job was FAILED and is ", v1::JobState_Name(j.state()), " now"));
      return;
    }
    if (!failed_seen_) log(absl::StrCat("the job FAILED: ", j.failure_detail()));
    failed_seen_ = true;
    report_.job_failed = true;
    if (!selfplay_)
      violation(absl::StrCat("the job FAILED: ", j.failure_detail()));
    else if (report_.failure_reports < kMaxUnitFailures)
      violation(absl::StrCat("the job FAILED after ", report_.failure_reports,
                             " failure reports recorded: ", j.failure_detail()));
    else if (!absl::StrContains(j.failure_detail(), kFailureText))
      violation(absl::StrCat("the job FAILED without naming the report: ", j.failure_detail()));
  }

  // A self-play position's figures as text (terminations without their trailing zeros), to
  // compare; empty for a position without games.
  static std::string figures(int64_t games, int64_t white_wins, int64_t draws, int64_t black_wins, int64_t plies,
                             int64_t duplicates, int64_t uncounted, int64_t stored, std::vector<int64_t> terminations) {
    while (!terminations.empty() && terminations.back() == 0) terminations.pop_back();
    if (games == 0 && white_wins == 0 && draws == 0 && black_wins == 0 && plies == 0 && duplicates == 0 &&
        uncounted == 0 && stored == 0 && terminations.empty())
      return "";
    return absl::StrCat("games ", games, " +", white_wins, " =", draws, " -", black_wins, " plies ", plies,
                        " duplicates ", duplicates, " uncounted ", uncounted, " stored ", stored, " terminations ",
                        absl::StrJoin(terminations, ","));
  }

  // Per-position totals recounted from the settled units' game summaries in the store (each
  // distinct game's result once, a repeat as a duplicate) equal those the store keeps
  // (sp_totals) and those the coordinator reports.
  void check_totals() {
    absl::StatusOr<std::vector<StoredJob>> jobs = store_->load_jobs();
    if (!jobs.ok()) return violation(absl::StrCat("load_jobs: ", jobs.status().message()));
    const StoredJob* job = nullptr;
    for (const StoredJob& sj : *jobs)
      if (sj.id == job_) job = &sj;
    if (!job) return violation("the job is not in the store");
    if (!job->folds.empty()) return violation("a self-play job has folded groups");
    std::map<int32_t, PositionTotals> want;
    std::map<std::pair<int32_t, uint64_t>, int64_t> seen;  // (position, game hash) -> games
    for (const StoredUnit& u : job->units) {
      if (!u.result) continue;
      v1::UnitSpec spec;
      v1::store::UnitMeta meta;
      v1::store::SelfPlaySettled settled;
      if (!spec.ParseFromString(u.spec) || !meta.ParseFromString(u.meta) || !settled.ParseFromString(*u.result))
        return violation(absl::StrCat("unit ", u.index, ": its stored spec, meta or result does not parse"));
      absl::StatusOr<std::vector<GameSummary>> games = unpack_summaries(settled.summary());
      if (!games.ok()) return violation(absl::StrCat("unit ", u.index, ": ", games.status().message()));
      if (int(games->size()) != spec.selfplay().games())
        violation(
            absl::StrCat("unit ", u.index, " settled with ", games->size(), " games of ", spec.selfplay().games()));
      const int32_t sp = meta.selfplay().position();
      PositionTotals& t = want[sp];
      t.sp = sp;
      for (size_t g = 0; g < games->size(); ++g) {
        const GameSummary& s = (*games)[g];
        ++t.games;
        t.plies += s.plies;
        if (t.terminations.size() <= s.termination) t.terminations.resize(size_t(s.termination) + 1);
        ++t.terminations[s.termination];
        if (stores_game(spec_, spec.selfplay().first_game() + int64_t(g))) ++t.stored;
        if (!s.evidence) {
          ++t.uncounted;
          continue;
        }
        if (++seen[{sp, s.hash}] > 1)
          ++t.duplicates;
        else
          ++(s.result == 0 ? t.white_wins : s.result == 1 ? t.draws : t.black_wins);
      }
    }
    const auto text = [](const PositionTotals& t) {
      return figures(t.games, t.white_wins, t.draws, t.black_wins, t.plies, t.duplicates, t.uncounted, t.stored,
                     t.terminations);
    };
    std::map<int32_t, std::string> recounted, stored, reported;
    for (const auto& [sp, t] : want)
      if (std::string f = text(t); !f.empty()) recounted[sp] = f;
    absl::StatusOr<std::vector<PositionTotals>> totals = load_position_totals(store_.get(), job_);
    if (!totals.ok()) return violation(absl::StrCat("load_position_totals: ", totals.status().message()));
    for (const PositionTotals& t : *totals)
      if (std::string f = text(t); !f.empty()) stored[t.sp] = f;
    absl::StatusOr<std::vector<v1::ResultChunk>> chunks = coordinator_->results(Caller::local(), job_, false, true);
    if (!chunks.ok()) return violation(absl::StrCat("results: ", chunks.status().message()));
    // Chunks come in the plan's order of positions (a position's figures repeat on each of its chunks).
    int32_t sp = -1;
    std::string last;
    for (const v1::ResultChunk& c : *chunks) {
      const v1::SelfPlayPositionResult& r = c.selfplay();
      if (sp >= 0 && r.position_id() == last) continue;
      ++sp;
      last = r.position_id();
      std::vector<int64_t> terms(r.terminations().begin(), r.terminations().end());
      if (std::string f = figures(r.games(), r.white_wins(), r.draws(), r.black_wins(), r.total_plies(), r.duplicates(),
                                  r.uncounted(), r.games_stored(), terms);
          !f.empty())
        reported[sp] = f;
    }
    const auto show = [](const std::map<int32_t, std::string>& m) {
      std::string out;
      for (const auto& [k, f] : m) absl::StrAppend(&out, "\n  position ", k, ": ", f);
      return out;
    };
    if (stored != recounted)
      violation(absl::StrCat("the store's per-position totals differ from the settled units' recount:\n store",
                             show(stored), "\n recount", show(recounted)));
    else if (reported != recounted)
      violation(
          absl::StrCat("the coordinator's per-position results differ from the settled units' recount:\n "
                       "reported",
                       show(reported), "\n recount", show(recounted)));
  }

  // While the disk is full nothing durable changes (memory equals what it was when the episode
  // began); a write refused with UNAVAILABLE leaves the coordinator not ready (degraded, in the
  // metric too); a process never reloads its state from the store (a failed commit leaves
  // memory as it was: check() compares it with a fresh load of the store after every step).
  void check_degraded() {
    const std::string degraded = coordinator_->store_degraded();
    const CoordinatorMetrics m = coordinator_->metrics();
    if (m.store_degraded != !degraded.empty())
      violation(absl::StrCat("the metric says degraded ", m.store_degraded, ", the readiness says \"", degraded, "\""));
    if (m.counters.store_reloads > 0)
      violation(absl::StrCat(m.counters.store_reloads, " reloads from the store after a failed commit"));
    if (!full_) return;
    if (const std::string now = coordinator_->durable_state(); now != episode_state_)
      violation(absl::StrCat("the durable state changed while the disk is full:\n--- before\n", episode_state_,
                             "--- now\n", now));
    if (refused_ && degraded.empty())
      violation("a call was refused UNAVAILABLE while the disk is full, yet the coordinator reports ready");
  }

  // A degraded-store episode: every store write fails for a stretch of steps.
  void begin_episode() {
    full_ = true;
    ++report_.episodes;
    episode_end_ = report_.steps + 2 + pick_of(extra_, config_.episode_steps);
    episode_state_ = coordinator_->durable_state();
    refused_ = false;
    log(absl::StrCat("the disk is full until step ", episode_end_));
  }

  // The disk has room again: the coordinator resumes by itself (its sweep probes the store once
  // the probe's backoff has passed), with no reload (check_degraded).
  void end_episode() {
    full_ = false;
    log("the disk has room again");
    const bool faults = faults_on_;
    faults_on_ = false;
    clock_.advance_ms(kStoreProbeMaxMs + 1);
    coordinator_->sweep();
    if (const std::string d = coordinator_->store_degraded(); !d.empty())
      violation(absl::StrCat("still degraded after the disk had room and a sweep: ", d));
    faults_on_ = faults;
  }

  void drain() {
    draining_ = true;
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
    if (j.ok() && j->state() == v1::JOB_STATE_FAILED && selfplay_) {
      // Failed by failure reports (check_failed judged whether it may): FAILED after a restart too.
      Coordinator fresh(store_.get(), &clock_, options_);
      if (absl::Status s = fresh.load(); !s.ok()) return violation(absl::StrCat("load for the check: ", s.message()));
      absl::StatusOr<v1::Job> stored = fresh.get_job(Caller::local(), job_);
      if (!stored.ok() || stored->state() != v1::JOB_STATE_FAILED)
        violation(absl::StrCat("the job is FAILED, but ",
                               stored.ok() ? v1::JobState_Name(stored->state()) : stored.status().ToString(),
                               " once loaded from the store"));
      return;
    }
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
    if (selfplay_) return check_local_run(*chunks);
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

  // A self-play job that succeeded: its statistics (from each position's counts) are a local
  // run's of the same spec, as `c960 results` makes them.
  void check_local_run(const std::vector<v1::ResultChunk>& chunks) {
    selfplay::SelfPlayStats stats;
    std::string last;
    bool first = true;
    for (const v1::ResultChunk& c : chunks) {
      const v1::SelfPlayPositionResult& r = c.selfplay();
      ++report_.rows;
      if (!r.complete()) violation(absl::StrCat("position ", r.position_id(), " is not complete"));
      if (!first && r.position_id() == last) continue;
      first = false;
      last = r.position_id();
      selfplay::PositionStats p;
      p.id = r.position_id();
      p.sp = r.start_position();
      absl::StatusOr<selfplay::StartPosition> pos = selfplay::chess960_position(r.start_position());
      if (!pos.ok()) return violation(absl::StrCat("position ", r.position_id(), ": ", pos.status().message()));
      p.fen = selfplay::xfen_of(*pos);
      p.counts.white_wins = r.white_wins();
      p.counts.draws = r.draws();
      p.counts.black_wins = r.black_wins();
      p.total_plies = r.total_plies();
      p.duplicates = r.duplicates();
      p.uncounted = r.uncounted();
      for (int t = 0; t < r.terminations_size(); ++t) p.terminations[size_t(t)] = r.terminations(t);
      p.lines = result_lines(r);  // related games: each distinct game's line, as c960 results reads them
      stats.set_position(p);
    }
    const std::string got = stats.to_csv(), want = answers().local_csv(spec_);
    log(absl::StrCat("the job's statistics:\n", got));
    if (got != want)
      violation(absl::StrCat("the job's statistics differ from a local run's:\n--- job\n", got, "--- local\n", want));
  }

  static constexpr int kDepth = 5;
  uint64_t seed_;
  Config config_;
  std::mt19937_64 rng_;
  FakeClock clock_;
  CoordinatorOptions options_;
  bool pg_ = false;  // the store is a PostgreSQL database (Config::db)
  const LeaderTiming timing_{.ttl_ms = 10'000};
  std::unique_ptr<StoreLease> lease_;  // PostgreSQL: the leader's lease and election
  std::unique_ptr<LeaderElection> election_;
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
  std::mt19937_64 extra_{seed_ ^ 0x9e3779b97f4a7c15ULL};  // see chance_of
  bool selfplay_ = false;
  int variant_ = 0;
  v1::SelfPlayJobSpec spec_;
  double fail_rate_ = 0;      // a failer's chance to report a unit failed (0: no failers)
  bool failed_seen_ = false;  // the job was seen FAILED
  bool draining_ = false;
  // The degraded-store episode under way (full_): its last step, the durable state when it
  // began, and whether a call was refused UNAVAILABLE since.
  bool full_ = false;
  int64_t episode_end_ = 0;
  std::string episode_state_;
  bool refused_ = false;
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
