// The perft planner: units, multiplicities and merges checked against independent walks.
#include "coordinator/planner.h"

#include <gtest/gtest.h>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "cluster/config.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/position.h"
#include "core/startpos.h"

namespace c960::cluster {
namespace {

v1::PerftJobSpec spec(int depth, const std::string& sps, std::optional<int> split = std::nullopt) {
  v1::PerftJobSpec s;
  s.set_depth(depth);
  s.set_start_positions(sps);
  if (split) s.set_split_depth(*split);
  return s;
}

// Every move sequence of `plies` from pos, by the key of the position reached and first move.
void walk(Position& pos, int plies, const std::string& first,
          std::map<std::string, std::map<std::string, uint64_t>>& out, int ply = 0) {
  if (ply == plies) {
    ++out[position_key(pos.fen())][first];
    return;
  }
  MoveList moves;
  generate_legal(pos, moves);
  for (Move m : moves) {
    StateInfo st;
    pos.do_move(m, st);
    walk(pos, plies, ply == 0 ? to_uci(m) : first, out, ply + 1);
    pos.undo_move(m);
  }
}

TEST(PlannerTest, MultiplicitiesSumToPerftAtSplitPlyAndTotalsMatch) {
  for (int split : {1, 2, 3}) {
    absl::StatusOr<PerftPlan> plan = plan_perft(spec(4, "0,518,959", split));
    ASSERT_TRUE(plan.ok()) << plan.status();
    ASSERT_EQ(plan->roots.size(), 3u);
    EXPECT_EQ(plan->split_depth, split);
    for (size_t r = 0; r < plan->roots.size(); ++r) {
      Position root = *Position::from_fen(plan->roots[r].fen);
      uint64_t walks = 0;
      NodeCount total = 0;
      for (const PlannedPerftUnit& u : plan->units) {
        if (u.root != int(r)) continue;
        EXPECT_EQ(u.depth, 4 - split);
        walks += u.multiplicity();
        Position p = *Position::from_fen(u.fen);
        total += NodeCount(u.multiplicity()) * perft(p, u.depth);
      }
      EXPECT_EQ(walks, perft(root, split)) << "root " << r << " split " << split;
      EXPECT_EQ(total, NodeCount(perft(root, 4))) << "root " << r << " split " << split;
    }
  }
}

TEST(PlannerTest, MergedUnitsAreExactlyTheTransposedPositions) {
  absl::StatusOr<PerftPlan> plan = plan_perft(spec(5, "518", 3));
  ASSERT_TRUE(plan.ok()) << plan.status();
  Position root = *Position::from_fen(plan->roots[0].fen);
  std::map<std::string, std::map<std::string, uint64_t>> expected;
  walk(root, 3, "", expected);
  // Transpositions exist at ply 3 (1.Nf3 e5 2.Nc3 = 1.Nc3 e5 2.Nf3), so units are fewer than walks.
  EXPECT_LT(plan->units.size(), perft(root, 3));
  ASSERT_EQ(plan->units.size(), expected.size());
  std::set<std::string> seen;
  for (const PlannedPerftUnit& u : plan->units) {
    const std::string key = position_key(u.fen);
    EXPECT_TRUE(seen.insert(key).second) << "two units for " << key;
    ASSERT_TRUE(expected.count(key)) << key;
    std::map<std::string, uint64_t> weights(u.weights.begin(), u.weights.end());
    EXPECT_EQ(weights, expected[key]) << key;
  }
}

TEST(PlannerTest, SplitZeroMakesOneUnitPerRootThatBringsItsDivide) {
  absl::StatusOr<PerftPlan> plan = plan_perft(spec(3, "", 0));
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->units.size(), 960u);
  for (size_t i = 0; i < 960; ++i) {
    EXPECT_EQ(plan->units[i].root, int(i));
    EXPECT_TRUE(plan->units[i].weights.empty());
    EXPECT_EQ(plan->units[i].multiplicity(), 1u);
    EXPECT_EQ(plan->roots[i].start_position, int(i));
  }
}

TEST(PlannerTest, AutomaticSplitKeepsUnitsAtTheTargetDepth) {
  // Enough roots: units keep kTargetUnitDepth plies at most, whole roots when they can.
  EXPECT_EQ(auto_split_depth(1, 960), 0);
  EXPECT_EQ(auto_split_depth(kTargetUnitDepth, 960), 0);
  EXPECT_EQ(auto_split_depth(kTargetUnitDepth + 1, 960), 1);
  EXPECT_EQ(auto_split_depth(kTargetUnitDepth + 2, 960), 2);
  // Shallow units are never split for the sake of spreading: a small job stays one unit a root.
  EXPECT_EQ(auto_split_depth(kDeepUnitDepth - 1, 1), 0);
  EXPECT_EQ(auto_split_depth(1, 1), 0);
  // Deep units of few roots are split until about kMinAutoUnits of them (20 moves a ply).
  EXPECT_EQ(auto_split_depth(kDeepUnitDepth, 1), 1);
  EXPECT_EQ(auto_split_depth(kDeepUnitDepth, size_t(kMinAutoUnits)), 0);
  EXPECT_EQ(auto_split_depth(kDeepUnitDepth, size_t(kMinAutoUnits) - 1), 1);
  EXPECT_EQ(auto_split_depth(kTargetUnitDepth, 1), 1);
  EXPECT_EQ(auto_split_depth(kTargetUnitDepth + 1, 1), 1);
  absl::StatusOr<PerftPlan> plan = plan_perft(spec(kTargetUnitDepth + 1, "518"));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->split_depth, 1);
  EXPECT_EQ(plan->units.size(), 20u);
  // Perft 8 of 960 roots: one unit a root (its table sees all its transpositions).
  plan = plan_perft_roots(spec(kDeepUnitDepth, ""));
  ASSERT_TRUE(plan.ok()) << plan.status();
  EXPECT_EQ(plan->split_depth, 0);
}

TEST(PlannerTest, FensAreRootsAndRootsWithoutMovesGiveNoUnits) {
  v1::PerftJobSpec s;
  s.set_depth(3);
  s.set_split_depth(1);
  s.add_fens("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
  s.add_fens("7k/5Q2/6K1/8/8/8/8/8 b - - 0 1");  // stalemate
  absl::StatusOr<PerftPlan> plan = plan_perft(s);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_EQ(plan->roots.size(), 2u);
  EXPECT_EQ(plan->roots[0].start_position, -1);
  uint64_t walks = 0;
  for (const PlannedPerftUnit& u : plan->units) {
    EXPECT_EQ(u.root, 0);
    walks += u.multiplicity();
  }
  Position root = *Position::from_fen(s.fens(0));
  EXPECT_EQ(walks, perft(root, 1));
}

void expect_invalid(const v1::PerftJobSpec& s, absl::StatusCode code, const std::string& field) {
  absl::StatusOr<PerftPlan> plan = plan_perft(s);
  ASSERT_FALSE(plan.ok()) << s.ShortDebugString();
  EXPECT_EQ(plan.status().code(), code) << plan.status();
  EXPECT_TRUE(absl::StartsWith(plan.status().message(), field)) << plan.status();
}

TEST(PlannerTest, InvalidSpecsNameTheField) {
  expect_invalid(spec(0, ""), absl::StatusCode::kInvalidArgument, "depth");
  expect_invalid(spec(kMaxDepth + 1, ""), absl::StatusCode::kInvalidArgument, "depth");
  expect_invalid(spec(3, "960"), absl::StatusCode::kInvalidArgument, "start_positions");
  expect_invalid(spec(3, "5-2"), absl::StatusCode::kInvalidArgument, "start_positions");
  expect_invalid(spec(3, "x"), absl::StatusCode::kInvalidArgument, "start_positions");
  expect_invalid(spec(3, std::string(kMaxStartPositionsLength + 1, '1')), absl::StatusCode::kInvalidArgument,
                 "start_positions");
  expect_invalid(spec(3, "0", 4), absl::StatusCode::kInvalidArgument, "split_depth");
  expect_invalid(spec(3, "0", -1), absl::StatusCode::kInvalidArgument, "split_depth");
  expect_invalid(spec(kMaxUnitDepth + 2, "0", 1), absl::StatusCode::kInvalidArgument, "split_depth");
  expect_invalid(spec(9, "", 5), absl::StatusCode::kResourceExhausted, "plan too large");
  v1::PerftJobSpec both = spec(3, "0");
  both.add_fens("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
  expect_invalid(both, absl::StatusCode::kInvalidArgument, "start_positions and fens");
  v1::PerftJobSpec bad;
  bad.set_depth(2);
  bad.add_fens("4k3/8/8/8/8/8/8/4K2R w K - 0 1");
  bad.add_fens("not a fen");
  expect_invalid(bad, absl::StatusCode::kInvalidArgument, "fens[1]");
  v1::PerftJobSpec no_king;
  no_king.set_depth(2);
  no_king.add_fens("8/8/8/8/8/8/8/4K3 w - - 0 1");
  expect_invalid(no_king, absl::StatusCode::kInvalidArgument, "fens[0]");
  v1::PerftJobSpec many;
  many.set_depth(1);
  for (int i = 0; i <= kMaxFens; ++i) many.add_fens("4k3/8/8/8/8/8/8/4K3 w - - 0 1");
  expect_invalid(many, absl::StatusCode::kInvalidArgument, "fens");
  v1::PerftJobSpec long_fen;
  long_fen.set_depth(1);
  long_fen.add_fens(std::string(kMaxFenLength + 1, '8'));
  expect_invalid(long_fen, absl::StatusCode::kInvalidArgument, "fens[0]");
}

}  // namespace
// Issue 19's probe: perft 16 of all 960 within every cap. The automatic split stays within
// kMaxSplitDepth, and the plan is refused from estimates (the message says "about"), before
// perft(6) or perft(9) of any root is counted.
TEST(PlannerTest, AHugePlanIsRefusedFromEstimatesBeforeAnyWalk) {
  EXPECT_EQ(auto_split_depth(16, 960), kMaxSplitDepth);
  EXPECT_EQ(auto_split_depth(16, 1), kMaxSplitDepth);
  absl::StatusOr<PerftPlan> p = plan_perft_roots(spec(16, ""));
  ASSERT_EQ(p.status().code(), absl::StatusCode::kResourceExhausted) << p.status();
  EXPECT_TRUE(absl::StrContains(p.status().message(), "about ")) << p.status();
  absl::StatusOr<PerftPlan> eager = plan_perft(spec(16, ""));
  EXPECT_EQ(eager.status().code(), absl::StatusCode::kResourceExhausted) << eager.status();
  // The split walk of a plan far past the limit is the estimate, not a count.
  PerftPlan big;
  big.split_depth = 6;
  big.roots = {{518, *startpos_fen(518)}};
  EXPECT_GT(split_walk(big, 1000), 4000u);
}

// A plan stops when asked (its caller's deadline passed, the coordinator shuts down).
TEST(PlannerTest, APlanStopsWhenCancelled) {
  int asked = 0;
  const PlanCancelled cancelled = [&] { return ++asked > 2; };
  absl::StatusOr<PerftPlan> p = plan_perft(spec(6, "0-99", 3), cancelled);
  EXPECT_EQ(p.status().code(), absl::StatusCode::kCancelled) << p.status();
  EXPECT_GT(asked, 2);
  EXPECT_TRUE(plan_perft(spec(6, "0-3", 3), [] { return false; }).ok());
}

}  // namespace c960::cluster
