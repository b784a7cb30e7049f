// Two-engine matches (selfplay/match.h, selfplay/sprt.h): pentanomial pairs from the games,
// A's score, Elo and LOS, the exact sign test per position, the heterogeneity test, the
// SPRT's log-likelihood ratio (against its normal approximation) and its error rates by
// simulation, and the colour-reversed pairs' shared openings.
#include "selfplay/match.h"

#include <cmath>
#include <random>
#include <string>

#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "selfplay/lines.h"
#include "selfplay/spec.h"
#include "selfplay/sprt.h"

namespace c960::selfplay {
namespace {

GameRecord game(GameResult result, int salt) {
  GameRecord g;
  g.start_fen = "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1";
  g.result = result;
  g.termination = result == GameResult::kDraw ? Termination::kAdjudicatedDraw : Termination::kAdjudicatedResign;
  // Distinct move lists make distinct games (game_hash); evidence needs both engines to move.
  Move m = Move(uint16_t(100 + salt));
  g.moves = {m, Move(uint16_t(200 + salt)), Move(uint16_t(300 + salt))};
  return g;
}

// A game whose first 12 plies (selfplay::kLinePlies) follow opening line `line` and whose later
// ones are set by `salt`: games of one line share their line and differ.
GameRecord line_game(GameResult result, int line, int salt) {
  GameRecord g = game(result, 0);
  g.moves.clear();
  for (int i = 0; i < kLinePlies; ++i) g.moves.push_back(Move(uint16_t(1000 * line + i + 1)));
  for (int i = 0; i < 4; ++i) g.moves.push_back(Move(uint16_t(40000 + 8 * salt + i)));
  return g;
}

// Issue 36: pairs of a position that share their opening line are grouped as lines, as games
// are in self-play, and the text output says how many independent pairs they are worth (the
// figures do not use it yet: a cluster job's must equal a local run's, and its results carry no
// lines of pairs).
TEST(MatchLines, PairsOfOneLineAreCountedAndTheTextSaysSo) {
  // 12 positions; in each, 20 pairs in 2 lines of 10: A wins both games of every pair of the
  // first line and loses both of the second's (the line decides the pair).
  MatchStats m("a", "b");
  const std::vector<StartPosition> positions = chess960_positions({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
  int salt = 0;
  for (const StartPosition& pos : positions)
    for (int line = 0; line < 2; ++line)
      for (int k = 0; k < 10; ++k) {
        const GameRecord a =
            line_game(line == 0 ? GameResult::kWhiteWins : GameResult::kBlackWins, pos.number * 2 + line, salt++);
        const GameRecord b =
            line_game(line == 0 ? GameResult::kBlackWins : GameResult::kWhiteWins, pos.number * 2 + line + 500, salt++);
        m.add_pair(pos, &a, &b);
      }
  const MatchRelatedness r = m.relatedness();
  EXPECT_TRUE(r.estimated);
  EXPECT_EQ(r.shared_lines, 24);
  EXPECT_NEAR(r.rho, 1.0, 1e-9);  // every pair of a line alike
  EXPECT_EQ(r.pairs, 240);
  EXPECT_NEAR(r.effective, 24.0, 1e-9);  // 20 pairs in 2 lines of 10: 20 / (1 + 9) a position
  ASSERT_EQ(r.effective_of.size(), 12u);
  EXPECT_NEAR(r.effective_of[0], 2.0, 1e-9);
  EXPECT_EQ(m.rows()[0]->lines.size(), 2u);
  const std::string text = m.to_text();
  std::string note = r.note();
  for (absl::string_view line : absl::StrSplit(note, '\n')) EXPECT_LE(line.size(), 80u) << line;
  absl::StrReplaceAll({{"\n", " "}}, &note);
  EXPECT_NE(note.find("WARNING: related pairs: 24 lines hold two pairs or more"), std::string::npos) << note;
  EXPECT_NE(note.find("the 240 pairs count as about 24.0 independent ones"), std::string::npos) << note;
  EXPECT_NE(text.find(r.note()), std::string::npos) << text;
  // Pairs each of their own line, or a cluster job's (no lines recorded): no warning.
  MatchStats apart("a", "b");
  for (int k = 0; k < 20; ++k) {
    const GameRecord a = line_game(GameResult::kWhiteWins, k, 2 * k);
    const GameRecord b = line_game(GameResult::kDraw, k + 100, 2 * k + 1);
    apart.add_pair(positions[0], &a, &b);
  }
  EXPECT_EQ(apart.relatedness().shared_lines, 0);
  EXPECT_NEAR(apart.relatedness().effective, 20.0, 1e-9);
  EXPECT_EQ(apart.to_text().find("WARNING"), std::string::npos);
  MatchStats cluster("a", "b");
  MatchPositionStats p = *m.rows()[0];
  p.lines.clear();
  cluster.set_position(p);
  EXPECT_EQ(cluster.relatedness().unrecorded, 1);
  EXPECT_EQ(cluster.to_text().find("WARNING"), std::string::npos);
}

TEST(MatchFigures, ScoreVarianceEloAndLos) {
  const Pentanomial penta = {1, 1, 3, 2, 6};
  const MatchFigures f = match_figures(penta);
  const double n = 13, mean = (0.25 * 1 + 0.5 * 3 + 0.75 * 2 + 1.0 * 6) / n;
  const double second = (0.0625 * 1 + 0.25 * 3 + 0.5625 * 2 + 1.0 * 6) / n;
  const double se = std::sqrt((second - mean * mean) / n);
  EXPECT_EQ(f.pairs, 13);
  EXPECT_NEAR(f.score, mean, 1e-12);
  EXPECT_NEAR(f.score_lo, mean - 1.959963984540054 * se, 1e-9);
  EXPECT_NEAR(f.elo, -400 * std::log10(1 / mean - 1), 1e-9);
  EXPECT_NEAR(f.los, 0.5 * std::erfc(-(mean - 0.5) / se / std::sqrt(2.0)), 1e-9);
  EXPECT_NEAR(f.nelo, (mean - 0.5) / std::sqrt(2 * (second - mean * mean)) * 800 / std::log(10.0), 1e-9);
  EXPECT_EQ(f.a_pairs, 8);
  EXPECT_EQ(f.b_pairs, 2);
  // Sign test: 2 of 10 won pairs for B, two-sided: 2 * (1 + 10 + 45) / 1024.
  EXPECT_NEAR(f.sign_p, 2 * 56.0 / 1024, 1e-12);
  EXPECT_TRUE(std::isnan(match_figures(Pentanomial{}).score));
  EXPECT_NEAR(match_figures({4, 0, 0, 0, 0}).sign_p, 0.125, 1e-12);
  // Every pair alike: no spread to measure, and still no certainty. Two pairs won: not the point
  // 1..1, but the sign test's exact bound 0.025^(1/2) = 0.158 to 1, and LOS and p from the same
  // test (issue 36: LOS was 99.5% and p 0.010 beside an interval holding 1/2).
  const MatchFigures two = match_figures({0, 0, 0, 0, 2});
  EXPECT_EQ(two.score, 1.0);
  EXPECT_NEAR(two.score_lo, std::sqrt(0.025), 1e-12);
  EXPECT_EQ(two.score_hi, 1.0);
  EXPECT_NEAR(two.los, 0.75, 1e-12);
  EXPECT_NEAR(two.p, 0.5, 1e-12);
  const MatchFigures even = match_figures({0, 0, 3, 0, 0});
  EXPECT_LT(even.score_lo, 0.5);
  EXPECT_GT(even.score_hi, 0.5);
  EXPECT_NEAR(even.los, 0.5, 1e-12);
  EXPECT_EQ(even.p, 1.0);
}

// Issue 36: 16 pairs lost gave p = 5e-14 (the raw mean over the adjusted standard error) where
// the exact sign test gives 2^-15 = 3.05e-5.
TEST(MatchFigures, EveryPairLostIsTheExactSignTest) {
  const MatchFigures f = match_figures({16, 0, 0, 0, 0});
  EXPECT_NEAR(f.p, std::pow(0.5, 15), 1e-15);
  EXPECT_NEAR(f.p, f.sign_p, 1e-15);
  EXPECT_NEAR(f.los, std::pow(0.5, 16), 1e-15);
  EXPECT_EQ(f.score_lo, 0.0);
  EXPECT_NEAR(f.score_hi, 1 - std::pow(0.025, 1.0 / 16), 1e-12);
  EXPECT_LT(f.score_hi, 0.5);
}

// With every pair alike, at any count and any pair score, the interval holds 1/2 exactly when
// p >= 0.05 and LOS is within [2.5%, 97.5%]; and p = 2 min(LOS, 1 - LOS), as in the normal case.
TEST(MatchFigures, EveryPairAlikeIntervalLosAndPAgree) {
  for (int cell = 0; cell < kPentanomialCells; ++cell)
    for (int n = 1; n <= 40; ++n) {
      Pentanomial penta{};
      penta[size_t(cell)] = n;
      const MatchFigures f = match_figures(penta);
      const bool holds = f.score_lo <= 0.5 && 0.5 <= f.score_hi;
      EXPECT_EQ(holds, f.p >= 0.05) << "cell " << cell << ", " << n << " pairs";
      EXPECT_EQ(holds, f.los >= 0.025 && f.los <= 0.975) << "cell " << cell << ", " << n << " pairs";
      EXPECT_NEAR(f.p, std::min(1.0, 2 * std::min(f.los, 1 - f.los)), 1e-12) << "cell " << cell << ", " << n;
      EXPECT_LE(f.score_lo, f.score);
      EXPECT_GE(f.score_hi, f.score);
    }
}

TEST(MatchStats, PairsAreCountedFromAsSideOnceEach) {
  MatchStats m("a", "b");
  const StartPosition pos = chess960_positions({0})[0];
  const GameRecord a_wins = game(GameResult::kWhiteWins, 1), draw = game(GameResult::kDraw, 2);
  m.add_pair(pos, &a_wins, &draw);  // A wins with White, draws with Black: WD (3 half points)
  const GameRecord b_white_wins = game(GameResult::kWhiteWins, 3), a_white_loses = game(GameResult::kBlackWins, 4);
  m.add_pair(pos, &a_white_loses, &b_white_wins);  // LL
  const GameRecord b_black = game(GameResult::kBlackWins, 5);
  m.add_pair(pos, &a_wins, &b_black);  // A wins both: WW... but a_wins repeats: the pair is new
  m.add_pair(pos, &a_wins, &b_black);  // the same pair again: a duplicate
  m.add_pair(pos, &a_wins, nullptr);   // partner missing
  GameRecord early = game(GameResult::kBlackWins, 6);
  early.termination = Termination::kEngineCrash;
  early.moves.resize(1);  // before both engines moved: not evidence
  m.add_pair(pos, &a_wins, &early);
  const MatchPositionStats& p = *m.rows()[0];
  EXPECT_EQ(p.penta[0], 1);
  EXPECT_EQ(p.penta[3], 1);
  EXPECT_EQ(p.penta[4], 1);
  EXPECT_EQ(p.pairs(), 3);
  EXPECT_EQ(p.duplicates, 1);
  EXPECT_EQ(p.unpaired, 3);
  EXPECT_EQ(p.wins, 3);
  EXPECT_EQ(p.draws, 1);
  EXPECT_EQ(p.losses, 2);
  const std::string csv = m.to_csv();
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "sp,fen,pairs,ll,ld,dd_wl,wd,ww,games,wins,draws,losses,score,score_lo,score_hi,elo,elo_lo,elo_hi,nelo,los,"
            "p,p_holm,p_bh,favours,duplicates,unpaired,engine_a,engine_b");
  EXPECT_NE(csv.find("\n0,"), std::string::npos);
  EXPECT_NE(csv.find("\nall,,3,1,0,0,1,1,6,3,1,2,"), std::string::npos) << csv;
}

// The heterogeneity test: positions alike give a p spread over (0, 1); one position apart
// gives a small p.
TEST(MatchStats, TheHeterogeneityTestFindsAPositionThatDiffers) {
  std::mt19937_64 rng(3);
  const auto play = [&](double a_win, MatchStats* m, const StartPosition& pos, int salt) {
    std::uniform_real_distribution<double> u(0, 1);
    const auto result = [&](bool a_white) {
      const double x = u(rng);
      const bool a_wins = x < a_win, draw = !a_wins && x < a_win + 0.3;
      if (draw) return GameResult::kDraw;
      return a_wins == a_white ? GameResult::kWhiteWins : GameResult::kBlackWins;
    };
    const GameRecord w = game(result(true), salt), b = game(result(false), salt + 500000);
    m->add_pair(pos, &w, &b);
  };
  const std::vector<StartPosition> pos = chess960_positions({0, 1, 2, 3});
  MatchStats alike("a", "b"), apart("a", "b");
  for (int i = 0; i < 200; ++i)
    for (size_t k = 0; k < pos.size(); ++k) {
      play(0.4, &alike, pos[k], int(k * 1000 + i));
      play(k == 3 ? 0.6 : 0.4, &apart, pos[k], int(k * 1000 + i));
    }
  const auto p_of = [](const std::string& json) {
    const size_t at = json.find("\"heterogeneity\"");
    return std::stod(json.substr(json.find("\"p\": ", at) + 5));
  };
  EXPECT_GT(p_of(alike.to_json()), 0.01);
  EXPECT_LT(p_of(apart.to_json()), 1e-4);
  EXPECT_NE(apart.to_csv().find(",A,"), std::string::npos);  // position 3 favours A by Holm
}

TEST(Sprt, ParsesAndValidatesNamingThePart) {
  SprtRule r;
  ASSERT_TRUE(parse_sprt("--sprt", "elo0=0,elo1=5,alpha=0.1,beta=0.2,model=normalized", &r).ok());
  EXPECT_EQ(r.elo1, 5);
  EXPECT_EQ(r.alpha, 0.1);
  EXPECT_TRUE(r.normalized);
  EXPECT_NEAR(r.upper(), std::log(0.8 / 0.1), 1e-12);
  EXPECT_NEAR(r.lower(), std::log(0.2 / 0.9), 1e-12);
  for (const char* bad : {"elo0=5,elo1=0", "elo1=5", "elo0=0,elo1=5,alpha=0.7", "elo0=0,elo1=x",
                          "elo0=0,elo1=5,model=bayes", "elo0=0,elo1=5,gamma=1"})
    EXPECT_NE(parse_sprt("--sprt", bad, &r).message().find("--sprt"), std::string::npos) << bad;
}

// Issue 36: a position whose every pair A lost showed a blank Elo in the text table and -inf in
// the CSV; both say -inf now.
TEST(MatchStats, APositionAtZeroShowsMinusInfinityInTextAndCsv) {
  MatchStats m("a", "b");
  MatchPositionStats row;
  row.id = "7";
  row.penta = {3, 0, 0, 0, 0};
  m.set_position(row);
  const std::string text = m.to_text();
  const size_t at = text.find("\n7 ");
  ASSERT_NE(at, std::string::npos) << text;
  const std::string line = text.substr(at + 1, text.find('\n', at + 1) - at - 1);
  EXPECT_NE(line.find(" -inf "), std::string::npos) << line;
  EXPECT_NE(m.to_csv().find(",-inf,"), std::string::npos) << m.to_csv();
}

// Issue 36: normalized bounds that no distribution of pair scores reaches gave a finite LLR (from
// the observed distribution standing in for the hypothesis's) where Fishtest refuses them. The
// first maximum-likelihood step from the uniform distribution has a solution only for |nElo| <
// (2/3) 800 / ln 10 = 231.6, whatever the results: such rules are refused, and an LLR that
// cannot be computed is NaN (and decides nothing).
TEST(Sprt, NormalizedBoundsOutOfReachAreRefused) {
  SprtRule r;
  EXPECT_NE(parse_sprt("--sprt", "elo0=0,elo1=250,model=normalized", &r).message().find("--sprt: normalized"),
            std::string::npos);
  EXPECT_NE(parse_sprt("--sprt", "elo0=-240,elo1=0,model=normalized", &r).message().find("231.6"), std::string::npos);
  EXPECT_TRUE(parse_sprt("--sprt", "elo0=0,elo1=250", &r).ok());  // logistic: any score in (0, 1) is reachable
  ASSERT_TRUE(parse_sprt("--sprt", "elo0=0,elo1=230,model=normalized", &r).ok());
  const Pentanomial penta = {10, 40, 100, 60, 20};
  EXPECT_TRUE(std::isfinite(sprt_llr(r, penta)));
  SprtRule far = r;
  far.elo1 = 300;  // as a rule that skipped validation would have it
  EXPECT_TRUE(std::isnan(sprt_llr(far, penta)));
  EXPECT_EQ(sprt_result(far, sprt_llr(far, penta)), SprtResult::kContinue);
  MatchStats m("a", "b");
  MatchPositionStats row;
  row.id = "518";
  row.penta = penta;
  m.set_position(row);
  m.set_sprt(far);
  EXPECT_NE(m.to_text().find("LLR none"), std::string::npos) << m.to_text();
}

// For many pairs the generalized LLR approaches its normal approximation
// N (s1 - s0) (2 mu - s0 - s1) / (2 var); it favours the hypothesis nearer the data.
TEST(Sprt, LlrAgreesWithItsNormalApproximation) {
  SprtRule r;
  r.elo0 = 0;
  r.elo1 = 10;
  const Pentanomial penta = {300, 2200, 5000, 2300, 350};
  const MatchFigures f = match_figures(penta);
  double var = 0;
  const double x[5] = {0, 0.25, 0.5, 0.75, 1};
  for (int i = 0; i < 5; ++i) var += double(penta[size_t(i)]) / double(f.pairs) * (x[i] - f.score) * (x[i] - f.score);
  const double s0 = 0.5, s1 = 1 / (1 + std::pow(10.0, -10.0 / 400));
  const double approx = double(f.pairs) * (s1 - s0) * (2 * f.score - s0 - s1) / (2 * var);
  const double llr = sprt_llr(r, penta);
  EXPECT_NEAR(llr, approx, std::abs(approx) * 0.03 + 0.05);
  EXPECT_LT(sprt_llr(r, {350, 2300, 5000, 2200, 300}), 0);  // A weaker: towards H0
  SprtRule n = r;
  n.normalized = true;
  EXPECT_GT(sprt_llr(n, {100, 1000, 5000, 1500, 200}), 0);
  EXPECT_LT(sprt_llr(n, {200, 1500, 5000, 1000, 100}), 0);
}

// Error rates by simulation: at elo0 the test accepts H1 at most about alpha of the time, at
// elo1 H0 at most about beta (pairs drawn from a pentanomial with the Elo's score).
TEST(Sprt, ErrorRatesAreAboutAlphaAndBeta) {
  SprtRule r;
  r.elo0 = 0;
  r.elo1 = 40;
  std::mt19937_64 rng(11);
  const auto run = [&](double elo) {
    // A pentanomial with mean score(elo): shift weight between the outer cells.
    const double s = 1 / (1 + std::pow(10.0, -elo / 400));
    const double d = (s - 0.5) / 0.3;  // the shifts below move the mean by 0.3 d
    const double p[5] = {0.05 - d * 0.1, 0.2 - d * 0.4, 0.5, 0.2 + d * 0.4, 0.05 + d * 0.1};
    std::discrete_distribution<int> cell({p[0], p[1], p[2], p[3], p[4]});
    Pentanomial penta{};
    for (int pairs = 1; pairs <= 20000; ++pairs) {
      ++penta[size_t(cell(rng))];
      if (pairs % 10) continue;
      const SprtResult res = sprt_result(r, sprt_llr(r, penta));
      if (res != SprtResult::kContinue) return res;
    }
    return SprtResult::kContinue;
  };
  constexpr int kRuns = 300;
  int false_h1 = 0, false_h0 = 0;
  for (int i = 0; i < kRuns; ++i) {
    false_h1 += run(0) == SprtResult::kH1;
    false_h0 += run(40) == SprtResult::kH0;
  }
  std::printf("SPRT elo0=0, elo1=40, alpha=beta=0.05: H1 at elo 0 in %d/%d, H0 at elo 40 in %d/%d\n", false_h1, kRuns,
              false_h0, kRuns);
  EXPECT_LE(false_h1, kRuns * 9 / 100);
  EXPECT_LE(false_h0, kRuns * 9 / 100);
}

// Colour-reversed pairs: games 2k and 2k+1 of a position start with the same random opening,
// the next pair with another.
TEST(MatchSpec, APairSharesItsOpening) {
  SelfPlaySpec s;
  s.positions = chess960_positions({0});
  s.games_per_position = 4;
  s.limits.nodes = 100;
  s.random_plies = 6;
  s.seed = 9;
  s.opponent = "/usr/games/stockfish";
  ASSERT_TRUE(s.validate().ok()) << s.validate();
  const GameOptions g0 = *game_options(s, s.positions[0], 0), g1 = *game_options(s, s.positions[0], 1),
                    g2 = *game_options(s, s.positions[0], 2);
  EXPECT_EQ(g0.opening, g1.opening);
  EXPECT_NE(g0.opening, g2.opening);
  EXPECT_NE(g0.seed, g1.seed);
  s.games_per_position = 3;
  EXPECT_NE(s.validate().message().find("games_per_position"), absl::string_view::npos);
  s.games_per_position = 4;
  s.opponent = "builtin";
  s.engine = "builtin";
  EXPECT_NE(s.validate().message().find("opponent"), absl::string_view::npos);
}

}  // namespace
}  // namespace c960::selfplay
