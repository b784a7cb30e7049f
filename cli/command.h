// What every c960 command shares: the streams it writes to, the one way it reports a problem,
// and the one way it writes an output file.
#pragma once

#include <ostream>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "cli/exit_codes.h"

namespace c960::cli {

// A command's standard output and error. main() binds them to the process's; in-process tests
// bind them to string streams. Progress lines rewrite themselves with '\r' only on a terminal.
struct Io {
  std::ostream& out;
  std::ostream& err;
  bool out_is_tty = false;
  bool err_is_tty = false;
};

// A one-paragraph message as a terminal shows it best: when `tty`, its words filled into lines
// of the terminal's width (`columns`), continuation lines indented 2, so that the terminal does
// not break a word; otherwise (a log, a pipe) unchanged. Ends in '\n'.
std::string for_terminal(absl::string_view message, bool tty, int columns);
// for_terminal on io.err (io.out) with its terminal's width.
std::string for_err(const Io& io, absl::string_view message);
std::string for_out(const Io& io, absl::string_view message);

// Prints "c960 COMMAND: problem" on io.err and returns `code`, the exit code to leave with.
int fail(const Io& io, absl::string_view command, absl::string_view problem, int code = kExitUsage);
int fail(const Io& io, absl::string_view command, const absl::Status& status, int code = kExitUsage);

// Writes `text` to `path` through a temporary file in the same directory and a rename, so a
// reader never sees half a file and a failed write leaves what was there. A failure is
// INVALID_ARGUMENT naming `option` (e.g. "--out") and the path: bad input, exit 2.
absl::Status write_output(absl::string_view option, const std::string& path, absl::string_view text);

// write_output in pieces, for output too big to hold: appended as it comes, published (fsync,
// rename) by commit(); a file never committed is removed. Errors as write_output's.
class OutputFile {
 public:
  OutputFile(std::string option, std::string path);
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;
  absl::Status open();
  void append(absl::string_view text);
  absl::Status commit();

 private:
  std::string option_, path_, tmp_;
  int fd_ = -1;
  int error_ = 0;
  bool committed_ = false;
};

// Whether write_output could create its temporary file next to `path`; checked before long
// work, so that a typo in a path does not cost the run. The same error as write_output.
absl::Status check_output(absl::string_view option, const std::string& path);

}  // namespace c960::cli
