// Self-play benchmarks (figures, not tests):
//   selfplay_bench speed ENGINE NODES GAMES
//     games per minute on one core: ENGINE (builtin or a UCI binary) against itself at NODES
//     per move, from random start positions.
//   selfplay_bench strength STOCKFISH BUILTIN_NODES SF_MOVETIME_MS GAMES ELO[,ELO...]
//     the built-in engine against Stockfish with UCI_LimitStrength at each UCI_Elo, colours
//     alternating, random start positions: W/D/L, score and Elo difference with 95% intervals.
//   selfplay_bench eval NODES GAMES
//     what each evaluation term pays: the full evaluation against one with a term switched off.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "core/movegen.h"
#include "core/startpos.h"
#include "selfplay/players.h"
#include "selfplay/stats.h"

using namespace c960;
using namespace c960::selfplay;

namespace {

int usage() {
  std::fprintf(stderr,
               "usage: selfplay_bench speed ENGINE NODES GAMES\n"
               "       selfplay_bench strength STOCKFISH BUILTIN_NODES SF_MOVETIME_MS GAMES ELO[,ELO...]\n"
               "       selfplay_bench eval NODES GAMES\n");
  return 2;
}

bool to_int(const char* s, long long lo, long long hi, long long& out) {
  return absl::SimpleAtoi(s, &out) && out >= lo && out <= hi;
}

std::unique_ptr<Player> make(const std::string& engine, std::vector<UciOptionValue> options = {}) {
  if (engine == "builtin") return std::make_unique<BuiltinPlayer>(16);
  UciConfig c;
  c.path = engine;
  c.options = std::move(options);
  return std::make_unique<UciPlayer>(c);
}

// Plays `games` games of a against b, a White in even games, from random start positions with
// 4 random plies (seeded by the game number); returns a's results as White-relative counts.
ResultCounts match(Player& a, Player& b, const MoveLimits& la, const MoveLimits& lb, int games, int* plies,
                   int failures[]) {
  ResultCounts c;  // from a's view: white_wins = a wins
  for (int g = 0; g < games; ++g) {
    const std::string fen = *startpos_fen(random_startpos(uint64_t(g / 2) + 1), true);
    GameOptions o;
    o.max_plies = 400;
    o.adjudication.resign_moves = 4;
    o.adjudication.resign_score_cp = 1000;
    // Same opening plies for both colour assignments of a position: a fair pair.
    Prng prng(uint64_t(g / 2) * 7919 + 13);
    Position pos = *Position::from_fen(fen);
    StateInfo st[4];
    for (int i = 0; i < 4; ++i) {
      MoveList l;
      generate_legal(pos, l);
      const Move m = l.moves[prng.below(uint64_t(l.size()))];
      o.opening.push_back(m);
      pos.do_move(m, st[i]);
    }
    const bool a_white = g % 2 == 0;
    absl::StatusOr<GameRecord> r = a_white ? play_game(fen, a, b, la, lb, o) : play_game(fen, b, a, lb, la, o);
    if (!r.ok()) {
      std::fprintf(stderr, "game %d: %s\n", g, std::string(r.status().message()).c_str());
      std::exit(1);
    }
    if (plies) *plies += r->plies();
    if (failures && r->termination >= Termination::kIllegalMove) ++failures[0];
    const bool white_won = r->result == GameResult::kWhiteWins, black_won = r->result == GameResult::kBlackWins;
    if ((white_won && a_white) || (black_won && !a_white))
      ++c.white_wins;
    else if (white_won || black_won)
      ++c.black_wins;
    else
      ++c.draws;
  }
  return c;
}

void print_result(const char* label, const ResultCounts& c) {
  const Interval s = c.score(), e = c.elo();
  std::printf("%-28s +%lld =%lld -%lld  score %.3f [%.3f, %.3f]  Elo %+.0f [%+.0f, %+.0f]\n", label,
              (long long)c.white_wins, (long long)c.draws, (long long)c.black_wins, s.value, s.lo, s.hi, e.value + 0.0,
              e.lo, e.hi);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage();
  const std::string mode = argv[1];
  if (mode == "speed" && argc == 5) {
    long long nodes, games;
    if (!to_int(argv[3], 1, 1LL << 30, nodes) || !to_int(argv[4], 1, 100000, games)) return usage();
    std::unique_ptr<Player> w = make(argv[2]), b = make(argv[2]);
    const MoveLimits l{uint64_t(nodes), 0, 0};
    int plies = 0, failures = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const ResultCounts c = match(*w, *b, l, l, int(games), &plies, &failures);
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf(
        "engine %s, nodes %lld: %lld games, %d plies in %.1f s: %.1f games/min/core, %.0f plies/s; failures %d\n",
        argv[2], nodes, games, plies, secs, double(games) * 60 / secs, plies / secs, failures);
    print_result("first engine (self-play)", c);
    return 0;
  }
  if (mode == "strength" && argc == 7) {
    long long nodes, movetime, games;
    if (!to_int(argv[3], 1, 1LL << 30, nodes) || !to_int(argv[4], 1, 100000, movetime) ||
        !to_int(argv[5], 1, 100000, games))
      return usage();
    for (absl::string_view elo : absl::StrSplit(argv[6], ',')) {
      BuiltinPlayer builtin(16);
      UciConfig c;
      c.path = argv[2];
      c.options = {{"UCI_LimitStrength", "true"}, {"UCI_Elo", std::string(elo)}, {"Hash", "16"}, {"Threads", "1"}};
      UciPlayer sf(c);
      int failures = 0;
      const ResultCounts r =
          match(builtin, sf, {uint64_t(nodes), 0, 0}, {0, 0, int(movetime)}, int(games), nullptr, &failures);
      const std::string label = "builtin vs SF UCI_Elo " + std::string(elo);
      print_result(label.c_str(), r);
      if (failures) std::printf("  (%d games ended by an engine failure)\n", failures);
    }
    return 0;
  }
  if (mode == "eval" && argc == 4) {
    long long nodes, games;
    if (!to_int(argv[2], 1, 1LL << 30, nodes) || !to_int(argv[3], 1, 100000, games)) return usage();
    const MoveLimits l{uint64_t(nodes), 0, 0};
    const char* names[] = {"without mobility", "without king safety", "without pawn structure"};
    for (int t = 0; t < 3; ++t) {
      BuiltinPlayer full(16), reduced(16);
      engine::EvalTerms terms;
      (t == 0 ? terms.mobility : t == 1 ? terms.king_safety : terms.pawn_structure) = false;
      reduced.engine().set_eval_terms(terms);
      const std::string label = std::string("full vs ") + names[t];
      print_result(label.c_str(), match(full, reduced, l, l, int(games), nullptr, nullptr));
    }
    return 0;
  }
  return usage();
}
