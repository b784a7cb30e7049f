// Plays every game of a self-play spec on local threads: the same games, in the same order, as
// the distributed job would, since each depends only on (spec, position, game index).
#pragma once

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "selfplay/spec.h"

namespace c960::selfplay {

struct PlayedGame {
  size_t position = 0;  // index into the spec's positions
  int index = 0;        // game number within the position, 0-based
  GameRecord record;
};

// Starts a UCI engine once with the spec's options, so that a bad path or option is one clear
// error up front instead of a lost game per game. OK at once for the built-in engine.
absl::Status check_engine(const SelfPlaySpec& spec);

// Games ordered by position (as listed in the spec), then by index. With an adaptive rule
// (spec.adaptive), each position plays batch after batch until its verdict (adaptive.h), the
// positions that need games most served first; which games are played does not depend on the
// threads or their timing. `on_game` (optional) is
// called as each game finishes, from the worker threads, one call at a time. Games in `done`
// (e.g. those of an interrupted run, already checked) are not played again: they take their
// places in the result. `stop` (optional) is asked before each game is started; once it says
// true no game starts, the games in progress finish, and the result holds only the games
// played (and those in `done`), in the same order. `complete` (optional) is set to whether the
// run played every game it plans (false once `stop` stopped it before the end).
absl::StatusOr<std::vector<PlayedGame>> play_local(const SelfPlaySpec& spec, int threads,
                                                   const std::function<void(const PlayedGame&)>& on_game = {},
                                                   std::vector<PlayedGame> done = {},
                                                   const std::function<bool()>& stop = {}, bool* complete = nullptr);

}  // namespace c960::selfplay
