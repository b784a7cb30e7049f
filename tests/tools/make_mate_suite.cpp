// Builds tests/data/mates960.epd: positions with a forced mate in exactly 2 or 3 moves, taken
// from games of the built-in engine against a random mover from random Chess960 start positions.
// Each is proven by the brute-force prover (mate in N, none in N-1), and the solutions listed
// are all the first moves that force it. Usage: make_mate_suite COUNT2 COUNT3 SEED > FILE
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>

#include "core/notation.h"
#include "core/startpos.h"
#include "selfplay/players.h"
#include "tests/mate_prover.h"

using namespace c960;

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: make_mate_suite COUNT2 COUNT3 SEED\n");
    return 2;
  }
  int want[4] = {0, 0, std::atoi(argv[1]), std::atoi(argv[2])};
  const uint64_t seed = std::strtoull(argv[3], nullptr, 10);
  Prng prng(seed);
  engine::Engine eng(4);
  for (int game = 0; want[2] > 0 || want[3] > 0; ++game) {
    Position pos = *Position::from_fen(*startpos_fen(random_startpos(prng.rand64()), true));
    std::deque<StateInfo> states;
    eng.new_game();
    const Color engine_side = Color(game & 1);
    for (int ply = 0; ply < 300 && has_legal_move(pos); ++ply) {
      Move m;
      if (pos.side_to_move() == engine_side) {
        // Candidates: the engine sees a mate in 2 or 3; the prover decides.
        const engine::SearchResult r = eng.search(pos, engine::Limits{0, 4, 0});
        const int plies = engine::VALUE_MATE - r.score;
        if (r.score > 0 && engine::is_mate_score(r.score) && (plies == 3 || plies == 5)) {
          const int n = (plies + 1) / 2;
          Position copy = pos;
          if (want[n] > 0 && !test::forced_mate(copy, n - 1) && test::forced_mate(copy, n)) {
            MoveList list;
            generate_legal(copy, list);
            std::string bm;
            for (Move x : list)
              if (test::move_forces_mate(copy, x, n)) {
                if (!bm.empty()) bm += ' ';
                bm += to_uci(x);
              }
            std::printf("%s bm %s; dm %d; id \"gen-%d-%d\";\n", copy.fen(FenDialect::kShredder).c_str(), bm.c_str(), n,
                        game, ply);
            std::fflush(stdout);
            --want[n];
          }
        }
        m = r.best;
      } else {
        MoveList list;
        generate_legal(pos, list);
        m = list.moves[prng.below(uint64_t(list.size()))];
      }
      pos.do_move(m, states.emplace_back());
      if (pos.rule50() >= 100) break;
    }
  }
  return 0;
}
