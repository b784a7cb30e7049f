// The coverage of the shrunk intervals (selfplay/ranking.h) on a truth read from a published
// per-position table: each position's true White win, draw and loss rates are the table's
// percentages, games are drawn from them, the positions ranked, and each interval checked
// against the true score. Shared by tests/ranking_test.cpp (few seeds, in the default run),
// tests/ranking_slow_test (many seeds, label slow) and tests/tools/ranking_coverage.cpp (the
// table of methods by truth).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <sstream>
#include <string>
#include <vector>

#include "core/prng.h"
#include "selfplay/ranking.h"
#include "selfplay/stats.h"

namespace c960::selfplay::coverage {

struct Truth {
  std::string name;
  std::vector<double> win, draw, score;  // per position
};

// A table "sp,backrank,games,white_win_pct,draw_pct,black_win_pct,white_score" (tests/data's
// stumpc5 files); the rates are the percentages, normalised to add up to 1. Empty on error.
inline Truth read_truth(const std::string& path) {
  Truth t;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return t;
  t.name = path.substr(path.find_last_of('/') + 1);
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string x; std::getline(ss, x, ',');) f.push_back(x);
    if (f.size() < 6) continue;
    const double w = std::stod(f[3]), d = std::stod(f[4]), l = std::stod(f[5]), total = w + d + l;
    t.win.push_back(w / total);
    t.draw.push_back(d / total);
    t.score.push_back((w + d / 2) / total);
  }
  return t;
}

// Coverage as fractions of the intervals counted.
struct Coverage {
  double best10 = 0, worst10 = 0, top10pct = 0, bottom10pct = 0, top1pct = 0, bottom1pct = 0, average = 0;
  double width = 0;  // mean width of the intervals
  int seeds = 0;
};

// How each interval is made: the shrunk intervals under a prior, or the unshrunk score interval
// of stats.h (then "best 10" are the 10 best raw scores, as a list without shrinkage would be).
struct Method {
  bool shrunk = true;
  Prior prior = Prior::kLogSpline;
  std::string name() const { return shrunk ? std::string("shrunk, ") + prior_name(prior) : "unshrunk"; }
};

inline Coverage measure(const Truth& t, const Method& method, int seeds, int games, uint64_t first_seed = 1) {
  const size_t n = t.score.size();
  std::vector<size_t> by_truth(n);
  std::iota(by_truth.begin(), by_truth.end(), 0);
  std::stable_sort(by_truth.begin(), by_truth.end(), [&](size_t a, size_t b) { return t.score[a] > t.score[b]; });
  const size_t tenth = n / 10, hundredth = std::max<size_t>(1, n / 100);
  Coverage c;
  int64_t n_all = 0, n_b = 0, n_w = 0, n_t = 0, n_bt = 0, n_t1 = 0, n_b1 = 0;
  for (int seed = 0; seed < seeds; ++seed) {
    Prng rng(first_seed + uint64_t(seed));
    std::vector<ResultCounts> counts(n);
    for (size_t i = 0; i < n; ++i)
      for (int g = 0; g < games; ++g) {
        const double u = double(rng.rand64() >> 11) * 0x1.0p-53;
        (u < t.win[i] ? counts[i].white_wins : u < t.win[i] + t.draw[i] ? counts[i].draws : counts[i].black_wins)++;
      }
    std::vector<double> lo(n), hi(n);
    std::vector<size_t> order;
    if (method.shrunk) {
      const Ranking r = rank_positions(counts, {.draws = 0, .prior = method.prior});
      for (size_t i = 0; i < n; ++i) lo[i] = r.positions[i].lo, hi[i] = r.positions[i].hi;
      order = r.order;
    } else {
      std::vector<double> raw(n);
      for (size_t i = 0; i < n; ++i) {
        const Interval s = counts[i].score();
        lo[i] = s.lo, hi[i] = s.hi, raw[i] = s.value;
      }
      order.resize(n);
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return raw[a] > raw[b]; });
    }
    const auto in = [&](size_t i) { return lo[i] <= t.score[i] && t.score[i] <= hi[i] ? 1.0 : 0.0; };
    for (size_t i = 0; i < n; ++i) c.average += in(i), c.width += hi[i] - lo[i], ++n_all;
    for (size_t k = 0; k < 10 && k < n; ++k) {
      c.best10 += in(order[k]), ++n_b;
      c.worst10 += in(order[n - 1 - k]), ++n_w;
    }
    for (size_t k = 0; k < tenth; ++k) {
      c.top10pct += in(by_truth[k]), ++n_t;
      c.bottom10pct += in(by_truth[n - 1 - k]), ++n_bt;
    }
    for (size_t k = 0; k < hundredth; ++k) {
      c.top1pct += in(by_truth[k]), ++n_t1;
      c.bottom1pct += in(by_truth[n - 1 - k]), ++n_b1;
    }
  }
  c.average /= double(n_all);
  c.width /= double(n_all);
  c.best10 /= double(n_b);
  c.worst10 /= double(n_w);
  c.top10pct /= double(n_t);
  c.bottom10pct /= double(n_bt);
  c.top1pct /= double(n_t1);
  c.bottom1pct /= double(n_b1);
  c.seeds = seeds;
  return c;
}

inline void print_header() {
  std::printf("%-20s %-32s %5s %7s %7s %7s %8s %7s %7s %7s %7s\n", "method", "truth", "seeds", "best10", "worst10",
              "top10%", "bott10%", "top1%", "bott1%", "average", "width");
}

inline void print_row(const Method& m, const Truth& t, const Coverage& c) {
  std::printf("%-20s %-32s %5d %7.3f %7.3f %7.3f %8.3f %7.3f %7.3f %7.3f %7.4f\n", m.name().c_str(), t.name.c_str(),
              c.seeds, c.best10, c.worst10, c.top10pct, c.bottom10pct, c.top1pct, c.bottom1pct, c.average, c.width);
}

}  // namespace c960::selfplay::coverage
