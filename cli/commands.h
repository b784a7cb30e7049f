// The c960 subcommands, callable in-process. Each takes the words after its name and returns
// the exit code (cli/exit_codes.h); output goes to io.out, problems to io.err.
#pragma once

#include <string>
#include <vector>

#include "cli/command.h"

namespace c960::cli {

struct CommandSpec;  // cli/args.h

// The whole tool: `args` are the words after the program name ("perft", "--depth", "3", ...).
int run(const std::vector<std::string>& args, const Io& io);
// The names of the subcommands, in the order `c960 --help` lists them, and that list (`c960
// --help`) at `width` columns (0: a line per command).
std::vector<std::string> command_names();
std::string usage_text(int width);
// Each command's name, one-line summary and CommandSpec (its options as the parser knows them),
// in the order of command_names(): what `c960 completion` and the man pages are made from.
struct CommandInfo {
  std::string name;
  std::string summary;
  const CommandSpec* spec;
};
std::vector<CommandInfo> command_table();

int cmd_startpos(const std::vector<std::string>& args, const Io& io);
int cmd_perft(const std::vector<std::string>& args, const Io& io);
// perft divide as the perftree debugger expects it.
int cmd_perftree(const std::vector<std::string>& args, const Io& io);
int cmd_selfplay(const std::vector<std::string>& args, const Io& io);
int cmd_evaluate(const std::vector<std::string>& args, const Io& io);
// Clients of the cluster coordinator (cli/client.h).
int cmd_submit(const std::vector<std::string>& args, const Io& io);
int cmd_status(const std::vector<std::string>& args, const Io& io);
int cmd_watch(const std::vector<std::string>& args, const Io& io);
int cmd_results(const std::vector<std::string>& args, const Io& io);
int cmd_cancel(const std::vector<std::string>& args, const Io& io);
int cmd_workers(const std::vector<std::string>& args, const Io& io);
// The coordinator's housekeeping: admin backup.
int cmd_admin(const std::vector<std::string>& args, const Io& io);
// Tokens for a coordinator's --tokens file.
int cmd_token(const std::vector<std::string>& args, const Io& io);
// The UCI front end on stdin and stdout (cli/uci.h).
int cmd_uci(const std::vector<std::string>& args, const Io& io);
// Shell completion scripts made from command_table().
int cmd_completion(const std::vector<std::string>& args, const Io& io);

// Each command's CommandSpec (defined beside the command).
const CommandSpec& startpos_spec();
const CommandSpec& perft_spec();
const CommandSpec& perftree_spec();
const CommandSpec& selfplay_spec();
const CommandSpec& evaluate_spec();
const CommandSpec& submit_spec();
const CommandSpec& status_spec();
const CommandSpec& watch_spec();
const CommandSpec& results_spec();
const CommandSpec& cancel_spec();
const CommandSpec& workers_spec();
const CommandSpec& report_spec();
const CommandSpec& token_spec();
const CommandSpec& admin_spec();
const CommandSpec& uci_spec();
const CommandSpec& completion_spec();

}  // namespace c960::cli
