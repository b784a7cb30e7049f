#include "cli/args.h"

#include <algorithm>
#include <charconv>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cluster/text_wrap.h"

namespace c960::cli {

std::string ParsedArgs::get(const std::string& name, const std::string& fallback) const {
  const auto it = values_.find(name);
  return it == values_.end() || it->second.empty() ? fallback : it->second.front();
}

const std::vector<std::string>& ParsedArgs::all(const std::string& name) const {
  static const std::vector<std::string> kEmpty;
  const auto it = values_.find(name);
  return it == values_.end() ? kEmpty : it->second;
}

absl::StatusOr<long long> ParsedArgs::get_int(const std::string& name, long long fallback, long long lo,
                                              long long hi) const {
  if (!has(name)) return fallback;
  const std::string v = get(name);
  long long out = 0;
  const auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  if (v.empty() || ec != std::errc() || p != v.data() + v.size())
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": '", v, "' is not an integer"));
  if (out < lo || out > hi)
    return absl::InvalidArgumentError(absl::StrCat("--", name, ": ", out, " is out of range ", lo, "..", hi));
  return out;
}

std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& names) {
  // Optimal string alignment distance (Damerau-Levenshtein without repeated edits of a substring).
  const auto distance = [](std::string_view a, std::string_view b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
      for (size_t j = 1; j <= b.size(); ++j) {
        d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
        if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
          d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    return d[a.size()][b.size()];
  };
  if (typed.empty() || typed.size() > 64) return std::nullopt;
  std::optional<std::string> best;
  size_t best_distance = 0;
  for (const std::string& n : names) {
    const size_t limit = n.size() >= 6 ? 2 : 1, dist = distance(typed, n);
    if (dist == 0 || dist > limit) continue;
    if (!best || dist < best_distance) {
      best = n;
      best_distance = dist;
    }
  }
  return best;
}

absl::StatusOr<ParsedArgs> parse_args(const CommandSpec& spec, const std::vector<std::string>& args) {
  ParsedArgs out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!absl::StartsWith(a, "--") && int(out.positional_.size()) < spec.max_positional) {
      out.positional_.push_back(a);
      continue;
    }
    if (!absl::StartsWith(a, "--") || a.size() == 2)
      return absl::InvalidArgumentError(
          absl::StrCat("unexpected argument '", a, "' (see c960 ", spec.name, " --help)"));
    std::string name = a.substr(2);
    std::optional<std::string> inline_value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      inline_value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const OptionSpec* opt = nullptr;
    for (const OptionSpec& o : spec.options)
      if (o.name == name) opt = &o;
    if (!opt) {
      std::vector<std::string> names;
      for (const OptionSpec& o : spec.options) names.push_back(o.name);
      const std::optional<std::string> near = closest_name(name, names);
      return absl::InvalidArgumentError(absl::StrCat("unknown option --", name,
                                                     near ? absl::StrCat(": did you mean --", *near, "?") : "",
                                                     " (see c960 ", spec.name, " --help)"));
    }
    if (out.has(name) && opt->arity != Arity::kMany)
      return absl::InvalidArgumentError(absl::StrCat("--", name, " is given more than once"));
    std::vector<std::string>& vals = out.values_[name];
    switch (opt->arity) {
      case Arity::kFlag:
        if (inline_value) return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
        break;
      case Arity::kOne:
        if (inline_value) {
          vals.push_back(*inline_value);
        } else {
          if (i + 1 >= args.size() || (absl::StartsWith(args[i + 1], "--") && args[i + 1].size() > 2))
            return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value (", opt->metavar, ")"));
          vals.push_back(args[++i]);
        }
        break;
      case Arity::kMany:
        if (inline_value) vals.push_back(*inline_value);
        while (i + 1 < args.size() && !absl::StartsWith(args[i + 1], "--")) vals.push_back(args[++i]);
        if (vals.empty())
          return absl::InvalidArgumentError(absl::StrCat("--", name, " needs at least one value (", opt->metavar, ")"));
        break;
    }
  }
  return out;
}

std::optional<int> parse_command(const CommandSpec& spec, const std::vector<std::string>& args, const Io& io,
                                 ParsedArgs* out) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      io.out << help_text(spec, cluster::stdout_columns());
      return kExitOk;
    }
  absl::StatusOr<ParsedArgs> p = parse_args(spec, args);
  if (!p.ok()) return fail(io, spec.name, p.status());
  *out = std::move(*p);
  return std::nullopt;
}

std::string help_text(const CommandSpec& spec, int width) {
  constexpr size_t kColumn = 28;
  const size_t w = size_t(std::max(width, 0));
  std::string s =
      absl::StrCat(cluster::help_usage(spec.usage, w), "\n", cluster::wrap_text(spec.summary, w), "\noptions:\n");
  for (const OptionSpec& o : spec.options) {
    std::string left = absl::StrCat("--", o.name);
    if (o.arity == Arity::kOne) absl::StrAppend(&left, " ", o.metavar);
    if (o.arity == Arity::kMany) absl::StrAppend(&left, " ", o.metavar, " ...");
    s += cluster::help_option(left, o.help, kColumn, w);
  }
  s += cluster::help_option("--help", "show this help", kColumn, w);
  return s;
}

absl::StatusOr<long long> threads_option(const ParsedArgs& p) {
  absl::StatusOr<long long> n = p.get_int("threads", 1, 0, 1024);
  if (!n.ok() || *n > 0) return n;
  return std::clamp<long long>(std::thread::hardware_concurrency(), 1, 1024);
}

}  // namespace c960::cli
