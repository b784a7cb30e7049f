// absl flags are named with underscores; the documented spelling uses dashes (--port-file).
// Rewrites "--port-file=x" to "--port_file=x" in place before absl::ParseCommandLine.
#pragma once

#include <cstring>

namespace c960::cluster {

inline void dashes_to_underscores(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    char* a = argv[i];
    if (std::strncmp(a, "--", 2) != 0 || a[2] == '\0') continue;
    for (char* p = a + 2; *p && *p != '='; ++p)
      if (*p == '-') *p = '_';
  }
}

}  // namespace c960::cluster
