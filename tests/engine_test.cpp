// The built-in engine: mates in 2 and 3, determinism, symmetry, and games against a random mover.
#include <deque>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "core/engine/eval.h"
#include "core/engine/search.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/startpos.h"
#include "gtest/gtest.h"
#include "selfplay/players.h"
#include "tests/mate_prover.h"
#include "tests/test_paths.h"

namespace c960::engine {
namespace {

struct MateCase {
  std::string fen, id;
  std::vector<std::string> bm;
  int n = 0;
};

std::vector<MateCase> load_mates() {
  std::ifstream in(std::string(c960::test::data_dir()) + "/mates960.epd");
  std::vector<MateCase> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    MateCase c;
    const size_t bm = line.find(" bm ");
    c.fen = line.substr(0, bm);
    for (absl::string_view field : absl::StrSplit(line.substr(bm + 1), ';', absl::SkipWhitespace())) {
      field = absl::StripAsciiWhitespace(field);
      if (absl::ConsumePrefix(&field, "bm "))
        c.bm = absl::StrSplit(field, ' ', absl::SkipEmpty());
      else if (absl::ConsumePrefix(&field, "dm "))
        c.n = std::stoi(std::string(field));
      else if (absl::ConsumePrefix(&field, "id "))
        c.id = std::string(field);
    }
    out.push_back(c);
  }
  return out;
}

TEST(Engine, FindsTheMatesInTwoAndThree) {
  const std::vector<MateCase> cases = load_mates();
  ASSERT_GE(cases.size(), 30u);
  int twos = 0, threes = 0;
  Engine engine(4);
  for (const MateCase& c : cases) {
    SCOPED_TRACE(c.id + " " + c.fen);
    absl::StatusOr<Position> pos = Position::from_fen(c.fen);
    ASSERT_TRUE(pos.ok());
    engine.new_game();
    const SearchResult r = engine.search(*pos, Limits{0, 2 * c.n + 1, 0});
    EXPECT_EQ(r.score, mate_in(2 * c.n - 1)) << "mate in " << c.n << " expected";
    EXPECT_NE(std::find(c.bm.begin(), c.bm.end(), to_uci(r.best)), c.bm.end()) << "played " << to_uci(r.best);
    (c.n == 2 ? twos : threes)++;
  }
  EXPECT_GE(twos, 10);
  EXPECT_GE(threes, 10);
}

TEST(Engine, MateWithinANodeBudgetAndProvenByTheProver) {
  // The same positions under a node limit, and the move checked by the independent prover.
  Engine engine(4);
  for (const MateCase& c : load_mates()) {
    if (c.n != 2) continue;
    SCOPED_TRACE(c.id);
    Position pos = *Position::from_fen(c.fen);
    engine.new_game();
    const SearchResult r = engine.search(pos, Limits{200000, 0, 0});
    EXPECT_TRUE(c960::test::move_forces_mate(pos, r.best, 2)) << to_uci(r.best);
  }
}

TEST(Engine, DeterministicForAGivenLimit) {
  Engine a(4), b(4);
  for (int sp : {0, 518, 959}) {
    Position pos = *Position::from_fen(*startpos_fen(sp));
    const SearchResult x = a.search(pos, Limits{20000, 0, 0});
    const SearchResult y = b.search(pos, Limits{20000, 0, 0});
    EXPECT_EQ(x.best, y.best);
    EXPECT_EQ(x.score, y.score);
    EXPECT_EQ(x.nodes, y.nodes);
    EXPECT_EQ(x.pv, y.pv);
    // The node limit is honoured (a few nodes over at most, to finish the node in hand).
    EXPECT_LE(x.nodes, 20000u + 2);
    EXPECT_EQ(pos.fen(), *startpos_fen(sp));  // position restored
  }
}

TEST(Engine, SamplesAmongNearBestMovesReproducibly) {
  Engine e(4);
  Position pos = *Position::from_fen(*startpos_fen(518));
  std::set<uint16_t> picks;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    e.new_game();
    const SearchResult r = e.search(pos, Limits{0, 4, 0, 40, seed});
    e.new_game();
    EXPECT_EQ(e.search(pos, Limits{0, 4, 0, 40, seed}).best, r.best) << "seed " << seed;
    picks.insert(r.best.raw());
  }
  EXPECT_GE(picks.size(), 3u);  // 20 moves within 40 cp of each other: sampling varies
  std::set<uint16_t> unsampled;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    e.new_game();
    unsampled.insert(e.search(pos, Limits{0, 4, 0, 0, seed}).best.raw());
  }
  EXPECT_EQ(unsampled.size(), 1u);
  // A wide margin never gives up a mate.
  for (const MateCase& c : load_mates()) {
    Position p = *Position::from_fen(c.fen);
    e.new_game();
    const SearchResult r = e.search(p, Limits{0, 2 * c.n + 1, 0, 300, 99});
    EXPECT_NE(std::find(c.bm.begin(), c.bm.end(), to_uci(r.best)), c.bm.end()) << c.id;
  }
}

TEST(Engine, NoMoveInFinishedPositions) {
  Engine e(1);
  Position mated = *Position::from_fen("k6R/8/1K6/8/8/8/8/8 b - - 0 1");
  SearchResult r = e.search(mated, Limits{0, 3, 0});
  EXPECT_FALSE(r.best);
  EXPECT_EQ(r.score, -VALUE_MATE);
  Position stalemated = *Position::from_fen("k7/8/1Q6/8/8/8/8/7K b - - 0 1");
  r = e.search(stalemated, Limits{0, 3, 0});
  EXPECT_FALSE(r.best);
  EXPECT_EQ(r.score, VALUE_DRAW);
}

TEST(Engine, AvoidsStalemateWhenWinning) {
  // Qb6 would stalemate; any sane move keeps the win.
  Engine e(4);
  Position pos = *Position::from_fen("k7/8/8/1Q6/8/8/8/6K1 w - - 0 1");
  const SearchResult r = e.search(pos, Limits{0, 5, 0});
  EXPECT_NE(to_uci(r.best), "b5b6");
  EXPECT_GT(r.score, 500);
}

// Colour-flipped FEN (ranks mirrored, case swapped, side swapped); castling and en passant must
// be "-".
std::string flip_fen(const std::string& fen) {
  std::vector<std::string> f = absl::StrSplit(fen, ' ');
  std::vector<std::string> ranks = absl::StrSplit(f[0], '/');
  std::reverse(ranks.begin(), ranks.end());
  std::string board;
  for (const std::string& r : ranks) {
    if (!board.empty()) board += '/';
    for (char c : r)
      board += std::isupper(static_cast<unsigned char>(c)) ? char(std::tolower(c)) : char(std::toupper(c));
  }
  return board + (f[1] == "w" ? " b " : " w ") + f[2] + " " + f[3] + " 0 1";
}

TEST(Eval, SymmetricBetweenColours) {
  // Positions from random games: the evaluation must not care which colour is which.
  int checked = 0;
  for (int g = 0; g < 20; ++g) {
    Position pos = *Position::from_fen(*startpos_fen(random_startpos(g)));
    std::deque<StateInfo> states;
    for (int ply = 0; ply < 60 && has_legal_move(pos); ++ply) {
      MoveList list;
      generate_legal(pos, list);
      pos.do_move(list.moves[(g * 7 + ply * 13) % list.size()], states.emplace_back());
      if (pos.castling_rights() != NO_CASTLING || pos.ep_square() != SQ_NONE) continue;
      const Position flipped = *Position::from_fen(flip_fen(pos.fen()));
      ASSERT_EQ(evaluate(pos), evaluate(flipped)) << pos.fen();
      ++checked;
    }
  }
  EXPECT_GE(checked, 100);
}

TEST(Engine, NeverLosesToARandomMover) {
  int wins = 0;
  for (int g = 0; g < 8; ++g) {
    selfplay::BuiltinPlayer engine(4);
    selfplay::RandomPlayer random(100 + g);
    const std::string fen = *startpos_fen(random_startpos(1000 + g), true);
    const selfplay::MoveLimits limits{3000, 0, 0};
    selfplay::GameOptions options;
    options.max_plies = 400;
    const bool engine_white = g % 2 == 0;
    absl::StatusOr<selfplay::GameRecord> game = engine_white
                                                    ? selfplay::play_game(fen, engine, random, limits, {}, options)
                                                    : selfplay::play_game(fen, random, engine, {}, limits, options);
    ASSERT_TRUE(game.ok()) << game.status();
    const selfplay::GameResult loss =
        engine_white ? selfplay::GameResult::kBlackWins : selfplay::GameResult::kWhiteWins;
    EXPECT_NE(game->result, loss) << game->pgn;
    wins += game->result != selfplay::GameResult::kDraw;
  }
  // Not just no losses: against random moves the engine mates.
  EXPECT_GE(wins, 6);
}

}  // namespace
}  // namespace c960::engine
