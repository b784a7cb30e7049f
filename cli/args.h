// Command-line parsing for the c960 subcommands. absl/flags serves the daemons, whose flags are
// process-wide; a tool with subcommands, per-subcommand --help and multi-value options
// (--moves e2e4 e7e5) needs this small parser instead.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "cli/command.h"

namespace c960::cli {

enum class Arity { kFlag, kOne, kMany };

struct OptionSpec {
  std::string name;  // without the leading "--"
  Arity arity;
  std::string metavar;
  std::string help;
};

struct CommandSpec {
  std::string name;
  std::string usage;    // one or more usage lines
  std::string summary;  // a paragraph
  std::vector<OptionSpec> options;
  int max_positional = 0;  // plain words allowed outside options
  // The words the first positional may be (submit perft|selfplay), for shell completion.
  std::vector<std::string> first_words = {};
};

class ParsedArgs {
 public:
  bool has(const std::string& name) const { return values_.count(name) > 0; }
  // The value of a kOne option, or `fallback`.
  std::string get(const std::string& name, const std::string& fallback = "") const;
  const std::vector<std::string>& all(const std::string& name) const;
  // Integer value checked against [lo, hi]; the error names the option.
  absl::StatusOr<long long> get_int(const std::string& name, long long fallback, long long lo, long long hi) const;
  const std::vector<std::string>& positional() const { return positional_; }

 private:
  friend absl::StatusOr<ParsedArgs> parse_args(const CommandSpec&, const std::vector<std::string>&);
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positional_;
};

// --threads N in 0..1024, 0 meaning one per CPU (as c960-worker --threads 0); default 1.
absl::StatusOr<long long> threads_option(const ParsedArgs& p);

// Unknown options, missing values and repeated single options are errors that name the option.
absl::StatusOr<ParsedArgs> parse_args(const CommandSpec& spec, const std::vector<std::string>& args);

// The name among `names` closest to a mistyped one, as git's "did you mean": an edit distance
// (insertions, deletions, substitutions, swaps of neighbours) of at most 1, or 2 for names of 6
// characters or more; the first such name when several tie. nullopt when none is that close.
std::optional<std::string> closest_name(std::string_view typed, const std::vector<std::string>& names);
// The start of every subcommand: on --help or -h (anywhere) prints the help on io.out, on bad
// usage fails with "c960 NAME: problem", and returns the exit code to leave with (0 or 2);
// otherwise fills *out and returns nullopt.
std::optional<int> parse_command(const CommandSpec& spec, const std::vector<std::string>& args, const Io& io,
                                 ParsedArgs* out);
// The --help text, wrapped to `width` columns (cluster/text_wrap.h; 0: a line per paragraph
// and option); the commands print it at the terminal's width (cluster::stdout_columns).
std::string help_text(const CommandSpec& spec, int width = 0);

}  // namespace c960::cli
