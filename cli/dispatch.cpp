// The c960 tool's command list and its dispatch, shared by the two binaries: `c960` (the local
// commands in process, the others by exec of c960-cluster) and c960-cluster (every command).
#include <algorithm>
#include <string_view>

#include "cli/args.h"
#include "cli/commands.h"
#include "cluster/text_wrap.h"
#include "core/bitboard.h"
#include "core/version.h"

namespace c960::cli {
namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  CommandFn local;  // the local commands' function (cli/main.cpp runs them in process), else nullptr
};

constexpr Subcommand kCommands[] = {
    {"startpos", "FEN and number of Chess960 start positions", cmd_startpos},
    {"perft", "count leaf nodes: one position, a suite, or a table over start positions", cmd_perft},
    {"perftree", "perft divide for the perftree debugger: perftree DEPTH FEN [MOVES]", cmd_perftree},
    {"selfplay", "play engine games from start positions; per-position results with error bars", nullptr},
    {"evaluate", "evaluate start positions with engines at a fixed depth or node count", nullptr},
    {"submit", "submit a job to the cluster coordinator", nullptr},
    {"status", "show cluster jobs and their progress", nullptr},
    {"watch", "follow a cluster job until it ends", nullptr},
    {"results", "fetch a cluster job's results as CSV or JSON", nullptr},
    {"cancel", "cancel a cluster job", nullptr},
    {"workers", "list the cluster's workers and their trust state", nullptr},
    {"report", "an HTML report (heatmap, statistics, charts) of a job or a results table", nullptr},
    {"admin", "the coordinator's housekeeping: admin backup copies its store now", nullptr},
    {"token", "make a token for the coordinator's --tokens file (token new --role R --name N)", nullptr},
    {"uci", "a UCI engine on stdin/stdout (perft, the built-in engine) for GUIs and match runners", cmd_uci},
    {"completion", "print a bash or zsh completion script: c960 completion bash|zsh", nullptr},
};

void usage(std::ostream& out) { out << usage_text(cluster::stdout_columns()); }

}  // namespace

std::vector<std::string> command_names() {
  std::vector<std::string> names;
  for (const Subcommand& c : kCommands) names.emplace_back(c.name);
  return names;
}

std::string command_summary(std::string_view name) {
  for (const Subcommand& c : kCommands)
    if (name == c.name) return c.summary;
  return "";
}

CommandFn local_command(std::string_view name) {
  for (const Subcommand& c : kCommands)
    if (name == c.name) return c.local;
  return nullptr;
}

std::string usage_text(int width) {
  // The summaries start two columns after the longest name, so that every name is set off from
  // its summary by two spaces at least (help2man, and readers, take one space as part of the text).
  size_t longest = std::string_view("version").size();
  for (const Subcommand& c : kCommands) longest = std::max(longest, std::string_view(c.name).size());
  const size_t kColumn = 2 + longest + 2;
  const size_t w = size_t(std::max(width, 0));
  std::string s = cluster::wrap_text("usage: c960 <command> [options]   (c960 <command> --help for details)", w, "", 7);
  s += "\ncommands:\n";
  for (const Subcommand& c : kCommands) s += cluster::help_option(c.name, c.summary, kColumn, w);
  s += cluster::help_option("version", "print the version and the slider method in use (--version: the version)",
                            kColumn, w);
  return s;
}

int run_with(const std::vector<std::string>& args, const Io& io, CommandFn (*find)(std::string_view name)) {
  if (args.empty()) {
    usage(io.err);
    return kExitUsage;
  }
  const std::string& name = args[0];
  // `help COMMAND` is `COMMAND --help`, as in git and cargo.
  if (name == "help" && args.size() == 2) {
    for (const Subcommand& c : kCommands)
      if (args[1] == c.name) return find(c.name)({"--help"}, io);
    io.err << "c960 help: unknown command '" << args[1] << "'\n";
    usage(io.err);
    return kExitUsage;
  }
  if (name == "help" && args.size() > 2) {
    io.err << "c960 help: give one command\n";
    return kExitUsage;
  }
  if (name == "--help" || name == "-h" || name == "help") {
    usage(io.out);
    return kExitOk;
  }
  if (name == "--version" || name == "version") {
    io.out << "c960 " << version() << "\n";
    // The long form also says which slider lookups this CPU got (core/bitboard.h).
    if (name == "version") io.out << "sliders: " << to_string(sliders()) << "\n";
    return kExitOk;
  }
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  for (const Subcommand& c : kCommands)
    if (name == c.name) return find(c.name)(rest, io);
  std::vector<std::string> names = {"help", "version"};
  for (const Subcommand& c : kCommands) names.push_back(c.name);
  io.err << "c960: unknown command '" << name << "'";
  if (const std::optional<std::string> near = closest_name(name, names)) io.err << ": did you mean '" << *near << "'?";
  io.err << "\n";
  usage(io.err);
  return kExitUsage;
}

}  // namespace c960::cli
