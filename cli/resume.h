// What an interrupted local run leaves next to its output FILE, in FILE.c960-resume, so that
// `--resume` can check that it continues the same run and skip the work already done. A text
// file of tab-separated lines, values C-escaped (absl::CEscape) so that each stays one line:
//   c960-resume  KIND                  first line (KIND: "perft-table", "selfplay")
//   option       NAME  VALUE           the options that decide the output, NAME as on the command line
//   record       FIELD ...             one per finished piece of work, appended as it finishes
// A run that finishes removes the file; a torn last line (the process killed mid-write) is dropped.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace c960::cli {

inline constexpr char kResumeSuffix[] = ".c960-resume";

struct ResumeOption {
  std::string name;  // without "--"
  std::string value;
};

struct ResumeState {
  std::vector<ResumeOption> options;
  std::vector<std::vector<std::string>> records;  // fields, unescaped
};

// FILE.c960-resume.
std::string resume_path(const std::string& output);

// The state at `path`: nothing when there is no such file; INVALID_ARGUMENT naming the file when
// it is not a KIND state file or a line other than the last is broken.
absl::StatusOr<std::optional<ResumeState>> read_resume(const std::string& path, absl::string_view kind);

// OK when `now` has the options `was` has, with the same values; otherwise INVALID_ARGUMENT
// naming the first option that differs and both values.
absl::Status check_same_options(const std::vector<ResumeOption>& was, const std::vector<ResumeOption>& now);

// The state file of a running run.
class ResumeLog {
 public:
  // Writes a new state file (through a temporary file and a rename) with the options and the
  // records given (those of the run being resumed), then keeps it open for more.
  static absl::StatusOr<std::unique_ptr<ResumeLog>> create(const std::string& path, absl::string_view kind,
                                                           const std::vector<ResumeOption>& options,
                                                           const std::vector<std::vector<std::string>>& records = {});
  ~ResumeLog();
  ResumeLog(const ResumeLog&) = delete;
  ResumeLog& operator=(const ResumeLog&) = delete;

  // Appends one record, written through to the file (a killed process keeps it).
  absl::Status append(const std::vector<std::string>& fields);
  // The run finished: the state file goes.
  absl::Status remove();

 private:
  ResumeLog(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_ = -1;
};

}  // namespace c960::cli
