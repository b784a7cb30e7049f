// One game between two players under the rules of chess (Chess960 start positions), with
// optional adjudication, recorded as moves, result, termination and PGN.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/position.h"

namespace c960::selfplay {

enum class GameResult : uint8_t { kWhiteWins, kDraw, kBlackWins };

// Why a game ended. The order is the on-disk/CSV order: append only.
enum class Termination : uint8_t {
  kCheckmate,
  kStalemate,
  kThreefoldRepetition,
  kFiftyMoveRule,
  kInsufficientMaterial,
  kMaxPlies,           // drawn when the ply limit is reached
  kAdjudicatedDraw,    // both sides reported scores near 0 for N moves
  kAdjudicatedResign,  // one side reported a lost score for N moves (and the other agreed)
  kIllegalMove,        // the player to move loses
  kEngineCrash,        // the player to move loses
  kEngineHang,         // the player to move loses (no move within the time allowed)
  kEngineError,        // any other player failure (bad output, cannot start): the player loses
  kTimeForfeit,        // under a time control: the player to move ran out of time and loses
  kCount
};

// Stable lower-case names ("checkmate", "threefold_repetition", ...) for CSV, JSON and PGN.
absl::string_view termination_name(Termination t);
absl::string_view result_string(GameResult r);  // "1-0", "1/2-1/2", "0-1"

// How a player thinks about one move. 0 = no limit of that kind.
struct MoveLimits {
  uint64_t nodes = 0;
  int depth = 0;
  int movetime_ms = 0;
  // A time control (a limit of its own): each side's clock starts at tc_base_ms and gains
  // tc_increment_ms after each of its moves (Fischer increment, as cutechess-cli and fastchess
  // keep it); the time a player takes to answer is taken off its clock, and a player whose clock
  // runs out loses (time forfeit). play_game sets the clocks of each move's request.
  int64_t tc_base_ms = 0;
  int64_t tc_increment_ms = 0;
  int64_t wtime_ms = 0, btime_ms = 0;  // the clocks when the move is asked for
  bool timed() const { return tc_base_ms > 0; }
};

// What a player answers. A failure makes it lose the game; `detail` explains it.
struct PlayerMove {
  Move move = Move::none();
  std::optional<int> score_cp;                // side to move's view; mates as +-(100000 - plies)
  Termination failure = Termination::kCount;  // kIllegalMove, kEngineCrash, kEngineHang, kEngineError or kCount (none)
  std::string detail;
  bool failed() const { return failure != Termination::kCount; }
};

constexpr int kMateScoreCp = 100000;

// What a player sees when asked for a move.
struct MoveRequest {
  Position& pos;                // the current position, history linked behind it; a player must leave it as it found it
  absl::string_view start_fen;  // Shredder-FEN of the start position
  const std::vector<Move>& moves;  // the moves from start_fen to pos
  MoveLimits limits;
  uint64_t random = 0;  // fresh per move from the game's seed, for players that sample moves
};

class Player {
 public:
  virtual ~Player() = default;
  virtual std::string name() const = 0;
  // Called before each game; a failure counts as kEngineError for the player's first move.
  virtual absl::Status new_game() = 0;
  virtual PlayerMove choose(const MoveRequest& request) = 0;
};

struct Adjudication {
  // Draw when the last draw_moves scores of each side are all within +-draw_score_cp, from
  // ply draw_min_ply on. 0 moves = off.
  int draw_moves = 0;
  int draw_score_cp = 10;
  int draw_min_ply = 0;
  // A side resigns when its last resign_moves scores are all <= -resign_score_cp and the
  // opponent's last resign_moves scores are all >= +resign_score_cp. 0 moves = off.
  int resign_moves = 0;
  int resign_score_cp = 1000;
};

struct GameOptions {
  int max_plies = 0;  // 0 = no limit; drawn (kMaxPlies) on reaching it
  Adjudication adjudication;
  // Moves played before the players are asked (e.g. random opening plies); every move must be
  // legal. They are part of the game record.
  std::vector<Move> opening;
  // Each move's node limit varies by up to +-node_jitter_percent, drawn from `seed`, so that
  // games between deterministic players differ yet are reproducible. The seed also gives each
  // MoveRequest its `random`.
  int node_jitter_percent = 0;
  uint64_t seed = 0;
  // PGN tags.
  std::string event = "c960 selfplay";
  std::string site = "?";
  std::string date = "????.??.??";
  std::string round = "?";
  std::string time_control = "-";  // the PGN standard's TimeControl: "-" none, "?" unknown
};

struct GameRecord {
  std::string start_fen;  // Shredder-FEN
  std::string white, black;
  GameResult result = GameResult::kDraw;
  Termination termination = Termination::kCount;
  std::string detail;  // a human explanation, e.g. the engine's illegal move
  std::vector<Move> moves;
  std::vector<std::optional<int>> scores;  // per move, the mover's score (opening moves: none)
  int opening_plies = 0;
  std::string pgn;
  int plies() const { return int(moves.size()); }
};

// The key for repetition: pos.key() minus an en passant square no legal move can use, so that
// positions count as the same exactly when FIDE says so (placement, side, castling and legal
// en passant rights).
Key repetition_key(const Position& pos);
// Neither side can ever mate: K v K, K+minor v K, and kings with bishops all on one colour.
bool insufficient_material(const Position& pos);

// How a game ended: result, termination and a human explanation.
struct Ending {
  GameResult result = GameResult::kDraw;
  Termination termination = Termination::kCount;
  std::string detail;
};

// The rules of one game in progress: the position, the history that repetitions are counted
// in, and the endings the rules impose (checkmate, stalemate, insufficient material, the
// fifty-move rule, threefold repetition, the ply limit). play_game() plays by it, and whoever
// checks a finished game replays it through one, so the two agree by construction.
class Referee {
 public:
  // max_plies: 0 for no limit.
  Referee(const Position& start, int max_plies);
  Referee(const Referee&) = delete;
  Referee& operator=(const Referee&) = delete;

  Position& position() { return pos_; }
  const Position& position() const { return pos_; }
  int plies() const { return plies_; }
  // The ending in force at the start, before any move (a start position can already be over).
  std::optional<Ending> start_ending() const;
  // Plays m, which must be legal, and returns the ending it brings, if any.
  std::optional<Ending> play(Move m);

 private:
  Position pos_;
  // StateInfos must not move while the position links to them: a deque keeps them in place.
  std::deque<StateInfo> states_;
  // Occurrences of each position since the last irreversible move (only those can repeat).
  std::unordered_map<Key, int> seen_;
  int plies_ = 0;
  int max_plies_;
};

// The adjudication due after ply `last` (0-based) of a game whose mover was `us`, from the
// players' scores; names for the resign detail. Nothing when the game goes on.
std::optional<Ending> adjudicate(const std::vector<std::optional<int>>& scores, int last, Color us,
                                 const Adjudication& adj, absl::string_view us_name, absl::string_view them_name);

// Plays a game from start_fen. Errors only for bad input (FEN, opening moves); everything a
// player does wrong ends the game with a loss for it. Players of the same name (self-play) are
// told apart by their side, "NAME (White)" and "NAME (Black)", in the record and its details.
absl::StatusOr<GameRecord> play_game(absl::string_view start_fen, Player& white, Player& black,
                                     const MoveLimits& white_limits, const MoveLimits& black_limits,
                                     const GameOptions& options);

// PGN of a finished game: Seven Tag Roster, Variant/SetUp/FEN/TimeControl/Termination/PlyCount
// tags, SAN moves in lines of at most 80 characters, a comment {random opening} after the last
// opening ply, and the detail as a final comment.
std::string to_pgn(const GameRecord& game, const GameOptions& options);

}  // namespace c960::selfplay
