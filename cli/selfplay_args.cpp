#include "cli/selfplay_args.h"

#include <cstdint>

#include "absl/strings/str_cat.h"
#include "core/startpos.h"

namespace c960::cli {

std::vector<OptionSpec> selfplay_spec_options() {
  return {
      {"sps", Arity::kOne, "RANGE", "start positions, e.g. 0-9,518 (default 0-959)"},
      {"games-per-position", Arity::kOne, "N", "games from each start position (1..1000000)"},
      {"engine", Arity::kOne, "builtin|PATH", "the built-in engine or a UCI engine binary"},
      {"option", Arity::kMany, "NAME=VALUE", "UCI option for the engine (repeatable)"},
      {"nodes", Arity::kOne, "N", "limit each move to N nodes"},
      {"depth", Arity::kOne, "D", "limit each move to depth D (1..64)"},
      {"movetime", Arity::kOne, "MS", "limit each move to MS milliseconds (not reproducible)"},
      {"random-plies", Arity::kOne, "K", "random legal moves at the start of each game (0..40, default 0)"},
      {"node-jitter", Arity::kOne, "PCT", "vary each move's node limit by up to PCT% (0..90, default 0)"},
      {"sample-margin", Arity::kOne, "CP", "built-in engine: pick among moves within CP of the best (0..1000, default 0)"},
      {"seed", Arity::kOne, "S", "seed of the random plies, node jitter and move sampling (default 1)"},
      {"max-plies", Arity::kOne, "N", "draw a game reaching N plies (default 0: no limit)"},
      {"draw-moves", Arity::kOne, "N", "adjudicate a draw after N moves per side within --draw-score (default 0: off)"},
      {"draw-score", Arity::kOne, "CP", "score bound for draw adjudication (default 10)"},
      {"draw-min-ply", Arity::kOne, "N", "no draw adjudication before ply N (default 0)"},
      {"resign-moves", Arity::kOne, "N", "adjudicate a loss after N moves per side beyond --resign-score (default 0: off)"},
      {"resign-score", Arity::kOne, "CP", "score bound for resign adjudication (default 1000)"},
      {"hash", Arity::kOne, "MB", "built-in engine hash per player (default 16)"},
      {"engine-timeout", Arity::kOne, "MS", "UCI engine: time beyond movetime before it counts as hung (default 30000)"},
  };
}

absl::StatusOr<selfplay::SelfPlaySpec> selfplay_spec_from_args(const ParsedArgs& p) {
  selfplay::SelfPlaySpec spec;
  absl::StatusOr<std::vector<int>> sps = parse_sp_ranges(p.get("sps", "0-959"));
  if (!sps.ok()) return absl::InvalidArgumentError(absl::StrCat("--sps: ", sps.status().message()));
  spec.positions = *sps;
  if (!p.has("games-per-position")) return absl::InvalidArgumentError("--games-per-position is required");
  if (!p.has("engine")) return absl::InvalidArgumentError("--engine is required (builtin or the path of a UCI engine)");
  spec.engine = p.get("engine");
  if (spec.engine.empty()) return absl::InvalidArgumentError("--engine: empty");
  if (p.has("option")) {
    for (const std::string& o : p.all("option")) {
      absl::StatusOr<selfplay::UciOptionValue> v = selfplay::parse_option_assignment(o);
      if (!v.ok()) return v.status();
      spec.options.push_back(*v);
    }
  }
  if (int(p.has("nodes")) + int(p.has("depth")) + int(p.has("movetime")) != 1)
    return absl::InvalidArgumentError("give exactly one of --nodes, --depth, --movetime");
  struct IntOption {
    const char* name;
    long long lo, hi, fallback;
    long long* out;
  };
  long long games = 0, nodes = 0, depth = 0, movetime = 0, random_plies = 0, jitter = 0, sample = 0, seed = 0, max_plies = 0,
            draw_moves = 0, draw_score = 10, draw_min_ply = 0, resign_moves = 0, resign_score = 1000, hash = 16,
            timeout = 30000;
  const IntOption ints[] = {
      {"games-per-position", 1, 1000000, 1, &games}, {"nodes", 1, 1LL << 40, 0, &nodes},
      {"depth", 1, 64, 0, &depth},                  {"movetime", 1, 3600000, 0, &movetime},
      {"random-plies", 0, 40, 0, &random_plies},    {"node-jitter", 0, 90, 0, &jitter},
      {"sample-margin", 0, 1000, 0, &sample},
      {"seed", 0, INT64_MAX, 1, &seed},             {"max-plies", 0, 10000, 0, &max_plies},
      {"draw-moves", 0, 1000, 0, &draw_moves},      {"draw-score", 0, 1000, 10, &draw_score},
      {"draw-min-ply", 0, 10000, 0, &draw_min_ply}, {"resign-moves", 0, 1000, 0, &resign_moves},
      {"resign-score", 1, 100000, 1000, &resign_score}, {"hash", 1, 4096, 16, &hash},
      {"engine-timeout", 100, 3600000, 30000, &timeout},
  };
  for (const IntOption& o : ints) {
    absl::StatusOr<long long> v = p.get_int(o.name, o.fallback, o.lo, o.hi);
    if (!v.ok()) return v.status();
    *o.out = *v;
  }
  spec.games_per_position = int(games);
  spec.limits = selfplay::MoveLimits{uint64_t(nodes), int(depth), int(movetime)};
  spec.random_plies = int(random_plies);
  spec.node_jitter_percent = int(jitter);
  spec.sample_margin_cp = int(sample);
  spec.seed = uint64_t(seed);
  spec.max_plies = int(max_plies);
  spec.adjudication = selfplay::Adjudication{int(draw_moves), int(draw_score), int(draw_min_ply), int(resign_moves), int(resign_score)};
  spec.hash_mb = int(hash);
  spec.engine_timeout_ms = int(timeout);
  if (absl::Status s = spec.validate(); !s.ok()) return s;
  return spec;
}

}  // namespace c960::cli
