#include "selfplay/local_runner.h"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "selfplay/match.h"
#include "selfplay/stats.h"
#include "selfplay/uci_engine.h"

namespace c960::selfplay {

absl::Status check_engine(const SelfPlaySpec& spec) {
  if (absl::Status s = spec.validate(); !s.ok()) return s;
  const auto check = [&](const std::string& engine, const std::string& binary,
                         const std::vector<UciOptionValue>& options,
                         const std::optional<OptionPolicy>& policy) -> absl::Status {
    if (engine == kBuiltinEngine) return absl::OkStatus();
    UciConfig config;
    config.path = binary;
    config.options = options;
    config.policy = policy;
    absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(config);
    return e.ok() ? absl::OkStatus() : e.status();
  };
  if (absl::Status s = check(spec.engine, spec.engine_binary(), spec.options, spec.option_policy); !s.ok()) return s;
  if (!spec.match()) return absl::OkStatus();
  if (absl::Status s = check(spec.opponent, spec.opponent_binary(), spec.opponent_options, spec.opponent_option_policy);
      !s.ok())
    return absl::Status(s.code(), absl::StrCat("opponent: ", s.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<PlayedGame>> play_local(const SelfPlaySpec& spec, int threads,
                                                   const std::function<void(const PlayedGame&)>& on_game,
                                                   std::vector<PlayedGame> done, const std::function<bool()>& stop,
                                                   bool* complete) {
  if (absl::Status s = spec.validate(); !s.ok()) return s;
  if (threads < 1 || threads > 1024)
    return absl::InvalidArgumentError(absl::StrCat("threads: ", threads, " is not in 1..1024"));
  const int64_t cap = spec.games_per_position;
  const AdaptiveRule& rule = spec.adaptive;
  // Each position's games so far: those of the run (0..planned-1) by index, and those of `done`
  // beyond them, waiting for the run to reach them.
  struct Position {
    int64_t planned = 0;   // games 0..planned-1 are in the run
    int64_t next = 0;      // the next index to look at for a game to hand out
    int64_t finished = 0;  // games of the run finished (played or given in `done`)
    int64_t counted = 0;   // games added to stats, in index order
    bool final = false;    // planned is the position's last count
    double need = 0;
    std::vector<std::optional<GameRecord>> games;  // by index, planned of them
    std::map<int64_t, GameRecord> waiting;         // from `done`, past planned
    PositionStats stats;
  };
  std::vector<Position> positions(spec.positions.size());
  for (PlayedGame& g : done) {
    if (g.position >= spec.positions.size() || g.index < 0 || g.index >= cap)
      return absl::InvalidArgumentError(absl::StrCat("done: game ", g.position, ".", g.index, " is not in the spec"));
    positions[g.position].waiting[g.index] = std::move(g.record);
  }
  // Plans the position up to `to` games, taking over the games of `done` it reaches.
  const auto plan = [&](Position& p, int64_t to) {
    p.planned = to;
    p.games.resize(size_t(to));
    for (auto it = p.waiting.begin(); it != p.waiting.end() && it->first < to; it = p.waiting.erase(it)) {
      p.games[size_t(it->first)] = std::move(it->second);
      ++p.finished;
    }
  };
  // Looks at a position whose planned games are all finished: its verdict, or its next batch.
  const auto look = [&](Position& p) {
    while (!p.final && p.finished == p.planned) {
      if (!rule.enabled()) {
        p.final = true;
        break;
      }
      for (; p.counted < p.planned; ++p.counted) p.stats.add(*p.games[size_t(p.counted)]);
      const AnytimeInterval interval =
          anytime_interval(p.stats.counts.white_wins, p.stats.counts.draws, p.stats.counts.black_wins);
      p.need = need(rule, interval);
      if (verdict(rule, interval, p.planned, cap) != Verdict::kOpen) {
        p.final = true;
        break;
      }
      plan(p, next_look(rule, p.planned, cap));
    }
  };
  for (Position& p : positions) {
    plan(p, rule.enabled() ? std::min<int64_t>(cap, rule.batch) : cap);
    p.need = 1;
    look(p);
  }

  std::mutex mu;
  std::condition_variable changed;
  int64_t in_flight = 0;
  bool stopping = false;
  absl::Status error;
  // A match's SPRT: pairs are handed out round by round over the positions, and the pairs done,
  // taken in that order up to the first missing one, are the prefix the test reads. Once it
  // decides, no game starts, and the result is the prefix alone (games past it are dropped):
  // the same games whatever the threads.
  const bool sprt = spec.sprt.enabled();
  const int64_t rounds = cap / 2;
  int64_t prefix_round = 0;
  size_t prefix_position = 0;
  bool decided = false;
  MatchStats prefix(spec.engine, spec.opponent);
  prefix.set_sprt(spec.sprt);
  const auto advance_prefix = [&] {
    while (!decided && prefix_round < rounds) {
      Position& p = positions[prefix_position];
      const size_t first = size_t(2 * prefix_round);
      if (!p.games[first] || !p.games[first + 1]) return;
      prefix.add_pair(spec.positions[prefix_position], &*p.games[first], &*p.games[first + 1]);
      if (++prefix_position == positions.size()) prefix_position = 0, ++prefix_round;
      decided = sprt_result(spec.sprt, prefix.llr()) != SprtResult::kContinue;
    }
  };
  const auto in_prefix = [&](size_t k, int64_t index) {
    const int64_t round = index / 2;
    return round < prefix_round || (round == prefix_round && k < prefix_position);
  };
  // The next game to play (position, index), the neediest position first; nullopt when there is
  // none now. Called under mu.
  const auto take = [&]() -> std::optional<std::pair<size_t, int64_t>> {
    std::optional<size_t> best;
    if (decided) return std::nullopt;
    for (size_t k = 0; k < positions.size(); ++k) {
      Position& p = positions[k];
      while (p.next < p.planned && p.games[size_t(p.next)]) ++p.next;
      if (p.next >= p.planned) continue;
      // SPRT: the earliest round first; else the neediest position.
      if (!best || (sprt ? p.next / 2 < positions[*best].next / 2 : p.need > positions[*best].need)) best = k;
    }
    if (!best) return std::nullopt;
    return std::make_pair(*best, positions[*best].next++);
  };
  const auto worker = [&] {
    absl::StatusOr<Players> players = make_players(spec);
    std::unique_lock<std::mutex> lock(mu);
    if (!players.ok()) {
      error.Update(players.status());
      stopping = true;
      changed.notify_all();
      return;
    }
    for (;;) {
      std::optional<std::pair<size_t, int64_t>> next;
      changed.wait(lock, [&] {
        if (stopping) return true;  // next stays empty
        next = take();
        if (next) ++in_flight;  // counted at once, so that no other thread takes the run for finished
        return next.has_value() || in_flight == 0;
      });
      if (!next) return;
      const bool stopped = stopping;  // read under the lock; `stop` is asked without it
      lock.unlock();
      const bool stop_now = stopped || (stop && stop());
      lock.lock();
      if (stop_now) {
        --positions[next->first].next;  // not started
        --in_flight;
        stopping = true;
        changed.notify_all();
        return;
      }
      lock.unlock();
      const auto [k, index] = *next;
      absl::StatusOr<GameRecord> g = play_selfplay_game(spec, spec.positions[k], int(index), *players);
      lock.lock();
      --in_flight;
      if (!g.ok()) {
        error.Update(g.status());
        stopping = true;
        changed.notify_all();
        return;
      }
      Position& p = positions[k];
      p.games[size_t(index)] = *std::move(g);
      ++p.finished;
      if (on_game) on_game(PlayedGame{k, int(index), *p.games[size_t(index)]});
      look(p);
      if (sprt) advance_prefix();
      changed.notify_all();
    }
  };
  if (sprt) advance_prefix();  // resumed games may decide it already
  // No more threads (and engines) than the first games to play.
  int64_t first = 0;
  for (const Position& p : positions) first += p.planned - p.finished;
  std::vector<std::thread> pool;
  const int n = int(std::min<int64_t>(threads, first));
  pool.reserve(size_t(std::max(n, 0)));
  for (int t = 0; t < n; ++t) pool.emplace_back(worker);
  for (std::thread& t : pool) t.join();
  if (!error.ok()) return error;
  if (complete)
    *complete = decided || std::all_of(positions.begin(), positions.end(), [](const Position& p) { return p.final; });
  std::vector<PlayedGame> out;
  for (size_t k = 0; k < positions.size(); ++k)
    for (size_t i = 0; i < positions[k].games.size(); ++i)
      if (positions[k].games[i] && (!decided || in_prefix(k, int64_t(i))))
        out.push_back(PlayedGame{k, int(i), *std::move(positions[k].games[i])});
  return out;
}

}  // namespace c960::selfplay
