// c960: the command-line tool for local work with Chess960 positions and perft.
#include <cstdio>
#include <string>
#include <vector>

#include "cli/commands.h"

namespace {

struct Subcommand {
  const char* name;
  const char* summary;
  int (*run)(const std::vector<std::string>&);
};

constexpr Subcommand kCommands[] = {
    {"startpos", "FEN and number of Chess960 start positions", c960::cli::cmd_startpos},
    {"perft", "count leaf nodes: one position, a suite, or a table over start positions", c960::cli::cmd_perft},
    {"selfplay", "play engine games from start positions; per-position results with error bars", c960::cli::cmd_selfplay},
    {"submit", "submit a job to the cluster coordinator", c960::cli::cmd_submit},
    {"status", "show cluster jobs and their progress", c960::cli::cmd_status},
    {"watch", "follow a cluster job until it ends", c960::cli::cmd_watch},
    {"results", "fetch a cluster job's results as CSV or JSON", c960::cli::cmd_results},
    {"cancel", "cancel a cluster job", c960::cli::cmd_cancel},
};

void usage(FILE* out) {
  std::fprintf(out, "usage: c960 <command> [options]   (c960 <command> --help for details)\n\ncommands:\n");
  for (const Subcommand& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    usage(stderr);
    return c960::cli::kExitUsage;
  }
  const std::string name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return c960::cli::kExitOk;
  }
  for (const Subcommand& c : kCommands)
    if (name == c.name) return c.run(std::vector<std::string>(argv + 2, argv + argc));
  std::fprintf(stderr, "c960: unknown command '%s'\n", name.c_str());
  usage(stderr);
  return c960::cli::kExitUsage;
}
