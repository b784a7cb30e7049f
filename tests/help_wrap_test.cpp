// Issue 21: --help texts were single lines of 946 to 1,738 characters that a terminal broke
// mid-word. wrap_text (cluster/text_wrap.h) fills words into lines of the terminal's width, and
// every help is built on it: the c960 tool's and each of its commands' (in process), and the
// daemons' (c960-coordinator, c960-worker, c960-healthcheck, run with $COLUMNS).
#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cluster/text_wrap.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "tests/test_paths.h"

namespace c960 {
namespace {

using cluster::help_option;
using cluster::help_usage;
using cluster::wrap_text;

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n');
  if (!lines.empty() && lines.back().empty()) lines.pop_back();
  return lines;
}

std::vector<std::string> words_of(const std::string& text) {
  return absl::StrSplit(text, absl::ByAnyChar(" \n"), absl::SkipEmpty());
}

size_t widest(const std::string& text) {
  size_t w = 0;
  for (const std::string& l : lines_of(text)) w = std::max(w, l.size());
  return w;
}

TEST(WrapText, FillsWordsIntoLinesAndNeverSplitsOne) {
  EXPECT_EQ(wrap_text("aaa bbb ccc", 7), "aaa bbb\nccc\n");
  EXPECT_EQ(wrap_text("aaa bbb ccc", 6), "aaa\nbbb\nccc\n");
  EXPECT_EQ(wrap_text("aaa bbb ccc", 0), "aaa bbb ccc\n");  // no limit
  EXPECT_EQ(wrap_text("a verylongword b", 5), "a\nverylongword\nb\n");
  EXPECT_EQ(wrap_text("  spaces   collapse  ", 80), "spaces collapse\n");
  EXPECT_EQ(wrap_text("one two three", 11, "  -x  ", 6), "  -x  one\n      two\n      three\n");
  EXPECT_EQ(wrap_text("para one\n\npara two", 80), "para one\n\npara two\n");
  EXPECT_EQ(wrap_text("", 80), "\n");
}

TEST(WrapText, KeepsBracketedGroupsWholeWhereTheyFit) {
  EXPECT_EQ(wrap_text("prog [--a A] [-b B]", 17, "", 5, true), "prog [--a A]\n     [-b B]\n");
  EXPECT_EQ(wrap_text("prog [--a A] [-b B]", 17, "", 5, false), "prog [--a A] [-b\n     B]\n");
  // A group longer than a line is broken at its words.
  EXPECT_EQ(wrap_text("p [--aaa A [--bbb B]] x", 12, "", 2, true), "p [--aaa A\n  [--bbb B]]\n  x\n");
  EXPECT_EQ(wrap_text("p (--n N | --d D) x", 11, "", 2, true), "p (--n N |\n  --d D) x\n");
}

TEST(HelpLayout, UsageAndOptions) {
  // Alternative usages begin with the program's name; other lines continue the usage above.
  EXPECT_EQ(help_usage("c960 perft --depth D [--sp N]\n       c960 perft --epd FILE\n", 0),
            "usage: c960 perft --depth D [--sp N]\n       c960 perft --epd FILE\n");
  EXPECT_EQ(help_usage("c960 x [--aa A] [--bb B]\n         [--cc C]", 0), "usage: c960 x [--aa A] [--bb B] [--cc C]\n");
  // A line indented no further than "usage: " is a note of its own.
  EXPECT_EQ(help_usage("c960 x [--aa A]\n       (both: [--bb B])", 0),
            "usage: c960 x [--aa A]\n       (both: [--bb B])\n");
  // Continuation lines are indented to the first argument.
  EXPECT_EQ(help_usage("c960 x [--aa A] [--bb B] [--cc C]", 31),
            "usage: c960 x [--aa A] [--bb B]\n"
            "              [--cc C]\n");
  EXPECT_EQ(help_option("--x N", "the x of it", 12, 0), "  --x N     the x of it\n");
  EXPECT_EQ(help_option("--x N", "the x of it", 12, 50), "  --x N     the x of it\n");
  EXPECT_EQ(help_option("--long-name N", "the x of it", 12, 50), "  --long-name N\n            the x of it\n");
  EXPECT_EQ(help_option("--x N", "one two three four", 12, 41),  // too narrow for a column: under it
            "  --x N\n      one two three four\n");
}

// The checks of one help text at 80 columns against the same help without a limit: no line is
// longer than 80, no line ends in a space, the words are the same (none split, none lost), the
// unwrapped one needed wrapping, and after "options:" every line is an option ("  --...") or
// continues one, indented to the description column.
void expect_fits_80(const std::string& name, const std::string& at80, const std::string& unwrapped, size_t column) {
  SCOPED_TRACE(name);
  ASSERT_FALSE(at80.empty());
  EXPECT_GT(widest(unwrapped), 80u) << unwrapped;
  for (const std::string& l : lines_of(at80)) {
    EXPECT_LE(l.size(), 80u) << l;
    EXPECT_FALSE(absl::EndsWith(l, " ")) << "'" << l << "'";
  }
  EXPECT_EQ(words_of(at80), words_of(unwrapped)) << at80;
  const size_t options = at80.find("\noptions:\n");
  if (options == std::string::npos) return;
  for (const std::string& l : lines_of(at80.substr(options + 10)))
    EXPECT_TRUE(absl::StartsWith(l, "  -") || absl::StartsWith(l, std::string(column, ' '))) << l;
}

class Columns {
 public:
  explicit Columns(const char* value) { setenv("COLUMNS", value, 1); }
  ~Columns() { unsetenv("COLUMNS"); }
};

std::string run_in_process(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  const cli::Io io{out, err};
  EXPECT_EQ(cli::run(args, io), 0) << err.str();
  EXPECT_EQ(err.str(), "");
  return out.str();
}

TEST(HelpLayout, EveryCommandsHelpFits80Columns) {
  const std::vector<std::string> names = cli::command_names();
  ASSERT_GE(names.size(), 12u);
  for (const std::string& name : names) {
    std::string at80, unwrapped;
    {
      const Columns c("80");
      at80 = run_in_process({name, "--help"});
    }
    {
      const Columns c("100000");
      unwrapped = run_in_process({name, "--help"});
    }
    EXPECT_TRUE(absl::StartsWith(at80, "usage: c960 " + name)) << at80;
    expect_fits_80("c960 " + name, at80, unwrapped, 28);
  }
  // The list of commands: short lines already, so only fitted, not compared with a wider one.
  const Columns c("40");
  const std::string list = run_in_process({"--help"});
  EXPECT_LE(widest(list), 40u) << list;
  EXPECT_EQ(words_of(list), words_of(cli::usage_text(0))) << list;
  for (const std::string& name : names) EXPECT_TRUE(absl::StrContains(list, "\n  " + name + "\n")) << list;
}

TEST(HelpLayout, TheDaemonsHelpFits80Columns) {
  for (const char* bin : {"coordinator/c960-coordinator", "worker/c960-worker", "tools/healthcheck/c960-healthcheck"}) {
    const std::string path = absl::StrCat(c960::test::binary_dir(), "/", bin);
    const test::CommandResult at80 = test::run_command(absl::StrCat("COLUMNS=80 ", path, " --help"));
    const test::CommandResult unwrapped = test::run_command(absl::StrCat("COLUMNS=100000 ", path, " --help"));
    ASSERT_EQ(at80.exit_code, 0) << at80.output;
    ASSERT_EQ(unwrapped.exit_code, 0) << unwrapped.output;
    const size_t column = absl::StrContains(bin, "healthcheck") ? 23 : 30;
    expect_fits_80(bin, at80.output, unwrapped.output, column);
  }
}

}  // namespace
}  // namespace c960
