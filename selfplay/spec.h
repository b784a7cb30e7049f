// A self-play job as data: which positions, how many games, which engine under which limits,
// how games are made to differ, and how they are adjudicated. play_selfplay_game() plays game
// number i of a position under a spec; the result depends only on (spec, position, i), so any
// machine can play any game and a replayed game is the same game.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "core/startpos.h"
#include "selfplay/adaptive.h"
#include "selfplay/game.h"
#include "selfplay/positions.h"
#include "selfplay/sprt.h"
#include "selfplay/uci_engine.h"

namespace c960::selfplay {

constexpr absl::string_view kBuiltinEngine = "builtin";

// Every default and limit of a spec in one place: validate(), the command-line options of
// `c960 selfplay` and `c960 submit selfplay`, and their help text all read these.
inline constexpr char kDefaultPositions[] = "0-959";  // all start positions
// A local run's positions at most (every DFRC pair); cluster/config.h bounds a job's.
inline constexpr size_t kMaxPositions = size_t(kDfrcPairs);
inline constexpr int kMaxGamesPerPosition = 1'000'000;
// Move limits: exactly one of nodes, depth, movetime, each at least 1.
inline constexpr uint64_t kMaxNodesLimit = uint64_t(1) << 40;
inline constexpr int kMaxDepthLimit = 64;
inline constexpr int kMaxMovetimeMs = 3'600'000;
// A time control (--tc BASE[+INC], seconds): the base and the increment, in ms.
inline constexpr int64_t kMaxTcBaseMs = 24 * 3'600'000;
inline constexpr int64_t kMaxTcIncrementMs = 3'600'000;
inline constexpr int kMaxRandomPlies = 40;
// The random plies `c960 selfplay` and `c960 submit selfplay` give a run of one start position
// (more than one game) unless told: one random move each, about 400 openings, so that its games
// do not mostly follow one line (selfplay/lines.h).
inline constexpr int kDefaultOnePositionRandomPlies = 2;
inline constexpr int kMaxNodeJitterPercent = 90;
// The node jitter `c960 selfplay` and `c960 submit selfplay` give a --nodes limit unless told:
// without it, a deterministic engine at a fixed node count plays every game of a position alike.
inline constexpr int kDefaultNodeJitterPercent = 10;
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
  std::vector<StartPosition> positions;  // in the order results list them; ids unique
  // Games from each position; with an adaptive rule, the most a position may play (the cap).
  int games_per_position = 1;
  // Off by default: every position plays games_per_position games (selfplay/adaptive.h).
  AdaptiveRule adaptive;
  // The engine's name: "builtin", or a name for a UCI engine (in the PGN, the job's identity).
  std::string engine = std::string(kBuiltinEngine);
  // The UCI engine's binary where it runs; empty: `engine` is the path itself (local runs).
  std::string engine_path;
  const std::string& engine_binary() const { return engine_path.empty() ? engine : engine_path; }
  // What the options may be where it runs (a worker's policy, never the job's; unset for local
  // runs, which take any option the engine declares).
  std::optional<OptionPolicy> option_policy;
  std::vector<UciOptionValue> options;  // UCI options (UCI engines only)
  // A match: the second engine ("B"; empty: self-play), its binary where it runs (as
  // engine_path) and its UCI options. Games come in colour-reversed pairs from one opening: game
  // 2k has `engine` ("A") White, game 2k+1 the opponent; games_per_position is even.
  std::string opponent;
  std::string opponent_path;
  std::vector<UciOptionValue> opponent_options;
  // The opponent's option policy where it runs (as option_policy for the engine).
  std::optional<OptionPolicy> opponent_option_policy;
  bool match() const { return !opponent.empty(); }
  const std::string& opponent_binary() const { return opponent_path.empty() ? opponent : opponent_path; }
  // A match's SPRT (off unless set): the run stops once the pairs played, taken round by round
  // over the positions (pair 0 of every position, then pair 1, ...), decide it.
  SprtRule sprt;
  MoveLimits limits;            // exactly one of nodes, depth, movetime
  int random_plies = 0;         // random legal moves at the start of each game
  int node_jitter_percent = 0;  // per-move node limit varies by up to this much (nodes limit only)
  int sample_margin_cp = 0;     // built-in engine: pick among root moves within this of the best
  uint64_t seed = 0;
  int max_plies = 0;  // 0 = no limit
  Adjudication adjudication;
  int hash_mb = kDefaultHashMb;                     // built-in engine's hash per player
  int engine_timeout_ms = kDefaultEngineTimeoutMs;  // UCI engines: time allowed beyond movetime before "hung"
  // The PGN Date tag, "YYYY.MM.DD": the day the run (or the job) was started, fixed in the spec so
  // that a game's PGN is the same wherever and whenever it is played; empty: "????.??.??".
  std::string date;

  // Every field checked; the error names the field.
  absl::Status validate() const;
  // The two halves of validate(): the list of positions, and everything else.
  absl::Status validate_positions() const;
  absl::Status validate_settings() const;
};

// Whether every game of a position would repeat its first: more than one game per position, a
// fixed nodes or depth limit (movetime varies by itself), no random opening plies, no node jitter,
// no move sampling, and an engine that is deterministic there (the built-in one; a UCI engine
// unless a Threads option above 1 makes its searches race). Such a spec plays one game N times,
// so its statistics would count copies as evidence: `c960 selfplay` and submit refuse it.
bool games_repeat(const SelfPlaySpec& spec);

// The built-in engine's hash a spec asks for (hash_mb; 0: kDefaultHashMb) as an option named
// Hash: what a worker operator's policy for "builtin" bounds (c960-worker --engine-option
// builtin:Hash=1..MAX), checked by the worker before it allocates, and by the coordinator at
// submit and lease against the offers workers made at Hello.
UciOptionValue builtin_hash_option(int hash_mb);

// The start positions sp (0..959), in that order.
std::vector<StartPosition> chess960_positions(const std::vector<int>& sps);

// All spec fields in one line (for logs and the PGN Event tag).
std::string describe(const SelfPlaySpec& spec);
// The spec as named values (engine, options, limit, seed, ...) for metadata; numbers unquoted.
struct MetadataValue {
  std::string key, value;
  bool number = false;
};
std::vector<MetadataValue> metadata_values(const SelfPlaySpec& spec);
// The PGN TimeControl tag of the spec's limit: "-" (none: nodes or depth), "1/S" for a movetime
// of whole seconds (one move per period of S seconds), "B+I" (seconds) for a time control, else "?".
std::string time_control(const MoveLimits& limits);

// The seed of game i of a position, from position_key() (the start position number for the 960):
// a mix of all three, so games never share random streams.
uint64_t game_seed(uint64_t spec_seed, uint64_t position_key, int game_index);

// The two players of a game under a spec: fresh ones per thread, reused from game to game.
struct Players {
  std::unique_ptr<Player> white, black;
};
absl::StatusOr<Players> make_players(const SelfPlaySpec& spec);

// The options game number game_index (0-based) of a position is played with: its random
// opening plies, ply limit, adjudication, node jitter seed and PGN tags. A pure function of its
// arguments, so whoever checks a game knows the opening it must start with.
absl::StatusOr<GameOptions> game_options(const SelfPlaySpec& spec, const StartPosition& position, int game_index);

// Checks a game someone says was game_index of the position under the spec, without
// trusting it: its start and random opening are the ones the spec gives, every move is legal,
// the rules did not end it earlier, and its ending is what the final position shows (checkmate,
// stalemate, insufficient material, fifty moves, threefold repetition, the ply limit) or, for
// endings the position cannot show (adjudication, an engine failure), one the spec allows with a
// result that fits it. Returns the game with its PGN made here from the checked moves (names
// and detail kept only as printable text). INVALID_ARGUMENT naming the problem otherwise.
absl::StatusOr<GameRecord> check_game(const SelfPlaySpec& spec, const StartPosition& position, int game_index,
                                      GameRecord claimed);

// Plays game number game_index (0-based) of the position. Errors only for a bad spec or position;
// engine failures are game results.
absl::StatusOr<GameRecord> play_selfplay_game(const SelfPlaySpec& spec, const StartPosition& position, int game_index,
                                              Players& players);
// The same for Chess960 start position sp.
absl::StatusOr<GameRecord> play_selfplay_game(const SelfPlaySpec& spec, int sp, int game_index, Players& players);

}  // namespace c960::selfplay
