// What the benchmarks that load a daemon read of it: the whole contents of a file, the port it
// wrote, and from /proc its CPU time and a field of its status (VmRSS, VmHWM).
#pragma once

#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/types.h>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace c960::bench {

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// utime + stime of a process, in seconds.
inline double cpu_seconds(pid_t pid) {
  const std::string stat = slurp(absl::StrCat("/proc/", pid, "/stat"));
  const size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::vector<std::string> f = absl::StrSplit(stat.substr(close_paren + 2), ' ');
  long long ut = 0, st = 0;
  if (f.size() < 13 || !absl::SimpleAtoi(f[11], &ut) || !absl::SimpleAtoi(f[12], &st)) return 0;
  return double(ut + st) / double(sysconf(_SC_CLK_TCK));
}

// A "Key:" line of /proc/PID/status, its value trimmed; "?" when absent.
inline std::string status_field(pid_t pid, const std::string& key) {
  std::istringstream in(slurp(absl::StrCat("/proc/", pid, "/status")));
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::string(absl::StripAsciiWhitespace(line.substr(key.size() + 1)));
  return "?";
}

// A process's resident set in bytes (VmRSS), 0 when unknown.
inline int64_t rss_bytes(pid_t pid) {
  int64_t kb = 0;
  const std::string v = status_field(pid, "VmRSS");  // "63024 kB"
  return absl::SimpleAtoi(v.substr(0, v.find(' ')), &kb) ? kb * 1024 : 0;
}

// The port a daemon started with --port-file=PATH wrote there, waiting up to 10 s; 0 if none.
inline int wait_for_port_file(const std::string& path) {
  int port = 0;
  for (int i = 0; i < 400 && !absl::SimpleAtoi(absl::StripAsciiWhitespace(slurp(path)), &port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  return port;
}

}  // namespace c960::bench
