// A progress line for long local commands: redrawn in place ('\r') a few times a second on
// stderr when stderr is a terminal, never written anywhere else, so that logs and pipes get only
// the command's results and its one summary line.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/string_view.h"
#include "cli/command.h"

namespace c960::cli {

// The widest line drawn: one less than an 80-column terminal, so that the cursor never wraps.
inline constexpr size_t kProgressWidth = 79;
inline constexpr std::chrono::milliseconds kProgressPeriod{250};

// 1234567 as "1,234,567".
std::string with_separators(absl::string_view digits);
// Seconds as "h:mm:ss" ("-:--:--" when unknown: negative, NaN or beyond 9999 hours).
std::string hms(double seconds);
// The remaining time of a run that has done `done` of `total` in `seconds`, or -1 when unknown.
double eta_seconds(double done, double total, double seconds);

class ProgressLine {
 public:
  // Draws render() at once and then every `period` until stop(), when `enabled` and
  // io.err_is_tty; otherwise does nothing. render() is called on the drawing thread and must
  // read what the work writes under its own lock or atomically.
  ProgressLine(const Io& io, bool enabled, std::function<std::string()> render,
               std::chrono::milliseconds period = kProgressPeriod);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  bool active() const { return thread_.joinable(); }
  // Writes `text` on io.out, first clearing the line when both streams are the terminal.
  void write_out(absl::string_view text);
  // Draws the last state, then clears the line; idempotent.
  void stop();

 private:
  void draw();   // with mu_ held
  void clear();  // with mu_ held

  const Io& io_;
  std::function<std::string()> render_;
  std::chrono::milliseconds period_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  size_t drawn_ = 0;  // width of the line on screen
  std::thread thread_;
};

}  // namespace c960::cli
