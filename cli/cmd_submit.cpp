// c960 submit perft|selfplay: a job for the cluster. A random request id unless one is given,
// so that the client's retries cannot create two jobs.
#include <algorithm>
#include <random>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/commands.h"
#include "cli/evaluation_args.h"
#include "cli/selfplay_args.h"
#include "cli/watch.h"
#include "cluster/config.h"
#include "cluster/evaluation_proto.h"
#include "cluster/selfplay_proto.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "submit";

const std::vector<OptionSpec> kPerftOptions = {
    {"depth", Arity::kOne, "D",
     absl::StrCat("perft: depth in plies; selfplay: depth limit per move (1..", selfplay::kMaxDepthLimit, ")")},
    {"sps", Arity::kOne, "LIST",
     absl::StrCat("start position numbers and ranges, e.g. 0-9,518 (default ", selfplay::kDefaultPositions, ")")},
    {"sp", Arity::kOne, "N", "one start position, 0..959 (as --sps N)"},
    {"fen", Arity::kMany, "FEN",
     "perft: root positions; selfplay: play from these positions (FEN, X-FEN or Shredder-FEN; ids 1, 2, ...)"},
    {"split-depth", Arity::kOne, "K", "perft: split each root at ply K into units (default: automatic)"},
};

const CommandSpec kSpec = {
    kName,
    "c960 submit perft --depth D [--sp N | --sps 0-959 | --fen FEN ...] [--split-depth K] [--request-id ID]\n"
    "       c960 submit selfplay [--sp N | --sps RANGE | --fen FEN ... | --epd FILE | --dfrc RANGE] [--random N]\n"
    "                  --games-per-position N --engine builtin|NAME\n"
    "                  [--option NAME=VALUE ...] (--nodes N | --depth D | --movetime MS | --tc BASE[+INC])\n"
    "                  [--random-plies K] [--seed S] [--games-per-unit G] [--request-id ID]\n"
    "                  [--store-games all|none|sample:N]\n"
    "                  [--opponent builtin|NAME [--opponent-option NAME=VALUE ...] [--sprt elo0=E,elo1=E]]\n"
    "       c960 submit evaluation [--sp N | --sps RANGE] --engine builtin|NAME ... [--option [ENGINE:]NAME=VALUE "
    "...]\n"
    "                  (--depth D | --nodes N) [--hash MB] [--positions-per-unit K] [--request-id ID]\n"
    "       (all: [--verify off|adaptive|all|hosts] [--watch] [--quiet])",
    "Submits a job to the coordinator and prints its id as the last word. Without --sps (or "
    "--fen; for selfplay also --epd or --dfrc) the job covers all 960 start positions. Give several FENs as quoted "
    "arguments, one FEN each. A self-play job takes the options of 'c960 selfplay' that define "
    "the games; the engine is a NAME the workers offer (c960-worker --engine NAME=PATH; builtin "
    "always), never a path. With --opponent NAME the job is a match of two engines, played by workers that offer "
    "both: colour-reversed pairs as in 'c960 selfplay --opponent', and 'c960 results' gives the pentanomial "
    "counts, Elo and LOS; with --sprt the job plays rounds of pairs (20 games a position between looks) until the "
    "test decides or --games-per-position. Results are checked by the coordinator and, as --verify says, by "
    "other workers. Submitting again with the same --request-id returns the same job. With --quiet "
    "only the job id is printed (JOB=$(c960 submit ... --quiet)); with --watch the job is then "
    "followed as 'c960 watch' does, with its exit codes. An evaluation job evaluates each position with each "
    "engine as 'c960 evaluate' does (engines by the NAMEs workers offer; a worker gets its units only if it offers "
    "every engine of the job), a unit being a few positions of one engine; 'c960 results' gives its CSV or JSON.",
    [] {
      std::vector<OptionSpec> o = kPerftOptions;
      for (const OptionSpec& sp : selfplay_spec_options())
        if (sp.name != "sps" && sp.name != "sp" && sp.name != "depth" && sp.name != "fen") o.push_back(sp);
      // A cluster job names engines the workers offer, never a path on this machine.
      for (OptionSpec& sp : o)
        if (sp.name == "engine") {
          sp.arity = Arity::kMany;  // an evaluation's engines; one for selfplay
          sp.metavar = "builtin|NAME";
          sp.help =
              "selfplay: the built-in engine, or a UCI engine the workers offer by NAME (c960-worker --engine "
              "NAME=PATH)";
        } else if (sp.name == "opponent") {
          sp.metavar = "builtin|NAME";
          sp.help =
              "selfplay: a match: the second engine (B), builtin or a NAME the workers offer; its units go to workers "
              "that offer both engines";
        }
      for (const OptionSpec& e : evaluation_spec_options())
        if (std::none_of(o.begin(), o.end(), [&](const OptionSpec& q) { return q.name == e.name; })) o.push_back(e);
      o.push_back({"positions-per-unit", Arity::kOne, "K",
                   absl::StrCat("evaluation: positions per unit of work (1..", cluster::kMaxEvaluationPositionsPerUnit,
                                ", default ", cluster::kDefaultEvaluationPositionsPerUnit, ")")});
      o.push_back({"games-per-unit", Arity::kOne, "G",
                   absl::StrCat("selfplay: games per unit of work (1..", cluster::kMaxSelfPlayGamesPerUnit,
                                ", default ", cluster::kDefaultSelfPlayGamesPerUnit, ")")});
      o.push_back({"store-games", Arity::kOne, "all|none|sample:N",
                   "selfplay: which games the coordinator keeps for 'c960 results --pgn': every one (the default), "
                   "none, or the first N of each position; the statistics cover every game whatever this says"});
      o.push_back({"verify", Arity::kOne, "off|adaptive|all|hosts",
                   "how results are checked: all (every unit by two owners: catches lies), adaptive (until an owner "
                   "is trusted, then spot checks; the default), hosts (every unit on two workers of any owners: "
                   "catches faults, not lies), off (once; the default for --movetime games)"});
      o.push_back({"audit-rate", Arity::kOne, "R",
                   "share of units a trust root computes again before they settle (0..1; default: the "
                   "coordinator's --audit-rate when it has trust roots)"});
      o.push_back({"request-id", Arity::kOne, "ID", "idempotency key (default: a random one, so retries are safe)"});
      o.push_back({"watch", Arity::kFlag, "", "then follow the job as 'c960 watch JOB' does, with its exit codes"});
      o.push_back({"quiet", Arity::kFlag, "", "print only the job id"});
      return with_cluster_options(std::move(o));
    }(),
    1,
    {"perft", "selfplay", "evaluation"}};

// The self-play part of submit: the same options and checks as the local command.
absl::Status selfplay_request(const ParsedArgs& p, v1::SubmitJobRequest* req) {
  for (const char* perft_only : {"split-depth"})
    if (p.has(perft_only))
      return absl::InvalidArgumentError(absl::StrCat("--", perft_only, ": not an option of selfplay"));
  if (p.has("engine") && p.all("engine").size() > 1)
    return absl::InvalidArgumentError("--engine: selfplay takes one engine (a match: --opponent)");
  for (const char* evaluation_only : {"positions-per-unit", "multipv"})
    if (p.has(evaluation_only))
      return absl::InvalidArgumentError(absl::StrCat("--", evaluation_only, ": not an option of selfplay"));
  // Workers offer engines by name; a job never makes them start a program of its choosing.
  for (const char* option : {"engine", "opponent"})
    if (p.has(option) && (p.get(option).find('/') != std::string::npos || p.get(option).find('=') != std::string::npos))
      return absl::InvalidArgumentError(absl::StrCat("--", option, ": '", p.get(option),
                                                     "' is a path; name an engine the workers offer (builtin, or NAME "
                                                     "from c960-worker --engine NAME=PATH)"));
  absl::StatusOr<selfplay::SelfPlaySpec> spec = selfplay_spec_from_args(p);
  if (!spec.ok()) return spec.status();
  v1::SelfPlayJobSpec* s = req->mutable_spec()->mutable_selfplay();
  *s = selfplay::spec_to_proto(*spec);
  if (p.has("games-per-unit")) {
    absl::StatusOr<long long> g = p.get_int("games-per-unit", 0, 1, cluster::kMaxSelfPlayGamesPerUnit);
    if (!g.ok()) return g.status();
    s->set_games_per_unit(int(*g));
  }
  if (p.has("store-games")) {
    const std::string v = p.get("store-games");
    long long n = 0;
    if (v == "all") {
      s->set_store_games(v1::STORE_GAMES_ALL);
    } else if (v == "none") {
      s->set_store_games(v1::STORE_GAMES_NONE);
    } else if (v.size() > 7 && v.compare(0, 6, "sample") == 0 && (v[6] == ':' || v[6] == ' ' || v[6] == '=') &&
               absl::SimpleAtoi(v.substr(7), &n) && n >= 1 && n <= (1 << 30)) {
      s->set_store_games(v1::STORE_GAMES_SAMPLE);
      s->set_store_games_sample(int(n));
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("--store-games: '", v.substr(0, 64), "' is not all, none or sample:N (N in 1..", 1 << 30, ")"));
    }
  }
  return absl::OkStatus();
}

// The evaluation part: the options of 'c960 evaluate' that define it, engines by name.
absl::Status evaluation_request(const ParsedArgs& p, v1::SubmitJobRequest* req) {
  const std::vector<OptionSpec> own = evaluation_spec_options();
  for (const OptionSpec& o : kSpec.options) {
    const bool allowed = o.name == "request-id" || o.name == "verify" || o.name == "audit-rate" || o.name == "watch" ||
                         o.name == "quiet" || o.name == "positions-per-unit" || is_cluster_option(o.name) ||
                         std::any_of(own.begin(), own.end(), [&](const OptionSpec& q) { return q.name == o.name; });
    if (!allowed && p.has(o.name))
      return absl::InvalidArgumentError(absl::StrCat("--", o.name, ": not an option of evaluation"));
  }
  absl::StatusOr<selfplay::EvalSpec> spec = evaluation_spec_from_args(p, true);
  if (!spec.ok()) return spec.status();
  v1::EvaluationJobSpec* e = req->mutable_spec()->mutable_evaluation();
  *e = cluster::evaluation_spec_to_proto(*spec);
  // The positions as given ("0-959" stays short).
  e->set_start_positions(p.has("sp") ? p.get("sp") : p.get("sps", ""));
  if (p.has("positions-per-unit")) {
    absl::StatusOr<long long> k = p.get_int("positions-per-unit", 0, 1, cluster::kMaxEvaluationPositionsPerUnit);
    if (!k.ok()) return k.status();
    e->set_positions_per_unit(int(*k));
  }
  return absl::OkStatus();
}

// The perft part; the coordinator checks the ranges of depth and split depth and names the field.
absl::Status perft_request(const ParsedArgs& p, v1::SubmitJobRequest* req) {
  for (const OptionSpec& o : kSpec.options) {
    const bool perft_option =
        o.name == "request-id" || o.name == "verify" || o.name == "audit-rate" || o.name == "watch" ||
        o.name == "quiet" || is_cluster_option(o.name) ||
        std::any_of(kPerftOptions.begin(), kPerftOptions.end(), [&](const OptionSpec& q) { return q.name == o.name; });
    if (!perft_option && p.has(o.name))
      return absl::InvalidArgumentError(absl::StrCat("--", o.name, ": not an option of perft"));
  }
  if (!p.has("depth")) return absl::InvalidArgumentError("--depth is required");
  absl::StatusOr<long long> depth = p.get_int("depth", 0, 0, 1000);
  if (!depth.ok()) return depth.status();
  if (int(p.has("sps")) + int(p.has("sp")) + int(p.has("fen")) > 1)
    return absl::InvalidArgumentError("give one of --sp, --sps and --fen");
  v1::PerftJobSpec* spec = req->mutable_spec()->mutable_perft();
  spec->set_depth(int(*depth));
  if (p.has("sps")) spec->set_start_positions(p.get("sps"));
  if (p.has("sp")) {
    absl::StatusOr<long long> sp = p.get_int("sp", 0, 0, 959);
    if (!sp.ok()) return sp.status();
    spec->set_start_positions(absl::StrCat(*sp));
  }
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
    if (!k.ok()) return k.status();
    spec->set_split_depth(int(*k));
  }
  return absl::OkStatus();
}

}  // namespace

int cmd_submit(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  if (p.positional().empty()) return fail(io, kName, "give the job kind: c960 submit perft|selfplay|evaluation ...");
  if (p.positional()[0] != "perft" && p.positional()[0] != "selfplay" && p.positional()[0] != "evaluation")
    return fail(io, kName, absl::StrCat("'", p.positional()[0], "' is not a job kind (perft, selfplay or evaluation)"));
  if (p.positional().size() > 1) return fail(io, kName, absl::StrCat("unexpected argument '", p.positional()[1], "'"));
  v1::SubmitJobRequest req;
  const absl::Status built = p.positional()[0] == "selfplay"     ? selfplay_request(p, &req)
                             : p.positional()[0] == "evaluation" ? evaluation_request(p, &req)
                                                                 : perft_request(p, &req);
  if (!built.ok()) return fail(io, kName, built);
  if (p.has("verify")) {
    const std::string v = p.get("verify");
    if (v == "off")
      req.mutable_spec()->set_verify(v1::VERIFY_MODE_OFF);
    else if (v == "adaptive")
      req.mutable_spec()->set_verify(v1::VERIFY_MODE_ADAPTIVE);
    else if (v == "all" || v == "owners")
      req.mutable_spec()->set_verify(v1::VERIFY_MODE_ALL);
    else if (v == "hosts")
      req.mutable_spec()->set_verify(v1::VERIFY_MODE_HOSTS);
    else
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--verify: '", v, "' is not off, adaptive, all or hosts")));
  }
  if (p.has("audit-rate")) {
    double r = -1;
    if (!absl::SimpleAtod(p.get("audit-rate"), &r) || !(r >= 0 && r <= 1))
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--audit-rate: '", p.get("audit-rate"), "' is not in 0..1")));
    req.mutable_spec()->set_audit_rate(r);
  }
  if (p.has("request-id")) {
    req.set_request_id(p.get("request-id"));
  } else {
    std::random_device rd;
    req.set_request_id(absl::StrFormat("c960-submit-%08x%08x", rd(), rd()));
  }
  absl::StatusOr<cluster::ChannelOptions> connection = connection_options(p);
  if (!connection.ok()) return fail(io, kName, connection.status());
  Client client(*connection);
  v1::Job job;
  if (absl::Status s = client.submit(req, &job); !s.ok()) return rpc_fail(io, kName, client, s);
  // What would keep the job waiting, said now (no worker offers its engine, or verification
  // needs a second credential that no connected worker has): on stderr, and before the job id,
  // which stays the last word printed (`JOB=$(... --quiet)` reads the id alone).
  if (!job.notice().empty()) io.err << "c960 submit: note: job " << job.id() << " is " << job.notice() << std::endl;
  if (p.has("quiet")) {
    io.out << job.id() << "\n";
  } else if (job.spec().has_evaluation()) {
    io.out << "submitted evaluation: " << job.progress().units_total() << " units; job " << job.id() << "\n";
  } else if (job.spec().has_selfplay()) {
    io.out << "submitted selfplay: " << job.progress().games_total() << " games in " << job.progress().units_total()
           << " units; job " << job.id() << "\n";
  } else {
    io.out << "submitted perft depth " << job.spec().perft().depth() << ": " << job.progress().units_total()
           << " units at split depth " << job.split_depth() << "; job " << job.id() << "\n";
  }
  if (p.has("watch")) return follow_job(client, job.id(), io, kName);
  return kExitOk;
}

const CommandSpec& submit_spec() { return kSpec; }

}  // namespace c960::cli
