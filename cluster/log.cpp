#include "cluster/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <grpc/support/log.h>
#include <mutex>

#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace c960::cluster {
namespace {

std::mutex g_mu;
std::string g_program = "c960";
LogFormat g_format = LogFormat::kText;
std::atomic<bool> g_silenced{false};
thread_local LogHold* t_hold = nullptr;

std::string timestamp() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  const int ms = int(std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  std::tm tm{};
  gmtime_r(&t, &tm);
  return absl::StrFormat("%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                         tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
}

const char* level_name(LogLevel l) {
  switch (l) {
    case LogLevel::kInfo: return "INFO";
    case LogLevel::kWarning: return "WARNING";
    case LogLevel::kError: return "ERROR";
  }
  return "?";
}

// The length of the UTF-8 sequence starting at s[i], or 0 if it is not a valid one (overlong
// forms, surrogates and code points past U+10FFFF are not).
size_t utf8_length(absl::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = b(i);
  size_t n = 0;
  uint32_t cp = 0;
  if (c >= 0xC2 && c <= 0xDF) {
    n = 2, cp = c & 0x1F;
  } else if (c >= 0xE0 && c <= 0xEF) {
    n = 3, cp = c & 0x0F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    n = 4, cp = c & 0x07;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k) {
    if ((b(i + k) & 0xC0) != 0x80) return 0;
    cp = (cp << 6) | (b(i + k) & 0x3F);
  }
  if ((n == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
    return 0;
  return n;
}

bool reserved(absl::string_view key) {
  return key == "time" || key == "level" || key == "program" || key == "event" || key == "message";
}

}  // namespace

std::optional<LogFormat> parse_log_format(absl::string_view name) {
  if (name == "text") return LogFormat::kText;
  if (name == "json") return LogFormat::kJson;
  return std::nullopt;
}

namespace {

// gRPC's own lines (a refused handshake, a name that does not match) as this program's, in its
// format: event "grpc", the source file and line as fields.
void grpc_log_line(gpr_log_func_args* a) {
  const LogLevel level = a->severity == GPR_LOG_SEVERITY_ERROR ? LogLevel::kError : LogLevel::kInfo;
  absl::string_view file = a->file ? a->file : "";
  if (const size_t slash = file.rfind('/'); slash != absl::string_view::npos) file.remove_prefix(slash + 1);
  log_event(level, "grpc", absl::StrCat("grpc: ", a->message ? a->message : ""),
            {{"file", std::string(file)}, {"line", a->line}});
}

}  // namespace

void set_log_program(absl::string_view name) {
  {
    std::lock_guard lock(g_mu);
    g_program = std::string(name);
  }
  gpr_set_log_function(grpc_log_line);
}

void set_log_format(LogFormat format) {
  std::lock_guard lock(g_mu);
  g_format = format;
}

LogFormat current_log_format() {
  std::lock_guard lock(g_mu);
  return g_format;
}

std::string enum_word(absl::string_view name, absl::string_view prefix) {
  absl::ConsumePrefix(&name, prefix);
  return absl::AsciiStrToLower(name);
}

std::string json_quote(absl::string_view s) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      if (const size_t n = utf8_length(s, i)) {
        out.append(s.data() + i, n);
        i += n;
      } else {
        out += "\\ufffd";
        ++i;
      }
      continue;
    }
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20 || c == 0x7F)
          absl::StrAppendFormat(&out, "\\u%04x", c);
        else
          out += char(c);
    }
    ++i;
  }
  return out + "\"";
}

std::string format_log_line(LogFormat format, absl::string_view time, LogLevel level, absl::string_view program,
                            absl::string_view event, absl::string_view message, const LogFields& fields) {
  if (format == LogFormat::kText) return absl::StrCat(time, " ", level_name(level), " ", program, ": ", message);
  std::string line = absl::StrCat("{\"time\":", json_quote(time), ",\"level\":", json_quote(level_name(level)),
                                  ",\"program\":", json_quote(program));
  if (!event.empty()) absl::StrAppend(&line, ",\"event\":", json_quote(event));
  absl::StrAppend(&line, ",\"message\":", json_quote(message));
  for (const LogField& f : fields)
    absl::StrAppend(&line, ",", json_quote(reserved(f.key) ? absl::StrCat("_", f.key) : f.key), ":",
                    f.number ? f.value : json_quote(f.value));
  return line + "}";
}

void set_log_silenced(bool silenced) { g_silenced = silenced; }

LogHold::LogHold() : outer_(t_hold) { t_hold = this; }

LogHold::~LogHold() { t_hold = outer_; }

void LogHold::release() {
  std::vector<Event> held;
  held.swap(held_);
  LogHold* self = t_hold;
  t_hold = outer_;  // written (or held by the outer hold), not held here again
  for (Event& e : held) log_event(e.level, e.event, e.message, e.fields);
  t_hold = self;
}

bool LogHold::hold(Event e) {
  if (!t_hold || e.event.empty()) return false;
  t_hold->held_.push_back(std::move(e));
  return true;
}

void log_event(LogLevel level, absl::string_view event, absl::string_view message, const LogFields& fields) {
  if (g_silenced) return;
  if (t_hold && !event.empty() && LogHold::hold({level, std::string(event), std::string(message), fields})) return;
  const std::string ts = timestamp();
  // One write per line under a lock, so lines from threads never interleave.
  std::lock_guard lock(g_mu);
  const std::string line = format_log_line(g_format, ts, level, g_program, event, message, fields) + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);
  std::fflush(stderr);
}

void log(LogLevel level, absl::string_view message) { log_event(level, "", message); }

}  // namespace c960::cluster
