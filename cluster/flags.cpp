#include "cluster/flags.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/flags/commandlineflag.h"
#include "absl/flags/flag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cluster/log.h"
#include "cluster/text_wrap.h"

// Every daemon's: documented and applied by parse_daemon_flags itself.
ABSL_FLAG(std::string, log_format, "text",
          "text: a line per event with time and level; json: a JSON object per line with structured fields");

namespace c960::cluster {
namespace {

// The flags every daemon has, listed after its own.
const FlagDoc kCommonFlags[] = {{"log_format", "text|json", "C960_LOG_FORMAT"}};

// Flags defined by absl itself (--flagfile, --fromenv, ...) live in absl's own sources.
bool is_own(const absl::CommandLineFlag& f) { return !absl::StrContains(f.Filename(), "absl/"); }

std::string dashed(absl::string_view name) { return absl::StrReplaceAll(name, {{"_", "-"}}); }

const FlagDoc* find_doc(const DaemonCommand& cmd, absl::string_view name) {
  for (const FlagDoc& d : cmd.flags)
    if (d.name == name) return &d;
  for (const FlagDoc& d : kCommonFlags)
    if (d.name == name) return &d;
  return nullptr;
}

// The daemon's flags, then the common ones.
std::vector<FlagDoc> all_docs(const DaemonCommand& cmd) {
  std::vector<FlagDoc> docs = cmd.flags;
  docs.insert(docs.end(), std::begin(kCommonFlags), std::end(kCommonFlags));
  return docs;
}

int usage_error(const DaemonCommand& cmd, const std::string& msg) {
  std::fprintf(stderr, "%s: %s (see %s --help)\n", std::string(cmd.name).c_str(), msg.c_str(),
               std::string(cmd.name).c_str());
  return 2;
}

}  // namespace

std::vector<std::string> own_flag_names() {
  std::vector<std::string> out;
  for (const auto& [name, flag] : absl::GetAllFlags())
    if (is_own(*flag)) out.emplace_back(name);
  std::sort(out.begin(), out.end());
  return out;
}

std::string daemon_help(const DaemonCommand& cmd, int width) {
  const size_t w = size_t(std::max(width, 0));
  std::string s = absl::StrCat(help_usage(cmd.usage, w), "\n", wrap_text(cmd.summary, w), "\noptions:\n");
  constexpr size_t kColumn = 30;
  auto row = [&](const std::string& left, absl::string_view help) { s += help_option(left, help, kColumn, w); };
  for (const FlagDoc& d : all_docs(cmd)) {
    const absl::CommandLineFlag* f = absl::FindCommandLineFlag(d.name);
    if (!f) continue;
    std::string help = f->Help();
    const std::string def = f->DefaultValue();
    if (!def.empty() && !f->IsOfType<bool>()) absl::StrAppend(&help, " (default ", def, ")");
    if (!d.env.empty()) absl::StrAppend(&help, " [env ", d.env, "]");
    row(d.metavar.empty() ? absl::StrCat("--", dashed(d.name)) : absl::StrCat("--", dashed(d.name), " ", d.metavar),
        help);
  }
  row("--help, -h", "show this help");
  row("--version", "print the version");
  return s;
}

std::optional<int> parse_daemon_flags(int argc, char** argv, const DaemonCommand& cmd) {
  // A flag added without documentation would be missing from --help: refuse to start, so that
  // every test that starts the daemon catches it.
  for (const std::string& name : own_flag_names())
    if (!find_doc(cmd, name)) {
      std::fprintf(stderr, "%s: internal error: flag --%s is not documented\n", std::string(cmd.name).c_str(),
                   dashed(name).c_str());
      return 2;
    }
  std::vector<std::string> args(argv + 1, argv + argc);
  for (const std::string& a : args) {
    if (a == "--") break;
    if (a == "--help" || a == "-h" || a == "--helpfull" || a == "--helpshort") {
      std::fputs(daemon_help(cmd, stdout_columns()).c_str(), stdout);
      return 0;
    }
    if (a == "--version") {
      std::printf("%s %s\n", std::string(cmd.name).c_str(), std::string(cmd.version).c_str());
      return 0;
    }
  }
  // Defaults from the environment first, so the command line overrides them.
  for (const FlagDoc& d : all_docs(cmd)) {
    if (d.env.empty()) continue;
    const char* v = std::getenv(std::string(d.env).c_str());
    if (!v || !*v) continue;
    absl::CommandLineFlag* f = absl::FindCommandLineFlag(d.name);
    std::string error;
    if (!f || !f->ParseFrom(v, &error)) return usage_error(cmd, absl::StrCat("$", d.env, ": '", v, "': ", error));
  }
  std::set<std::string> given;  // flags seen on the command line so far
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (!absl::StartsWith(a, "--") || a.size() == 2)
      return usage_error(cmd, absl::StrCat("unexpected argument '", a, "'"));
    std::string name = a.substr(2);
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name.resize(eq);
    }
    std::string key = absl::StrReplaceAll(name, {{"-", "_"}});
    absl::CommandLineFlag* f = absl::FindCommandLineFlag(key);
    if (!f || !is_own(*f) || !find_doc(cmd, key)) return usage_error(cmd, absl::StrCat("unknown flag --", name));
    if (f->IsOfType<bool>()) {
      if (!value) value = "true";
    } else if (!value) {
      if (i + 1 >= args.size()) return usage_error(cmd, absl::StrCat("--", name, " needs a value"));
      value = args[++i];
    }
    // A list flag given again adds to its list (--engine a=/x --engine b=/y); given once, it
    // replaces the default (or the environment's value).
    std::string parsed = *value;
    if (f->IsOfType<std::vector<std::string>>() && given.count(key) && !value->empty())
      if (const std::string so_far = f->CurrentValue(); !so_far.empty()) parsed = absl::StrCat(so_far, ",", *value);
    given.insert(key);
    std::string error;
    if (!f->ParseFrom(parsed, &error)) return usage_error(cmd, absl::StrCat("--", name, ": '", *value, "': ", error));
  }
  const std::string format = absl::GetFlag(FLAGS_log_format);
  const std::optional<LogFormat> log_format = parse_log_format(format);
  if (!log_format) return usage_error(cmd, absl::StrCat("--log-format: '", format, "': use text or json"));
  set_log_format(*log_format);
  return std::nullopt;
}

}  // namespace c960::cluster
