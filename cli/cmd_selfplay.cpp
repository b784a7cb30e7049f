#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/provenance.h"
#include "cli/resume.h"
#include "cli/selfplay_args.h"
#include "cli/selfplay_resume.h"
#include "cli/table_format.h"
#include "core/startpos.h"
#include "core/version.h"
#include "selfplay/local_runner.h"
#include "selfplay/match.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

using selfplay::SelfPlaySpec;

constexpr char kName[] = "selfplay";

const CommandSpec kSpec = {
    kName,
    "c960 selfplay [--sps RANGE | --sp N | --fen FEN... | --epd FILE | --dfrc RANGE|all] [--random N]\n"
    "                     --games-per-position N --engine builtin|PATH [--option NAME=VALUE ...]\n"
    "                     [--opponent builtin|PATH [--opponent-option NAME=VALUE ...] [--sprt elo0=E,elo1=E]]\n"
    "                     (--nodes N | --depth D | --movetime MS | --tc BASE[+INC]) [--random-plies K] [--seed S]\n"
    "                     [--target-width W | --band LO:HI [--batch N]]\n"
    "                     [--threads T] [--format text|csv|json] [--out FILE] [--pgn FILE] [--resume] [--quiet]",
    "Plays games of an engine against itself on local threads, from Chess960 start positions (all "
    "960 by default), given FENs, an opening book, or Double Fischer Random pairs, and prints "
    "White's results per position (rows keyed by the position's id and FEN): wins, draws, losses, "
    "score with a 95% confidence interval, Elo difference with its interval, draw rate, mean game "
    "length, duplicate games and termination counts; each distinct game counts once (a game that "
    "repeats another is a duplicate, not new evidence), and a spec whose games would all repeat "
    "is refused. The 'all' row is the whole run. With --target-width W or --band LO:HI the run is adaptive: each "
    "position plays --batch games at a time until its anytime 95% interval (a confidence sequence, valid however "
    "often it is looked at) is narrower than W, or inside or outside the band, or it reaches --games-per-position; "
    "the neediest positions play first, the games played do not depend on the threads, and the outputs gain the "
    "columns anytime_lo, anytime_hi and verdict. With --opponent the run is a match of two engines: colour-reversed "
    "pairs from one opening, counted as pentanomial pairs of --engine's points (Elo, nElo, LOS, which positions "
    "favour which engine, an optional SPRT). --tc BASE+INC gives each side a clock (seconds, Fischer increment). "
    "The interval "
    "is the hull of a score (Wilson-type) interval with the draw-aware variance and an "
    "Agresti-Coull interval with z^2/2 pseudo-wins and pseudo-losses: continuous in the counts, "
    "and covering the true score at least 93% of the time at n >= 20 for every win/draw/loss mix. "
    "JSON output carries the run's metadata (engine, options, limits, seed, version, date). Games "
    "are reproducible: game i of a position depends only on the options, the position and the "
    "seed (except with --movetime). Engines that crash, hang or play illegal moves lose that game "
    "and are restarted. --pgn gets each game as soon as it and all games before it (by position, "
    "then game number) are done; --out is rewritten (whole, through a rename) every few seconds "
    "and at the end. Ctrl-C (SIGINT) or SIGTERM stops cleanly: no new game starts, the games in "
    "progress finish, the statistics of the games played are written, and the exit code is 130 "
    "(143 for SIGTERM); a second Ctrl-C quits at once. With --out or --pgn, the same command with "
    "--resume then plays only the games not yet played (FILE.c960-resume, next to --out or else "
    "--pgn, keeps them and the options; exit 2 if the options differ), and the files end as an "
    "uninterrupted run would have written them. Progress is drawn on stderr only when it is a "
    "terminal.",
    [] {
      std::vector<OptionSpec> o = selfplay_spec_options();
      o.insert(o.begin() + 1, {"sp", Arity::kOne, "N", "one start position, 0..959 (as --sps N)"});
      o.insert(
          o.end(),
          {
              {"threads", Arity::kOne, "T", "games played at once (default 1; 0: one per CPU)"},
              {"format", Arity::kOne, "text|csv|json",
               "output format (default: a table on a terminal, else csv; json carries the run's metadata)"},
              {"out", Arity::kOne, "FILE", "write the statistics here instead of stdout"},
              {"pgn", Arity::kOne, "FILE", "write every game here as PGN"},
              {"resume", Arity::kFlag, "", "with --out or --pgn: continue an interrupted run with the same options"},
              {"quiet", Arity::kFlag, "", "no progress and no summary on stderr"},
          });
      return o;
    }()};

// An adaptive run's outcome in a line or two: the verdicts, and the games against a fixed count.
std::string adaptive_summary(const selfplay::SelfPlayStats& stats) {
  std::map<selfplay::Verdict, int> verdicts;
  int64_t games = 0, most = 0;
  for (const selfplay::PositionStats* p : stats.rows()) {
    ++verdicts[stats.verdict_of(*p)];
    games += p->played();
    most = std::max(most, p->played());
  }
  std::string list;
  for (const auto& [v, n] : verdicts) absl::StrAppend(&list, list.empty() ? "" : ", ", n, " ", verdict_name(v));
  const size_t positions = stats.rows().size();
  return absl::StrFormat(
      "c960 selfplay: adaptive (%s): %d positions: %s; %d games, %.0f%% of the %d a fixed count of %d per position "
      "(the most any position needed) would play\n",
      selfplay::describe(stats.adaptive()), positions, list, games,
      most ? 100.0 * double(games) / double(most * int64_t(positions)) : 0.0, most * int64_t(positions), most);
}

// How often at most --out is rewritten while games finish.
constexpr std::chrono::seconds kTableRewritePeriod{5};

}  // namespace

int cmd_selfplay(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs parsed_args;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &parsed_args)) return *rc;
  const ParsedArgs* p = &parsed_args;
  absl::StatusOr<SelfPlaySpec> spec = selfplay_spec_from_args(*p);
  if (!spec.ok()) return fail(io, kName, spec.status());
  absl::StatusOr<long long> threads = threads_option(*p);
  if (!threads.ok()) return fail(io, kName, threads.status());
  absl::StatusOr<OutputFormat> chosen = output_format(
      p->has("format") ? std::optional<std::string>(p->get("format")) : std::nullopt, !p->has("out") && io.out_is_tty);
  if (!chosen.ok()) return fail(io, kName, chosen.status());
  const std::string format = *chosen == OutputFormat::kText ? "text" : *chosen == OutputFormat::kCsv ? "csv" : "json";
  // Check the outputs first: a typo in a path should not cost a long run.
  for (const char* option : {"out", "pgn"})
    if (p->has(option))
      if (absl::Status s = check_output(absl::StrCat("--", option), p->get(option)); !s.ok()) return fail(io, kName, s);
  const bool has_out = p->has("out"), has_pgn = p->has("pgn");
  const std::string out_path = p->get("out"), pgn_path = p->get("pgn");
  if (p->has("resume") && !has_out && !has_pgn)
    return fail(io, kName, absl::InvalidArgumentError("--resume needs --out or --pgn (the run to continue)"));

  // The games of the interrupted run, when resuming; its date, so that PGN Date tags agree.
  const size_t per_position = size_t(spec->games_per_position);
  const size_t total = spec->positions.size() * per_position;
  const std::vector<ResumeOption> options = selfplay_resume_options(*spec, format, out_path, pgn_path);
  const std::string state_path = resume_path(has_out ? out_path : pgn_path);
  std::vector<selfplay::PlayedGame> resumed;
  if (p->has("resume")) {
    absl::StatusOr<std::optional<ResumeState>> state = read_resume(state_path, kSelfPlayResumeKind);
    if (!state.ok()) return fail(io, kName, state.status());
    if (*state) {
      if (absl::Status s = check_same_options((*state)->options, options); !s.ok()) return fail(io, kName, s);
      for (const std::vector<std::string>& r : (*state)->records) {
        if (r.size() == 2 && r[0] == "date") {
          spec->date = r[1];
          continue;
        }
        absl::StatusOr<selfplay::PlayedGame> g = game_from_record(*spec, r);
        if (!g.ok())
          return fail(io, kName,
                      absl::InvalidArgumentError(absl::StrCat("--resume: ", state_path, ": ", g.status().message())));
        resumed.push_back(*std::move(g));
      }
    } else if (::access(out_path.c_str(), F_OK) == 0 || ::access(pgn_path.c_str(), F_OK) == 0) {
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--resume: there is no ", state_path,
                                                          ", so the outputs are complete or were not written by c960 "
                                                          "selfplay")));
    }
  } else if ((has_out || has_pgn) && ::access(state_path.c_str(), F_OK) == 0) {
    // An interrupted run's files and state are not overwritten by a command that forgot --resume.
    return fail(io, kName,
                absl::InvalidArgumentError(absl::StrCat("an interrupted run's games are in ", state_path,
                                                        ": add --resume to continue it, or delete it and the run's "
                                                        "--out and --pgn files to start again")));
  }
  if (absl::Status s = selfplay::check_engine(*spec); !s.ok()) return fail(io, kName, s);

  // Every finished game by its place (position, then index), each position's games growing as an
  // adaptive run plans them. The PGN holds the longest run of them from the first (an adaptive
  // run's PGN is written at the end, since a position's last game is known only then).
  const bool adaptive = spec->adaptive.enabled();
  // Runs whose last games are known only at the end (adaptive, or stopped by an SPRT) write
  // their PGN at the end (and at an interrupt).
  const bool pgn_at_end = adaptive || spec->sprt.enabled();
  std::vector<std::vector<std::optional<selfplay::GameRecord>>> finished(spec->positions.size());
  if (!adaptive)
    for (auto& f : finished) f.resize(per_position);
  const auto keep = [&](const selfplay::PlayedGame& g) {
    std::vector<std::optional<selfplay::GameRecord>>& f = finished[g.position];
    if (f.size() <= size_t(g.index)) f.resize(size_t(g.index) + 1);
    f[size_t(g.index)] = g.record;
  };
  for (const selfplay::PlayedGame& g : resumed) keep(g);
  // The PGN's cursor: the next game to write, by position and index.
  size_t pgn_position = 0, pgn_index = 0;
  const auto next_pgn = [&]() -> const selfplay::GameRecord* {
    if (pgn_at_end) return nullptr;
    for (; pgn_position < finished.size() && pgn_index >= per_position; ++pgn_position) pgn_index = 0;
    if (pgn_position >= finished.size() || !finished[pgn_position][pgn_index]) return nullptr;
    return &*finished[pgn_position][pgn_index];
  };
  std::unique_ptr<ResumeLog> log;
  int pgn_fd = -1;
  if (has_out || has_pgn) {
    std::vector<std::vector<std::string>> records = {date_record(*spec)};
    for (const selfplay::PlayedGame& g : resumed) records.push_back(game_record(g));
    absl::StatusOr<std::unique_ptr<ResumeLog>> created =
        ResumeLog::create(state_path, kSelfPlayResumeKind, options, records);
    if (!created.ok()) return fail(io, kName, created.status());
    log = *std::move(created);
  }
  if (has_pgn) {
    std::string text;
    for (const selfplay::GameRecord* g; (g = next_pgn()) != nullptr; ++pgn_index) text += g->pgn;
    if (absl::Status s = write_output("--pgn", pgn_path, text); !s.ok()) return fail(io, kName, s);
    pgn_fd = ::open(pgn_path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
    if (pgn_fd < 0)
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--pgn: cannot write '", pgn_path, "': ", strerror(errno))));
  }
  std::vector<selfplay::MetadataValue> metadata = selfplay::metadata_values(*spec);
  metadata.insert(metadata.begin(), {"version", std::string(c960::version())});
  for (selfplay::MetadataValue& v : provenance(*spec, p->has("epd") ? p->get("epd") : ""))
    metadata.push_back(std::move(v));
  // The statistics of the games finished so far, in game order.
  const auto table = [&] {
    if (spec->match()) {
      selfplay::MatchStats match(spec->engine, spec->opponent);
      match.set_sprt(spec->sprt);
      for (size_t k = 0; k < finished.size(); ++k)
        for (size_t i = 0; i < finished[k].size(); i += 2) {
          const selfplay::GameRecord* a = finished[k][i] ? &*finished[k][i] : nullptr;
          const selfplay::GameRecord* b =
              i + 1 < finished[k].size() && finished[k][i + 1] ? &*finished[k][i + 1] : nullptr;
          if (a || b) match.add_pair(spec->positions[k], a, b);
        }
      int64_t duplicates = 0;
      for (const selfplay::MatchPositionStats* r : match.rows()) duplicates += r->duplicates;
      return std::make_tuple(format == "text"  ? match.to_text()
                             : format == "csv" ? match.to_csv()
                                               : match.to_json(metadata),
                             duplicates, std::string());
    }
    selfplay::SelfPlayStats stats;
    if (adaptive) stats.set_adaptive(spec->adaptive, spec->games_per_position, spec->engine);
    for (size_t k = 0; k < finished.size(); ++k)
      for (const std::optional<selfplay::GameRecord>& g : finished[k])
        if (g) stats.add(spec->positions[k], *g);
    return std::make_tuple(format == "text"
                               ? selfplay_text_table(stats, io.out_is_tty && !has_out ? stdout_columns() : 0)
                           : format == "csv" ? stats.to_csv()
                                             : stats.to_json(metadata),
                           stats.total().duplicates, adaptive ? adaptive_summary(stats) : std::string());
  };

  const bool quiet = p->has("quiet");
  std::mutex mu;  // what the progress line reads
  size_t played = 0;
  const size_t before = resumed.size();
  absl::Status write_error;  // on_game's, read by the stop check through write_failed
  std::atomic<bool> write_failed{false};
  const auto t0 = std::chrono::steady_clock::now();
  auto last_table = t0;
  const auto seconds = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  ProgressLine line(io, !quiet, [&] {
    std::lock_guard lock(mu);
    const double secs = seconds();
    if (adaptive)
      return absl::StrFormat("selfplay: %d games (adaptive: at most %d), %.1f games/min", before + played, total,
                             secs > 0 ? double(played) * 60 / secs : 0.0);
    return absl::StrFormat("selfplay: %d/%d games, %.1f games/min, ETA %s", before + played, total,
                           secs > 0 ? double(played) * 60 / secs : 0.0,
                           hms(eta_seconds(double(played), double(total - before), secs)));
  });
  // Called by play_local one game at a time.
  const auto on_game = [&](const selfplay::PlayedGame& g) {
    {
      std::lock_guard lock(mu);
      keep(g);
      ++played;
    }
    if (!write_error.ok()) return;
    if (log) write_error = log->append(game_record(g));
    for (const selfplay::GameRecord* next; write_error.ok() && pgn_fd >= 0 && (next = next_pgn()) != nullptr;
         ++pgn_index) {
      const std::string& text = next->pgn;
      for (size_t done = 0; done < text.size();) {
        const ssize_t n = ::write(pgn_fd, text.data() + done, text.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
          write_error =
              absl::InvalidArgumentError(absl::StrCat("--pgn: cannot write '", pgn_path, "': ", strerror(errno)));
          break;
        }
        done += size_t(n);
      }
    }
    if (write_error.ok() && has_out && std::chrono::steady_clock::now() - last_table >= kTableRewritePeriod) {
      write_error = write_output("--out", out_path, std::get<0>(table()));
      last_table = std::chrono::steady_clock::now();
    }
    if (!write_error.ok()) write_failed = true;
  };
  absl::StatusOr<std::vector<selfplay::PlayedGame>> games;
  bool complete = false;
  {
    InterruptScope interrupts;
    games = selfplay::play_local(
        *spec, int(*threads), on_game, resumed, [&] { return interrupt_signal() != 0 || write_failed; }, &complete);
  }
  line.stop();
  // What the run counts: the games play_local kept (a decided SPRT drops those played past it).
  if (games.ok() && complete) {
    for (auto& f : finished) f.assign(f.size(), std::nullopt);
    for (const selfplay::PlayedGame& g : *games) keep(g);
  }
  if (pgn_fd >= 0) {
    if (::fsync(pgn_fd) != 0 && write_error.ok())
      write_error = absl::InvalidArgumentError(absl::StrCat("--pgn: cannot write '", pgn_path, "': ", strerror(errno)));
    ::close(pgn_fd);
  }
  if (!games.ok()) return fail(io, kName, games.status());
  if (!write_error.ok()) return fail(io, kName, write_error);
  const double secs = seconds();

  const auto [text, duplicates, summary] = table();
  if (pgn_at_end && has_pgn && write_error.ok()) {
    std::string pgn;
    for (const auto& position : finished)
      for (const std::optional<selfplay::GameRecord>& g : position)
        if (g) pgn += g->pgn;
    if (absl::Status s = write_output("--pgn", pgn_path, pgn); !s.ok()) return fail(io, kName, s);
  }
  if (has_out) {
    if (absl::Status s = write_output("--out", out_path, text); !s.ok()) return fail(io, kName, s);
  } else {
    io.out << text << std::flush;
  }
  const int signo = interrupt_signal();
  if (!complete) {
    io.err << for_err(io, absl::StrFormat("c960 selfplay: interrupted after %d of %s games%s", games->size(),
                                          adaptive ? absl::StrCat("at most ", total) : absl::StrCat(total),
                                          log ? absl::StrCat("; the same command with --resume plays the rest") : ""));
    return kExitSignalBase + (signo ? signo : SIGINT);
  }
  if (log)
    if (absl::Status s = log->remove(); !s.ok()) return fail(io, kName, s);
  if (!quiet)
    io.err << absl::StrFormat("c960 selfplay: %s in %.1f s (%.1f games/min, %s), %s (counted once)%s\n%s",
                              counted(int64_t(games->size()), "game", "games"), secs,
                              secs > 0 ? double(played) * 60 / secs : 0.0, counted(*threads, "thread", "threads"),
                              spec->match() ? counted(duplicates, "duplicate pair", "duplicate pairs")
                                            : counted(duplicates, "duplicate game", "duplicate games"),
                              before ? absl::StrFormat(" (%d played before)", before) : "", summary);
  return kExitOk;
}

const CommandSpec& selfplay_spec() { return kSpec; }

}  // namespace c960::cli
