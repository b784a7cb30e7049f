// Prints the coverage of the position intervals (tests/ranking_coverage.h): for each truth table
// given and each method (unshrunk, shrunk under the normal, NPMLE and log-spline priors), the
// fraction of intervals that hold the true score among the listed best and worst 10, the true top
// and bottom 10% and 1%, and all positions.
//   ranking_coverage [--seeds N] [--games N] [--method NAME] TRUTH.csv...
#include "tests/ranking_coverage.h"

#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  using namespace c960::selfplay;
  int seeds = 100, games = 200;
  std::string only;  // --method NAME: one method (as printed: "unshrunk", "normal", "npmle", "log-spline")
  std::vector<std::string> truths;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seeds") && i + 1 < argc) {
      seeds = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--method") && i + 1 < argc) {
      only = argv[++i];
    } else if (!std::strcmp(argv[i], "--games") && i + 1 < argc) {
      games = std::atoi(argv[++i]);
    } else {
      truths.push_back(argv[i]);
    }
  }
  if (truths.empty() || seeds < 1 || games < 1) {
    std::fprintf(stderr, "usage: ranking_coverage [--seeds N] [--games N] [--method NAME] TRUTH.csv...\n");
    return 2;
  }
  std::printf("%d games a position, %d seeds\n", games, seeds);
  coverage::print_header();
  const std::vector<coverage::Method> methods = {
      {.shrunk = false}, {.prior = Prior::kNormal}, {.prior = Prior::kNpmle}, {.prior = Prior::kLogSpline}};
  for (const std::string& path : truths) {
    const coverage::Truth t = coverage::read_truth(path);
    if (t.score.empty()) {
      std::fprintf(stderr, "cannot read %s\n", path.c_str());
      return 1;
    }
    for (const coverage::Method& m : methods) {
      if (!only.empty() && m.name() != only && m.name() != "shrunk, " + only) continue;
      coverage::print_row(m, t, coverage::measure(t, m, seeds, games));
      std::fflush(stdout);
    }
  }
  return 0;
}
