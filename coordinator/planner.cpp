#include "coordinator/planner.h"

#include <algorithm>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cluster/config.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/position.h"
#include "core/startpos.h"

namespace c960::cluster {

uint64_t PlannedPerftUnit::multiplicity() const {
  if (weights.empty()) return 1;
  uint64_t m = 0;
  for (const auto& [move, count] : weights) m += count;
  return m;
}

std::string position_key(const std::string& fen) {
  std::vector<absl::string_view> fields = absl::StrSplit(fen, ' ', absl::SkipEmpty());
  if (fields.size() > 4) fields.resize(4);
  return absl::StrJoin(fields, " ");
}

absl::StatusOr<std::vector<PerftRoot>> resolve_perft_roots(const v1::PerftJobSpec& spec) {
  if (spec.depth() < 1 || spec.depth() > kMaxDepth)
    return absl::InvalidArgumentError(absl::StrCat("depth: ", spec.depth(), " is not in 1..", kMaxDepth));
  if (!spec.start_positions().empty() && spec.fens_size() > 0)
    return absl::InvalidArgumentError("start_positions and fens: give one, not both");
  std::vector<PerftRoot> roots;
  if (spec.fens_size() > 0) {
    if (spec.fens_size() > kMaxFens)
      return absl::InvalidArgumentError(absl::StrCat("fens: ", spec.fens_size(), " positions, at most ", kMaxFens));
    for (int i = 0; i < spec.fens_size(); ++i) {
      const std::string& fen = spec.fens(i);
      if (fen.size() > size_t(kMaxFenLength))
        return absl::InvalidArgumentError(absl::StrCat("fens[", i, "]: longer than ", kMaxFenLength, " characters"));
      absl::StatusOr<Position> pos = Position::from_fen(fen);
      if (!pos.ok()) return absl::InvalidArgumentError(absl::StrCat("fens[", i, "]: ", pos.status().message()));
      roots.push_back({-1, pos->fen()});
    }
    return roots;
  }
  if (spec.start_positions().size() > size_t(kMaxStartPositionsLength))
    return absl::InvalidArgumentError(
        absl::StrCat("start_positions: longer than ", kMaxStartPositionsLength, " characters"));
  const std::string sps = spec.start_positions().empty() ? "0-959" : spec.start_positions();
  absl::StatusOr<std::vector<int>> numbers = parse_sp_ranges(sps);
  if (!numbers.ok()) return absl::InvalidArgumentError(absl::StrCat("start_positions: ", numbers.status().message()));
  if (numbers->empty()) return absl::InvalidArgumentError("start_positions: no positions");
  for (int n : *numbers) {
    absl::StatusOr<Position> pos = Position::from_fen(*startpos_fen(n));
    if (!pos.ok()) return absl::InternalError(absl::StrCat("start position ", n, ": ", pos.status().message()));
    roots.push_back({n, pos->fen()});
  }
  return roots;
}

int auto_split_depth(int depth, size_t roots) {
  const int most = std::max(0, std::min(kMaxSplitDepth, depth - 1));
  int split = std::min(std::max(0, depth - kTargetUnitDepth), most);
  // The units' count estimated with about 20 moves a ply (a start position has 18 to 21).
  double units = double(std::max<size_t>(roots, 1));
  for (int k = 0; k < split; ++k) units *= 20;
  while (depth - split >= kDeepUnitDepth && units < double(kMinAutoUnits) && split < most) {
    ++split;
    units *= 20;
  }
  return split;
}

namespace {

struct Walker {
  int root;
  int split;
  int depth;
  std::unordered_map<std::string, size_t> index;  // position key -> unit
  std::vector<PlannedPerftUnit>* units;
  std::string first_move;
  const PlanCancelled* cancelled = nullptr;
  uint64_t visited = 0;
  bool stopped = false;

  void walk(Position& pos, int ply) {
    if (stopped) return;
    if ((++visited & 0x3fff) == 0 && cancelled && *cancelled && (*cancelled)()) {
      stopped = true;
      return;
    }
    if (ply == split) {
      std::string key = position_key(pos.fen());
      auto [it, inserted] = index.try_emplace(key, units->size());
      if (inserted) units->push_back({root, key + " 0 1", depth - split, {}});
      auto& weights = (*units)[it->second].weights;
      for (auto& [move, count] : weights)
        if (move == first_move) {
          ++count;
          return;
        }
      weights.emplace_back(first_move, 1);
      return;
    }
    MoveList moves;
    generate_legal(pos, moves);
    for (Move m : moves) {
      if (ply == 0) first_move = to_uci(m);
      StateInfo st;
      pos.do_move(m, st);
      walk(pos, ply + 1);
      pos.undo_move(m);
    }
  }
};

}  // namespace

uint64_t estimate_perft(const std::string& fen, int depth) {
  absl::StatusOr<Position> pos = Position::from_fen(fen);
  if (!pos.ok() || depth <= 0) return 1;
  if (depth <= 2) return uint64_t(perft(*pos, depth));
  const double p1 = double(perft(*pos, 1)), p2 = double(perft(*pos, 2));
  if (p1 == 0) return 1;
  double est = p2;
  for (int d = 2; d < depth; ++d) est *= p2 / p1;
  return est > 1.8e19 ? UINT64_MAX : uint64_t(est);
}

std::vector<PlannedPerftUnit> expand_perft_root(const PerftRoot& root, int root_index, int depth, int split_depth,
                                                const PlanCancelled& cancelled) {
  std::vector<PlannedPerftUnit> units;
  Position pos = *Position::from_fen(root.fen);
  if (split_depth == 0) {
    units.push_back({root_index, root.fen, depth, {}});
  } else {
    Walker w{root_index, split_depth, depth, {}, &units, {}, &cancelled};
    w.walk(pos, 0);
    if (w.stopped) return {};
  }
  for (PlannedPerftUnit& u : units) u.estimated_nodes = estimate_perft(u.fen, u.depth);
  return units;
}

absl::StatusOr<PerftPlan> plan_perft_roots(const v1::PerftJobSpec& spec) {
  absl::StatusOr<std::vector<PerftRoot>> roots = resolve_perft_roots(spec);
  if (!roots.ok()) return roots.status();
  PerftPlan plan;
  plan.depth = spec.depth();
  plan.roots = std::move(*roots);
  if (spec.has_split_depth()) {
    if (spec.split_depth() < 0 || spec.split_depth() > std::min(kMaxSplitDepth, plan.depth))
      return absl::InvalidArgumentError(
          absl::StrCat("split_depth: ", spec.split_depth(), " is not in 0..", std::min(kMaxSplitDepth, plan.depth)));
    plan.split_depth = spec.split_depth();
  } else {
    plan.split_depth = auto_split_depth(plan.depth, plan.roots.size());
  }
  if (plan.depth - plan.split_depth > kMaxUnitDepth)
    return absl::InvalidArgumentError(absl::StrCat("split_depth: units would count ", plan.depth - plan.split_depth,
                                                   " plies, at most ", kMaxUnitDepth, "; raise split_depth"));
  // One root's expansion is held in memory at once (and under the coordinator's lock when it
  // plans lazily): bounded like a whole eager plan's walk. An estimate far past the bound
  // refuses at once; only a root near it is counted (a count costs what the walk would).
  for (const PerftRoot& r : plan.roots) {
    if (const uint64_t estimated = estimate_perft(r.fen, plan.split_depth); estimated > 4 * kMaxRootWalk)
      return absl::ResourceExhaustedError(absl::StrCat("plan too large: about ", estimated,
                                                       " positions of one root at split ply ", plan.split_depth,
                                                       ", more than ", kMaxRootWalk, "; lower split_depth or depth"));
    Position pos = *Position::from_fen(r.fen);
    if (uint64_t(perft(pos, plan.split_depth)) > kMaxRootWalk)
      return absl::ResourceExhaustedError(absl::StrCat("plan too large: more than ", kMaxRootWalk,
                                                       " positions of one root at split ply ", plan.split_depth,
                                                       "; lower split_depth"));
  }
  return plan;
}

uint64_t split_walk(const PerftPlan& plan, uint64_t limit) {
  uint64_t walk = 0, estimated = 0;
  for (const PerftRoot& r : plan.roots) {
    for (int k = 1; k <= plan.split_depth; ++k) estimated += estimate_perft(r.fen, k);
    if (estimated > 4 * limit) return estimated;
  }
  for (int k = 1; k <= plan.split_depth; ++k)
    for (const PerftRoot& r : plan.roots) {
      Position pos = *Position::from_fen(r.fen);
      walk += uint64_t(perft(pos, k));
      if (walk > limit) return walk;
    }
  return walk;
}

absl::StatusOr<PerftPlan> plan_perft(const v1::PerftJobSpec& spec, const PlanCancelled& cancelled) {
  absl::StatusOr<PerftPlan> resolved = plan_perft_roots(spec);
  if (!resolved.ok()) return resolved.status();
  PerftPlan plan = std::move(*resolved);
  // Count the positions at each ply up to the split first: perft is cheap next to the walk
  // that keeps every position, and this refuses an oversized plan before it costs anything.
  if (split_walk(plan, kMaxPlanWalk) > kMaxPlanWalk)
    return absl::ResourceExhaustedError(absl::StrCat("plan too large: more than ", kMaxPlanWalk,
                                                     " positions up to the split ply",
                                                     "; lower split_depth or submit fewer positions"));
  for (size_t i = 0; i < plan.roots.size(); ++i) {
    std::vector<PlannedPerftUnit> units =
        expand_perft_root(plan.roots[i], int(i), plan.depth, plan.split_depth, cancelled);
    if (cancelled && cancelled())
      return absl::CancelledError(
          "submit: the plan was stopped (the caller went away, its deadline passed, or the coordinator is shutting "
          "down)");
    plan.units.insert(plan.units.end(), std::make_move_iterator(units.begin()), std::make_move_iterator(units.end()));
    if (plan.units.size() > kMaxPlanUnits)
      return absl::ResourceExhaustedError(absl::StrCat("plan too large: more than ", kMaxPlanUnits,
                                                       " units; lower split_depth or submit fewer positions"));
  }
  return plan;
}

}  // namespace c960::cluster
