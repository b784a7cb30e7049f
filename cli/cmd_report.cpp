// c960 report: one self-contained HTML file (report/report.h) from a results table on disk
// (--from FILE: the CSV of `c960 selfplay` or `c960 perft --table`) or from a finished cluster
// job (JOB: its results fetched like `c960 results`, self-play statistics built from the stored
// games the same way, and the job's metadata).
#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/job_format.h"
#include "cli/table_format.h"
#include "cluster/channel.h"
#include "cluster/config.h"
#include "cluster/selfplay_proto.h"
#include "cluster/u128.h"
#include "core/version.h"
#include "report/report.h"
#include "selfplay/stats.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "report";

const CommandSpec kSpec = {
    kName,
    "c960 report --from FILE [--reference FILE] [--evaluations FILE] [--title T] [--out FILE]\n"
    "       c960 report JOB [--reference FILE] [--evaluations FILE] [--title T] [--out FILE]",
    "Writes one HTML file that opens offline (its scripts, styles and data inside): for self-play the "
    "960-cell heatmap of White's score, the table by score with intervals, whether the start position "
    "matters (chi-square, per-position tests with Holm and Benjamini-Hochberg), the histogram against "
    "sampling noise, the best and worst by the shrunk score with rank intervals, each position against its "
    "mirror image, with --reference a comparison with another table, with --evaluations each position's "
    "evaluation by each engine beside its score (agreement between engines, a logistic calibration of centipawns "
    "to score, the positions where evaluation and games disagree), and for an adaptive run (--band, "
    "--target-width) its verdicts, games played and anytime intervals; for a two-engine match (c960 selfplay "
    "--opponent) the pentanomial counts, A's score, Elo, nElo and LOS, which positions favour which engine "
    "(sign tests with Holm and Benjamini-Hochberg), whether the difference depends on the position, and a "
    "heatmap of A's score; for perft the counts by position and their growth by depth. --from reads a CSV of "
    "'c960 selfplay' (one engine or a match; a match's JSON too, with its engines' names and SPRT) or "
    "'c960 perft --table' (several depths may be concatenated); JOB fetches "
    "a finished cluster job's results and metadata "
    "(engine, limits, seed, verification, dates, workers); a self-play job's statistics are its "
    "per-position counts over every game, stored or not. Exits 1 while the job is unfinished, unless "
    "--partial: then the report is of what the job has done so far (a running, cancelled or failed "
    "job), and says so in its title and metadata.",
    with_cluster_options(
        {{"from", Arity::kOne, "FILE", "a results table (CSV; a match's JSON) instead of a job"},
         {"partial", Arity::kFlag, "", "JOB: report what a running, cancelled or failed job has done so far"},
         {"reference", Arity::kOne, "FILE", "self-play: another table (CSV) to compare with"},
         {"evaluations", Arity::kOne, "FILE",
          "self-play: an evaluation table (CSV of c960 evaluate or of an evaluation job) to set beside the scores"},
         {"title", Arity::kOne, "T", "the page's title"},
         {"out", Arity::kOne, "FILE", "write here instead of stdout"}}),
    1};

absl::StatusOr<std::string> read_input(const std::string& option, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat(option, ": cannot read '", path, "'"));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return absl::InvalidArgumentError(absl::StrCat(option, ": cannot read '", path, "'"));
  return s.str();
}

std::string base_name(const std::string& path) { return path.substr(path.rfind('/') + 1); }

std::string utc(int64_t unix_ms) {
  const std::time_t t = std::time_t(unix_ms / 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return absl::StrFormat("%04d-%02d-%02d %02d:%02d:%02d UTC", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
                         tm.tm_min, tm.tm_sec);
}

// The verification a job ran with: its spec's, or its kind's default (as the coordinator
// resolves it: adaptive, or off for self-play with a time limit, whose games are not
// reproducible).
std::string verification(const v1::Job& job) {
  switch (job.spec().verify()) {
    case v1::VERIFY_MODE_OFF: return "off: one result per unit";
    case v1::VERIFY_MODE_ALL: return "all: every unit computed by two workers";
    case v1::VERIFY_MODE_ADAPTIVE: return "adaptive: new workers' units checked by a second worker, spot checks after";
    default: break;
  }
  if (job.spec().has_selfplay() && job.spec().selfplay().movetime_ms() > 0) return "off (default with --movetime)";
  return "adaptive (default): new workers' units checked by a second worker, spot checks after";
}

// The workers the coordinator knows (names, versions, threads), or why they are not shown: the
// coordinator does not record which worker played which unit, so these are the cluster's.
std::string workers_line(Client& client) {
  v1::ListWorkersResponse resp;
  if (absl::Status s = client.list_workers(true, &resp); !s.ok()) {
    if (s.code() == absl::StatusCode::kPermissionDenied) return "not shown (listing workers needs role read)";
    return absl::StrCat("not shown (", s.message(), ")");
  }
  std::vector<std::string> names;
  for (const v1::WorkerInfo& w : resp.workers())
    names.push_back(absl::StrCat(w.name(), " (", w.version(), ", ", counted(w.threads(), "thread", "threads"), ", ",
                                 counted(w.units_done(), "unit", "units"), ")"));
  if (names.empty()) return "none known";
  return absl::StrCat(names.size(), " known to the coordinator: ", absl::StrJoin(names, "; "));
}

report::Metadata job_metadata(const v1::Job& job, Client& client) {
  report::Metadata m;
  m.emplace_back("job", absl::StrCat(job.id(), " (", state_name(job.state()), ")"));
  if (job.spec().has_selfplay()) {
    absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(job.spec().selfplay());
    if (spec.ok())
      for (auto& row : report::spec_metadata(*spec)) m.push_back(std::move(row));
    m.emplace_back("positions", job.spec().selfplay().start_positions().empty()
                                    ? "all 960"
                                    : job.spec().selfplay().start_positions());
  } else {
    const v1::PerftJobSpec& p = job.spec().perft();
    m.emplace_back(
        "perft",
        absl::StrCat("depth ", p.depth(), ", ",
                     p.fens_size()
                         ? absl::StrCat(p.fens_size(), " FENs")
                         : absl::StrCat("positions ", p.start_positions().empty() ? "all 960" : p.start_positions()),
                     ", split ply ", job.split_depth()));
  }
  m.emplace_back("verification", verification(job));
  for (int i = 0; i < job.provenance_size(); ++i)
    m.emplace_back(job.provenance_size() == 1 ? "worker" : absl::StrCat("worker ", i + 1), job.provenance(i));
  if (job.result_mismatches() > 0)
    m.emplace_back("result mismatches", absl::StrCat(job.result_mismatches(), ": ", job.mismatch_detail()));
  m.emplace_back("submitted", absl::StrCat(utc(job.created_unix_ms()), job.owner().empty() ? "" : " by ", job.owner()));
  if (job.finished_unix_ms() > 0)
    m.emplace_back("finished", absl::StrFormat("%s, after %.1f s", utc(job.finished_unix_ms()),
                                               double(job.finished_unix_ms() - job.created_unix_ms()) / 1000.0));
  m.emplace_back("workers", workers_line(client));
  m.emplace_back("version", absl::StrCat("report by c960 ", std::string(c960::version())));
  return m;
}

absl::StatusOr<report::PerftTable> perft_table(const std::vector<v1::ResultChunk>& chunks) {
  report::PerftTable t;
  for (const v1::ResultChunk& c : chunks) {
    // A partial job's roots with units outstanding have no count yet: left out.
    if (!c.has_perft() || !c.perft().complete()) continue;
    const v1::PerftRootResult& r = c.perft();
    report::PerftRow row;
    row.key.sp = r.start_position();
    row.key.fen = r.fen();
    row.key.id = r.start_position() >= 0 ? absl::StrCat(r.start_position()) : absl::StrCat("root ", r.index());
    row.depth = r.depth();
    row.nodes = cluster::from_proto(r.nodes());
    t.rows.push_back(std::move(row));
  }
  return t;
}

// The report of a finished job, as `c960 results` builds its table.
int job_report(const ParsedArgs& p, const Io& io, report::ReportOptions options, std::string* html) {
  const std::string id = p.positional()[0];
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  v1::Job job;
  if (absl::Status s = client.get_job(id, &job); !s.ok()) return rpc_fail(io, kName, client, s);
  if (job.spec().has_evaluation())
    return fail(io, kName,
                absl::StrCat("job ", id, " is an evaluation job: its table is 'c960 results ", id,
                             " --format csv --out eval.csv', which 'c960 report --from SELFPLAY.csv --evaluations "
                             "eval.csv' sets beside a self-play table's scores"));
  const bool partial = job.state() != v1::JOB_STATE_SUCCEEDED;
  if (partial && !p.has("partial"))
    return fail(io, kName,
                absl::StrCat("job ", id, " is ", state_name(job.state()),
                             job.state() == v1::JOB_STATE_RUNNING
                                 ? absl::StrCat(" (c960 watch ", id, "; --partial reports what it has done so far)")
                                 : ": --partial reports what it did"),
                kExitCheckFailed);
  // Self-play: the counts alone (omit_games), which cover every game whether the job stored it.
  std::vector<v1::ResultChunk> chunks;
  if (absl::Status s = client.results(id, false, job.spec().has_selfplay(), &chunks); !s.ok())
    return rpc_fail(io, kName, client, s);
  options.metadata = job_metadata(job, client);
  if (partial)
    options.metadata.insert(
        options.metadata.begin(),
        {"partial", absl::StrCat("yes: the job is ", state_name(job.state()), "; these are the results so far")});
  if (options.title.empty())
    options.title = absl::StrCat("c960 ", job.spec().has_selfplay() ? "self-play" : "perft", " report: ", id,
                                 partial ? absl::StrCat(" (partial, ", state_name(job.state()), ")") : "");
  absl::StatusOr<std::string> out;
  if (job.spec().has_selfplay() && !job.spec().selfplay().opponent().empty()) {
    // A match: its JSON as `c960 results` writes it (engines, pairs, SPRT), read as a match table.
    if (options.title.rfind("c960 self-play report: ", 0) == 0) options.title.replace(5, 9, "match");
    const selfplay::MatchStats stats = match_stats_from_results(job, chunks);
    absl::StatusOr<report::MatchTable> table = report::parse_match_json(stats.to_json());
    if (!table.ok()) return fail(io, kName, table.status(), kExitCheckFailed);
    out = report::report_from_data(*table, options);
  } else if (job.spec().has_selfplay()) {
    const selfplay::SelfPlayStats stats = selfplay_stats_from_results(job, chunks);
    out = report::report_from_data(report::selfplay_table_from_stats(stats), options);
  } else {
    absl::StatusOr<report::PerftTable> table = perft_table(chunks);
    if (!table.ok()) return fail(io, kName, table.status(), kExitCheckFailed);
    out = report::report_from_data(*table, options);
  }
  if (!out.ok()) return fail(io, kName, out.status());
  *html = std::move(*out);
  return kExitOk;
}

}  // namespace

int cmd_report(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.has("from") == !p.positional().empty())
    return fail(io, kName, "give either a job id or --from FILE (see c960 report --help)");
  if (p.has("from"))
    for (const char* o : {"coordinator", "tls-ca", "tls-cert", "tls-key", "token-file"})
      if (p.has(o)) return fail(io, kName, absl::StrCat("--", o, ": only for a job's report, not with --from"));
  if (p.has("out"))
    if (absl::Status s = check_output("--out", p.get("out")); !s.ok()) return fail(io, kName, s);
  report::ReportOptions options;
  options.title = p.get("title");
  if (p.has("reference")) {
    absl::StatusOr<std::string> ref = read_input("--reference", p.get("reference"));
    if (!ref.ok()) return fail(io, kName, ref.status());
    options.reference_csv = std::move(*ref);
    options.reference_name = base_name(p.get("reference"));
  }
  if (p.has("evaluations")) {
    absl::StatusOr<std::string> ev = read_input("--evaluations", p.get("evaluations"));
    if (!ev.ok()) return fail(io, kName, ev.status());
    options.evaluations_csv = std::move(*ev);
    options.evaluations_name = base_name(p.get("evaluations"));
  }
  std::string html;
  if (p.has("from")) {
    absl::StatusOr<std::string> csv = read_input("--from", p.get("from"));
    if (!csv.ok()) return fail(io, kName, csv.status());
    options.metadata.emplace_back("table", base_name(p.get("from")));
    options.metadata.emplace_back("version", absl::StrCat("report by c960 ", std::string(c960::version())));
    absl::StatusOr<std::string> out = report::report_from_csv(*csv, options);
    if (!out.ok()) return fail(io, kName, absl::StrCat("--from ", p.get("from"), ": ", out.status().message()));
    html = std::move(*out);
  } else if (int rc = job_report(p, io, std::move(options), &html); rc != kExitOk) {
    return rc;
  }
  if (!p.has("out")) {
    io.out << html;
    return kExitOk;
  }
  if (absl::Status s = write_output("--out", p.get("out"), html); !s.ok()) return fail(io, kName, s);
  io.out << "wrote " << p.get("out") << "\n";
  return kExitOk;
}

const CommandSpec& report_spec() { return kSpec; }

}  // namespace c960::cli
