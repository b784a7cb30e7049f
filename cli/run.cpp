// Every command of the c960 tool, with its parser's table: what c960-cluster and the in-process
// tests run (cli/dispatch.cpp has the list and its dispatch).
#include <cstdlib>
#include <string_view>

#include "cli/args.h"
#include "cli/commands.h"

namespace c960::cli {

int cmd_report(const std::vector<std::string>& args, const Io& io);  // cli/cmd_report.cpp

namespace {

struct Command {
  const char* name;
  CommandFn run;
  const CommandSpec& (*spec)();
};

// Every name of command_names(), in any order.
constexpr Command kCommands[] = {
    {"startpos", cmd_startpos, startpos_spec},
    {"perft", cmd_perft, perft_spec},
    {"perftree", cmd_perftree, perftree_spec},
    {"selfplay", cmd_selfplay, selfplay_spec},
    {"evaluate", cmd_evaluate, evaluate_spec},
    {"submit", cmd_submit, submit_spec},
    {"status", cmd_status, status_spec},
    {"watch", cmd_watch, watch_spec},
    {"results", cmd_results, results_spec},
    {"cancel", cmd_cancel, cancel_spec},
    {"workers", cmd_workers, workers_spec},
    {"report", cmd_report, report_spec},
    {"admin", cmd_admin, admin_spec},
    {"token", cmd_token, token_spec},
    {"uci", cmd_uci, uci_spec},
    {"completion", cmd_completion, completion_spec},
};

const Command& command(std::string_view name) {
  for (const Command& c : kCommands)
    if (name == c.name) return c;
  std::abort();  // a name of command_names() missing above: a programming error
}

CommandFn any_command(std::string_view name) { return command(name).run; }

}  // namespace

std::vector<CommandInfo> command_table() {
  std::vector<CommandInfo> out;
  for (const std::string& name : command_names()) out.push_back({name, command_summary(name), &command(name).spec()});
  return out;
}

int run(const std::vector<std::string>& args, const Io& io) { return run_with(args, io, any_command); }

}  // namespace c960::cli
