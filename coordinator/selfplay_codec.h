// Self-play games as the coordinator keeps them: a settled unit's digest (what copies are
// compared by) and per-game summaries (what its position's statistics got from it), and each
// stored game as 16-bit move codes with the few header fields a PGN needs; the PGN itself is
// made again on export. Shared by the self-play kind and the store's migration of old stores.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "coordinator/store.h"
#include "selfplay/game.h"
#include "selfplay/positions.h"
#include "selfplay/spec.h"

namespace c960::cluster {

// core's Move codes, two bytes each, little-endian.
std::string encode_moves(const std::vector<Move>& moves);
std::vector<Move> decode_moves(const std::string& bytes);

std::string pack_summaries(const std::vector<GameSummary>& games);
// INTERNAL when the bytes are not a whole number of summaries.
absl::StatusOr<std::vector<GameSummary>> unpack_summaries(const std::string& bytes);

// The SHA-256 of a canonical result's serialization.
std::string result_digest(const v1::UnitResult& canonical);

// Which games of a position the job stores.
bool stores_game(const v1::SelfPlayJobSpec& spec, int64_t game_index);

// A canonical self-play unit result (games checked by the coordinator, their PGN cleared) as
// the store takes it when the unit settles: the settled form (digest and summaries) and the
// settlement (summaries, and the games the job stores). `sp` is the position's plan index.
struct SelfPlayCompact {
  v1::store::SelfPlaySettled settled;
  SelfPlaySettlement settlement;
};
absl::StatusOr<SelfPlayCompact> compact_result(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                               const v1::UnitResult& canonical);
// The settlement to take back, from a settled unit's stored form (no game rows: the store
// deletes the unit's range of games).
absl::StatusOr<SelfPlaySettlement> settlement_from_settled(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                                           const std::string& settled);

// A stored game as the protocol sends it, with its PGN made here; INTERNAL when its moves do
// not replay (a damaged store).
absl::StatusOr<v1::SelfPlayGame> expand_game(const selfplay::SelfPlaySpec& spec,
                                             const selfplay::StartPosition& position, const StoredGame& g,
                                             const std::string& white, const std::string& black);

}  // namespace c960::cluster
