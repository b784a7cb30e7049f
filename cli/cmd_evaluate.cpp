// c960 evaluate: each start position evaluated by each engine at a fixed depth or node count, on
// local threads (selfplay/evaluation.h); the cluster's form is `c960 submit evaluation`.
#include <atomic>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/evaluation_args.h"
#include "cli/progress.h"
#include "cli/table_format.h"
#include "core/version.h"
#include "selfplay/evaluation.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "evaluate";

const CommandSpec kSpec = {
    kName,
    "c960 evaluate [--sps RANGE | --sp N] --engine builtin|PATH|NAME=PATH ... [--option [ENGINE:]NAME=VALUE ...]\n"
    "                     (--depth D | --nodes N) [--hash MB] [--threads T] [--format text|csv|json] [--out FILE]",
    "Evaluates each start position (all 960 by default) with each engine at a fixed depth or node count, and "
    "prints one row per position and engine: the depth the engine reached, the nodes it searched, its score for "
    "White (the side to move) in centipawns or as a mate, its best move and principal variation. Every search "
    "runs on one thread with the engine's hash cleared first (ucinewgame; the built-in engine's tables), and UCI "
    "options Threads and MultiPV may only be 1, so that a deterministic engine gives the same figures on any "
    "machine and in a cluster job ('c960 submit evaluation', whose workers check each other's). UCI engines are "
    "given by path, or as NAME=PATH to name them NAME in the rows, and may take any option they declare (--option "
    "ENGINE:NAME=VALUE with several engines, ENGINE the name or path as given). CSV "
    "columns: sp, fen, engine, depth_limit, nodes_limit, depth, nodes, score_cp (empty for a mate), mate (moves; "
    "negative: White is mated), best_move, pv (moves separated by spaces); JSON carries the same with the run's "
    "metadata. 'c960 report --from SELFPLAY.csv --evaluations FILE' sets the evaluations beside the games' scores.",
    [] {
      std::vector<OptionSpec> o = evaluation_spec_options();
      o.push_back({"threads", Arity::kOne, "T", "positions evaluated at once (default 1; 0: one per CPU)"});
      o.push_back({"format", Arity::kOne, "text|csv|json", "output format (default: text on a terminal, else csv)"});
      o.push_back({"out", Arity::kOne, "FILE", "write here instead of stdout"});
      return o;
    }(),
    0};

}  // namespace

int cmd_evaluate(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs p;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &p)) return *rc;
  absl::StatusOr<selfplay::EvalSpec> spec = evaluation_spec_from_args(p, false);
  if (!spec.ok()) return fail(io, kName, spec.status());
  absl::StatusOr<long long> threads = threads_option(p);
  if (!threads.ok()) return fail(io, kName, threads.status());
  const absl::StatusOr<OutputFormat> format = output_format(
      p.has("format") ? std::optional<std::string>(p.get("format")) : std::nullopt, !p.has("out") && io.out_is_tty);
  if (!format.ok()) return fail(io, kName, format.status());
  if (p.has("out"))
    if (absl::Status s = check_output("--out", p.get("out")); !s.ok()) return fail(io, kName, s);
  const size_t total = spec->positions.size() * spec->engines.size();
  std::atomic<size_t> done{0};
  absl::StatusOr<std::vector<selfplay::EvalRow>> rows;
  {
    ProgressLine progress(io, io.err_is_tty, [&] { return absl::StrCat("evaluated ", done.load(), " of ", total); });
    rows = selfplay::run_evaluation(*spec, int(*threads), [&](size_t n) { done = n; });
  }
  if (!rows.ok()) return fail(io, kName, rows.status());
  std::string text;
  switch (*format) {
    case OutputFormat::kText: text = evaluation_text_table(*rows); break;
    case OutputFormat::kCsv: text = selfplay::evaluations_csv(*rows); break;
    case OutputFormat::kJson: {
      std::vector<std::string> engines;
      for (const selfplay::EvalEngine& e : spec->engines) {
        std::string one = e.name;
        for (const selfplay::UciOptionValue& o : e.options) absl::StrAppend(&one, " ", o.name, "=", o.value);
        engines.push_back(one);
      }
      text = selfplay::evaluations_json(*rows, {{"version", std::string(c960::version())},
                                                {"engines", absl::StrJoin(engines, "; ")},
                                                {"limit", spec->depth > 0 ? absl::StrCat("depth ", spec->depth)
                                                                          : absl::StrCat(spec->nodes, " nodes")},
                                                {"hash_mb", absl::StrCat(spec->hash_mb)}});
      break;
    }
  }
  if (!p.has("out")) {
    io.out << text;
    return kExitOk;
  }
  if (absl::Status s = write_output("--out", p.get("out"), text); !s.ok()) return fail(io, kName, s);
  return kExitOk;
}

const CommandSpec& evaluate_spec() { return kSpec; }

}  // namespace c960::cli
