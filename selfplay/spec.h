// A self-play job as data: which positions, how many games, which engine under which limits,
// how games are made to differ, and how they are adjudicated. play_selfplay_game() plays game
// number i of a position under a spec; the result depends only on (spec, sp, i), so any
// machine can play any game and a replayed game is the same game.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "selfplay/game.h"
#include "selfplay/uci_engine.h"

namespace c960::selfplay {

constexpr absl::string_view kBuiltinEngine = "builtin";

// Every default and limit of a spec in one place: validate(), the command-line options of
// `c960 selfplay` and `c960 submit selfplay`, and their help text all read these.
inline constexpr char kDefaultPositions[] = "0-959";  // all start positions
inline constexpr int kMaxGamesPerPosition = 1'000'000;
// Move limits: exactly one of nodes, depth, movetime, each at least 1.
inline constexpr uint64_t kMaxNodesLimit = uint64_t(1) << 40;
inline constexpr int kMaxDepthLimit = 64;
inline constexpr int kMaxMovetimeMs = 3'600'000;
inline constexpr int kMaxRandomPlies = 40;
inline constexpr int kMaxNodeJitterPercent = 90;
inline constexpr int kMaxSampleMarginCp = 1000;
// The command line's seed when none is given (a SelfPlaySpec made in code starts at 0).
inline constexpr uint64_t kDefaultSeed = 1;
inline constexpr int kMaxPlyLimit = 10'000;  // max_plies; 0 = no limit
// Adjudication; the defaults are those of selfplay::Adjudication (game.h).
inline constexpr int kMaxAdjudicationMoves = 1000;  // draw_moves, resign_moves; 0 = off
inline constexpr int kMaxDrawScoreCp = 1000;
inline constexpr int kDefaultDrawScoreCp = Adjudication{}.draw_score_cp;
inline constexpr int kMaxDrawMinPly = 10'000;
inline constexpr int kMinResignScoreCp = 1;
inline constexpr int kMaxResignScoreCp = kMateScoreCp;
inline constexpr int kDefaultResignScoreCp = Adjudication{}.resign_score_cp;
inline constexpr int kDefaultHashMb = 16;
inline constexpr int kMaxHashMb = 4096;
inline constexpr int kDefaultEngineTimeoutMs = 30'000;
inline constexpr int kMinEngineTimeoutMs = 100;
inline constexpr int kMaxEngineTimeoutMs = 3'600'000;

struct SelfPlaySpec {
  std::vector<int> positions;  // start position numbers, 0..959
  int games_per_position = 1;
  // The engine's name: "builtin", or a name for a UCI engine (in the PGN, the job's identity).
  std::string engine = std::string(kBuiltinEngine);
  // The UCI engine's binary where it runs; empty: `engine` is the path itself (local runs).
  std::string engine_path;
  const std::string& engine_binary() const { return engine_path.empty() ? engine : engine_path; }
  std::vector<UciOptionValue> options;  // UCI options (UCI engines only)
  MoveLimits limits;                    // exactly one of nodes, depth, movetime
  int random_plies = 0;                 // random legal moves at the start of each game
  int node_jitter_percent = 0;          // per-move node limit varies by up to this much (nodes limit only)
  int sample_margin_cp = 0;             // built-in engine: pick among root moves within this of the best
  uint64_t seed = 0;
  int max_plies = 0;  // 0 = no limit
  Adjudication adjudication;
  int hash_mb = kDefaultHashMb;                     // built-in engine's hash per player
  int engine_timeout_ms = kDefaultEngineTimeoutMs;  // UCI engines: time allowed beyond movetime before "hung"

  // Every field checked; the error names the field.
  absl::Status validate() const;
};

// All spec fields in one line (for logs and the PGN Event tag).
std::string describe(const SelfPlaySpec& spec);

// The seed of game i of position sp: a mix of all three, so games never share random streams.
uint64_t game_seed(uint64_t spec_seed, int sp, int game_index);

// The two players of a game under a spec: fresh ones per thread, reused from game to game.
struct Players {
  std::unique_ptr<Player> white, black;
};
absl::StatusOr<Players> make_players(const SelfPlaySpec& spec);

// The options game number game_index (0-based) of start position sp is played with: its random
// opening plies, ply limit, adjudication, node jitter seed and PGN tags. A pure function of its
// arguments, so whoever checks a game knows the opening it must start with.
absl::StatusOr<GameOptions> game_options(const SelfPlaySpec& spec, int sp, int game_index);

// Checks a game someone says was game_index of start position sp under the spec, without
// trusting it: its start and random opening are the ones the spec gives, every move is legal,
// the rules did not end it earlier, and its ending is what the final position shows (checkmate,
// stalemate, insufficient material, fifty moves, threefold repetition, the ply limit) or, for
// endings the position cannot show (adjudication, an engine failure), one the spec allows with a
// result that fits it. Returns the game with its PGN made here from the checked moves (names
// and detail kept only as printable text). INVALID_ARGUMENT naming the problem otherwise.
absl::StatusOr<GameRecord> check_game(const SelfPlaySpec& spec, int sp, int game_index, GameRecord claimed);

// Plays game number game_index (0-based) of start position sp. Errors only for a bad spec or sp;
// engine failures are game results.
absl::StatusOr<GameRecord> play_selfplay_game(const SelfPlaySpec& spec, int sp, int game_index, Players& players);

}  // namespace c960::selfplay
