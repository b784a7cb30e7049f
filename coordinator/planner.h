// Perft planning: validates a perft job spec and splits each root position at a ply into units.
// Pure logic on core types, no protos beyond the spec, testable without sockets.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"

namespace c960::cluster {

// Asked now and then while a plan walks positions: true stops it (CANCELLED). The caller's
// deadline passed, it went away, or the coordinator is shutting down. Empty: never.
using PlanCancelled = std::function<bool()>;

struct PerftRoot {
  int start_position = -1;  // -1: given as FEN
  std::string fen;          // X-FEN
};

struct PlannedPerftUnit {
  int root = 0;
  std::string fen;  // X-FEN of the position at the split ply (clocks reset: perft ignores them)
  int depth = 0;    // plies left to count from fen
  // Move sequences from the root that reach fen, by first move (UCI). Empty when the unit is the
  // root itself (split depth 0).
  std::vector<std::pair<std::string, uint64_t>> weights;
  uint64_t estimated_nodes = 0;  // leaf nodes below fen at depth, estimated (estimate_perft)
  uint64_t multiplicity() const;
};

struct PerftPlan {
  int depth = 0;
  int split_depth = 0;
  std::vector<PerftRoot> roots;
  std::vector<PlannedPerftUnit> units;  // grouped by root, in root order
};

// The roots a spec names, validated: INVALID_ARGUMENT naming depth, start_positions or fens.
absl::StatusOr<std::vector<PerftRoot>> resolve_perft_roots(const v1::PerftJobSpec& spec);
// The split ply chosen when the spec gives none, for `roots` roots: units keep at most
// kTargetUnitDepth plies; units of kDeepUnitDepth plies or more are split further while the job
// would have fewer than kMinAutoUnits of them (about 20 moves a ply); never past kMaxSplitDepth
// or depth - 1.
int auto_split_depth(int depth, size_t roots);
// Validates the spec and plans it. INVALID_ARGUMENT for bad fields, RESOURCE_EXHAUSTED when the
// plan would walk or keep too many positions (said from estimates before any walk where they
// already tell), CANCELLED when `cancelled` says so.
absl::StatusOr<PerftPlan> plan_perft(const v1::PerftJobSpec& spec, const PlanCancelled& cancelled = {});
// A root's units at the split ply, transpositions within the root merged (the unit of lazy
// planning: a job's roots are expanded one after another as workers need units). Empty when
// cancelled.
std::vector<PlannedPerftUnit> expand_perft_root(const PerftRoot& root, int root_index, int depth, int split_depth,
                                                const PlanCancelled& cancelled = {});
// Leaf nodes of perft(depth) from fen, estimated from perft(1) and perft(2) (the branching factor
// of the second ply carried on): cheap, within a factor of a few at depths 5..8.
uint64_t estimate_perft(const std::string& fen, int depth);
// Validates the spec and resolves its roots and split depth without expanding any root: the
// plan of a job too big to plan up front (roots then come from expand_perft_root).
absl::StatusOr<PerftPlan> plan_perft_roots(const v1::PerftJobSpec& spec);
// Positions at the split ply summed over the roots (the work of an eager plan), counted up to
// `limit` and no further: once the estimates alone pass 4 x limit, that estimate is returned
// without counting (the count of a big split costs what the plan would).
uint64_t split_walk(const PerftPlan& plan, uint64_t limit);
// The position key units are merged by: FEN without the clocks (the full position, not a hash).
std::string position_key(const std::string& fen);

}  // namespace c960::cluster
