// Text for a terminal: its width, and words filled into lines that fit it. The one wrapping
// function (wrap_text) and the help layout built on it, shared by the c960 tool's --help
// (cli/args.h) and the daemons' (cluster/flags.h), and by the c960 tool's notes under tables.
#pragma once

#include <cstddef>
#include <string>

#include "absl/strings/string_view.h"

namespace c960::cluster {

// The columns of the terminal: `ioctl_columns` (TIOCGWINSZ) when positive, else $COLUMNS when it
// is a number, else 80; at least kMinTerminalWidth.
inline constexpr int kDefaultTerminalWidth = 80;
inline constexpr int kMinTerminalWidth = 20;
int terminal_width(int ioctl_columns, const char* columns_env);
// terminal_width of this process's stdout (stderr) when it is a terminal, else of $COLUMNS alone.
int stdout_columns();
int stderr_columns();

// Fills the words of `text` (separated by spaces) into lines of at most `width` columns, each
// ending in '\n': the first line begins with `first`, the others with `indent` spaces; a '\n' in
// `text` ends a line there (the next begins with `indent` spaces too). A word is never split:
// one longer than a line's room stands alone on its line, which is then longer. With
// `keep_brackets`, a bracketed group ("[--db FILE [--init]]", "(--nodes N | --depth D)") is
// broken only when it does not fit a line of its own. `width` 0: no limit (a line per
// paragraph). Runs of spaces become one.
std::string wrap_text(absl::string_view text, size_t width, absl::string_view first = "", size_t indent = 0,
                      bool keep_brackets = false);

// The parts of a --help text at `width` columns (0: no limit), each ending in '\n'.
// "usage: PROG ...": `usage` holds one or more usages, each beginning with the program's name or
// indented as far as "usage: " at most (a line indented further continues the usage above); each
// is wrapped, its continuation lines indented to its first argument, bracketed groups kept whole
// where they fit.
std::string help_usage(absl::string_view usage, size_t width);
// An option: `left` ("--listen HOST:PORT") at column 2, its description from column `column`
// (on the next line when `left` reaches it), continuation lines indented to it too. Where that
// leaves fewer than 30 columns for the description, it goes under the option, indented 6.
std::string help_option(absl::string_view left, absl::string_view description, size_t column, size_t width);

}  // namespace c960::cluster
