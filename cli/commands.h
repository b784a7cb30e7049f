// The c960 subcommands, callable in-process. Each takes the words after its name and returns
// the exit code (cli/exit_codes.h); output goes to io.out, problems to io.err.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "cli/command.h"

namespace c960::cli {

struct CommandSpec;  // cli/args.h

// A command: the words after its name in, the exit code out.
using CommandFn = int (*)(const std::vector<std::string>& args, const Io& io);

// The whole tool: `args` are the words after the program name ("perft", "--depth", "3", ...).
// Every command runs in process (cli/run.cpp, in c960_cli: what c960-cluster and the tests run).
int run(const std::vector<std::string>& args, const Io& io);
// The same, each command's function given by `find` (never nullptr for a name of
// command_names()): help, version and unknown names are answered here. The c960 binary
// (cli/main.cpp) finds the local commands (local_command) and executes c960-cluster for the others.
int run_with(const std::vector<std::string>& args, const Io& io, CommandFn (*find)(std::string_view name));
// The names of the subcommands, in the order `c960 --help` lists them, and that list (`c960
// --help`) at `width` columns (0: a line per command).
std::vector<std::string> command_names();
std::string usage_text(int width);
// A command's one-line summary as `c960 --help` shows it; "" for a name that is none.
std::string command_summary(std::string_view name);
// The function of a command that needs only the core and the engine (startpos, perft, perftree,
// uci: library c960_cli_local, all that the c960 binary links); nullptr for the others, whose
// code links gRPC, protobuf or OpenSSL and lives in c960-cluster (library c960_cli).
CommandFn local_command(std::string_view name);
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
