// The evaluation job kind: a unit is a few start positions evaluated by one of the job's engines
// (planned at submit, engine by engine); a result carries one evaluation per position, checked
// here (best move and PV legal, scores and depth within bounds) and made canonical. An engine at
// a fixed depth or node count, on one thread, with its hash cleared before each position, gives
// the same evaluation on any worker, so copies are compared by the whole canonical result: score
// (centipawns or mate), best move, PV, depth reached and nodes searched. Results are small (a
// few hundred bytes a position) and stay in memory, as perft's do: the kind has no tables.
#include "coordinator/evaluation_kind.h"

#include <algorithm>
#include <cctype>
#include <map>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/evaluation_proto.h"
#include "core/startpos.h"
#include "selfplay/evaluation.h"

namespace c960::cluster {
namespace {

int positions_per_unit(const v1::EvaluationJobSpec& p) {
  return p.positions_per_unit() > 0 ? p.positions_per_unit() : kDefaultEvaluationPositionsPerUnit;
}

class EvaluationKind : public JobKind {
 public:
  const KindDescriptor& descriptor() const override {
    static const KindDescriptor d{
        .capability = "evaluation",
        .spec_case = v1::JobSpec::kEvaluation,
        .tables = nullptr,
        .work_unit = "evaluations",
        .plans_from_results = false,
        .results_from_store = false,
        .work_metric = "c960_evaluations_total",
        .work_help = "position evaluations (one engine, one position) of settled evaluation units",
        .trim_for_watch = nullptr,
    };
    return d;
  }

  absl::StatusOr<KindPlan> plan(const v1::JobSpec& spec, const PlanCancelled& /*cancelled*/) const override {
    const v1::EvaluationJobSpec& p = spec.evaluation();
    absl::StatusOr<selfplay::EvalSpec> s = evaluation_spec_from_proto(p);
    if (!s.ok()) return s.status();
    for (size_t k = 0; k < s->engines.size(); ++k) {
      const std::string field = absl::StrCat("engines[", k, "]");
      // A job names an engine the workers offer; it never makes them start a program of its choosing.
      const std::string& name = s->engines[k].name;
      const bool ok = name.size() <= size_t(kMaxEngineNameLength) && std::all_of(name.begin(), name.end(), [](char c) {
                        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
                      });
      if (!ok)
        return absl::InvalidArgumentError(absl::StrCat(
            field, ".engine: '", name.substr(0, 64),
            "' is not an engine name: name one the workers offer (builtin, or NAME from c960-worker --engine "
            "NAME=PATH); a job cannot give a path"));
      // Nor does it choose files on a worker's host.
      for (const selfplay::UciOptionValue& o : s->engines[k].options)
        if (selfplay::names_a_file(o.name))
          return absl::InvalidArgumentError(absl::StrCat(field, ".options: '", o.name.substr(0, 64),
                                                         "' names a file or directory on the workers' hosts; only "
                                                         "their operators set those (c960-worker --engine-option)"));
    }
    KindPlan out;
    v1::store::EvaluationPlan* ep = out.plan.mutable_evaluation();
    for (int sp : s->positions) ep->add_positions(sp);
    for (const selfplay::EvalEngine& e : s->engines) ep->add_engines(e.name);
    ep->set_depth(s->depth);
    ep->set_nodes(s->nodes);
    const int per_unit = positions_per_unit(p);
    for (int k = 0; k < ep->engines_size(); ++k)
      for (int first = 0; first < ep->positions_size(); first += per_unit) {
        v1::UnitSpec us;
        v1::EvaluationUnitSpec* u = us.mutable_evaluation();
        u->set_engine_index(k);
        for (int i = first; i < std::min(ep->positions_size(), first + per_unit); ++i)
          u->add_start_positions(ep->positions(i));
        v1::store::UnitMeta meta;
        meta.mutable_evaluation()->set_engine(k);
        meta.mutable_evaluation()->set_first(first);
        out.units.emplace_back(std::move(us), std::move(meta));
      }
    return out;
  }

  // A unit keeps its engine's index and positions; what it is computed with (the engine's name
  // and options, the limit) is the job's, added to leases here.
  v1::JobSpec shared(const v1::JobSpec& job) const override {
    v1::JobSpec out = job;
    out.mutable_evaluation()->clear_start_positions();
    return out;
  }
  v1::UnitSpec work_spec(const v1::JobSpec& shared, const v1::UnitSpec& kept,
                         std::optional<uint64_t> /*copy_seed*/) const override {
    v1::UnitSpec out = kept;
    v1::EvaluationJobSpec* job = out.mutable_evaluation()->mutable_job();
    *job = shared.evaluation();
    job->clear_engines();
    const int k = kept.evaluation().engine_index();
    if (k >= 0 && k < shared.evaluation().engines_size()) *job->add_engines() = shared.evaluation().engines(k);
    return out;
  }

  absl::StatusOr<v1::UnitResult> check_result(const v1::UnitSpec& spec, const v1::UnitResult& result) const override {
    if (result.kind_case() != v1::UnitResult::kEvaluation)
      return absl::InvalidArgumentError("result: not an evaluation result");
    const v1::EvaluationUnitSpec& u = spec.evaluation();
    const v1::EvaluationUnitResult& r = result.evaluation();
    if (r.evaluations_size() != u.start_positions_size())
      return absl::InvalidArgumentError(absl::StrCat("result.evaluation.evaluations: ", r.evaluations_size(),
                                                     " evaluations for a unit of ", u.start_positions_size(),
                                                     " positions"));
    v1::UnitResult out;
    for (int i = 0; i < r.evaluations_size(); ++i) {
      const std::string field = absl::StrCat("result.evaluation.evaluations[", i, "]");
      if (r.evaluations(i).start_position() != u.start_positions(i))
        return absl::InvalidArgumentError(absl::StrCat(field, ".start_position: ", r.evaluations(i).start_position(),
                                                       " where ", u.start_positions(i), " was due"));
      if (r.evaluations(i).pv_size() > selfplay::kMaxEvalPvPlies)
        return absl::InvalidArgumentError(absl::StrCat(field, ".pv: ", r.evaluations(i).pv_size(),
                                                       " plies is more than ", selfplay::kMaxEvalPvPlies));
      absl::StatusOr<selfplay::Evaluation> e =
          selfplay::check_evaluation(evaluation_from_proto(r.evaluations(i)), field);
      if (!e.ok()) return e.status();
      evaluation_to_proto(*e, out.mutable_evaluation()->add_evaluations());
    }
    return out;
  }

  std::vector<EngineNeed> required_engines(const v1::JobSpec& spec) const override {
    std::vector<EngineNeed> out;
    for (const v1::EvaluationEngine& e : spec.evaluation().engines()) {
      EngineNeed n{e.engine(), {}};
      if (e.engine() == selfplay::kBuiltinEngine)
        n.options.push_back(selfplay::builtin_hash_option(spec.evaluation().hash_mb()));
      for (const v1::UciOption& o : e.options()) n.options.push_back({o.name(), o.value()});
      out.push_back(std::move(n));
    }
    return out;
  }

  NodeCount work(const v1::UnitSpec& spec, const v1::store::UnitMeta&, const v1::UnitResult&) const override {
    return NodeCount(spec.evaluation().start_positions_size());
  }

  // Progress is the units' (Progress has no evaluation counts of its own).
  void fill_progress(const v1::store::JobPlan&, NodeCount, double, v1::Progress*) const override {}

  std::string describe_plan(const v1::store::JobPlan& plan, size_t units) const override {
    const v1::store::EvaluationPlan& ep = plan.evaluation();
    return absl::StrCat(ep.positions_size(), " positions x ", ep.engines_size(),
                        ep.engines_size() == 1 ? " engine" : " engines", ", ",
                        ep.depth() > 0 ? absl::StrCat("depth ", ep.depth()) : absl::StrCat(ep.nodes(), " nodes"), ", ",
                        units, " units");
  }

  // One chunk per position and engine, positions in job order and engines in job order.
  std::vector<v1::ResultChunk> folded_results(const v1::store::JobPlan& plan, const std::vector<UnitView>& units,
                                              const std::map<int64_t, std::string>&, bool, bool) const override {
    const v1::store::EvaluationPlan& ep = plan.evaluation();
    const size_t engines = size_t(ep.engines_size()), positions = size_t(ep.positions_size());
    std::vector<v1::ResultChunk> out(positions * engines);
    for (size_t i = 0; i < positions; ++i)
      for (size_t k = 0; k < engines; ++k) {
        v1::EvaluationResult* r = out[i * engines + k].mutable_evaluation();
        r->set_start_position(ep.positions(int(i)));
        r->set_fen(startpos_fen(ep.positions(int(i))).value_or(""));
        r->set_engine(ep.engines(int(k)));
        r->set_engine_index(int(k));
        r->set_depth_limit(ep.depth());
        r->set_nodes_limit(ep.nodes());
      }
    for (const UnitView& u : units) {
      if (!u.result) continue;
      const v1::store::EvaluationUnitMeta& m = u.meta->evaluation();
      if (m.engine() < 0 || size_t(m.engine()) >= engines || m.first() < 0) continue;
      const v1::EvaluationUnitResult& r = u.result->evaluation();
      for (int j = 0; j < r.evaluations_size(); ++j) {
        const size_t i = size_t(m.first()) + size_t(j);
        if (i >= positions) break;
        v1::EvaluationResult* e = out[i * engines + size_t(m.engine())].mutable_evaluation();
        e->set_complete(true);
        *e->mutable_evaluation() = r.evaluations(j);
      }
    }
    return out;
  }
};

}  // namespace

std::unique_ptr<JobKind> make_evaluation_kind() { return std::make_unique<EvaluationKind>(); }

}  // namespace c960::cluster
