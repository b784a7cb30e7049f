#include "selfplay/local_runner.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "selfplay/uci_engine.h"

namespace c960::selfplay {

absl::Status check_engine(const SelfPlaySpec& spec) {
  if (absl::Status s = spec.validate(); !s.ok()) return s;
  if (spec.engine == kBuiltinEngine) return absl::OkStatus();
  UciConfig config;
  config.path = spec.engine_binary();
  config.options = spec.options;
  config.policy = spec.option_policy;
  absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(config);
  return e.ok() ? absl::OkStatus() : e.status();
}

absl::StatusOr<std::vector<PlayedGame>> play_local(const SelfPlaySpec& spec, int threads,
                                                   const std::function<void(const PlayedGame&)>& on_game,
                                                   std::vector<PlayedGame> done, const std::function<bool()>& stop) {
  if (absl::Status s = spec.validate(); !s.ok()) return s;
  if (threads < 1 || threads > 1024)
    return absl::InvalidArgumentError(absl::StrCat("threads: ", threads, " is not in 1..1024"));
  std::vector<PlayedGame> games;
  for (size_t k = 0; k < spec.positions.size(); ++k)
    for (int i = 0; i < spec.games_per_position; ++i) games.push_back(PlayedGame{k, i, {}});
  const size_t per_position = size_t(spec.games_per_position);
  std::vector<bool> played(games.size(), false);
  for (PlayedGame& g : done) {
    if (g.position >= spec.positions.size() || g.index < 0 || g.index >= spec.games_per_position)
      return absl::InvalidArgumentError(absl::StrCat("done: game ", g.position, ".", g.index, " is not in the spec"));
    const size_t k = g.position * per_position + size_t(g.index);
    played[k] = true;
    games[k].record = std::move(g.record);
  }
  std::vector<size_t> todo;
  for (size_t k = 0; k < games.size(); ++k)
    if (!played[k]) todo.push_back(k);

  std::atomic<size_t> next{0};
  std::mutex mu;
  absl::Status error;
  const auto worker = [&] {
    absl::StatusOr<Players> players = make_players(spec);
    if (!players.ok()) {
      std::lock_guard<std::mutex> lock(mu);
      error.Update(players.status());
      return;
    }
    for (size_t t; (t = next.fetch_add(1)) < todo.size();) {
      if (stop && stop()) {
        next = todo.size();
        return;
      }
      const size_t k = todo[t];
      absl::StatusOr<GameRecord> g =
          play_selfplay_game(spec, spec.positions[games[k].position], games[k].index, *players);
      std::lock_guard<std::mutex> lock(mu);
      if (!g.ok()) {
        error.Update(g.status());
        next = todo.size();  // stop everyone
        return;
      }
      games[k].record = *std::move(g);
      played[k] = true;
      if (on_game) on_game(games[k]);
    }
  };
  std::vector<std::thread> pool;
  const int n = int(std::min<size_t>(size_t(threads), todo.size()));
  pool.reserve(size_t(n));
  for (int t = 0; t < n; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (!error.ok()) return error;
  if (std::find(played.begin(), played.end(), false) != played.end()) {
    std::vector<PlayedGame> finished;
    for (size_t k = 0; k < games.size(); ++k)
      if (played[k]) finished.push_back(std::move(games[k]));
    return finished;
  }
  return games;
}

}  // namespace c960::selfplay
