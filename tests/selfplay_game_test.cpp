// The game runner: each termination rule, adjudication, player failures, PGN.
#include <chrono>
#include <deque>
#include <thread>

#include "absl/strings/str_split.h"
#include "core/movegen.h"
#include "core/startpos.h"
#include "gtest/gtest.h"
#include "selfplay/game.h"
#include "selfplay/players.h"
#include "tests/selfplay_test_util.h"

namespace c960::selfplay {
namespace {

using c960::test::ScriptedPlayer;
using c960::test::split_moves;

const std::string kClassical = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

// Plays a scripted game: white's and black's moves interleaved in `moves`.
GameRecord scripted(const std::string& fen, const std::string& moves, const GameOptions& options = {},
                    std::vector<std::optional<int>> scores = {}) {
  std::vector<std::string> w, b;
  std::vector<std::optional<int>> ws, bs;
  const std::vector<std::string> all = split_moves(moves);
  const bool black_first = Position::from_fen(fen)->side_to_move() == BLACK;
  for (size_t i = 0; i < all.size(); ++i) {
    const bool white = (i % 2 == 0) != black_first;
    (white ? w : b).push_back(all[i]);
    if (i < scores.size()) (white ? ws : bs).push_back(scores[i]);
  }
  ScriptedPlayer white(w, ws), black(b, bs);
  absl::StatusOr<GameRecord> g = play_game(fen, white, black, {}, {}, options);
  EXPECT_TRUE(g.ok()) << g.status();
  return g.ok() ? *g : GameRecord{};
}

TEST(GameRules, Checkmate) {
  const GameRecord g = scripted("k7/8/1K6/8/8/8/8/7R w - - 0 1", "h1h8");
  EXPECT_EQ(g.termination, Termination::kCheckmate);
  EXPECT_EQ(g.result, GameResult::kWhiteWins);
  EXPECT_EQ(g.plies(), 1);
  const GameRecord b = scripted("7K/8/6k1/8/8/8/8/r7 b - - 0 1", "a1a8");
  EXPECT_EQ(b.termination, Termination::kCheckmate);
  EXPECT_EQ(b.result, GameResult::kBlackWins);
}

TEST(GameRules, Stalemate) {
  const GameRecord g = scripted("k7/8/8/1Q6/8/8/8/7K w - - 0 1", "b5b6");
  EXPECT_EQ(g.termination, Termination::kStalemate);
  EXPECT_EQ(g.result, GameResult::kDraw);
}

TEST(GameRules, ThreefoldRepetitionOnTheThirdOccurrence) {
  const GameRecord g = scripted(kClassical, "g1f3 g8f6 f3g1 f6g8 g1f3 g8f6 f3g1 f6g8 g1f3");
  EXPECT_EQ(g.termination, Termination::kThreefoldRepetition);
  EXPECT_EQ(g.plies(), 8);  // the start position for the third time
  EXPECT_EQ(g.result, GameResult::kDraw);
}

TEST(GameRules, RepetitionNeedsTheSameCastlingRights) {
  // After Ke1/Ke8 (ply 6) the placement is that after 1. e4 e5 (ply 2), but without castling
  // rights. Ignoring rights would call the draw at ply 10 (plies 2, 6, 10); the first real
  // threefold is the Ke2/Ke7 position at plies 4, 8 and 12.
  const GameRecord g =
      scripted(kClassical, "e2e4 e7e5 e1e2 e8e7 e2e1 e7e8 e1e2 e8e7 e2e1 e7e8 e1e2 e8e7 e2e1 e7e8 e1e2");
  EXPECT_EQ(g.termination, Termination::kThreefoldRepetition);
  EXPECT_EQ(g.plies(), 12);
}

TEST(GameRules, RepetitionKeyIgnoresUnusableEnPassant) {
  // The e5 pawn is pinned: d6 is no real en passant right, the positions are the same.
  const Position pinned = *Position::from_fen("4r2k/8/8/3pP3/8/8/8/4K3 w - d6 0 1");
  const Position pinned_no_ep = *Position::from_fen("4r2k/8/8/3pP3/8/8/8/4K3 w - - 0 1");
  EXPECT_EQ(repetition_key(pinned), repetition_key(pinned_no_ep));
  const Position free = *Position::from_fen("7k/8/8/3pP3/8/8/8/4K3 w - d6 0 1");
  const Position free_no_ep = *Position::from_fen("7k/8/8/3pP3/8/8/8/4K3 w - - 0 1");
  EXPECT_NE(repetition_key(free), repetition_key(free_no_ep));
}

TEST(GameRules, FiftyMoveRule) {
  const GameRecord g = scripted("7k/8/8/8/8/8/8/K5R1 w - - 99 80", "g1g2");
  EXPECT_EQ(g.termination, Termination::kFiftyMoveRule);
  EXPECT_EQ(g.result, GameResult::kDraw);
  // Mate on the hundredth ply wins.
  const GameRecord m = scripted("k7/8/1K6/8/8/8/8/7R w - - 99 80", "h1h8");
  EXPECT_EQ(m.termination, Termination::kCheckmate);
  // A capture resets the clock.
  const GameRecord c = scripted("7k/8/8/8/8/8/7p/K6R w - - 99 80", "h1h2 h8g8 h2h3");
  EXPECT_EQ(c.termination, Termination::kEngineError);  // script ran out: the game went on
  EXPECT_EQ(c.plies(), 3);
}

TEST(GameRules, InsufficientMaterial) {
  const GameRecord g = scripted("7k/8/8/8/8/8/5n2/K6R b - - 0 1", "f2h1");
  EXPECT_EQ(g.termination, Termination::kInsufficientMaterial);
  EXPECT_EQ(g.result, GameResult::kDraw);
  const auto insufficient = [](const char* fen) { return insufficient_material(*Position::from_fen(fen)); };
  EXPECT_TRUE(insufficient("7k/8/8/8/8/8/8/K7 w - - 0 1"));
  EXPECT_TRUE(insufficient("7k/8/8/8/8/8/8/KB6 w - - 0 1"));
  EXPECT_TRUE(insufficient("7k/8/8/8/8/8/8/KN6 w - - 0 1"));
  EXPECT_TRUE(insufficient("6bk/8/8/8/8/8/8/KB6 w - - 0 1"));    // bishops on one colour
  EXPECT_TRUE(insufficient("6bk/8/8/8/8/8/8/KB1B4 w - - 0 1"));  // three, all light squares
  EXPECT_FALSE(insufficient("5b1k/8/8/8/8/8/8/KB6 w - - 0 1"));  // opposite colours
  EXPECT_FALSE(insufficient("7k/8/8/8/8/8/8/KNN5 w - - 0 1"));
  EXPECT_FALSE(insufficient("6nk/8/8/8/8/8/8/KB6 w - - 0 1"));
  EXPECT_FALSE(insufficient("7k/8/8/8/8/8/P7/K7 w - - 0 1"));
  EXPECT_FALSE(insufficient("7k/8/8/8/8/8/8/KR6 w - - 0 1"));
}

TEST(GameRules, MaxPlies) {
  GameOptions o;
  o.max_plies = 6;
  const GameRecord g = scripted(kClassical, "g1f3 g8f6 b1c3 b8c6 f3g1 f6g8 a2a3", o);
  EXPECT_EQ(g.termination, Termination::kMaxPlies);
  EXPECT_EQ(g.result, GameResult::kDraw);
  EXPECT_EQ(g.plies(), 6);
}

TEST(GameRules, AdjudicatedDraw) {
  GameOptions o;
  o.adjudication.draw_moves = 2;
  o.adjudication.draw_score_cp = 10;
  // Ply 3's score 40 is too big: two near-zero moves for each side come only with ply 7.
  const GameRecord g = scripted(kClassical, "g1f3 g8f6 b1c3 b8c6 e2e3 e7e6 d2d3 d7d6", o, {5, -3, 40, 0, 8, -10, 0, 0});
  EXPECT_EQ(g.termination, Termination::kAdjudicatedDraw);
  EXPECT_EQ(g.plies(), 7);
  EXPECT_EQ(g.result, GameResult::kDraw);
}

TEST(GameRules, AdjudicatedResignNeedsBothSidesToAgree) {
  GameOptions o;
  o.adjudication.resign_moves = 2;
  o.adjudication.resign_score_cp = 500;
  const GameRecord g = scripted(kClassical, "g1f3 g8f6 b1c3 b8c6 e2e3 e7e6", o, {600, -700, 800, -900});
  EXPECT_EQ(g.termination, Termination::kAdjudicatedResign);
  EXPECT_EQ(g.result, GameResult::kWhiteWins);
  EXPECT_EQ(g.plies(), 4);
  // White does not believe it is winning: play goes on.
  const GameRecord n = scripted(kClassical, "g1f3 g8f6 b1c3 b8c6", o, {100, -700, 100, -900});
  EXPECT_EQ(n.termination, Termination::kEngineError);  // script exhausted at ply 4
  // Black winning, White resigning after its own second hopeless move.
  const GameRecord b = scripted(kClassical, "g1f3 g8f6 b1c3 b8c6 e2e3", o, {-600, 700, -800, 900, -900});
  EXPECT_EQ(b.termination, Termination::kAdjudicatedResign);
  EXPECT_EQ(b.result, GameResult::kBlackWins);
  EXPECT_EQ(b.plies(), 4);
}

TEST(GameRules, IllegalMoveAndFailuresLose) {
  const GameRecord g = scripted(kClassical, "!raw:e2e5");
  EXPECT_EQ(g.termination, Termination::kIllegalMove);
  EXPECT_EQ(g.result, GameResult::kBlackWins);
  EXPECT_NE(g.detail.find("e2e5"), std::string::npos) << g.detail;
  const GameRecord c = scripted(kClassical, "e2e4 !crash");
  EXPECT_EQ(c.termination, Termination::kEngineCrash);
  EXPECT_EQ(c.result, GameResult::kWhiteWins);
  const GameRecord h = scripted(kClassical, "!hang");
  EXPECT_EQ(h.termination, Termination::kEngineHang);
  EXPECT_EQ(h.result, GameResult::kBlackWins);
}

// A time control: each player sees both clocks at each move, the time it takes comes off its
// clock and the increment is added after its move; a player out of time loses on time, and the
// PGN says "time forfeit" with the TimeControl of the limit.
class ClockedPlayer : public Player {
 public:
  ClockedPlayer(std::string name, int think_ms) : name_(std::move(name)), think_ms_(think_ms) {}
  std::string name() const override { return name_; }
  absl::Status new_game() override { return absl::OkStatus(); }
  PlayerMove choose(const MoveRequest& r) override {
    clocks.emplace_back(r.limits.wtime_ms, r.limits.btime_ms);
    std::this_thread::sleep_for(std::chrono::milliseconds(think_ms_));
    MoveList list;
    generate_legal(r.pos, list);
    PlayerMove m;
    m.move = list.moves[0];
    return m;
  }
  std::vector<std::pair<int64_t, int64_t>> clocks;

 private:
  std::string name_;
  int think_ms_;
};

TEST(GameRules, ATimeControlKeepsBothClocksAndForfeitsOnTime) {
  MoveLimits tc;
  tc.tc_base_ms = 300;
  tc.tc_increment_ms = 10;
  ClockedPlayer fast("fast", 0), slow("slow", 60);
  GameOptions options;
  options.time_control = "0.3+0.01";
  absl::StatusOr<GameRecord> g = play_game(kClassical, fast, slow, tc, tc, options);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->termination, Termination::kTimeForfeit);
  EXPECT_EQ(g->result, GameResult::kWhiteWins);
  EXPECT_NE(g->detail.find("slow lost on time"), std::string::npos) << g->detail;
  EXPECT_NE(g->pgn.find("[Termination \"time forfeit\"]"), std::string::npos) << g->pgn;
  EXPECT_NE(g->pgn.find("[TimeControl \"0.3+0.01\"]"), std::string::npos);
  // Black thinks 60 ms a move and gains 10: out of its 300 ms after 5 or 6 moves (more under load
  // only if the sleeps run long, which makes it lose sooner).
  ASSERT_GE(slow.clocks.size(), 3u);
  EXPECT_LE(slow.clocks.size(), 6u);
  EXPECT_EQ(fast.clocks[0], std::make_pair(int64_t(300), int64_t(300)));
  for (size_t i = 1; i < slow.clocks.size(); ++i) {
    EXPECT_LT(slow.clocks[i].second, slow.clocks[i - 1].second - 40);  // 60 taken, 10 given
    EXPECT_GE(fast.clocks[i].first, 300);                              // White thinks ~0 and gains 10
  }
}

TEST(GameRules, BadInputIsAnError) {
  ScriptedPlayer w({}), b({});
  EXPECT_FALSE(play_game("not a fen", w, b, {}, {}, {}).ok());
  GameOptions o;
  o.opening = {Move(SQ_E2, SQ_E5)};
  const absl::StatusOr<GameRecord> g = play_game(kClassical, w, b, {}, {}, o);
  ASSERT_FALSE(g.ok());
  EXPECT_NE(g.status().message().find("opening move 1"), absl::string_view::npos);
}

// Replays a record and checks, independently of the runner, that its termination holds.
void check_finished_game(const GameRecord& g) {
  Position pos = *Position::from_fen(g.start_fen);
  std::deque<StateInfo> states;
  std::vector<Key> keys = {repetition_key(pos)};
  for (Move m : g.moves) {
    MoveList legal;
    generate_legal(pos, legal);
    ASSERT_TRUE(legal.contains(m));
    pos.do_move(m, states.emplace_back());
    keys.push_back(repetition_key(pos));
  }
  const int moves = count_legal(pos);
  switch (g.termination) {
    case Termination::kCheckmate: EXPECT_TRUE(moves == 0 && pos.in_check()); break;
    case Termination::kStalemate: EXPECT_TRUE(moves == 0 && !pos.in_check()); break;
    case Termination::kFiftyMoveRule: EXPECT_GE(pos.rule50(), 100); break;
    case Termination::kInsufficientMaterial: EXPECT_TRUE(insufficient_material(pos)); break;
    case Termination::kThreefoldRepetition: EXPECT_EQ(std::count(keys.begin(), keys.end(), keys.back()), 3); break;
    default: ADD_FAILURE() << "random games end by the rules, not by " << termination_name(g.termination);
  }
}

TEST(GameRules, RandomGamesEndByTheRules) {
  // Random movers reach every rule-based ending; each is checked from scratch.
  int seen[size_t(Termination::kCount)] = {};
  for (int i = 0; i < 60; ++i) {
    RandomPlayer w(2 * i + 1), b(2 * i + 2);
    const std::string fen = *startpos_fen(random_startpos(i), true);
    absl::StatusOr<GameRecord> g = play_game(fen, w, b, {}, {}, {});
    ASSERT_TRUE(g.ok()) << g.status();
    check_finished_game(*g);
    ++seen[size_t(g->termination)];
  }
  EXPECT_GT(seen[size_t(Termination::kInsufficientMaterial)], 0);
}

// The Termination tag takes the values PGN readers know, whatever ended the game.
TEST(Pgn, TerminationTagUsesThePgnValues) {
  GameRecord g = scripted("bqnnrbkr/pppppppp/8/8/8/8/PPPPPPPP/BQNNRBKR w KQkq - 0 1", "g2g3 g7g6");
  const std::pair<Termination, const char*> cases[] = {{Termination::kCheckmate, "normal"},
                                                       {Termination::kThreefoldRepetition, "normal"},
                                                       {Termination::kMaxPlies, "adjudication"},
                                                       {Termination::kAdjudicatedResign, "adjudication"},
                                                       {Termination::kIllegalMove, "rules infraction"},
                                                       {Termination::kEngineHang, "time forfeit"},
                                                       {Termination::kEngineCrash, "abandoned"},
                                                       {Termination::kEngineError, "abandoned"}};
  for (const auto& [t, want] : cases) {
    g.termination = t;
    const std::string pgn = to_pgn(g, GameOptions{});
    EXPECT_NE(pgn.find(absl::StrCat("[Termination \"", want, "\"]")), std::string::npos) << termination_name(t) << pgn;
  }
}

TEST(Pgn, TagsAndCastlingAndRoundTrip) {
  RandomPlayer w(7), b(8);
  std::vector<GameRecord> games;
  for (int sp : {0, 518, 959}) {
    GameOptions o;
    o.round = "1";
    absl::StatusOr<GameRecord> g = play_game(*startpos_fen(sp, true), w, b, {}, {}, o);
    ASSERT_TRUE(g.ok());
    games.push_back(*g);
  }
  const GameRecord c = scripted("bqnnrbkr/pppppppp/8/8/8/8/PPPPPPPP/BQNNRBKR w KQkq - 0 1", "g2g3 g7g6 f1g2 f8g7 g1h1");
  ASSERT_EQ(c.plies(), 5);
  EXPECT_NE(c.pgn.find("3. O-O "), std::string::npos) << c.pgn;
  games.push_back(c);

  for (const GameRecord& g : games) {
    for (const char* tag : {"[Event ", "[Site ", "[Date ", "[Round ", "[White ", "[Black ", "[Result ",
                            "[Variant \"Chess960\"]", "[SetUp \"1\"]", "[FEN ", "[Termination "})
      EXPECT_NE(g.pgn.find(tag), std::string::npos) << tag;
    EXPECT_NE(g.pgn.find(absl::StrCat("[Result \"", result_string(g.result), "\"]")), std::string::npos);
    // Movetext: lines within 80 columns, SAN that replays to the same moves.
    const std::string movetext = g.pgn.substr(g.pgn.find("\n\n") + 2);
    Position pos = *Position::from_fen(g.start_fen);
    std::deque<StateInfo> states;
    size_t next = 0;
    bool in_comment = false;
    for (absl::string_view line : absl::StrSplit(movetext, '\n')) {
      EXPECT_LE(line.size(), 79u);
      for (absl::string_view word : absl::StrSplit(line, ' ', absl::SkipEmpty())) {
        if (word.front() == '{') in_comment = true;
        if (in_comment) {
          if (word.back() == '}') in_comment = false;
          continue;
        }
        if (std::isdigit(static_cast<unsigned char>(word.front())) || word == "*") continue;  // numbers, result
        absl::StatusOr<Move> m = parse_san(pos, word);
        ASSERT_TRUE(m.ok()) << m.status();
        ASSERT_LT(next, g.moves.size());
        EXPECT_EQ(*m, g.moves[next++]);
        pos.do_move(*m, states.emplace_back());
      }
    }
    EXPECT_EQ(next, g.moves.size());
  }
}

}  // namespace
}  // namespace c960::selfplay
