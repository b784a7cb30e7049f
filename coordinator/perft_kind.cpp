// The perft job kind: planning by planner.h, aggregation total = sum of multiplicity x count.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "cluster/config.h"
#include "cluster/u128.h"
#include "coordinator/job_kind.h"
#include "coordinator/planner.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/position.h"

namespace c960::cluster {
namespace {

// Counts at this depth or less are checked exactly (perft 3 of a position: a millisecond).
constexpr int kExactCheckDepth = 3;
// The most legal moves of any chess position (218); a bound per ply for deeper counts.
constexpr NodeCount kMaxLegalMoves = 218;

class PerftKind : public JobKind {
 public:
  const KindDescriptor& descriptor() const override {
    static const KindDescriptor d{
        .capability = "perft",
        .spec_case = v1::JobSpec::kPerft,
        .tables = nullptr,
        .work_unit = "nodes",
        .plans_from_results = false,
        .results_from_store = false,
        .work_metric = "c960_perft_nodes_total",
        .work_help = "leaf nodes of settled perft units (with multiplicities)",
        .trim_for_watch = [](v1::JobSpec* spec) { spec->mutable_perft()->clear_fens(); },
    };
    return d;
  }
  // Each copy of a unit counts with its own Zobrist key set, so that a hash collision in one
  // copy is not in the other.
  v1::UnitSpec work_spec(const v1::JobSpec& /*shared*/, const v1::UnitSpec& kept,
                         std::optional<uint64_t> copy_seed) const override {
    v1::UnitSpec out = kept;
    if (copy_seed) out.mutable_perft()->set_zobrist_seed(*copy_seed);
    return out;
  }

  PerftKind(uint64_t lazy_walk, int64_t window) : lazy_walk_(lazy_walk), window_(window) {}

  absl::StatusOr<KindPlan> plan(const v1::JobSpec& spec, const PlanCancelled& cancelled) const override {
    absl::StatusOr<PerftPlan> roots = plan_perft_roots(spec.perft());
    if (!roots.ok()) return roots.status();
    absl::StatusOr<PerftPlan> p = absl::ResourceExhaustedError("lazy");
    if (split_walk(*roots, lazy_walk_) <= lazy_walk_) p = plan_perft(spec.perft(), cancelled);
    KindPlan out;
    v1::store::PerftPlan* pp = out.plan.mutable_perft();
    pp->set_depth(roots->depth);
    pp->set_split_depth(roots->split_depth);
    for (const PerftRoot& r : roots->roots) {
      v1::store::PerftRoot* pr = pp->add_roots();
      pr->set_start_position(r.start_position);
      pr->set_fen(r.fen);
    }
    if (!p.ok()) {
      if (p.status().code() != absl::StatusCode::kResourceExhausted) return p.status();
      if (cancelled && cancelled()) return absl::CancelledError("submit: the plan was stopped");
      // Too big to plan up front: the first window now, the rest as workers need it.
      pp->set_lazy(true);
      out.units = expand(&out.plan, window_);
      return out;
    }
    pp->set_roots_planned(pp->roots_size());
    out.units.reserve(p->units.size());
    for (PlannedPerftUnit& u : p->units) out.units.push_back(to_unit(std::move(u)));
    return out;
  }

  bool fully_planned(const v1::store::JobPlan& plan) const override {
    return !plan.perft().lazy() || plan.perft().roots_planned() >= plan.perft().roots_size();
  }

  std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> expand(v1::store::JobPlan* plan,
                                                                   int64_t min_units) const override {
    std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> out;
    v1::store::PerftPlan* pp = plan->mutable_perft();
    while (pp->roots_planned() < pp->roots_size() && int64_t(out.size()) < std::max<int64_t>(1, min_units)) {
      const int i = pp->roots_planned();
      PerftRoot root{pp->roots(i).start_position(), pp->roots(i).fen()};
      for (PlannedPerftUnit& u : expand_perft_root(root, i, pp->depth(), pp->split_depth()))
        out.push_back(to_unit(std::move(u)));
      pp->set_roots_planned(i + 1);
    }
    return out;
  }

  static std::pair<v1::UnitSpec, v1::store::UnitMeta> to_unit(PlannedPerftUnit&& u) {
    v1::UnitSpec us;
    us.mutable_perft()->set_fen(std::move(u.fen));
    us.mutable_perft()->set_depth(u.depth);
    // A unit that is a whole root brings its own divide.
    us.mutable_perft()->set_divide(u.weights.empty());
    v1::store::UnitMeta meta;
    meta.mutable_perft()->set_root(u.root);
    meta.mutable_perft()->set_estimated_nodes(u.estimated_nodes);
    for (auto& [move, count] : u.weights) {
      v1::store::MoveWeight* w = meta.mutable_perft()->add_weights();
      w->set_move(move);
      w->set_count(count);
    }
    return {std::move(us), std::move(meta)};
  }

  absl::StatusOr<v1::UnitResult> check_result(const v1::UnitSpec& spec, const v1::UnitResult& result) const override {
    if (result.kind_case() != v1::UnitResult::kPerft) return absl::InvalidArgumentError("result: not a perft result");
    const v1::PerftUnitSpec& u = spec.perft();
    const v1::PerftUnitResult& r = result.perft();
    absl::StatusOr<Position> pos = Position::from_fen(u.fen());
    if (!pos.ok()) return absl::InternalError(absl::StrCat("unit FEN: ", pos.status().message()));
    const NodeCount nodes = from_proto(r.nodes());
    if (absl::Status s = check_count(*pos, u.depth(), nodes, "result.perft.nodes"); !s.ok()) return s;
    v1::UnitResult out;
    to_proto(nodes, out.mutable_perft()->mutable_nodes());
    if (!u.divide() || u.depth() < 1) {
      if (r.divide_size() > 0) return absl::InvalidArgumentError("result.perft.divide: not asked for");
      return out;
    }
    // Every legal move once, nothing else, in the coordinator's own generation order (so that
    // two workers' results compare equal whatever order they sent), each count within bounds.
    MoveList legal;
    generate_legal(*pos, legal);
    if (r.divide_size() != legal.size())
      return absl::InvalidArgumentError(
          absl::StrCat("result.perft.divide: ", r.divide_size(), " moves; the position has ", legal.size()));
    std::map<std::string, NodeCount> counts;
    NodeCount sum = 0;
    for (const v1::MoveCount& m : r.divide()) {
      absl::StatusOr<Move> mv = m.move().size() <= 5 ? parse_uci(*pos, m.move()) : absl::InvalidArgumentError("long");
      if (!mv.ok())
        return absl::InvalidArgumentError(
            absl::StrCat("result.perft.divide.move: '", m.move().substr(0, 8), "' is not a legal move here"));
      const std::string key = to_uci(*mv);
      if (!counts.emplace(key, from_proto(m.nodes())).second)
        return absl::InvalidArgumentError(absl::StrCat("result.perft.divide.move: ", key, " twice"));
      sum += from_proto(m.nodes());
    }
    if (sum != nodes) return absl::InvalidArgumentError("result.perft.divide: counts do not add up to nodes");
    StateInfo st;
    for (Move m : legal) {
      const NodeCount n = counts[to_uci(m)];
      pos->do_move(m, st);
      const absl::Status s = check_count(*pos, u.depth() - 1, n, "result.perft.divide.nodes");
      pos->undo_move(m);
      if (!s.ok()) return s;
      v1::MoveCount* mc = out.mutable_perft()->add_divide();
      mc->set_move(to_uci(m));
      to_proto(n, mc->mutable_nodes());
    }
    return out;
  }

  // A count a position can have at a depth: exact for shallow depths (cheap to count here),
  // otherwise at most its moves times the most moves any position has (218) per further ply.
  static absl::Status check_count(const Position& pos, int depth, NodeCount nodes, const char* field) {
    if (depth <= kExactCheckDepth) {
      const NodeCount exact = perft(pos, depth);
      if (nodes != exact)
        return absl::InvalidArgumentError(absl::StrCat(field, ": ", to_string(nodes), " is not perft(", depth, ")"));
      return absl::OkStatus();
    }
    NodeCount bound = NodeCount(count_legal(pos));
    for (int d = 1; d < depth && bound; ++d) {
      if (bound > (~NodeCount(0)) / kMaxLegalMoves) return absl::OkStatus();  // beyond 2^128: no bound
      bound *= kMaxLegalMoves;
    }
    if (nodes > bound)
      return absl::InvalidArgumentError(
          absl::StrCat(field, ": ", to_string(nodes), " is more than any position can have at depth ", depth));
    return absl::OkStatus();
  }

  static uint64_t multiplicity(const v1::store::PerftUnitMeta& m) {
    if (m.weights_size() == 0) return 1;
    uint64_t n = 0;
    for (const v1::store::MoveWeight& w : m.weights()) n += w.count();
    return n;
  }

  int64_t max_hold_ms(const v1::UnitSpec&, const v1::store::UnitMeta& meta) const override {
    const uint64_t seconds = std::clamp<uint64_t>(meta.perft().estimated_nodes() / kSlowestPerftLeavesPerSecond,
                                                  kMinLeaseHoldSeconds, kMaxLeaseHoldSeconds);
    return int64_t(seconds) * 1000;
  }

  NodeCount work(const v1::UnitSpec&, const v1::store::UnitMeta& meta, const v1::UnitResult& result) const override {
    return NodeCount(multiplicity(meta.perft())) * from_proto(result.perft().nodes());
  }

  void fill_progress(const v1::store::JobPlan&, NodeCount work_done, double work_per_second,
                     v1::Progress* out) const override {
    to_proto(work_done, out->mutable_nodes_done());
    out->set_nodes_per_second(work_per_second);
  }

  void fill_job(const v1::store::JobPlan& plan, v1::Job* out) const override {
    out->set_split_depth(plan.perft().split_depth());
  }

  std::string describe_plan(const v1::store::JobPlan& plan, size_t units) const override {
    return absl::StrCat("depth ", plan.perft().depth(), ", ", plan.perft().roots_size(), " roots, ", units,
                        " units, split depth ", plan.perft().split_depth(),
                        plan.perft().lazy() ? absl::StrCat(", planned lazily (", plan.perft().roots_planned(),
                                                           " roots expanded so far)")
                                            : "");
  }

 private:
  uint64_t lazy_walk_;
  int64_t window_;

 public:
  // Every plan folds by root: a root's units are made together (plan_perft and expand walk one
  // root at a time), in one range. A lazy plan folds a root once it is settled; an eager one
  // keeps its units until it is finished, then keeps its roots' totals only.
  int64_t fold_group(const v1::store::JobPlan& /*plan*/, const v1::store::UnitMeta& meta) const override {
    return meta.perft().root();
  }
  bool folds_while_running(const v1::store::JobPlan& plan) const override { return plan.perft().lazy(); }

  // A folded root's totals: its v1.PerftRootResult with its divide, complete.
  std::string fold(const v1::store::JobPlan& plan, int64_t group, const std::vector<UnitView>& units) const override {
    const v1::store::PerftPlan& pp = plan.perft();
    std::vector<Acc> acc(size_t(pp.roots_size()));
    for (const UnitView& u : units) add(pp, u, true, &acc);
    v1::PerftRootResult r = root_result(pp, int(group), acc[size_t(group)], true);
    r.set_complete(true);
    return r.SerializeAsString();
  }

  std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> replan_group(const v1::store::JobPlan& plan,
                                                                         int64_t group) const override {
    const v1::store::PerftPlan& pp = plan.perft();
    std::vector<std::pair<v1::UnitSpec, v1::store::UnitMeta>> out;
    if (group < 0 || group >= pp.roots_size()) return out;
    PerftRoot root{pp.roots(int(group)).start_position(), pp.roots(int(group)).fen()};
    for (PlannedPerftUnit& u : expand_perft_root(root, int(group), pp.depth(), pp.split_depth()))
      out.push_back(to_unit(std::move(u)));
    return out;
  }

  std::vector<v1::ResultChunk> folded_results(const v1::store::JobPlan& plan, const std::vector<UnitView>& units,
                                              const std::map<int64_t, std::string>& folded, bool divide,
                                              bool /*omit_games*/) const override {
    const v1::store::PerftPlan& pp = plan.perft();
    std::vector<Acc> acc(size_t(pp.roots_size()));
    // Roots of a lazy plan not expanded yet have units to come.
    if (pp.lazy())
      for (int i = std::max(0, pp.roots_planned()); i < pp.roots_size(); ++i) acc[size_t(i)].complete = false;
    for (const UnitView& u : units) add(pp, u, divide, &acc);
    std::vector<v1::ResultChunk> out(size_t(pp.roots_size()));
    for (int i = 0; i < pp.roots_size(); ++i) {
      v1::PerftRootResult* r = out[size_t(i)].mutable_perft();
      auto f = folded.find(i);
      // A folded root has no units left in memory: its totals are all there is.
      if (f != folded.end() && r->ParseFromString(f->second)) {
        if (!divide) r->clear_divide();
        continue;
      }
      *r = root_result(pp, i, acc[size_t(i)], divide);
    }
    return out;
  }

 private:
  struct Acc {
    NodeCount nodes = 0;
    bool complete = true;
    std::vector<std::pair<std::string, NodeCount>> divide;  // in first-seen (generation) order
    void add_move(const std::string& move, NodeCount n) {
      for (auto& [m, c] : divide)
        if (m == move) {
          c += n;
          return;
        }
      divide.emplace_back(move, n);
    }
  };

  static void add(const v1::store::PerftPlan& pp, const UnitView& u, bool divide, std::vector<Acc>* acc) {
    const v1::store::PerftUnitMeta& m = u.meta->perft();
    if (m.root() < 0 || m.root() >= pp.roots_size()) return;
    Acc& a = (*acc)[size_t(m.root())];
    if (!u.result) {
      a.complete = false;
      return;
    }
    const NodeCount n = from_proto(u.result->perft().nodes());
    a.nodes += NodeCount(multiplicity(m)) * n;
    if (!divide) return;
    if (m.weights_size() == 0) {
      for (const v1::MoveCount& mc : u.result->perft().divide()) a.add_move(mc.move(), from_proto(mc.nodes()));
    } else {
      for (const v1::store::MoveWeight& w : m.weights()) a.add_move(w.move(), NodeCount(w.count()) * n);
    }
  }

  static v1::PerftRootResult root_result(const v1::store::PerftPlan& pp, int i, const Acc& a, bool divide) {
    v1::PerftRootResult r;
    r.set_index(i);
    r.set_start_position(pp.roots(i).start_position());
    r.set_fen(pp.roots(i).fen());
    r.set_depth(pp.depth());
    r.set_complete(a.complete);
    to_proto(a.nodes, r.mutable_nodes());
    if (divide)
      for (const auto& [move, n] : a.divide) {
        v1::MoveCount* mc = r.add_divide();
        mc->set_move(move);
        to_proto(n, mc->mutable_nodes());
      }
    return r;
  }
};

}  // namespace

std::unique_ptr<JobKind> make_perft_kind(uint64_t lazy_walk, int64_t window) {
  return std::make_unique<PerftKind>(lazy_walk, window);
}

}  // namespace c960::cluster
