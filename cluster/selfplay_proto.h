// Self-play specs and games to and from the cluster protocol (c960.v1), shared by the
// coordinator, the worker and the client commands so that all three read them alike.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "selfplay/game.h"
#include "selfplay/spec.h"

namespace c960::selfplay {

// The spec a job stands for; INVALID_ARGUMENT naming the proto field (start_positions,
// positions, dfrc_pairs, engine, options, nodes, depth, movetime_ms, limits, games_per_unit,
// date, ...).
absl::StatusOr<SelfPlaySpec> spec_from_proto(const v1::SelfPlayJobSpec& p);
// The spec's adaptive rule alone (unchecked: spec_from_proto checks it with the rest), for
// callers that need no positions (the coordinator's looks).
AdaptiveRule adaptive_rule_from_proto(const v1::SelfPlayJobSpec& p);
// The inverse (games_per_unit left 0): start positions and DFRC pairs as ranges ("0-9,518"),
// other positions one by one (a mix of kinds as positions).
v1::SelfPlayJobSpec spec_to_proto(const SelfPlaySpec& spec);
// The position a unit's games start from: its start position, or its own position.
absl::StatusOr<StartPosition> unit_position(const v1::SelfPlayUnitSpec& unit);

void game_to_proto(int game_index, const GameRecord& game, v1::SelfPlayGame* out);
// Replays the moves from the start FEN, so a record with an illegal move, an unknown result or
// termination is INVALID_ARGUMENT naming the field. Scores are not carried (statistics do not
// use them).
absl::StatusOr<GameRecord> game_from_proto(const v1::SelfPlayGame& p);

}  // namespace c960::selfplay
