#include <chrono>
#include <fstream>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "args.h"
#include "commands.h"
#include "local_runner.h"
#include "startpos.h"
#include "stats.h"

namespace c960::cli {
namespace {

using selfplay::SelfPlaySpec;

const CommandSpec kSpec = {
    "selfplay",
    "c960 selfplay [--sps RANGE] --games-per-position N --engine builtin|PATH [--option NAME=VALUE ...]\n"
    "                     (--nodes N | --depth D | --movetime MS) [--random-plies K] [--seed S]\n"
    "                     [--threads T] [--format csv|json] [--out FILE] [--pgn FILE]",
    "Plays games of an engine against itself from Chess960 start positions on local threads and "
    "prints White's results per position: wins, draws, losses, score with a 95% confidence "
    "interval (Wilson, corrected for draws), Elo difference with its interval, draw rate, mean "
    "game length, duplicate games and termination counts; the last CSV row ('all') is the whole "
    "run. Games are reproducible: game i of position sp depends only on the options and the seed "
    "(except with --movetime). Engines that crash, hang or play illegal moves lose that game and "
    "are restarted.",
    {
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
        {"threads", Arity::kOne, "T", "games played at once (default 1)"},
        {"format", Arity::kOne, "csv|json", "output format (default csv)"},
        {"out", Arity::kOne, "FILE", "write the statistics here instead of stdout"},
        {"pgn", Arity::kOne, "FILE", "write every game here as PGN"},
        {"quiet", Arity::kFlag, "", "no progress on stderr"},
    }};

int fail(const absl::Status& s) {
  std::cerr << "c960 selfplay: " << s.message() << "\n";
  return kExitUsage;
}

// Builds the spec from the options; every error names its option.
absl::StatusOr<SelfPlaySpec> spec_from_args(const ParsedArgs& p) {
  SelfPlaySpec spec;
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

}  // namespace

int cmd_selfplay(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << help_text(kSpec);
      return kExitOk;
    }
  absl::StatusOr<ParsedArgs> p = parse_args(kSpec, args);
  if (!p.ok()) return fail(p.status());
  absl::StatusOr<SelfPlaySpec> spec = spec_from_args(*p);
  if (!spec.ok()) return fail(spec.status());
  absl::StatusOr<long long> threads = p->get_int("threads", 1, 1, 1024);
  if (!threads.ok()) return fail(threads.status());
  const std::string format = p->get("format", "csv");
  if (format != "csv" && format != "json") return fail(absl::InvalidArgumentError(absl::StrCat("--format: '", format, "' is not csv or json")));
  // Open the outputs first: a typo in a path should not cost a long run.
  std::ofstream out_file, pgn_file;
  if (p->has("out")) {
    out_file.open(p->get("out"), std::ios::binary);
    if (!out_file) return fail(absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", p->get("out"), "'")));
  }
  if (p->has("pgn")) {
    pgn_file.open(p->get("pgn"), std::ios::binary);
    if (!pgn_file) return fail(absl::InvalidArgumentError(absl::StrCat("--pgn: cannot write '", p->get("pgn"), "'")));
  }
  if (absl::Status s = selfplay::check_engine(*spec); !s.ok()) return fail(s);

  const bool quiet = p->has("quiet");
  const size_t total = spec->positions.size() * size_t(spec->games_per_position);
  size_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto progress = [&](const selfplay::PlayedGame& g) {
    ++done;
    if (!quiet && (done % 10 == 0 || done == total))
      std::cerr << absl::StrFormat("\rc960 selfplay: %zu/%zu games (last: sp %d game %d, %s)", done, total, g.sp,
                                   g.index + 1, selfplay::termination_name(g.record.termination))
                << std::flush;
  };
  absl::StatusOr<std::vector<selfplay::PlayedGame>> games = selfplay::play_local(*spec, int(*threads), progress);
  if (!games.ok()) return fail(games.status());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  selfplay::SelfPlayStats stats;
  for (const selfplay::PlayedGame& g : *games) {
    stats.add(g.sp, g.record);
    if (pgn_file.is_open()) pgn_file << g.record.pgn;
  }
  const std::string table = format == "csv" ? stats.to_csv() : stats.to_json();
  if (out_file.is_open()) out_file << table;
  else std::cout << table;
  if (!quiet)
    std::cerr << absl::StrFormat("\nc960 selfplay: %zu games in %.1f s (%.1f games/min, %lld threads), %lld duplicate games\n",
                                 games->size(), secs, secs > 0 ? double(games->size()) * 60 / secs : 0.0, *threads,
                                 (long long)stats.total().duplicates);
  if ((out_file.is_open() && !out_file.flush()) || (pgn_file.is_open() && !pgn_file.flush())) {
    std::cerr << "c960 selfplay: writing the output failed\n";
    return kExitCheckFailed;
  }
  return kExitOk;
}

}  // namespace c960::cli
