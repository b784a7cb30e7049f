#include "cli/evaluation_args.h"

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "core/startpos.h"

namespace c960::cli {

std::vector<OptionSpec> evaluation_spec_options() {
  return {
      {"sps", Arity::kOne, "LIST", "start position numbers and ranges, e.g. 0-9,518 (default 0-959)"},
      {"sp", Arity::kOne, "N", "one start position, 0..959 (as --sps N)"},
      {"engine", Arity::kMany, "builtin|ENGINE",
       absl::StrCat("the engines, 1..", selfplay::kMaxEvalEngines,
                    " (repeatable): builtin, or a UCI engine (c960 evaluate: PATH or NAME=PATH; a job: a NAME the "
                    "workers offer)")},
      {"option", Arity::kMany, "[ENGINE:]NAME=VALUE",
       "a UCI option for an engine (repeatable); with several engines prefixed by the engine as given to --engine"},
      {"depth", Arity::kOne, "D", absl::StrCat("search depth, 1..", selfplay::kMaxEvalDepth)},
      {"nodes", Arity::kOne, "N",
       absl::StrCat("nodes per search, 1..", selfplay::kMaxNodesLimit, " (instead of --depth)")},
      {"multipv", Arity::kOne, "1", "principal variations kept: 1 (the only choice)"},
      {"hash", Arity::kOne, "MB",
       absl::StrCat("the built-in engine's hash, 1..", selfplay::kMaxHashMb, " (default ", selfplay::kDefaultHashMb,
                    ")")},
      {"engine-timeout", Arity::kOne, "MS",
       absl::StrCat("a UCI engine's search at most, ", selfplay::kMinEngineTimeoutMs, "..",
                    selfplay::kMaxEngineTimeoutMs, " (default ", selfplay::kDefaultEngineTimeoutMs, ")")},
  };
}

absl::StatusOr<selfplay::EvalSpec> evaluation_spec_from_args(const ParsedArgs& p, bool job) {
  selfplay::EvalSpec spec;
  if (p.has("sps") && p.has("sp")) return absl::InvalidArgumentError("give one of --sp and --sps");
  std::string sps = p.has("sp") ? p.get("sp") : p.get("sps", "0-959");
  absl::StatusOr<std::vector<int>> positions = parse_sp_ranges(sps);
  if (!positions.ok())
    return absl::InvalidArgumentError(absl::StrCat(p.has("sp") ? "--sp: " : "--sps: ", positions.status().message()));
  spec.positions = *std::move(positions);
  if (!p.has("engine")) return absl::InvalidArgumentError("--engine is required (builtin, or a UCI engine)");
  for (const std::string& e : p.all("engine")) {
    if (job && (e.find('/') != std::string::npos || e.find('=') != std::string::npos))
      return absl::InvalidArgumentError(absl::StrCat("--engine: '", e,
                                                     "' is a path; name an engine the workers offer (builtin, or NAME "
                                                     "from c960-worker --engine NAME=PATH)"));
    // A local run names an engine NAME=PATH (its rows say NAME), or by its path alone.
    const size_t eq = e.find('=');
    if (!job && eq != std::string::npos && eq > 0 && eq + 1 < e.size())
      spec.engines.push_back({e.substr(0, eq), e.substr(eq + 1), {}, std::nullopt});
    else
      spec.engines.push_back({e, "", {}, std::nullopt});
  }
  if (p.has("option"))
    for (const std::string& text : p.all("option")) {
      selfplay::EvalEngine* target = nullptr;
      std::string assignment = text;
      for (selfplay::EvalEngine& e : spec.engines)
        if (absl::StartsWith(text, e.name + ":")) {
          target = &e;
          assignment = text.substr(e.name.size() + 1);
        }
      if (!target && spec.engines.size() == 1) target = &spec.engines[0];
      if (!target)
        return absl::InvalidArgumentError(absl::StrCat(
            "--option: '", text, "' does not say its engine: ENGINE:NAME=VALUE, ENGINE as given to --engine"));
      absl::StatusOr<selfplay::UciOptionValue> v = selfplay::parse_option_assignment(assignment);
      if (!v.ok()) return absl::InvalidArgumentError(absl::StrCat("--option: ", v.status().message()));
      target->options.push_back(*std::move(v));
    }
  if (p.has("depth") == p.has("nodes")) return absl::InvalidArgumentError("give one of --depth and --nodes");
  if (p.has("depth")) {
    absl::StatusOr<long long> d = p.get_int("depth", 0, 1, selfplay::kMaxEvalDepth);
    if (!d.ok()) return d.status();
    spec.depth = int(*d);
  } else {
    absl::StatusOr<long long> n = p.get_int("nodes", 0, 1, (long long)selfplay::kMaxNodesLimit);
    if (!n.ok()) return n.status();
    spec.nodes = uint64_t(*n);
  }
  if (p.has("multipv") && p.get("multipv") != "1")
    return absl::InvalidArgumentError(
        absl::StrCat("--multipv: '", p.get("multipv"), "' is not 1: an evaluation keeps one principal variation"));
  absl::StatusOr<long long> hash = p.get_int("hash", selfplay::kDefaultHashMb, 1, selfplay::kMaxHashMb);
  if (!hash.ok()) return hash.status();
  spec.hash_mb = int(*hash);
  absl::StatusOr<long long> timeout = p.get_int("engine-timeout", selfplay::kDefaultEngineTimeoutMs,
                                                selfplay::kMinEngineTimeoutMs, selfplay::kMaxEngineTimeoutMs);
  if (!timeout.ok()) return timeout.status();
  spec.engine_timeout_ms = int(*timeout);
  if (absl::Status s = selfplay::validate_evaluation(spec); !s.ok()) {
    // The spec's field names, as the options that set them.
    std::string m(s.message());
    if (absl::StartsWith(m, "positions:")) m = "--sps:" + m.substr(10);
    if (absl::StartsWith(m, "depth:")) m = "--" + m;
    if (absl::StartsWith(m, "nodes:")) m = "--" + m;
    if (const size_t close = m.find(']'); absl::StartsWith(m, "engines[") && close != std::string::npos) {
      const size_t k = size_t(std::atoi(m.c_str() + 8));
      const std::string name = k < spec.engines.size() ? spec.engines[k].name : "?";
      const std::string rest = m.substr(close + 1);
      m = absl::StartsWith(rest, ".options:") ? absl::StrCat("--option (engine '", name, "'):", rest.substr(9))
                                              : absl::StrCat("--engine '", name, "'", rest);
    }
    return absl::InvalidArgumentError(m);
  }
  return spec;
}

}  // namespace c960::cli
