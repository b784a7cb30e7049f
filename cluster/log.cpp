#include "cluster/log.h"

#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>

#include "absl/strings/str_format.h"

namespace c960::cluster {
namespace {

std::mutex g_mu;
std::string g_program = "c960";

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

}  // namespace

void set_log_program(absl::string_view name) {
  std::lock_guard lock(g_mu);
  g_program = std::string(name);
}

void log(LogLevel level, absl::string_view message) {
  const std::string ts = timestamp();
  // One write per line under a lock, so lines from threads never interleave.
  std::lock_guard lock(g_mu);
  std::fprintf(stderr, "%s %s %s: %.*s\n", ts.c_str(), level_name(level), g_program.c_str(), int(message.size()),
               message.data());
  std::fflush(stderr);
}

}  // namespace c960::cluster
