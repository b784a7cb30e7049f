#include "cluster/text_wrap.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <sys/ioctl.h>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace c960::cluster {
namespace {

// The words of a line; with `keep_brackets`, a bracketed group is one unit ("[--db FILE]").
std::vector<std::string> units_of(absl::string_view line, bool keep_brackets) {
  std::vector<std::string> words = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (!keep_brackets) return words;
  std::vector<std::string> units;
  int depth = 0;
  bool continues = false;  // the last unit's group is still open
  for (std::string& w : words) {
    for (char c : w) {
      if (c == '[' || c == '(') ++depth;
      if ((c == ']' || c == ')') && depth > 0) --depth;
    }
    if (continues)
      absl::StrAppend(&units.back(), " ", w);
    else
      units.push_back(std::move(w));
    continues = depth > 0;
  }
  return units;
}

// A command's words at the start of a usage ("c960 submit perft"): lower case, digits and dashes.
size_t command_words_length(absl::string_view usage) {
  size_t end = 0;
  for (absl::string_view w : absl::StrSplit(usage, ' ')) {
    if (w.empty() ||
        !std::all_of(w.begin(), w.end(),
                     [](char c) { return absl::ascii_islower(c) || absl::ascii_isdigit(c) || c == '-'; }) ||
        w[0] == '-')
      break;
    end += w.size() + 1;
  }
  return end;
}

}  // namespace

int terminal_width(int ioctl_columns, const char* columns_env) {
  int w = ioctl_columns;
  if (w <= 0 && columns_env && !absl::SimpleAtoi(columns_env, &w)) w = 0;
  if (w <= 0) w = kDefaultTerminalWidth;
  return std::max(w, kMinTerminalWidth);
}

namespace {

int columns_of(int fd) {
  winsize ws{};
  const int cols = isatty(fd) && ioctl(fd, TIOCGWINSZ, &ws) == 0 ? ws.ws_col : 0;
  return terminal_width(cols, std::getenv("COLUMNS"));
}

}  // namespace

int stdout_columns() { return columns_of(STDOUT_FILENO); }
int stderr_columns() { return columns_of(STDERR_FILENO); }

std::string wrap_text(absl::string_view text, size_t width, absl::string_view first, size_t indent,
                      bool keep_brackets) {
  std::string out, line(first);
  bool empty = true;  // no word on `line` yet
  const auto end_line = [&] {
    absl::StrAppend(&out, absl::StripTrailingAsciiWhitespace(line), "\n");
    line.assign(indent, ' ');
    empty = true;
  };
  const auto place = [&](absl::string_view word) {
    if (!empty && width > 0 && line.size() + 1 + word.size() > width) end_line();
    if (!empty) line += ' ';
    line.append(word.data(), word.size());
    empty = false;
  };
  bool first_paragraph = true;
  for (absl::string_view paragraph : absl::StrSplit(text, '\n')) {
    if (!first_paragraph) end_line();
    first_paragraph = false;
    for (const std::string& unit : units_of(paragraph, keep_brackets)) {
      const bool fits_here = width == 0 || line.size() + (empty ? 0 : 1) + unit.size() <= width;
      const bool fits_a_line = width == 0 || indent + unit.size() <= width;
      if (fits_here || fits_a_line || !absl::StrContains(unit, ' ')) {
        place(unit);
      } else {
        for (absl::string_view w : absl::StrSplit(unit, ' ', absl::SkipEmpty())) place(w);
      }
    }
  }
  end_line();
  return out;
}

std::string help_usage(absl::string_view usage, size_t width) {
  // The usages: a line that begins with the program's name, or indented no further than
  // "usage: ", begins one (a second usage, a note); a line indented further continues it.
  constexpr absl::string_view kUsage = "usage: ";
  std::vector<std::string> usages;
  std::string program;
  for (absl::string_view l : absl::StrSplit(usage, '\n')) {
    const absl::string_view t = absl::StripAsciiWhitespace(l);
    if (t.empty()) continue;
    const absl::string_view name = t.substr(0, t.find(' '));
    if (usages.empty()) program = std::string(name);
    if (usages.empty() || name == program || l.size() - absl::StripLeadingAsciiWhitespace(l).size() <= kUsage.size())
      usages.emplace_back(t);
    else
      absl::StrAppend(&usages.back(), " ", t);
  }
  std::string out;
  for (size_t i = 0; i < usages.size(); ++i) {
    size_t indent = kUsage.size() + command_words_length(usages[i]);
    if (width > 0 && indent > width / 2) indent = kUsage.size() + 4;
    out += wrap_text(usages[i], width, i == 0 ? kUsage : "       ", indent, true);
  }
  return out;
}

std::string help_option(absl::string_view left, absl::string_view description, size_t column, size_t width) {
  constexpr size_t kUnder = 6;
  const std::string option = absl::StrCat("  ", left);
  if (width > 0 && width < column + 30)
    return absl::StrCat(option, "\n", wrap_text(description, width, std::string(kUnder, ' '), kUnder));
  if (option.size() < column) {
    std::string first = option;
    first.resize(column, ' ');
    return wrap_text(description, width, first, column);
  }
  return absl::StrCat(option, "\n", wrap_text(description, width, std::string(column, ' '), column));
}

}  // namespace c960::cluster
