// The published perft table of the 960 start positions (tests/data/chess960_startpos_perft.csv,
// source in tests/data/README.md), for cluster tests that check a job's totals.
#pragma once

#include <array>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "tests/test_paths.h"

namespace c960::test {

// sp -> perft at depths 1..6, from the published table (see tests/data).
inline const std::map<int, std::array<uint64_t, 7>>& reference() {
  static const auto* table = [] {
    auto* t = new std::map<int, std::array<uint64_t, 7>>;
    std::ifstream in(std::string(c960::test::data_dir()) + "/chess960_startpos_perft.csv");
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      std::vector<std::string> f = absl::StrSplit(line, ',');
      if (f.size() < 9) continue;
      std::array<uint64_t, 7> d{1};
      int sp = 0;
      if (!absl::SimpleAtoi(f[0], &sp)) continue;
      for (int k = 1; k <= 6; ++k)
        if (!absl::SimpleAtoi(f[2 + k], &d[k])) d[k] = 0;
      (*t)[sp] = d;
    }
    return t;
  }();
  return *table;
}

}  // namespace c960::test
