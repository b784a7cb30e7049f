// c960 results JOB: a job's results. Perft as CSV like 'c960 perft --table' or JSON; self-play as
// the statistics 'c960 selfplay' prints, built from the stored games the same way; on a terminal
// a table to read (cli/table_format.h). A cancelled, failed or running job's results with
// --partial, incomplete positions marked.
#include <ctime>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/table_format.h"
#include "cluster/evaluation_proto.h"
#include "cluster/results_export.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/perft.h"
#include "core/version.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

using selfplay::MetadataValue;

constexpr char kName[] = "results";

const CommandSpec kSpec = {
    kName, "c960 results JOB [--format text|csv|json] [--partial] [--divide] [--out FILE] [--pgn FILE]",
    "Writes a job's results. On a terminal: a table to read (text). Perft: the roots by start "
    "position with their back rank, depth and node count, and the total; self-play: the 'all' row "
    "(the whole job), then the ranked positions by their shrunk score, best for White first, then "
    "the others, each with its rank, id, back rank, games, White's wins, draws and losses, score "
    "with its 95% interval, the shrunk score and the rank with theirs, Elo, draw rate, mean plies "
    "and duplicate games (docs/report.md, Rankings). Otherwise (a pipe, --out) CSV, or what --format "
    "says. Perft CSV has the header 'sp,fen,depth,nodes' like 'c960 perft --table' (with --divide: "
    "'sp,fen,depth,move,nodes', one row per first move), rows in root order; perft JSON is "
    "{\"metadata\": {...}, \"positions\": [...]}. Self-play CSV and JSON are those of "
    "'c960 selfplay' (CSV columns sp, fen, games, white_wins, draws, black_wins, score, score_lo, "
    "score_hi, elo, elo_lo, elo_hi, draw_rate, mean_plies, duplicates, uncounted, shrunk, shrunk_lo, shrunk_hi, "
    "rank_lo, rank_hi, rank, then a column per termination; a last row 'all'), and with --pgn every stored "
    "game. JSON carries the job's "
    "metadata: c960 version, job id, state, created time, verify mode, and the spec (perft: depth, "
    "split depth; self-play: engine, options, limits, seed, date, ...). A job with positions "
    "still to compute (running, cancelled or failed) exits 1 saying which, unless --partial: then "
    "every position is written, the incomplete ones with their counts so far and marked (CSV: a "
    "last column 'complete', JSON: \"complete\": false, text: 'incomplete'), and it exits 0.",
    with_cluster_options(
        {{"format", Arity::kOne, "text|csv|json", "output format (default: text on a terminal, else csv)"},
         {"partial", Arity::kFlag, "", "also the results of a job that did not finish"},
         {"divide", Arity::kFlag, "", "perft: counts below each first move"},
         {"out", Arity::kOne, "FILE", "write here instead of stdout"},
         {"pgn", Arity::kOne, "FILE", "self-play: write every stored game here as PGN"}}),
    1};

// Why the results are not whole and what to do about it; exit 1.
int incomplete_fail(const Io& io, const v1::Job& job, size_t incomplete, size_t positions) {
  const std::string counts = absl::StrCat(positions - incomplete, " of ", positions, " positions complete");
  const std::string& id = job.id();
  switch (job.state()) {
    case v1::JOB_STATE_CANCELLED:
      return fail(io, kName, absl::StrCat("job ", id, " was cancelled (", counts, "); --partial writes what was done"),
                  kExitCheckFailed);
    case v1::JOB_STATE_FAILED:
      return fail(
          io, kName,
          absl::StrCat("job ", id, " failed: ", job.failure_detail().empty() ? "no reason given" : job.failure_detail(),
                       " (", counts, "); --partial writes what was done"),
          kExitCheckFailed);
    case v1::JOB_STATE_RUNNING:
      return fail(io, kName,
                  absl::StrCat("job ", id, " is still running (", counts, "): follow it with 'c960 watch ", id,
                               "', or --partial writes what is done so far"),
                  kExitCheckFailed);
    default:
      // It finished between reading the results and reading the job.
      return fail(io, kName,
                  absl::StrCat("job ", id, " is ", state_name(job.state()), " but its results were read before (",
                               counts, "): run c960 results again"),
                  kExitCheckFailed);
  }
}

// The table goes to --out, else to stdout.
int emit(const ParsedArgs& p, const Io& io, const std::string& text) {
  if (!p.has("out")) {
    io.out << text;
    return kExitOk;
  }
  if (absl::Status s = write_output("--out", p.get("out"), text); !s.ok()) return fail(io, kName, s);
  io.out << "wrote " << p.get("out") << "\n";
  return kExitOk;
}

// What every job's JSON starts with (cluster/results_export.h, as the dashboard's downloads).
using cluster::job_metadata;

// Statistics from each position's figures, which the coordinator counts over every game as
// 'c960 selfplay' does, so the two agree; with --pgn the games then stream into the file, so
// neither side holds them all.
int selfplay_results(const ParsedArgs& p, const Io& io, OutputFormat format, Client& client, const v1::Job& job,
                     const std::vector<v1::ResultChunk>& heads) {
  size_t incomplete = 0, positions = 0;
  selfplay::SelfPlayStats stats = selfplay_stats_from_results(job, heads, &incomplete, &positions);
  const bool match = !job.spec().selfplay().opponent().empty();
  const absl::StatusOr<selfplay::SelfPlaySpec> job_spec = selfplay::spec_from_proto(job.spec().selfplay());
  const bool partial = p.has("partial");
  if (incomplete > 0 && !partial) return incomplete_fail(io, job, incomplete, positions);
  if (p.has("pgn")) {
    OutputFile out("--pgn", p.get("pgn"));
    if (absl::Status s = out.open(); !s.ok()) return fail(io, kName, s);
    std::string bad;
    absl::Status s = client.results(job.id(), false, false, [&](const v1::ResultChunk& c) {
      for (const v1::SelfPlayGame& g : c.selfplay().game_records()) {
        if (absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g); !rec.ok()) {
          bad = std::string(rec.status().message());
          return false;
        }
        out.append(g.pgn());
      }
      return true;
    });
    if (!bad.empty()) return fail(io, kName, absl::StrCat("a stored game does not replay: ", bad), kExitCheckFailed);
    if (!s.ok()) return rpc_fail(io, kName, client, s);
    if (absl::Status c = out.commit(); !c.ok()) return fail(io, kName, c);
  }
  // A match: the pairs' statistics, as 'c960 selfplay --opponent' gives them.
  const selfplay::MatchStats pairs = match ? match_stats_from_results(job, heads) : selfplay::MatchStats("", "");
  switch (format) {
    case OutputFormat::kText:
      if (match) return emit(p, io, pairs.to_text());
      return emit(p, io, selfplay_text_table(stats, io.out_is_tty && !p.has("out") ? stdout_columns() : 0));
    case OutputFormat::kCsv: return emit(p, io, match ? pairs.to_csv() : stats.to_csv(partial));
    case OutputFormat::kJson: break;
  }
  std::vector<MetadataValue> metadata = job_metadata(job);
  if (job_spec.ok()) {
    const std::vector<MetadataValue> values = selfplay::metadata_values(*job_spec);
    metadata.insert(metadata.end(), values.begin(), values.end());
  } else {
    metadata.push_back({"spec_error", std::string(job_spec.status().message())});
  }
  return emit(p, io, match ? pairs.to_json(metadata) : stats.to_json(metadata, partial));
}

int perft_results(const ParsedArgs& p, const Io& io, OutputFormat format, const v1::Job& job,
                  const std::vector<v1::ResultChunk>& chunks) {
  const bool divide = p.has("divide"), partial = p.has("partial");
  std::vector<PerftRow> rows;
  size_t incomplete = 0;
  for (const v1::ResultChunk& c : chunks) {
    if (!c.has_perft()) continue;
    const v1::PerftRootResult& r = c.perft();
    PerftRow row{r.start_position(), r.fen(), r.depth(), cluster::from_proto(r.nodes()), r.complete(), {}};
    for (const v1::MoveCount& m : r.divide()) row.divide.emplace_back(m.move(), cluster::from_proto(m.nodes()));
    incomplete += !r.complete();
    rows.push_back(std::move(row));
  }
  if (incomplete > 0 && !partial) return incomplete_fail(io, job, incomplete, rows.size());
  switch (format) {
    case OutputFormat::kText: return emit(p, io, perft_text_table(rows, divide));
    case OutputFormat::kCsv: return emit(p, io, perft_csv(rows, divide, partial));
    case OutputFormat::kJson: break;
  }
  std::vector<MetadataValue> metadata = job_metadata(job);
  const v1::PerftJobSpec& spec = job.spec().perft();
  metadata.push_back({"depth", absl::StrCat(spec.depth()), true});
  metadata.push_back({"split_depth", absl::StrCat(job.split_depth()), true});
  metadata.push_back({"positions", absl::StrCat(rows.size()), true});
  if (!spec.start_positions().empty()) metadata.push_back({"start_positions", spec.start_positions()});
  return emit(p, io, perft_json(rows, divide, metadata, partial));
}

// An evaluation job: the CSV and JSON are the coordinator's download files; text is a table of
// the same rows.
int evaluation_results(const ParsedArgs& p, const Io& io, OutputFormat format, const v1::Job& job,
                       const std::vector<v1::ResultChunk>& chunks) {
  if (p.has("divide")) return fail(io, kName, "--divide: only perft jobs have divides");
  if (format == OutputFormat::kText) {
    size_t open = 0;
    const std::vector<selfplay::EvalRow> rows = cluster::evaluation_rows(chunks, &open);
    if (open > 0 && !p.has("partial")) return incomplete_fail(io, job, open, rows.size() + open);
    return emit(p, io, evaluation_text_table(rows));
  }
  absl::StatusOr<std::string> file = cluster::results_file(
      job, chunks, format == OutputFormat::kCsv ? cluster::ResultsFormat::kCsv : cluster::ResultsFormat::kJson, false,
      p.has("partial"));
  if (!file.ok()) return fail(io, kName, file.status(), kExitCheckFailed);
  return emit(p, io, *file);
}

}  // namespace

int cmd_results(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().size() != 1) return fail(io, kName, "give the job id");
  const absl::StatusOr<OutputFormat> format = output_format(
      p.has("format") ? std::optional<std::string>(p.get("format")) : std::nullopt, !p.has("out") && io.out_is_tty);
  if (!format.ok()) return fail(io, kName, format.status());
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  // Self-play: counts only here (one chunk a position); the games follow for --pgn.
  std::vector<v1::ResultChunk> chunks;
  if (absl::Status s = client.results(p.positional()[0], p.has("divide"), true, &chunks); !s.ok())
    return rpc_fail(io, kName, client, s);
  // The job after its results: a state no older than they are (a job that was running may have
  // finished since; one that had ended has the results it ended with).
  v1::Job job;
  if (absl::Status s = client.get_job(p.positional()[0], &job); !s.ok()) return rpc_fail(io, kName, client, s);
  if (job.spec().has_selfplay()) return selfplay_results(p, io, *format, client, job, chunks);
  if (p.has("pgn")) return fail(io, kName, "--pgn: only self-play jobs have games");
  if (job.spec().has_evaluation()) return evaluation_results(p, io, *format, job, chunks);
  return perft_results(p, io, *format, job, chunks);
}

const CommandSpec& results_spec() { return kSpec; }

}  // namespace c960::cli
