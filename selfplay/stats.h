// Self-play statistics: per start position and for the whole job, White's results, score with
// a 95% confidence interval, the Elo difference with its interval, draw rate, game length,
// terminations and duplicate games.
//
// The interval: per-game scores are 1, 1/2 or 0 with mean s and variance v = (w + d/4)/n - s^2.
// We use Wilson's score interval (well behaved near 0 and 1, unlike s +- 1.96 sqrt(v/n)) with the
// effective sample size n_eff = n * s(1-s) / v, which makes it exact-Wilson for games without
// draws and narrower in proportion to how much draws reduce the variance. When v = 0 (all
// games alike) n_eff = n. Elo(p) = -400 log10(1/p - 1), infinite at p = 0 or 1.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "selfplay/game.h"

namespace c960::selfplay {

constexpr double kZ95 = 1.959963984540054;

struct Interval {
  double value = 0, lo = 0, hi = 0;
};

// Counts of White's results; the derived figures are NaN when there are no games.
struct ResultCounts {
  int64_t white_wins = 0, draws = 0, black_wins = 0;
  int64_t games() const { return white_wins + draws + black_wins; }
  Interval score(double z = kZ95) const;
  Interval elo(double z = kZ95) const;  // from the score interval
  double draw_rate() const;
};

double elo_from_score(double p);

struct PositionStats {
  int sp = -1;
  std::string fen;
  ResultCounts counts;
  int64_t total_plies = 0;
  int64_t duplicates = 0;  // games whose move sequence an earlier game of this position already had
  std::array<int64_t, size_t(Termination::kCount)> terminations{};
  std::set<uint64_t> game_hashes;

  void add(const GameRecord& game);
  double mean_plies() const;
};

// A 64-bit hash of a game's start and moves, for counting duplicates.
uint64_t game_hash(const GameRecord& game);

class SelfPlayStats {
 public:
  void add(int sp, const GameRecord& game);
  const std::map<int, PositionStats>& positions() const { return positions_; }
  PositionStats total() const;
  // Positions best for White first (by score, then by the interval's lower bound, then sp).
  std::vector<int> ranking() const;

  // The CSV table: header "sp,fen,games,white_wins,draws,black_wins,score,score_lo,score_hi,
  // elo,elo_lo,elo_hi,draw_rate,mean_plies,duplicates,rank" then one column per termination,
  // one row per position (ascending sp) and a last row with sp "all" for the whole job.
  std::string to_csv() const;
  std::string to_json() const;

 private:
  std::map<int, PositionStats> positions_;
};

}  // namespace c960::selfplay
