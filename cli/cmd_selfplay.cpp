#include <chrono>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/selfplay_args.h"
#include "core/startpos.h"
#include "core/version.h"
#include "selfplay/local_runner.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

using selfplay::SelfPlaySpec;

constexpr char kName[] = "selfplay";

const CommandSpec kSpec = {
    kName,
    "c960 selfplay [--sps RANGE | --fen FEN... | --epd FILE | --dfrc RANGE|all] [--random N]\n"
    "                     --games-per-position N --engine builtin|PATH [--option NAME=VALUE ...]\n"
    "                     (--nodes N | --depth D | --movetime MS) [--random-plies K] [--seed S]\n"
    "                     [--threads T] [--format csv|json] [--out FILE] [--pgn FILE]",
    "Plays games of an engine against itself on local threads, from Chess960 start positions (all "
    "960 by default), given FENs, an opening book, or Double Fischer Random pairs, and prints "
    "White's results per position (rows keyed by the position's id and FEN): wins, draws, losses, "
    "score with a 95% confidence interval, Elo difference with its interval, draw rate, mean game "
    "length, duplicate games and termination counts; the 'all' row is the whole run. The interval "
    "is the hull of a score (Wilson-type) interval with the draw-aware variance and an "
    "Agresti-Coull interval with z^2/2 pseudo-wins and pseudo-losses: continuous in the counts, "
    "and covering the true score at least 93% of the time at n >= 20 for every win/draw/loss mix. "
    "JSON output carries the run's metadata (engine, options, limits, seed, version, date). Games "
    "are reproducible: game i of a position depends only on the options, the position and the "
    "seed (except with --movetime). Engines that crash, hang or play illegal moves lose that game "
    "and are restarted.",
    [] {
      std::vector<OptionSpec> o = selfplay_spec_options();
      o.insert(o.end(), {
                            {"threads", Arity::kOne, "T", "games played at once (default 1; 0: one per CPU)"},
                            {"format", Arity::kOne, "csv|json", "output format (default csv)"},
                            {"out", Arity::kOne, "FILE", "write the statistics here instead of stdout"},
                            {"pgn", Arity::kOne, "FILE", "write every game here as PGN"},
                            {"quiet", Arity::kFlag, "", "no progress on stderr"},
                        });
      return o;
    }()};

}  // namespace

int cmd_selfplay(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs parsed_args;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &parsed_args)) return *rc;
  const ParsedArgs* p = &parsed_args;
  absl::StatusOr<SelfPlaySpec> spec = selfplay_spec_from_args(*p);
  if (!spec.ok()) return fail(io, kName, spec.status());
  absl::StatusOr<long long> threads = threads_option(*p);
  if (!threads.ok()) return fail(io, kName, threads.status());
  const std::string format = p->get("format", "csv");
  if (format != "csv" && format != "json")
    return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--format: '", format, "' is not csv or json")));
  // Check the outputs first: a typo in a path should not cost a long run.
  for (const char* option : {"out", "pgn"})
    if (p->has(option))
      if (absl::Status s = check_output(absl::StrCat("--", option), p->get(option)); !s.ok()) return fail(io, kName, s);
  if (absl::Status s = selfplay::check_engine(*spec); !s.ok()) return fail(io, kName, s);

  const bool quiet = p->has("quiet");
  const size_t total = spec->positions.size() * size_t(spec->games_per_position);
  size_t done = 0;
  const auto t0 = std::chrono::steady_clock::now();
  const auto progress = [&](const selfplay::PlayedGame& g) {
    ++done;
    if (!quiet && (done % 10 == 0 || done == total))
      io.err << absl::StrFormat("\rc960 selfplay: %zu/%zu games (last: position %s game %d, %s)", done, total,
                                spec->positions[g.position].id,
                                g.index + 1, selfplay::termination_name(g.record.termination))
             << std::flush;
  };
  absl::StatusOr<std::vector<selfplay::PlayedGame>> games = selfplay::play_local(*spec, int(*threads), progress);
  if (!games.ok()) return fail(io, kName, games.status());
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  selfplay::SelfPlayStats stats;
  std::string pgn;
  for (const selfplay::PlayedGame& g : *games) {
    stats.add(spec->positions[g.position], g.record);
    if (p->has("pgn")) pgn += g.record.pgn;
  }
  std::vector<selfplay::MetadataValue> metadata = selfplay::metadata_values(*spec);
  metadata.insert(metadata.begin(), {"version", std::string(c960::version())});
  const std::string table = format == "csv" ? stats.to_csv() : stats.to_json(metadata);
  if (p->has("pgn"))
    if (absl::Status s = write_output("--pgn", p->get("pgn"), pgn); !s.ok()) return fail(io, kName, s);
  if (p->has("out")) {
    if (absl::Status s = write_output("--out", p->get("out"), table); !s.ok()) return fail(io, kName, s);
  } else {
    io.out << table;
  }
  if (!quiet)
    io.err << absl::StrFormat(
        "\nc960 selfplay: %zu games in %.1f s (%.1f games/min, %lld threads), %lld duplicate games\n", games->size(),
        secs, secs > 0 ? double(games->size()) * 60 / secs : 0.0, *threads, (long long)stats.total().duplicates);
  return kExitOk;
}

}  // namespace c960::cli
