// Related games: games of one start position that share their opening are not independent
// evidence about it. Games are grouped into lines by their first kLinePlies plies (random
// opening plies included): two games are in one line when those plies are the same (a game
// shorter than that: when all its moves are). Exact repeats are counted apart already (stats.h).
//
// How related a line's games are is their intraclass correlation rho: the share of a game's
// variance that its line explains. It is estimated from all positions' lines at once (one-way
// analysis of variance of the games' scores, 1, 1/2 or 0, by line within position: rho =
// (MSB - MSW) / (MSB + (n0 - 1) MSW), clipped to [0, 1]) when at least
// kMinSharedLinesToEstimate lines hold two games or more; with fewer it cannot be estimated, and
// rho = 1 is assumed (the games of a line as related as copies: the cautious choice).
//
// A position with n games in lines of sizes n_c has design effect 1 + (m - 1) rho, where
// m = sum n_c^2 / n, and effective number of games n / design effect (Kish): n when every game
// is its own line, the number of lines when they are equal and rho = 1. Its score interval is
// the one of stats.h with the counts scaled to the effective number (the variance multiplied by
// the design effect), and the shrinkage (ranking.h) uses the effective numbers too.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "selfplay/game.h"
#include "selfplay/stats.h"

namespace c960::selfplay {

inline constexpr int kLinePlies = 12;
inline constexpr int64_t kMinSharedLinesToEstimate = 10;
// A position whose largest line holds more than this share of its games (of at least
// kMinGamesForLineWarning) is "mostly one line", and every output says so.
inline constexpr double kMostlyOneLineShare = 0.5;
inline constexpr int64_t kMinGamesForLineWarning = 4;

// The hash of a game's start and first kLinePlies plies.
uint64_t line_hash(const GameRecord& game);

// A position's lines as how many lines hold each count of results: (white wins, draws, black
// wins) -> lines. What the figures below depend on, in an order that does not depend on the
// lines' hashes, so that a cluster job's results (which carry these groups: v1.LineCounts) give
// the same figures, to the last bit, as a local run of the same games.
using LineGroups = std::map<std::array<int64_t, 3>, int64_t>;
LineGroups line_groups(const Lines& lines);

struct Relatedness {
  double rho = 1;            // the intraclass correlation used
  bool estimated = false;    // rho estimated from the lines (else assumed 1)
  int64_t shared_lines = 0;  // lines holding two games or more, over all positions
  int64_t unrecorded = 0;    // positions with games whose lines were not recorded
  int64_t with_games = 0;    // positions with games
  // Per position, in the order given: lines (0 when not recorded), the largest line's games, the
  // effective number of games (the games when lines are not recorded), mostly one line.
  std::vector<int64_t> lines, largest;
  std::vector<double> effective;
  std::vector<bool> mostly_one_line;
  bool recorded = true;  // every position with games had its lines
  int64_t mostly_one_line_count() const;
  // A sentence for every output: how related the games are and what was assumed ("" when every
  // game is its own line).
  std::string note() const;
};

// positions[i]: position i's lines; games[i]: its distinct evidence games (lines empty with
// games: not recorded, the games taken as independent).
Relatedness relatedness(const std::vector<const Lines*>& positions, const std::vector<ResultCounts>& games);

// A position's design effect given its line sizes and rho.
double design_effect(const Lines& lines, double rho);

}  // namespace c960::selfplay
