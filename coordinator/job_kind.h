// What the coordinator needs to know about one kind of job (perft, self-play): how to validate
// and plan a spec into units, check a unit's result, weigh it for progress, describe a job in
// logs and progress, and turn the finished units into results. The coordinator's leasing,
// storage and progress code is the same for every kind and never looks inside a unit.
//
// Every method is const and free of coordinator state, so the coordinator may call the costly
// ones (plan, check_result, games) without holding its lock.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "cluster/config.h"
#include "coordinator/planner.h"
#include "coordinator/store.h"
#include "core/perft.h"
#include "selfplay/uci_engine.h"

namespace c960::cluster {

struct KindPlan {
  v1::store::JobPlan plan;
  std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> units;
};

// What a unit keeps of the result it settled with. `stored` goes into its row; `held` stays in
// memory (perft: the result; self-play: nothing of its games, which go to the kind's tables by
// `write`). `write`, when the kind has tables, writes them for this unit inside the transaction
// that settles it; the generic store knows units, copies and jobs only.
struct SettledForm {
  std::string stored;
  v1::UnitResult held;
  std::function<absl::Status(Store* store, const std::string& job_id)> write;
};

// What a kind is, as plain data.
struct KindDescriptor {
  // The capability a worker announces to receive this kind's units, e.g. "perft"; also the
  // kind's name in logs and metrics' labels.
  std::string capability;
  v1::JobSpec::KindCase spec_case = v1::JobSpec::KIND_NOT_SET;
  // Its tables in the store (none: perft); the store is opened with every kind's (kinds.cpp).
  const KindTables* tables = nullptr;
  // What its work() counts, plural, for logs ("nodes", "games").
  std::string work_unit;
  // Whether a plan that is not fully planned waits for results to plan more (plans_from_results;
  // else expand() makes its units whenever asked).
  bool plans_from_results = false;
  // Whether its results are read from the store (stream_results) rather than from the units in
  // memory (results).
  bool results_from_store = false;
  // The counter of the work its settled units stand for (work()), for /metrics: its name and help.
  std::string work_metric, work_help;
  // Clears what grows with a job from its spec (perft: its FENs; self-play: its explicit
  // positions: up to kMaxJobSpecBytes together), for watches; none: the spec is kept whole.
  void (*trim_for_watch)(v1::JobSpec* spec) = nullptr;
};

// Takes result chunks as they are made; false when the reader went away (stop).
using ResultSink = std::function<bool(const v1::ResultChunk&)>;

// A unit as kinds see it when building results.
struct UnitView {
  const v1::UnitSpec* spec;
  const v1::store::UnitMeta* meta;
  const v1::UnitResult* result;  // null while not complete
};

class JobKind {
 public:
  virtual ~JobKind() = default;
  virtual const KindDescriptor& descriptor() const = 0;
  const std::string& capability() const { return descriptor().capability; }
  v1::JobSpec::KindCase spec_case() const { return descriptor().spec_case; }
  bool results_from_store() const { return descriptor().results_from_store; }
  // INVALID_ARGUMENT naming the field, RESOURCE_EXHAUSTED for oversized plans, CANCELLED when
  // `cancelled` says so while it walks (planner.h).
  virtual absl::StatusOr<KindPlan> plan(const v1::JobSpec& spec, const PlanCancelled& cancelled = {}) const = 0;
  // Lazy planning: whether every unit of the plan is made, and the next units (at least
  // min_units where the plan has them, a whole root at a time), advancing the plan's cursor. The
  // coordinator stores the units with the new plan in one transaction.
  virtual bool fully_planned(const v1::store::JobPlan& /*plan*/) const { return true; }
  virtual std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> expand(v1::store::JobPlan* /*plan*/,
                                                                           int64_t /*min_units*/) const {
    return {};
  }
  // Planning from results (an adaptive self-play job): whether the plan waits for results to
  // decide its next units (descriptor().plans_from_results, while the plan is not fully
  // planned), and those units: read from the job's figures in the store, advancing the plan;
  // `spec` is the job's shared part (shared()). Called without the coordinator's lock after units
  // settle; the coordinator stores the units with the new plan in one transaction (a plan whose
  // looks found nothing new is left as it was).
  bool plans_from_results(const v1::store::JobPlan& plan) const {
    return descriptor().plans_from_results && !fully_planned(plan);
  }
  virtual absl::StatusOr<std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>> expand_from_results(
      Store* /*store*/, const std::string& /*job_id*/, const v1::JobSpec& /*spec*/,
      v1::store::JobPlan* /*plan*/) const {
    return std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>>{};
  }
  // Units keep only what tells them apart (in memory and in the store); what all of a job's
  // units share, such as a self-play job's engine and options, is kept once per job: shared()
  // of its spec, made when the job is created or loaded. work_spec() is a unit as the worker
  // holding copy `copy_seed` of it computes it, for leases and for the checks of results (perft:
  // the copy's own Zobrist seed, so that a hash collision in one copy is not in the other; none:
  // no copy's). Default: units keep all of it.
  virtual v1::JobSpec shared(const v1::JobSpec& /*job*/) const { return {}; }
  virtual v1::UnitSpec work_spec(const v1::JobSpec& /*shared*/, const v1::UnitSpec& kept,
                                 std::optional<uint64_t> /*copy_seed*/) const {
    return kept;
  }
  v1::UnitSpec work_spec(const v1::JobSpec& shared, const v1::UnitSpec& kept) const {
    return work_spec(shared, kept, std::nullopt);
  }
  // Checks what a worker sent as far as the coordinator can alone, and returns the result in
  // its canonical form, the one stored and compared between workers (a worker's own text, such
  // as PGN, is never kept). INVALID_ARGUMENT naming the problem when it cannot be right.
  // `spec` is the unit's work_spec.
  virtual absl::StatusOr<v1::UnitResult> check_result(const v1::UnitSpec& spec, const v1::UnitResult& result) const = 0;
  // The verification the job gets: its spec's, or the kind's default when the spec names none.
  virtual v1::VerifyMode verify_mode(const v1::JobSpec& spec) const {
    return spec.verify() == v1::VERIFY_MODE_UNSPECIFIED ? v1::VERIFY_MODE_ADAPTIVE : spec.verify();
  }
  // The engines a worker must offer, all of them, to get this job's units (none when any worker
  // will do: perft; a match two), each with the options the job sets on it (checked against
  // each worker's offer).
  struct EngineNeed {
    std::string engine;
    std::vector<selfplay::UciOptionValue> options;
  };
  virtual std::vector<EngineNeed> required_engines(const v1::JobSpec& /*spec*/) const { return {}; }
  // What copies keep of a checked result, and are compared by (in memory and in the store):
  // the canonical result itself, or for self-play its digest.
  virtual std::string kept(const v1::UnitResult& canonical) const { return canonical.SerializeAsString(); }
  // What a unit keeps when it settles with a canonical result (see SettledForm); `spec` is the
  // unit's work_spec.
  virtual absl::StatusOr<SettledForm> settle_form(const v1::UnitSpec&, const v1::store::UnitMeta&,
                                                  const v1::UnitResult& canonical) const {
    return SettledForm{canonical.SerializeAsString(), canonical, nullptr};
  }
  // A settled unit's row read back: its kept form (copies' results are compared with it) and
  // what stays in memory. DATA_LOSS when it does not parse.
  virtual absl::Status load_settled(const v1::UnitSpec&, const v1::store::UnitMeta&, const std::string& stored,
                                    std::string* kept, v1::UnitResult* held) const {
    if (!held->ParseFromString(stored)) return absl::DataLossError("result does not parse");
    *kept = stored;
    return absl::OkStatus();
  }
  // The kind's own tables (self-play: statistics and games), taken back inside the transaction
  // that takes back the unit whose settled row was `stored` (what SettledForm::write wrote).
  virtual absl::Status write_unsettled(Store* /*store*/, const std::string& /*job_id*/, const v1::UnitSpec&,
                                       const v1::store::UnitMeta&, const std::string& /*stored*/) const {
    return absl::OkStatus();
  }
  // A kept form for logs.
  virtual std::string describe_kept(const std::string& kept) const {
    v1::UnitResult r;
    if (!r.ParseFromString(kept)) return "?";
    std::string s = r.ShortDebugString();
    return s.size() > 400 ? s.substr(0, 400) + "..." : s;
  }
  // How long one lease of a unit may be held, renewals included, before it goes to another
  // worker (hoarding): from the unit's size where the kind can estimate it (perft: its
  // estimated leaves at the slowest rate an honest worker computes them), else a fixed bound.
  virtual int64_t max_hold_ms(const v1::UnitSpec& /*spec*/, const v1::store::UnitMeta& /*meta*/) const {
    return kMaxLeaseHoldSeconds * 1000;
  }
  // The work a completed unit stands for in progress figures (perft: weighted leaf nodes;
  // self-play: games).
  virtual NodeCount work(const v1::UnitSpec& spec, const v1::store::UnitMeta& meta,
                         const v1::UnitResult& held) const = 0;
  // Progress in the kind's own terms: the work done, its total where the plan knows it, and
  // its rate (perft: nodes_done, nodes_per_second; self-play: games_done, games_total,
  // games_per_second).
  virtual void fill_progress(const v1::store::JobPlan& plan, NodeCount work_done, double work_per_second,
                             v1::Progress* out) const = 0;
  // Kind-specific fields of the Job message (perft: the split depth).
  virtual void fill_job(const v1::store::JobPlan& /*plan*/, v1::Job* /*out*/) const {}
  // For log lines: the plan ("960 units, split depth 1") and an amount of work ("12 games").
  virtual std::string describe_plan(const v1::store::JobPlan& plan, size_t units) const = 0;
  std::string describe_work(NodeCount work) const { return to_string(work) + " " + descriptor().work_unit; }
  // The results of the units in memory and the folded groups' totals (by group); divide: perft
  // only; omit_games: self-play only (counts without game records).
  virtual std::vector<v1::ResultChunk> folded_results(const v1::store::JobPlan& plan,
                                                      const std::vector<UnitView>& units,
                                                      const std::map<int64_t, std::string>& folded, bool divide,
                                                      bool omit_games) const = 0;
  std::vector<v1::ResultChunk> results(const v1::store::JobPlan& plan, const std::vector<UnitView>& units, bool divide,
                                       bool omit_games) const {
    return folded_results(plan, units, {}, divide, omit_games);
  }
  // Folding (bounded memory and store for long jobs): the group a unit belongs to (-1: it never
  // folds). Once every unit of a group is settled the coordinator keeps only the group's totals
  // (fold) and drops its units. A group's units are consecutive, as the plan made them.
  virtual int64_t fold_group(const v1::store::JobPlan& /*plan*/, const v1::store::UnitMeta& /*meta*/) const {
    return -1;
  }
  // When a settled group folds: at once (a long job's memory stays bounded while it runs), or
  // only once the job is final and a lease period has passed (a short job's units stay while
  // copies still out may come back, to be compared; then the finished job keeps its totals).
  virtual bool folds_while_running(const v1::store::JobPlan& /*plan*/) const { return true; }
  // The totals of a group's settled units, serialized; results merges them (folded_results).
  virtual std::string fold(const v1::store::JobPlan& /*plan*/, int64_t /*group*/,
                           const std::vector<UnitView>& /*units*/) const {
    return "";
  }
  // A folded group planned again (its totals were taken back): its units as expand makes them.
  virtual std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> replan_group(const v1::store::JobPlan& /*plan*/,
                                                                                 int64_t /*group*/) const {
    return {};
  }
  // Kinds whose results are read from the store rather than from the units in memory
  // (descriptor().results_from_store: self-play) stream them from there in pages, without the
  // coordinator's lock.
  virtual absl::Status stream_results(Store* /*store*/, const std::string& /*job_id*/, const v1::JobSpec& /*spec*/,
                                      const v1::store::JobPlan& /*plan*/, bool /*omit_games*/,
                                      const ResultSink& /*sink*/) const {
    return absl::UnimplementedError("results are not in the store");
  }
};

// "engine 'sf'" or "engines 'builtin' and 'sf'", for messages.
inline std::string engines_named(const std::vector<JobKind::EngineNeed>& needs) {
  std::string out = needs.size() == 1 ? "engine " : "engines ";
  for (size_t i = 0; i < needs.size(); ++i)
    out += (i == 0 ? "'" : i + 1 == needs.size() ? " and '" : ", '") + needs[i].engine + "'";
  return out;
}

// Perft plans that would walk more than lazy_walk positions up to the split ply (or that an
// eager plan refuses as too large) are planned lazily, the first window at submit.
std::unique_ptr<JobKind> make_perft_kind(uint64_t lazy_walk = kMaxPlanWalk, int64_t window = kLazyWindowUnits);
std::unique_ptr<JobKind> make_selfplay_kind();

}  // namespace c960::cluster
