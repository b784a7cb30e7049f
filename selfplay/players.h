// The players of self-play games: a random mover (for tests), the built-in engine, and any UCI
// engine in a child process (restarted after it fails).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/engine/search.h"
#include "core/prng.h"
#include "selfplay/game.h"
#include "selfplay/uci_engine.h"

namespace c960::selfplay {

// Plays a uniformly random legal move, reproducibly from its seed.
class RandomPlayer : public Player {
 public:
  explicit RandomPlayer(uint64_t seed) : prng_(seed) {}
  std::string name() const override { return "random"; }
  absl::Status new_game() override { return absl::OkStatus(); }
  PlayerMove choose(const MoveRequest& request) override;

 private:
  Prng prng_;
};

class BuiltinPlayer : public Player {
 public:
  explicit BuiltinPlayer(size_t hash_mb = 16, int sample_margin_cp = 0)
      : engine_(hash_mb), sample_margin_cp_(sample_margin_cp) {}
  std::string name() const override { return "c960-builtin"; }
  // Clears the engine's memory so that a game depends only on its moves, not on earlier games.
  absl::Status new_game() override {
    engine_.new_game();
    return absl::OkStatus();
  }
  PlayerMove choose(const MoveRequest& request) override;
  engine::Engine& engine() { return engine_; }
  uint64_t last_nodes() const { return last_nodes_; }

 private:
  engine::Engine engine_;
  int sample_margin_cp_;
  uint64_t last_nodes_ = 0;
};

// A UCI engine. It is started lazily by new_game(), and again there after any failure (crash,
// hang, illegal move, protocol error); a failure
// during a game is reported as that move's failure (the game runner makes the player lose).
class UciPlayer : public Player {
 public:
  explicit UciPlayer(UciConfig config) : config_(std::move(config)) {}
  std::string name() const override { return name_.empty() ? config_.path : name_; }
  absl::Status new_game() override;
  PlayerMove choose(const MoveRequest& request) override;
  // The running engine (null before the first game or after a failure), for tests.
  UciEngine* engine() { return engine_.get(); }
  int restarts() const { return starts_ > 0 ? starts_ - 1 : 0; }

 private:
  UciConfig config_;
  std::unique_ptr<UciEngine> engine_;
  std::string name_;
  int starts_ = 0;
};

}  // namespace c960::selfplay
