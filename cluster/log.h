// Log lines of the daemons: one line per event on stderr, with a UTC timestamp and a level.
//   text (default): "2026-11-30T10:55:01.123Z INFO c960-coordinator: job job-3 succeeded: ..."
//   json (--log-format json): one JSON object per line, for log collectors:
//     {"time":"2026-11-30T10:55:01.123Z","level":"INFO","program":"c960-coordinator",
//      "event":"job_succeeded","message":"job job-3 succeeded: ...","job":"job-3","kind":"perft"}
// An event (log_event) has a name and structured fields besides its message; the text format
// shows the message only, so it reads as before. Plain log() lines have no event and no fields.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace c960::cluster {

enum class LogLevel { kInfo, kWarning, kError };
enum class LogFormat { kText, kJson };

// "text" or "json"; nullopt for anything else.
std::optional<LogFormat> parse_log_format(absl::string_view name);

// The program name every line carries, and the format (set once, at start).
void set_log_program(absl::string_view name);
void set_log_format(LogFormat format);
LogFormat current_log_format();
// No lines at all while set (the coordinator's simulation: millions of events a run).
void set_log_silenced(bool silenced);

// One structured field of an event: a string, or a number (written without quotes in JSON).
struct LogField {
  LogField(absl::string_view k, absl::string_view v) : key(k), value(v) {}
  LogField(absl::string_view k, const std::string& v) : key(k), value(v) {}
  LogField(absl::string_view k, const char* v) : key(k), value(v) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>>>
  LogField(absl::string_view k, T v) : key(k), value(absl::StrCat(v)), number(true) {}
  std::string key;
  std::string value;
  bool number = false;
};
using LogFields = std::vector<LogField>;

void log(LogLevel level, absl::string_view message);
inline void log_info(absl::string_view message) { log(LogLevel::kInfo, message); }
inline void log_warning(absl::string_view message) { log(LogLevel::kWarning, message); }
inline void log_error(absl::string_view message) { log(LogLevel::kError, message); }

// An event: `event` names it (snake_case, e.g. "job_succeeded", "worker_lost"), `message` says
// it for people, `fields` carry what a program filters on (job, kind, worker, reason, ...).
// Field keys are snake_case; one that would shadow time, level, program, event or message gets
// a leading underscore.
void log_event(LogLevel level, absl::string_view event, absl::string_view message, const LogFields& fields = {});

// Holds this thread's events (log_event with an event name) while it lives: a transition that
// may yet fail to commit logs into one, and release() writes what it holds once the commit
// succeeded; what is still held when it ends is dropped (what those events told did not happen).
// Plain lines (log, log_error) are written at once. Holds nest: an inner hold releases into the
// one around it.
class LogHold {
 public:
  LogHold();
  ~LogHold();
  LogHold(const LogHold&) = delete;
  LogHold& operator=(const LogHold&) = delete;
  void release();
  // Called by log_event: whether this thread holds events now (then `e` was kept).
  struct Event {
    LogLevel level;
    std::string event, message;
    LogFields fields;
  };
  static bool hold(Event e);

 private:
  std::vector<Event> held_;
  LogHold* outer_;
};

// One line as log() writes it, without the newline (tests).
std::string format_log_line(LogFormat format, absl::string_view time, LogLevel level, absl::string_view program,
                            absl::string_view event, absl::string_view message, const LogFields& fields);

// An enum value's name as logs and metrics say it: "TRUST_STATE_NEW" without its prefix
// "TRUST_STATE_", in lower case: "new".
std::string enum_word(absl::string_view name, absl::string_view prefix);

// `s` as a JSON string literal, quotes included: control characters escaped, bytes that are not
// UTF-8 replaced by U+FFFD, so that every line parses whatever a worker sent.
std::string json_quote(absl::string_view s);

}  // namespace c960::cluster
