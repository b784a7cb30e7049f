// The cluster client commands: submit, status, watch, results, cancel. Each call carries a
// deadline; only UNAVAILABLE (and DEADLINE_EXCEEDED on idempotent calls) is retried.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <thread>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "cli/commands.h"
#include "cluster/channel.h"
#include "cluster/config.h"
#include "core/perft.h"
#include "cluster/selfplay_proto.h"
#include "cli/selfplay_args.h"
#include "selfplay/stats.h"
#include "cluster/u128.h"

namespace c960::cli {
namespace {

namespace v1 = c960::v1;
using cluster::from_proto;

const OptionSpec kCoordinatorOption = {"coordinator", Arity::kOne, "HOST:PORT",
                                       "the coordinator (default $C960_COORDINATOR, else 127.0.0.1:7960)"};

std::string coordinator_address(const ParsedArgs& p) {
  if (p.has("coordinator")) return p.get("coordinator");
  if (const char* env = std::getenv("C960_COORDINATOR"); env && *env) return env;
  return cluster::kDefaultCoordinator;
}

std::shared_ptr<grpc::Channel> channel_for(const std::string& address) { return cluster::make_channel({address}); }

void set_deadline(grpc::ClientContext& ctx, int64_t ms) {
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::milliseconds(ms));
}

const char* state_name(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_RUNNING: return "RUNNING";
    case v1::JOB_STATE_SUCCEEDED: return "SUCCEEDED";
    case v1::JOB_STATE_FAILED: return "FAILED";
    case v1::JOB_STATE_CANCELLED: return "CANCELLED";
    default: return "UNSPECIFIED";
  }
}

// Calls fn until it returns something other than UNAVAILABLE (or DEADLINE_EXCEEDED when
// idempotent), backing off exponentially, for about half a minute in all.
grpc::Status with_retry(const std::function<grpc::Status()>& fn, bool idempotent) {
  int64_t backoff = cluster::kBackoffInitialMs;
  for (int attempt = 0;; ++attempt) {
    grpc::Status s = fn();
    const bool retry = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                       (idempotent && s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED);
    if (!retry || attempt >= 8) return s;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, cluster::kBackoffMaxMs);
  }
}

int rpc_fail(const char* cmd, const std::string& address, const grpc::Status& s) {
  std::cerr << "c960 " << cmd << ": ";
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE)
    std::cerr << "cannot reach the coordinator at " << address << ": " << s.error_message() << "\n";
  else
    std::cerr << s.error_message() << " (status " << int(s.error_code()) << ")\n";
  switch (s.error_code()) {
    case grpc::StatusCode::INVALID_ARGUMENT:
    case grpc::StatusCode::NOT_FOUND:
    case grpc::StatusCode::ALREADY_EXISTS:
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return kExitUsage;
    default:
      return kExitCheckFailed;
  }
}

int usage_fail(const char* cmd, const absl::Status& s) {
  std::cerr << "c960 " << cmd << ": " << s.message() << "\n";
  return kExitUsage;
}

// Shared start of every command: --help, parsing, the stub.
struct Invocation {
  ParsedArgs args;
  std::string address;
  std::unique_ptr<v1::JobService::Stub> stub;
};

std::optional<int> start(const CommandSpec& spec, const std::vector<std::string>& argv, Invocation* inv) {
  if (std::optional<int> rc = parse_command(spec, argv, &inv->args)) return rc;
  inv->address = coordinator_address(inv->args);
  inv->stub = v1::JobService::NewStub(channel_for(inv->address));
  return std::nullopt;
}

std::string progress_line(const v1::Job& j) {
  const v1::Progress& p = j.progress();
  if (j.spec().has_selfplay()) {
    const double frac = p.games_total() > 0 ? double(p.games_done()) / double(p.games_total()) : 1.0;
    std::string eta = p.eta_seconds() < 0 ? "?" : absl::StrFormat("%.0fs", p.eta_seconds());
    return absl::StrFormat("%s %5.1f%% %d/%d games, %.1f games/min, %d/%d units, ETA %s, %d/%d workers, %s", j.id(),
                           100 * frac, p.games_done(), p.games_total(), p.games_per_second() * 60, p.units_done(),
                           p.units_total(), eta, p.workers(), p.workers_alive(), state_name(j.state()));
  }
  const double frac = p.units_total() > 0 ? double(p.units_done()) / double(p.units_total()) : 1.0;
  constexpr int kWidth = 30;
  const int filled = int(frac * kWidth);
  std::string bar = std::string(filled, '#') + std::string(kWidth - filled, '.');
  std::string eta = p.eta_seconds() < 0 ? "?" : absl::StrFormat("%.0fs", p.eta_seconds());
  return absl::StrFormat("%s [%s] %5.1f%% %d/%d units, %s nodes, %.1f Mnps, ETA %s, %d/%d workers, %s", j.id(), bar,
                         100 * frac, p.units_done(), p.units_total(), to_string(from_proto(p.nodes_done())),
                         p.nodes_per_second() / 1e6, eta, p.workers(), p.workers_alive(), state_name(j.state()));
}

void print_job(const v1::Job& j) {
  std::cout << "job " << j.id() << " " << state_name(j.state()) << "\n";
  if (j.spec().has_perft()) {
    const v1::PerftJobSpec& s = j.spec().perft();
    std::cout << "  perft depth " << s.depth() << ", "
              << (s.fens_size() ? absl::StrCat(s.fens_size(), " FENs")
                                : absl::StrCat("start positions ", s.start_positions().empty() ? "0-959" : s.start_positions()))
              << ", split depth " << j.split_depth() << "\n";
  }
  if (j.spec().has_selfplay()) {
    const v1::SelfPlayJobSpec& s = j.spec().selfplay();
    absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay::spec_from_proto(s);
    std::cout << "  selfplay " << s.games_per_position() << " games per position, start positions "
              << (s.start_positions().empty() ? "0-959" : s.start_positions()) << ", "
              << (spec.ok() ? selfplay::describe(*spec) : std::string(spec.status().message())) << "\n";
  }
  if (!j.request_id().empty()) std::cout << "  request id " << j.request_id() << "\n";
  std::cout << "  " << progress_line(j) << "\n";
  if (j.result_mismatches() > 0)
    std::cout << "  RESULT MISMATCHES: " << j.result_mismatches() << "; first: " << j.mismatch_detail() << "\n";
  if (j.unit_failures() > 0) std::cout << "  unit failures: " << j.unit_failures() << "; last: " << j.failure_detail() << "\n";
}

// ---- submit

const std::vector<OptionSpec> kPerftSubmitOptions = {
    {"depth", Arity::kOne, "D", "perft: depth in plies; selfplay: depth limit per move (1..64)"},
    {"sps", Arity::kOne, "LIST", "start position numbers and ranges, e.g. 0-9,518 (default 0-959)"},
    {"fen", Arity::kMany, "FEN", "perft: root positions"},
    {"split-depth", Arity::kOne, "K", "perft: split each root at ply K into units (default: automatic)"},
};

const CommandSpec kSubmitSpec = {
    "submit",
    "c960 submit perft --depth D [--sps 0-959 | --fen FEN ...] [--split-depth K] [--request-id ID]\n"
    "       c960 submit selfplay [--sps RANGE] --games-per-position N --engine builtin|PATH\n"
    "                  [--option NAME=VALUE ...] (--nodes N | --depth D | --movetime MS)\n"
    "                  [--random-plies K] [--seed S] [--games-per-unit G] [--request-id ID]",
    "Submits a job to the coordinator and prints its id as the last word. Without --sps (or "
    "--fen for perft) the job covers all 960 start positions. Give several FENs as quoted "
    "arguments, one FEN each. A self-play job takes the options of 'c960 selfplay' that define "
    "the games; an engine PATH is resolved on the workers and must exist there. Submitting again "
    "with the same --request-id returns the same job.",
    [] {
      std::vector<OptionSpec> o = kPerftSubmitOptions;
      for (const OptionSpec& sp : selfplay_spec_options())
        if (sp.name != "sps" && sp.name != "depth") o.push_back(sp);
      o.push_back({"games-per-unit", Arity::kOne, "G",
                   absl::StrCat("selfplay: games per unit of work (1..", cluster::kMaxSelfPlayGamesPerUnit,
                                ", default ", cluster::kDefaultSelfPlayGamesPerUnit, ")")});
      o.push_back({"request-id", Arity::kOne, "ID", "idempotency key (default: a random one, so retries are safe)"});
      o.push_back(kCoordinatorOption);
      return o;
    }(),
    1};

// The self-play part of submit: the same options and checks as the local command.
absl::Status selfplay_request(const ParsedArgs& p, v1::SubmitJobRequest* req) {
  for (const char* perft_only : {"fen", "split-depth"})
    if (p.has(perft_only)) return absl::InvalidArgumentError(absl::StrCat("--", perft_only, ": not an option of selfplay"));
  absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay_spec_from_args(p);
  if (!spec.ok()) return spec.status();
  v1::SelfPlayJobSpec* s = req->mutable_spec()->mutable_selfplay();
  *s = selfplay::spec_to_proto(*spec);
  if (p.has("games-per-unit")) {
    absl::StatusOr<long long> g = p.get_int("games-per-unit", 0, 1, cluster::kMaxSelfPlayGamesPerUnit);
    if (!g.ok()) return g.status();
    s->set_games_per_unit(int(*g));
  }
  return absl::OkStatus();
}

int cmd_submit_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kSubmitSpec, argv, &inv)) return *rc;
  const ParsedArgs& p = inv.args;
  if (p.positional().size() != 1 || (p.positional()[0] != "perft" && p.positional()[0] != "selfplay"))
    return usage_fail("submit", absl::InvalidArgumentError("give the job kind: c960 submit perft|selfplay ..."));
  v1::SubmitJobRequest req;
  if (p.positional()[0] == "selfplay") {
    if (absl::Status st = selfplay_request(p, &req); !st.ok()) return usage_fail("submit", st);
  } else {
    for (const OptionSpec& o : kSubmitSpec.options) {
      const bool perft_option = o.name == "request-id" || o.name == "coordinator" ||
                                std::any_of(kPerftSubmitOptions.begin(), kPerftSubmitOptions.end(),
                                            [&](const OptionSpec& q) { return q.name == o.name; });
      if (!perft_option && p.has(o.name))
        return usage_fail("submit", absl::InvalidArgumentError(absl::StrCat("--", o.name, ": not an option of perft")));
    }
  }
  if (!req.spec().has_selfplay()) {
    if (!p.has("depth")) return usage_fail("submit", absl::InvalidArgumentError("--depth is required"));
    absl::StatusOr<long long> depth = p.get_int("depth", 0, 0, 1000);
    if (!depth.ok()) return usage_fail("submit", depth.status());
    if (p.has("sps") && p.has("fen"))
      return usage_fail("submit", absl::InvalidArgumentError("give --sps or --fen, not both"));
    v1::PerftJobSpec* spec = req.mutable_spec()->mutable_perft();
    spec->set_depth(int(*depth));  // the coordinator checks the range and names the field
    if (p.has("sps")) spec->set_start_positions(p.get("sps"));
    if (p.has("fen")) {
      // Quoted FENs arrive whole; unquoted words make up a single FEN.
      bool quoted = false;
      for (const std::string& w : p.all("fen")) quoted |= w.find(' ') != std::string::npos;
      if (quoted) {
        for (const std::string& w : p.all("fen")) spec->add_fens(w);
      } else {
        std::string fen;
        for (const std::string& w : p.all("fen")) fen += (fen.empty() ? "" : " ") + w;
        spec->add_fens(fen);
      }
    }
    if (p.has("split-depth")) {
      absl::StatusOr<long long> k = p.get_int("split-depth", 0, 0, 1000);
      if (!k.ok()) return usage_fail("submit", k.status());
      spec->set_split_depth(int(*k));
    }
  }
  if (p.has("request-id")) {
    req.set_request_id(p.get("request-id"));
  } else {
    std::random_device rd;
    req.set_request_id(absl::StrFormat("c960-submit-%08x%08x", rd(), rd()));
  }
  v1::Job job;
  grpc::Status s = with_retry(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kSubmitDeadlineMs);
        return inv.stub->SubmitJob(&ctx, req, &job);
      },
      true);
  if (!s.ok()) return rpc_fail("submit", inv.address, s);
  if (job.spec().has_selfplay()) {
    std::cout << "submitted selfplay: " << job.progress().games_total() << " games in " << job.progress().units_total()
              << " units; job " << job.id() << "\n";
    return kExitOk;
  }
  std::cout << "submitted perft depth " << job.spec().perft().depth() << ": " << job.progress().units_total()
            << " units at split depth " << job.split_depth() << "; job " << job.id() << "\n";
  return kExitOk;
}

// ---- status

const CommandSpec kStatusSpec = {
    "status", "c960 status [JOB]",
    "Shows one job in detail, or the most recent jobs with their progress.",
    {kCoordinatorOption},
    1};

grpc::Status get_job(Invocation& inv, const std::string& id, v1::Job* job) {
  return with_retry(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kRpcDeadlineMs);
        v1::GetJobRequest req;
        req.set_job_id(id);
        return inv.stub->GetJob(&ctx, req, job);
      },
      true);
}

int cmd_status_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kStatusSpec, argv, &inv)) return *rc;
  if (!inv.args.positional().empty()) {
    v1::Job job;
    grpc::Status s = get_job(inv, inv.args.positional()[0], &job);
    if (!s.ok()) return rpc_fail("status", inv.address, s);
    print_job(job);
    return kExitOk;
  }
  v1::ListJobsResponse resp;
  grpc::Status s = with_retry(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kRpcDeadlineMs);
        return inv.stub->ListJobs(&ctx, v1::ListJobsRequest(), &resp);
      },
      true);
  if (!s.ok()) return rpc_fail("status", inv.address, s);
  if (resp.jobs_size() == 0) std::cout << "no jobs\n";
  for (const v1::Job& j : resp.jobs()) std::cout << progress_line(j) << "\n";
  return kExitOk;
}

// ---- self-play results, shared by watch and results

// All result chunks of a job; with omit_games the self-play chunks carry counts only.
grpc::Status fetch_results(Invocation& inv, const std::string& id, bool divide, bool omit_games,
                           std::vector<v1::ResultChunk>* out) {
  return with_retry(
      [&] {
        out->clear();
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kSubmitDeadlineMs);
        v1::GetResultsRequest req;
        req.set_job_id(id);
        req.set_divide(divide);
        req.set_omit_games(omit_games);
        auto reader = inv.stub->GetResults(&ctx, req);
        v1::ResultChunk chunk;
        while (reader->Read(&chunk)) out->push_back(chunk);
        return reader->Finish();
      },
      true);
}

// "leading 518 0.750 (8), ...; trailing ..." over the positions with games so far, in the
// order of SelfPlayStats::ranking (score, then the interval's lower bound).
std::string leaders_line(const std::vector<v1::ResultChunk>& chunks) {
  struct Row {
    int sp;
    selfplay::ResultCounts c;
    selfplay::Interval s;
  };
  std::vector<Row> rows;
  for (const v1::ResultChunk& ch : chunks) {
    if (!ch.has_selfplay() || ch.selfplay().games() == 0) continue;
    const v1::SelfPlayPositionResult& p = ch.selfplay();
    Row r{p.start_position(), {p.white_wins(), p.draws(), p.black_wins()}, {}};
    r.s = r.c.score();
    rows.push_back(r);
  }
  if (rows.empty()) return "no games yet";
  std::sort(rows.begin(), rows.end(), [](const Row& a, const Row& b) {
    if (a.s.value != b.s.value) return a.s.value > b.s.value;
    if (a.s.lo != b.s.lo) return a.s.lo > b.s.lo;
    return a.sp < b.sp;
  });
  const size_t n = std::min<size_t>(3, rows.size());
  auto show = [](const Row& r) { return absl::StrFormat("%d %.3f (%d)", r.sp, r.s.value, r.c.games()); };
  std::string out = "leading ";
  for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + show(rows[i]);
  out += "; trailing ";
  for (size_t i = 0; i < n; ++i) out += (i ? ", " : "") + show(rows[rows.size() - 1 - i]);
  return out;
}

// ---- watch

const CommandSpec kWatchSpec = {
    "watch", "c960 watch JOB",
    "Shows the job's progress (units, nodes or games, rate, ETA, workers) until it ends; for a "
    "self-play job also the positions leading and trailing so far (White's score). Exits 0 when "
    "it succeeds, 1 when it fails or is cancelled. Rides out coordinator restarts.",
    {kCoordinatorOption},
    1};

int cmd_watch_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kWatchSpec, argv, &inv)) return *rc;
  if (inv.args.positional().size() != 1) return usage_fail("watch", absl::InvalidArgumentError("give the job id"));
  const bool tty = isatty(STDOUT_FILENO);
  v1::WatchJobRequest req;
  req.set_job_id(inv.args.positional()[0]);
  int64_t backoff = cluster::kBackoffInitialMs;
  auto last_print = std::chrono::steady_clock::now() - std::chrono::hours(1);
  int64_t last_done = -1;
  // Self-play: the leaders come from a second call, at most every couple of seconds.
  std::string leaders;
  auto leaders_at = std::chrono::steady_clock::now() - std::chrono::hours(1);
  const auto line = [&](const v1::Job& job, bool final) {
    if (!job.spec().has_selfplay()) return progress_line(job);
    const auto now = std::chrono::steady_clock::now();
    if (final || now - leaders_at > std::chrono::seconds(2)) {
      std::vector<v1::ResultChunk> chunks;
      if (fetch_results(inv, job.id(), false, true, &chunks).ok()) leaders = leaders_line(chunks);
      leaders_at = now;
    }
    return absl::StrCat(progress_line(job), "; ", leaders);
  };
  for (;;) {
    grpc::ClientContext ctx;
    // Streams get a deadline too; the watch simply opens a new one after it.
    set_deadline(ctx, 60'000);
    std::unique_ptr<grpc::ClientReader<v1::Job>> reader = inv.stub->WatchJob(&ctx, req);
    v1::Job job;
    bool got = false;
    while (reader->Read(&job)) {
      got = true;
      backoff = cluster::kBackoffInitialMs;
      const auto now = std::chrono::steady_clock::now();
      const bool final = job.state() != v1::JOB_STATE_RUNNING;
      if (tty) {
        std::cout << "\r" << line(job, final) << "   " << std::flush;
      } else if (final || (job.progress().units_done() != last_done && now - last_print > std::chrono::seconds(2))) {
        std::cout << line(job, final) << std::endl;
        last_print = now;
        last_done = job.progress().units_done();
      }
      if (final) {
        if (tty) std::cout << "\n";
        if (job.result_mismatches() > 0)
          std::cout << "RESULT MISMATCHES: " << job.result_mismatches() << "; first: " << job.mismatch_detail() << "\n";
        if (job.state() == v1::JOB_STATE_FAILED) std::cout << "FAILED: " << job.failure_detail() << "\n";
        reader->Finish().IgnoreError();  // the stream ends by itself after a final state
        return job.state() == v1::JOB_STATE_SUCCEEDED ? kExitOk : kExitCheckFailed;
      }
    }
    grpc::Status s = reader->Finish();
    const bool transient = s.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ||
                           (s.error_code() == grpc::StatusCode::CANCELLED && got);
    if (!transient) {
      if (tty) std::cout << "\n";
      return rpc_fail("watch", inv.address, s);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff));
    backoff = std::min(backoff * 2, cluster::kBackoffMaxMs);
  }
}

// ---- results

const CommandSpec kResultsSpec = {
    "results", "c960 results JOB [--format csv|json] [--divide] [--out FILE] [--pgn FILE]",
    "Writes a finished job's results. Perft: CSV has the header 'sp,fen,depth,nodes' like "
    "'c960 perft --table' (with --divide: 'sp,fen,depth,move,nodes', one row per first move); "
    "JSON is an array of objects. Self-play: the statistics of 'c960 selfplay' (CSV header "
    "'sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,elo,elo_lo,elo_hi,"
    "draw_rate,mean_plies,...', a last row 'all'), and with --pgn every game. Exits 1 while the "
    "job is unfinished.",
    {{"format", Arity::kOne, "csv|json", "output format (default csv)"},
     {"divide", Arity::kFlag, "", "perft: counts below each first move"},
     {"out", Arity::kOne, "FILE", "write here instead of stdout"},
     {"pgn", Arity::kOne, "FILE", "self-play: write every game here as PGN"},
     kCoordinatorOption},
    1};

// Writes `text` to `path` through a temporary file, so a reader never sees half of it.
bool write_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!(f << text) || !f.flush()) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

// Statistics from the stored games, computed as 'c960 selfplay' does, so the two agree.
int selfplay_results(const ParsedArgs& p, const std::vector<v1::ResultChunk>& chunks) {
  size_t incomplete = 0, positions = 0;
  int last_sp = -1;
  for (const v1::ResultChunk& c : chunks) {
    if (c.selfplay().start_position() == last_sp) continue;  // a further chunk of the same position
    last_sp = c.selfplay().start_position();
    ++positions;
    incomplete += !c.selfplay().complete();
  }
  if (incomplete > 0) {
    std::cerr << "c960 results: " << incomplete << " of " << positions << " positions are not complete yet (c960 watch "
              << p.positional()[0] << ")\n";
    return kExitCheckFailed;
  }
  selfplay::SelfPlayStats stats;
  std::string pgn;
  for (const v1::ResultChunk& c : chunks)
    for (const v1::SelfPlayGame& g : c.selfplay().game_records()) {
      absl::StatusOr<selfplay::GameRecord> rec = selfplay::game_from_proto(g);
      if (!rec.ok()) {
        std::cerr << "c960 results: a stored game does not replay: " << rec.status().message() << "\n";
        return kExitCheckFailed;
      }
      stats.add(c.selfplay().start_position(), *rec);
      pgn += g.pgn();
    }
  const std::string table = p.get("format", "csv") == "csv" ? stats.to_csv() : stats.to_json();
  if (p.has("pgn")) {
    if (!write_file(p.get("pgn"), pgn))
      return usage_fail("results", absl::InvalidArgumentError(absl::StrCat("--pgn: cannot write '", p.get("pgn"), "'")));
  }
  if (p.has("out")) {
    if (!write_file(p.get("out"), table))
      return usage_fail("results", absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", p.get("out"), "'")));
    std::cout << "wrote " << p.get("out") << "\n";
  } else {
    std::cout << table;
  }
  return kExitOk;
}

int cmd_results_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kResultsSpec, argv, &inv)) return *rc;
  const ParsedArgs& p = inv.args;
  if (p.positional().size() != 1) return usage_fail("results", absl::InvalidArgumentError("give the job id"));
  const std::string format = p.get("format", "csv");
  if (format != "csv" && format != "json")
    return usage_fail("results", absl::InvalidArgumentError("--format: use csv or json"));
  const bool divide = p.has("divide");
  std::vector<v1::ResultChunk> chunks;
  grpc::Status s = fetch_results(inv, p.positional()[0], divide, false, &chunks);
  if (!s.ok()) return rpc_fail("results", inv.address, s);
  if (!chunks.empty() && chunks[0].has_selfplay()) return selfplay_results(p, chunks);
  if (p.has("pgn")) return usage_fail("results", absl::InvalidArgumentError("--pgn: only self-play jobs have games"));
  std::vector<v1::PerftRootResult> rows;
  for (const v1::ResultChunk& c : chunks)
    if (c.has_perft()) rows.push_back(c.perft());
  size_t incomplete = 0;
  for (const v1::PerftRootResult& r : rows) incomplete += !r.complete();
  if (incomplete > 0) {
    std::cerr << "c960 results: " << incomplete << " of " << rows.size()
              << " positions are not complete yet (c960 watch " << p.positional()[0] << ")\n";
    return kExitCheckFailed;
  }
  const std::string out_path = p.get("out");
  std::ofstream file;
  const std::string tmp = out_path + ".tmp";
  if (!out_path.empty()) {
    file.open(tmp, std::ios::trunc);
    if (!file) return usage_fail("results", absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", out_path, "'")));
  }
  std::ostream& out = out_path.empty() ? std::cout : file;
  auto sp = [](const v1::PerftRootResult& r) {
    return r.start_position() >= 0 ? absl::StrCat(r.start_position()) : std::string();
  };
  if (format == "csv") {
    out << (divide ? "sp,fen,depth,move,nodes\n" : "sp,fen,depth,nodes\n");
    for (const v1::PerftRootResult& r : rows) {
      if (!divide) {
        out << sp(r) << "," << r.fen() << "," << r.depth() << "," << to_string(from_proto(r.nodes())) << "\n";
        continue;
      }
      for (const v1::MoveCount& m : r.divide())
        out << sp(r) << "," << r.fen() << "," << r.depth() << "," << m.move() << ","
            << to_string(from_proto(m.nodes())) << "\n";
    }
  } else {
    out << "[\n";
    for (size_t i = 0; i < rows.size(); ++i) {
      const v1::PerftRootResult& r = rows[i];
      // Counts are written as exact integers, even beyond 2^53.
      out << "  {\"sp\": " << (r.start_position() >= 0 ? absl::StrCat(r.start_position()) : "null") << ", \"fen\": \""
          << r.fen() << "\", \"depth\": " << r.depth() << ", \"nodes\": " << to_string(from_proto(r.nodes()));
      if (divide) {
        out << ", \"divide\": {";
        for (int k = 0; k < r.divide_size(); ++k)
          out << (k ? ", " : "") << "\"" << r.divide(k).move() << "\": " << to_string(from_proto(r.divide(k).nodes()));
        out << "}";
      }
      out << "}" << (i + 1 < rows.size() ? "," : "") << "\n";
    }
    out << "]\n";
  }
  if (!out_path.empty()) {
    file.close();
    if (!file || std::rename(tmp.c_str(), out_path.c_str()) != 0)
      return usage_fail("results", absl::InternalError(absl::StrCat("--out: writing '", out_path, "' failed")));
    std::cout << "wrote " << out_path << "\n";
  }
  return kExitOk;
}

// ---- cancel

const CommandSpec kCancelSpec = {
    "cancel", "c960 cancel JOB", "Cancels a job; a finished job stays as it is.", {kCoordinatorOption}, 1};

int cmd_cancel_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kCancelSpec, argv, &inv)) return *rc;
  if (inv.args.positional().size() != 1) return usage_fail("cancel", absl::InvalidArgumentError("give the job id"));
  v1::Job job;
  grpc::Status s = with_retry(
      [&] {
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kRpcDeadlineMs);
        v1::CancelJobRequest req;
        req.set_job_id(inv.args.positional()[0]);
        return inv.stub->CancelJob(&ctx, req, &job);
      },
      true);
  if (!s.ok()) return rpc_fail("cancel", inv.address, s);
  std::cout << "job " << job.id() << " " << state_name(job.state()) << "\n";
  return kExitOk;
}

}  // namespace

int cmd_submit(const std::vector<std::string>& args) { return cmd_submit_impl(args); }
int cmd_status(const std::vector<std::string>& args) { return cmd_status_impl(args); }
int cmd_watch(const std::vector<std::string>& args) { return cmd_watch_impl(args); }
int cmd_results(const std::vector<std::string>& args) { return cmd_results_impl(args); }
int cmd_cancel(const std::vector<std::string>& args) { return cmd_cancel_impl(args); }

}  // namespace c960::cli
