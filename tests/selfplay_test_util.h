// Helpers shared by the self-play tests: a scripted player, running a command, temp files.
#pragma once

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <sys/wait.h>
#include <vector>

#include "core/notation.h"
#include "selfplay/game.h"
#include "tests/process.h"
#include "tests/test_util.h"

namespace c960::test {

using namespace c960::selfplay;  // players, terminations and records of the self-play library

// Plays the given UCI moves in order, with optional scores; "!crash" and "!hang" answer those
// failures, "!raw:e2e5" returns the move unchecked (to test the runner's legality check).
class ScriptedPlayer : public selfplay::Player {
 public:
  explicit ScriptedPlayer(std::vector<std::string> moves, std::vector<std::optional<int>> scores = {})
      : moves_(std::move(moves)), scores_(std::move(scores)) {}
  std::string name() const override { return "scripted"; }
  absl::Status new_game() override { return absl::OkStatus(); }
  PlayerMove choose(const MoveRequest& r) override {
    PlayerMove pm;
    if (next_ >= moves_.size()) {
      pm.failure = Termination::kEngineError;
      pm.detail = "script exhausted";
      return pm;
    }
    if (next_ < scores_.size()) pm.score_cp = scores_[next_];
    const std::string m = moves_[next_++];
    if (m == "!crash")
      pm.failure = Termination::kEngineCrash, pm.detail = "scripted crash";
    else if (m == "!hang")
      pm.failure = Termination::kEngineHang, pm.detail = "scripted hang";
    else if (m.rfind("!raw:", 0) == 0)
      pm.move = Move(parse_square(m.substr(5, 2)), parse_square(m.substr(7, 2)));
    else {
      absl::StatusOr<Move> mv = parse_uci(r.pos, m);
      if (!mv.ok()) {
        pm.failure = Termination::kEngineError;
        pm.detail = std::string(mv.status().message());
      } else
        pm.move = *mv;
    }
    return pm;
  }

 private:
  std::vector<std::string> moves_;
  std::vector<std::optional<int>> scores_;
  size_t next_ = 0;
};

// Splits "a b c" into words.
inline std::vector<std::string> split_moves(const std::string& s) {
  std::vector<std::string> out;
  std::string w;
  for (char c : s) {
    if (c == ' ') {
      if (!w.empty()) out.push_back(w), w.clear();
    } else
      w += c;
  }
  if (!w.empty()) out.push_back(w);
  return out;
}

inline std::string find_program(const std::vector<std::string>& candidates) {
  for (const std::string& c : candidates)
    if (access(c.c_str(), X_OK) == 0) return c;
  return "";
}
inline std::string stockfish_path() { return find_program({"/usr/games/stockfish", "/usr/bin/stockfish"}); }
inline std::string pgn_extract_path() { return find_program({"/usr/games/pgn-extract", "/usr/bin/pgn-extract"}); }

// pgn-extract's verdict on a PGN file: empty when it reads every game without complaint.
// -r checks without writing games, -s silences the progress report, so anything printed is an
// error; -Wuci then lists each game's moves, which the caller can count.
inline std::string pgn_extract_errors(const std::string& pgn_file) {
  const std::string tool = pgn_extract_path();
  if (tool.empty()) return "pgn-extract not installed";
  CommandResult r = run_command(tool + " -s -r '" + pgn_file + "'");
  if (r.exit_code != 0) return "pgn-extract exit code " + std::to_string(r.exit_code) + ": " + r.output;
  return r.output;
}

}  // namespace c960::test
