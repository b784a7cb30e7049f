// Shell completion for the c960 tool, made from the tables its parser uses (command_table():
// each command's CommandSpec and OptionSpecs), so that completion never drifts from the
// commands: a new option completes as soon as the parser takes it.
#pragma once

#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/commands.h"

namespace c960::cli {

// What completes after an option that takes a value, read from its metavar: the lowercase
// alternatives of "text|json" or "builtin|PATH|NAME=PATH" as words, files where it names a FILE,
// PATH or DIR; nothing where it is a number or a free value.
struct ValueCompletion {
  std::vector<std::string> words;
  bool files = false;
};
ValueCompletion value_completion(const OptionSpec& option);

// A bash script (complete -F _c960 c960): commands, each command's options, option values as
// above, the first word of commands that have a fixed set (submit perft|selfplay).
std::string bash_completion(const std::vector<CommandInfo>& commands);
// A zsh script (#compdef c960, _arguments per command with each option's help), for $fpath as
// _c960 or for `source <(c960 completion zsh)` after compinit.
std::string zsh_completion(const std::vector<CommandInfo>& commands);

}  // namespace c960::cli
