// Self-play games as the coordinator keeps them: a settled unit's digest (what copies are
// compared by) and per-game summaries (what its position's statistics got from it), and each
// stored game as its moves' ranks among the legal moves (about 5 bits a ply) with the few header
// fields a PGN needs; the PGN itself is made again on export. Shared by the self-play kind and
// the store's migrations of old stores.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "c960/v1/cluster.pb.h"
#include "c960/v1/store.pb.h"
#include "coordinator/selfplay_store.h"
#include "core/position.h"
#include "selfplay/game.h"
#include "selfplay/positions.h"
#include "selfplay/spec.h"

namespace c960::cluster {

// A game's moves as the store keeps them (schema 6): each move as its rank among the legal
// moves of the position before it, the ranks packed as mixed-radix numbers (layout in the .cpp).
// Both ends replay the game from `start`. INTERNAL when a move is not legal where it is played.
absl::StatusOr<std::string> encode_moves(const Position& start, const std::vector<Move>& moves);
// INTERNAL, saying what is wrong, unless `bytes` are what encode_moves makes of a game of at
// most max_plies legal moves from `start` (the caller names the game).
absl::StatusOr<std::vector<Move>> decode_moves(const Position& start, const std::string& bytes, int max_plies);

// Schemas 4 and 5: core's Move codes, two bytes each, little-endian (migration 6 recodes them).
std::string encode_move_codes(const std::vector<Move>& moves);
// INTERNAL when the bytes are not whole codes.
absl::StatusOr<std::vector<Move>> decode_move_codes(const std::string& bytes);
enum class MoveCoding { kMoveCodes, kLegalRanks };  // schemas 4-5, schema 6 on

std::string pack_summaries(const std::vector<GameSummary>& games);
// INTERNAL when the bytes are not a whole number of summaries.
absl::StatusOr<std::vector<GameSummary>> unpack_summaries(const std::string& bytes);
// The games' lines (SelfPlaySettled.lines): "" unless every game has one.
std::string pack_lines(const std::vector<GameSummary>& games);
// Sets the games' lines from SelfPlaySettled.lines ("" leaves them unset); INTERNAL when the
// bytes are not one line a game.
absl::Status unpack_lines(const std::string& bytes, std::vector<GameSummary>* games);

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
// `coding`: kLegalRanks, but for the conversion to schema 4, which writes that schema's rows.
absl::StatusOr<SelfPlayCompact> compact_result(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                               const v1::UnitResult& canonical, MoveCoding coding);
// The settlement to take back, from a settled unit's stored form (no game rows: the store
// deletes the unit's range of games).
absl::StatusOr<SelfPlaySettlement> settlement_from_settled(const v1::SelfPlayUnitSpec& spec, int32_t sp,
                                                           const std::string& settled);

// Position k of a job's stored plan (the same reconstruction a unit's position gets:
// unit_position); INTERNAL when the plan has no position k.
absl::StatusOr<selfplay::StartPosition> plan_position(const v1::store::SelfPlayPlan& plan, int k);

// A stored game as the protocol sends it, with its PGN made here; INTERNAL when its moves do
// not replay (a damaged store).
absl::StatusOr<v1::SelfPlayGame> expand_game(const selfplay::SelfPlaySpec& spec,
                                             const selfplay::StartPosition& position, const StoredGame& g,
                                             const std::string& white, const std::string& black);

}  // namespace c960::cluster
