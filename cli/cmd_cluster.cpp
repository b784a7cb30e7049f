// The cluster client commands: submit, status, watch, results, cancel. Each call carries a
// deadline; only UNAVAILABLE (and DEADLINE_EXCEEDED on idempotent calls) is retried.
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
#include "args.h"
#include "c960/v1/cluster.grpc.pb.h"
#include "commands.h"
#include "config.h"
#include "perft.h"
#include "u128.h"

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

std::shared_ptr<grpc::Channel> channel_for(const std::string& address) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(cluster::kMaxMessageBytes);
  return grpc::CreateCustomChannel(address, grpc::InsecureChannelCredentials(), args);
}

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
  for (const std::string& a : argv)
    if (a == "--help" || a == "-h") {
      std::cout << help_text(spec);
      return kExitOk;
    }
  absl::StatusOr<ParsedArgs> p = parse_args(spec, argv);
  if (!p.ok()) return usage_fail(spec.name.c_str(), p.status());
  inv->args = std::move(*p);
  inv->address = coordinator_address(inv->args);
  inv->stub = v1::JobService::NewStub(channel_for(inv->address));
  return std::nullopt;
}

std::string progress_line(const v1::Job& j) {
  const v1::Progress& p = j.progress();
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
  if (!j.request_id().empty()) std::cout << "  request id " << j.request_id() << "\n";
  std::cout << "  " << progress_line(j) << "\n";
  if (j.result_mismatches() > 0)
    std::cout << "  RESULT MISMATCHES: " << j.result_mismatches() << "; first: " << j.mismatch_detail() << "\n";
}

// ---- submit

const CommandSpec kSubmitSpec = {
    "submit",
    "c960 submit perft --depth D [--sps 0-959 | --fen FEN ...] [--split-depth K] [--request-id ID]",
    "Submits a perft job to the coordinator and prints its id as the last word. Without --sps or "
    "--fen the job covers all 960 start positions. Give several FENs as quoted arguments, one FEN "
    "each. Submitting again with the same --request-id returns the same job.",
    {{"depth", Arity::kOne, "D", "depth in plies"},
     {"sps", Arity::kOne, "LIST", "start position numbers and ranges, e.g. 0-9,518"},
     {"fen", Arity::kMany, "FEN", "root positions"},
     {"split-depth", Arity::kOne, "K", "split each root at ply K into units (default: automatic)"},
     {"request-id", Arity::kOne, "ID", "idempotency key (default: a random one, so retries are safe)"},
     kCoordinatorOption},
    1};

int cmd_submit_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kSubmitSpec, argv, &inv)) return *rc;
  const ParsedArgs& p = inv.args;
  if (p.positional().size() != 1 || p.positional()[0] != "perft")
    return usage_fail("submit", absl::InvalidArgumentError("give the job kind: c960 submit perft ..."));
  if (!p.has("depth")) return usage_fail("submit", absl::InvalidArgumentError("--depth is required"));
  absl::StatusOr<long long> depth = p.get_int("depth", 0, 0, 1000);
  if (!depth.ok()) return usage_fail("submit", depth.status());
  if (p.has("sps") && p.has("fen"))
    return usage_fail("submit", absl::InvalidArgumentError("give --sps or --fen, not both"));
  v1::SubmitJobRequest req;
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
  std::cout << "submitted perft depth " << spec->depth() << ": " << job.progress().units_total()
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

// ---- watch

const CommandSpec kWatchSpec = {
    "watch", "c960 watch JOB",
    "Shows the job's progress (units, nodes, rate, ETA, workers) until it ends. Exits 0 when it "
    "succeeds, 1 when it fails or is cancelled. Rides out coordinator restarts.",
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
        std::cout << "\r" << progress_line(job) << "   " << std::flush;
      } else if (final || (job.progress().units_done() != last_done && now - last_print > std::chrono::seconds(2))) {
        std::cout << progress_line(job) << std::endl;
        last_print = now;
        last_done = job.progress().units_done();
      }
      if (final) {
        if (tty) std::cout << "\n";
        if (job.result_mismatches() > 0)
          std::cout << "RESULT MISMATCHES: " << job.result_mismatches() << "; first: " << job.mismatch_detail() << "\n";
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
    "results", "c960 results JOB [--format csv|json] [--divide] [--out FILE]",
    "Writes a finished job's results. CSV has the header 'sp,fen,depth,nodes' like "
    "'c960 perft --table' (with --divide: 'sp,fen,depth,move,nodes', one row per first move); "
    "JSON is an array of objects. Exits 1 while the job is unfinished.",
    {{"format", Arity::kOne, "csv|json", "output format (default csv)"},
     {"divide", Arity::kFlag, "", "counts below each first move"},
     {"out", Arity::kOne, "FILE", "write here instead of stdout"},
     kCoordinatorOption},
    1};

int cmd_results_impl(const std::vector<std::string>& argv) {
  Invocation inv;
  if (auto rc = start(kResultsSpec, argv, &inv)) return *rc;
  const ParsedArgs& p = inv.args;
  if (p.positional().size() != 1) return usage_fail("results", absl::InvalidArgumentError("give the job id"));
  const std::string format = p.get("format", "csv");
  if (format != "csv" && format != "json")
    return usage_fail("results", absl::InvalidArgumentError("--format: use csv or json"));
  const bool divide = p.has("divide");
  std::vector<v1::PerftRootResult> rows;
  grpc::Status s = with_retry(
      [&] {
        rows.clear();
        grpc::ClientContext ctx;
        set_deadline(ctx, cluster::kSubmitDeadlineMs);
        v1::GetResultsRequest req;
        req.set_job_id(p.positional()[0]);
        req.set_divide(divide);
        auto reader = inv.stub->GetResults(&ctx, req);
        v1::ResultChunk chunk;
        while (reader->Read(&chunk))
          if (chunk.has_perft()) rows.push_back(chunk.perft());
        return reader->Finish();
      },
      true);
  if (!s.ok()) return rpc_fail("results", inv.address, s);
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
