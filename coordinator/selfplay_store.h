// The self-play kind's tables: per-position statistics (sp_totals, with sp_hashes and
// sp_pair_hashes counting distinct games and pairs), player names (sp_names) and the games kept
// (sp_games), with their schema steps and deletion (selfplay_tables(), registered with the store
// in coordinator/kinds.cpp). The kind writes them in the transaction that settles a unit
// (SettledForm::write) or takes one back (JobKind::write_unsettled).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "coordinator/store.h"

namespace c960::cluster {

// What one self-play game added to its position's statistics.
struct GameSummary {
  uint8_t result = 0;       // selfplay::GameResult
  uint8_t termination = 0;  // selfplay::Termination
  uint16_t plies = 0;
  uint64_t hash = 0;     // selfplay::game_hash, for duplicates
  bool evidence = true;  // selfplay::is_evidence: counted in the position's results
  // selfplay::line_hash, for related games; none in units settled before lines were counted.
  std::optional<uint64_t> line;
};

// A stored self-play game, unique per (job, position, game index): the table's primary key
// makes a second copy of a game a failed transaction, never a second count. Compact: its moves'
// ranks among the legal moves and the header fields a PGN needs (the PGN is made on export).
struct StoredGame {
  int32_t sp = 0;  // the position's index in the job's plan
  int64_t index = 0;
  int32_t result = 0;       // selfplay::GameResult
  int32_t termination = 0;  // selfplay::Termination
  int32_t opening_plies = 0;
  std::string white, black;           // player names (kept once per job)
  std::optional<std::string> detail;  // only for endings a replay cannot tell (engine failures)
  std::string moves;                  // about 5 bits a ply (selfplay_codec.h encode_moves)
};

// What a settled self-play unit adds to the store, and what taking it back subtracts: its
// games' summaries (games first_game.. of position sp) and the games the job stores.
struct SelfPlaySettlement {
  int32_t sp = 0;
  int64_t first_game = 0;  // even in a match, whose units hold whole pairs
  // A match's games (SelfPlayJobSpec.opponent): also counted as colour-reversed pairs. Taking a
  // unit back needs not say so: its position's row has pairs already.
  bool match = false;
  std::vector<GameSummary> games;
  std::vector<StoredGame> stored;
};

// A self-play position's statistics over its settled games.
struct PositionTotals {
  int32_t sp = 0;
  int64_t games = 0, white_wins = 0, draws = 0, black_wins = 0, plies = 0, duplicates = 0, stored = 0;
  int64_t uncounted = 0;              // games that are not evidence: in games, plies and terminations only
  std::vector<int64_t> terminations;  // by selfplay::Termination
  // A match's pairs (v1.MatchCounts): pentanomial 0..4, wins, draws, losses, duplicates,
  // unpaired; empty for self-play.
  std::vector<int64_t> pairs;
  // Its lines (v1.LineCounts): (white wins, draws, black wins, lines) in increasing order; empty
  // when they were not recorded for every distinct game it counts (units settled before lines
  // were counted).
  std::vector<std::array<int64_t, 4>> lines;
};
inline constexpr size_t kPairFigures = 10;

// Adds (sign 1) or subtracts (sign -1) a self-play unit's statistics and games; a game stored
// twice fails it (and its transaction). Call it inside a transaction of the store's.
absl::Status apply_settlement(Store* store, const std::string& job_id, const SelfPlaySettlement& s, int sign);
// A self-play job's statistics per position (positions without a settled game have no row).
absl::StatusOr<std::vector<PositionTotals>> load_position_totals(Store* store, const std::string& job_id);
// A page of a position's stored games: those with an index above `after`, at most `limit`.
absl::StatusOr<std::vector<StoredGame>> load_games(Store* store, const std::string& job_id, int32_t sp, int64_t after,
                                                   int limit);
// Every game stored for a job, by position then index (tests, audits).
absl::StatusOr<std::vector<StoredGame>> load_games(Store* store, const std::string& job_id);

// The tables, their schema steps (1, 4, 6, 8 and 9 of the store's numbering) and their rows'
// deletion, for the store.
const KindTables& selfplay_tables();

}  // namespace c960::cluster
