// Issue 21: `c960 completion bash|zsh`, scripts made from the parser's own tables
// (cli/completion.h). The bash script is loaded in bash and its function called as bash's
// completion calls it (COMP_WORDS, COMP_CWORD); the zsh script is checked by `zsh -n` and run in
// zsh with _arguments and _describe replaced by functions that print what they are given.
#include "cli/completion.h"

#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

std::vector<std::string> lines_of(const std::string& text) { return absl::StrSplit(text, '\n', absl::SkipEmpty()); }

// A shell word, single-quoted.
std::string quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

class BashCompletion : public ::testing::Test {
 protected:
  void SetUp() override { test::write_file(script_, cli::bash_completion(cli::command_table())); }
  // What bash's completion offers for the words typed, the last being the one completed.
  std::vector<std::string> complete(const std::vector<std::string>& words, const std::string& cwd = ".") {
    std::vector<std::string> q;
    for (const std::string& w : words) q.push_back(quoted(w));
    const std::string cmd =
        absl::StrCat("cd ", quoted(cwd), " && source ", quoted(script_), " && COMP_WORDS=(", absl::StrJoin(q, " "),
                     ") && COMP_CWORD=", words.size() - 1, " && _c960 && printf '%s\\n' \"${COMPREPLY[@]}\"");
    const test::RunResult r = test::run({"/bin/bash", "-c", cmd});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return lines_of(r.out);
  }
  test::ScratchDir dir_;
  const std::string script_ = dir_.file("c960.bash");
};

using Words = std::vector<std::string>;

TEST_F(BashCompletion, CompletesCommandsOptionsAndValues) {
  EXPECT_EQ(complete({"c960", "sel"}), Words{"selfplay"});
  EXPECT_EQ(complete({"c960", "selfplay", "--games-"}), Words{"--games-per-position"});
  EXPECT_EQ(complete({"c960", "perft", "--di"}), Words{"--divide"});
  EXPECT_EQ(complete({"c960", "perf"}), (Words{"perft", "perftree"}));
  EXPECT_EQ(complete({"c960", "u"}), Words{"uci"});
  EXPECT_EQ(complete({"c960", "help", "sta"}), (Words{"startpos", "status"}));
  // Fixed values: choices from the metavar, the first word of submit and completion.
  EXPECT_EQ(complete({"c960", "status", "--format", ""}), (Words{"text", "json"}));
  EXPECT_EQ(complete({"c960", "status", "--format", "=", "js"}), Words{"json"});  // --format=js
  EXPECT_EQ(complete({"c960", "submit", ""}), (Words{"perft", "selfplay", "evaluation"}));
  EXPECT_EQ(complete({"c960", "completion", "z"}), Words{"zsh"});
  EXPECT_EQ(complete({"c960", "token", "new", "--role", "w"}), Words{"worker"});
  EXPECT_EQ(complete({"c960", "submit", "selfplay", "--verify", "a"}), (Words{"adaptive", "all"}));
  // Files where the option names one; "builtin" and files for selfplay's engine.
  test::write_file(dir_.file("suite.epd"), "");
  EXPECT_EQ(complete({"c960", "perft", "--epd", "sui"}, dir_.path()), Words{"suite.epd"});
  EXPECT_EQ(complete({"c960", "selfplay", "--engine", "b"}, dir_.path()), Words{"builtin"});
  EXPECT_EQ(complete({"c960", "selfplay", "--engine", "s"}, dir_.path()), Words{"suite.epd"});
  // Nothing made up: an unknown command and a number get nothing.
  EXPECT_EQ(complete({"c960", "nosuch", "--"}), Words{});
  EXPECT_EQ(complete({"c960", "perft", "--depth", "1"}, dir_.path()), Words{});
}

// Every option of every command, as the parser knows it, completes from its first letters.
TEST_F(BashCompletion, EveryOptionOfEveryCommandCompletes) {
  std::string cmd = absl::StrCat("source ", quoted(script_), "\n");
  size_t n = 0;
  for (const cli::CommandInfo& c : cli::command_table())
    for (const cli::OptionSpec& o : c.spec->options) {
      absl::StrAppend(&cmd, "COMP_WORDS=(c960 ", c.name, " --", o.name, "); COMP_CWORD=2; _c960; echo \"", c.name,
                      " --", o.name, ": ${COMPREPLY[*]}\"\n");
      ++n;
    }
  ASSERT_GT(n, 100u);
  const test::RunResult r = test::run({"/bin/bash", "-c", cmd});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> l = lines_of(r.out);
  ASSERT_EQ(l.size(), n) << r.out;
  for (const std::string& line : l) {
    const std::string asked = line.substr(0, line.find(':'));
    const std::string option = asked.substr(asked.find(' ') + 1);
    const std::vector<std::string> offered = absl::StrSplit(line.substr(line.find(':') + 1), ' ', absl::SkipEmpty());
    EXPECT_NE(std::find(offered.begin(), offered.end(), option), offered.end()) << line;
  }
}

TEST(ZshCompletion, ParsesAndOffersWhatTheParserTakes) {
  test::ScratchDir dir;
  const std::string script = dir.file("_c960");
  const std::string text = cli::zsh_completion(cli::command_table());
  test::write_file(script, text);
  EXPECT_TRUE(absl::StartsWith(text, "#compdef c960\n"));
  const test::RunResult syntax = test::run({"/usr/bin/zsh", "-n", script});
  ASSERT_EQ(syntax.exit_code, 0) << "zsh -n: " << syntax.err << " (deploy/install-deps.sh installs zsh)";
  // Run it with the completion system's functions replaced by ones that print their arguments.
  const auto run = [&](const std::vector<std::string>& words) {
    std::vector<std::string> q;
    for (const std::string& w : words) q.push_back(quoted(w));
    const std::string cmd = absl::StrCat(
        "_arguments() { print -rl -- \"$@\" }\n"
        "_describe() { print -rl -- \"${(@P)${@[-1]}}\" }\n"
        "compdef() { print -r -- \"compdef $*\" }\n"
        "source ",
        quoted(script), "\nwords=(", absl::StrJoin(q, " "), ")\nCURRENT=", words.size(), "\n_c960\n");
    const test::RunResult r = test::run({"/usr/bin/zsh", "-f", "-c", cmd});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");
    return r.out;
  };
  const std::string commands = run({"c960", ""});
  EXPECT_TRUE(absl::StartsWith(commands, "compdef _c960 c960\n")) << commands;  // sourced, it registers
  for (const cli::CommandInfo& c : cli::command_table())
    EXPECT_TRUE(absl::StrContains(commands, "\n" + c.name + ":")) << c.name << "\n" << commands;
  const std::string perft = run({"c960", "perft", "--"});
  EXPECT_TRUE(absl::StrContains(perft, "\n--depth[depth in plies (1..30; 0 prints 1)]:D: \n")) << perft;
  EXPECT_TRUE(absl::StrContains(perft, "\n--epd[check a perft suite]:FILE:_files\n")) << perft;
  EXPECT_TRUE(absl::StrContains(perft, "\n--divide[print the count below each legal move]\n")) << perft;
  EXPECT_TRUE(absl::StrContains(perft, "\n*--fen[")) << perft;  // takes several words
  const std::string status = run({"c960", "status", "--format", ""});
  EXPECT_TRUE(absl::StrContains(status, ":text|json:(text json)\n")) << status;
  EXPECT_TRUE(absl::StrContains(run({"c960", "submit", ""}), "\n1:submit:(perft selfplay evaluation)\n"));
  // Every option of every command is offered for its command.
  for (const cli::CommandInfo& c : cli::command_table()) {
    const std::string offered = run({"c960", c.name, "--"});
    for (const cli::OptionSpec& o : c.spec->options)
      EXPECT_TRUE(absl::StrContains(offered, absl::StrCat("--", o.name, "["))) << c.name << " --" << o.name;
  }
}

TEST(CompletionCommand, PrintsTheScriptsAndRefusesOtherShells) {
  std::ostringstream out, err;
  const cli::Io io{out, err};
  EXPECT_EQ(cli::run({"completion", "bash"}, io), 0);
  EXPECT_EQ(out.str(), cli::bash_completion(cli::command_table()));
  EXPECT_TRUE(absl::StrContains(out.str(), "complete -o default -F _c960 c960\n"));
  out.str("");
  EXPECT_EQ(cli::run({"completion", "zsh"}, io), 0);
  EXPECT_EQ(out.str(), cli::zsh_completion(cli::command_table()));
  EXPECT_EQ(cli::run({"completion", "fish"}, io), 2);
  EXPECT_TRUE(absl::StrContains(err.str(), "c960 completion: 'fish' is not bash or zsh")) << err.str();
  err.str("");
  EXPECT_EQ(cli::run({"completion"}, io), 2);
  EXPECT_TRUE(absl::StrContains(err.str(), "c960 completion: give the shell: bash or zsh")) << err.str();
}

TEST(CompletionCommand, ValuesFromTheMetavar) {
  const auto v = [](const char* metavar) { return cli::value_completion({"x", cli::Arity::kOne, metavar, ""}); };
  EXPECT_EQ(v("text|csv|json").words, (Words{"text", "csv", "json"}));
  EXPECT_FALSE(v("text|csv|json").files);
  EXPECT_TRUE(v("FILE").files);
  EXPECT_EQ(v("builtin|PATH|NAME=PATH").words, Words{"builtin"});
  EXPECT_TRUE(v("builtin|PATH|NAME=PATH").files);
  EXPECT_EQ(v("all|none|sample:N").words, (Words{"all", "none"}));
  EXPECT_TRUE(v("N").words.empty());
  EXPECT_FALSE(v("N").files);
  EXPECT_TRUE(cli::value_completion({"x", cli::Arity::kFlag, "", ""}).words.empty());
}

}  // namespace
}  // namespace c960
