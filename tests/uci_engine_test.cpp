// The UCI adapter against Debian's Stockfish and against fake engines that crash, hang, play
// illegal moves or break the protocol.
#include "selfplay/uci_engine.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>

#include "core/startpos.h"
#include "gtest/gtest.h"
#include "selfplay/players.h"
#include "tests/selfplay_test_util.h"
#include "tests/test_paths.h"

namespace c960::selfplay {
namespace {

std::string fake(const std::string& name) { return std::string(c960::test::data_dir()) + "/fake_engines/" + name; }

bool process_gone(pid_t pid) { return kill(pid, 0) != 0 && errno == ESRCH; }

class Stockfish : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = c960::test::stockfish_path();
    if (path_.empty()) GTEST_SKIP() << "stockfish not installed (deploy/install-deps.sh installs it)";
  }
  UciConfig config(std::vector<UciOptionValue> options = {}) {
    UciConfig c;
    c.path = path_;
    c.options = std::move(options);
    return c;
  }
  std::string path_;
};

TEST_F(Stockfish, HandshakeAndSearch) {
  absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(config({{"Hash", "8"}, {"Threads", "1"}}));
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_NE((*e)->id_name().find("Stockfish"), std::string::npos) << (*e)->id_name();
  ASSERT_TRUE((*e)->new_game().ok());
  const std::string fen = *startpos_fen(0, true);
  absl::StatusOr<UciSearchReply> r = (*e)->go(fen, {}, UciGoLimits{2000, 0, 0});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_TRUE(parse_uci(*Position::from_fen(fen), r->bestmove).ok()) << r->bestmove;
  EXPECT_TRUE(r->score_cp.has_value());
  const pid_t pid = (*e)->pid();
  e->reset();
  EXPECT_TRUE(process_gone(pid));
}

TEST_F(Stockfish, OptionsAreCheckedAgainstTheEngine) {
  const auto start_error = [&](std::vector<UciOptionValue> o) {
    absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(config(std::move(o)));
    return e.ok() ? std::string("started") : std::string(e.status().message());
  };
  EXPECT_NE(start_error({{"NoSuchOption", "1"}}).find("NoSuchOption"), std::string::npos);
  EXPECT_NE(start_error({{"Hash", "lots"}}).find("not an integer"), std::string::npos);
  EXPECT_NE(start_error({{"Hash", "0"}}).find("out of range"), std::string::npos);
  EXPECT_NE(start_error({{"UCI_LimitStrength", "maybe"}}).find("true or false"), std::string::npos);
  EXPECT_EQ(start_error({{"UCI_LimitStrength", "true"}, {"UCI_Elo", "1500"}}), "started");
  EXPECT_FALSE(parse_option_assignment("Hash").ok());
  EXPECT_FALSE(parse_option_assignment("=3").ok());
  EXPECT_FALSE(parse_option_assignment("UCI_Chess960=false").ok());
  const absl::StatusOr<UciOptionValue> o = parse_option_assignment("Skill Level = 3");
  ASSERT_TRUE(o.ok());
  EXPECT_EQ(o->name, "Skill Level");
  EXPECT_EQ(o->value, "3");
}

// A job's options under a worker's policy (issue 19's probe): Stockfish's "Debug Log File"
// opens and writes the file named, so a job that could set it would write any file of the
// worker's user. Under a policy it is refused before anything reaches the engine, even when
// the policy lists it; numbers stay within their bounds; options not listed are refused.
TEST_F(Stockfish, APolicyRefusesFileOptionsAndBoundsNumbers) {
  const std::string target = ::testing::TempDir() + "/c960-option-probe-" + std::to_string(getpid());
  std::remove(target.c_str());
  OptionPolicy policy;
  policy.allowed = {{
                        "Hash",
                        true,
                        1,
                        64,
                    },
                    {"Threads", true, 1, 1},
                    {"Debug Log File", false, 0, 0}};
  auto start = [&](std::vector<UciOptionValue> options, bool with_policy = true) {
    UciConfig c = config(std::move(options));
    if (with_policy) c.policy = policy;
    return UciEngine::start(c);
  };
  auto refused = start({{"Debug Log File", target}});
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kPermissionDenied) << refused.status();
  EXPECT_NE(refused.status().message().find("'Debug Log File'"), std::string::npos) << refused.status();
  EXPECT_FALSE(std::filesystem::exists(target));
  // The probe is real: without a policy (a local run: the user's own engine) the file is written.
  {
    auto local = start({{"Debug Log File", target}}, false);
    ASSERT_TRUE(local.ok()) << local.status();
  }
  EXPECT_TRUE(std::filesystem::exists(target));
  std::remove(target.c_str());
  EXPECT_EQ(start({{"Hash", "4096"}}).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(start({{"Hash", "0x10"}}).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(start({{"Threads", "2"}}).status().code(), absl::StatusCode::kPermissionDenied);
  auto unlisted = start({{"Skill Level", "3"}});
  EXPECT_EQ(unlisted.status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_NE(unlisted.status().message().find("it allows: Hash (1..64), Threads (1..1)"), std::string::npos)
      << unlisted.status();
  EXPECT_TRUE(start({{"hash", "32"}, {"Threads", "1"}}).ok());  // UCI names compare without case
}

TEST(FakeEngines, APolicyRefusesStringOptionsWhateverItLists) {
  UciConfig c;
  c.path = fake("string_option.sh");
  c.options = {{"Greeting", "hello"}};
  EXPECT_TRUE(UciEngine::start(c).ok());  // no policy: the engine's declaration is all
  c.policy = OptionPolicy{{{"Greeting", false, 0, 0}}};
  auto e = UciEngine::start(c);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kPermissionDenied) << e.status();
  EXPECT_NE(e.status().message().find("a string option"), std::string::npos) << e.status();
}

TEST(OptionPolicy, ParsesWhatAnOperatorAllows) {
  auto a = parse_allowed_option("Skill Level=0..20");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_EQ(a->name, "Skill Level");
  EXPECT_TRUE(a->bounded);
  EXPECT_EQ(a->min, 0);
  EXPECT_EQ(a->max, 20);
  a = parse_allowed_option("UCI_LimitStrength");
  ASSERT_TRUE(a.ok()) << a.status();
  EXPECT_FALSE(a->bounded);
  for (const char* bad : {"", "=1..2", "Hash=1..", "Hash=5..1", "Hash=a..b", "Hash=1-2", "EvalFile", "SyzygyPath",
                          "Debug Log File", "BookFile=1..2"})
    EXPECT_EQ(parse_allowed_option(bad).status().code(), absl::StatusCode::kInvalidArgument) << bad;
  EXPECT_TRUE(names_a_file("NNUE network"));
  EXPECT_FALSE(names_a_file("Skill Level"));
}

TEST(UciOptionDecl, ParsesDeclarations) {
  absl::StatusOr<UciOptionDecl> d = parse_option_decl("option name Skill Level type spin default 20 min 0 max 20");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->name, "Skill Level");
  EXPECT_EQ(d->type, "spin");
  EXPECT_EQ(d->max, 20);
  EXPECT_TRUE(check_option_value(*d, "7").ok());
  EXPECT_FALSE(check_option_value(*d, "21").ok());
  d = parse_option_decl("option name Style type combo default Normal var Solid var Normal var Risky");
  ASSERT_TRUE(d.ok());
  EXPECT_EQ(d->vars.size(), 3u);
  EXPECT_TRUE(check_option_value(*d, "risky").ok());
  EXPECT_FALSE(check_option_value(*d, "Wild").ok());
  EXPECT_FALSE(parse_option_decl("option name Hash").ok());
  EXPECT_FALSE(parse_option_decl("option name X type spin min zero max 3").ok());
}

TEST_F(Stockfish, GamesFromChess960PositionsWithCastling) {
  UciPlayer white(config({{"Hash", "4"}})), black(config({{"Hash", "4"}}));
  GameOptions options;
  options.max_plies = 120;
  int castles = 0;
  for (int sp : {0, 226, 518, 959}) {
    absl::StatusOr<GameRecord> g =
        play_game(*startpos_fen(sp, true), white, black, {3000, 0, 0}, {3000, 0, 0}, options);
    ASSERT_TRUE(g.ok()) << g.status();
    // Every move Stockfish sent was legal in our position: the runner would have said otherwise.
    EXPECT_LT(g->termination, Termination::kIllegalMove) << termination_name(g->termination) << " " << g->detail;
    for (Move m : g->moves) castles += m.kind() == CASTLING;
  }
  EXPECT_GT(castles, 0) << "no game castled: castling notation untested";
  EXPECT_EQ(white.restarts() + black.restarts(), 0);
}

// Kills the engine of `inner` just before its move number `kill_at` (0-based, its own moves).
class KillingPlayer : public Player {
 public:
  KillingPlayer(UciPlayer& inner, int kill_at) : inner_(inner), kill_at_(kill_at) {}
  std::string name() const override { return inner_.name(); }
  absl::Status new_game() override {
    moves_ = 0;
    return inner_.new_game();
  }
  PlayerMove choose(const MoveRequest& r) override {
    if (moves_++ == kill_at_ && inner_.engine()) {
      killed_pid_ = inner_.engine()->pid();
      kill(killed_pid_, SIGKILL);
    }
    return inner_.choose(r);
  }
  pid_t killed_pid_ = -1;

 private:
  UciPlayer& inner_;
  int kill_at_;
  int moves_ = 0;
};

TEST_F(Stockfish, EngineKilledMidGameLosesAndIsRestarted) {
  UciPlayer sf_white(config()), sf_black(config());
  KillingPlayer white(sf_white, 5);
  const std::string fen = *startpos_fen(518, true);
  absl::StatusOr<GameRecord> g = play_game(fen, white, sf_black, {2000, 0, 0}, {2000, 0, 0}, {});
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->termination, Termination::kEngineCrash) << g->detail;
  EXPECT_EQ(g->result, GameResult::kBlackWins);
  EXPECT_EQ(g->plies(), 10);  // five moves each, then White's engine was dead
  EXPECT_NE(g->detail.find("signal 9"), std::string::npos) << g->detail;
  EXPECT_NE(g->pgn.find("engine_crash"), std::string::npos);
  EXPECT_TRUE(process_gone(white.killed_pid_));
  // The next game starts a fresh engine and finishes normally.
  GameOptions options;
  options.max_plies = 20;
  g = play_game(fen, sf_white, sf_black, {2000, 0, 0}, {2000, 0, 0}, options);
  ASSERT_TRUE(g.ok());
  EXPECT_LT(g->termination, Termination::kIllegalMove) << g->detail;
  EXPECT_EQ(sf_white.restarts(), 1);
}

// A game of a fake engine (White) against a random mover.
GameRecord game_with_fake(const std::string& script, int margin_ms = 30000) {
  UciConfig c;
  c.path = fake(script);
  c.move_margin_ms = margin_ms;
  c.init_timeout_ms = 5000;
  UciPlayer white(c);
  RandomPlayer black(1);
  absl::StatusOr<GameRecord> g = play_game(*startpos_fen(518, true), white, black, {1000, 0, 0}, {}, {});
  EXPECT_TRUE(g.ok());
  if (white.engine()) ADD_FAILURE() << "a failed engine should have been dropped";
  return g.ok() ? *g : GameRecord{};
}

TEST(FakeEngines, CrashLosesWithTheSignal) {
  const GameRecord g = game_with_fake("crash_on_go.sh");
  EXPECT_EQ(g.termination, Termination::kEngineCrash);
  EXPECT_EQ(g.result, GameResult::kBlackWins);
  EXPECT_NE(g.detail.find("signal 11"), std::string::npos) << g.detail;
}

TEST(FakeEngines, HangLosesAndTheEngineIsKilled) {
  const GameRecord g = game_with_fake("hang_on_go.sh", 300);
  EXPECT_EQ(g.termination, Termination::kEngineHang);
  EXPECT_EQ(g.result, GameResult::kBlackWins);
  EXPECT_NE(g.detail.find("killed"), std::string::npos) << g.detail;
}

TEST(FakeEngines, IllegalMoveLoses) {
  const GameRecord g = game_with_fake("illegal_move.sh");
  EXPECT_EQ(g.termination, Termination::kIllegalMove);
  EXPECT_NE(g.detail.find("e2e5"), std::string::npos) << g.detail;
}

TEST(FakeEngines, ProtocolErrorLoses) {
  const GameRecord g = game_with_fake("no_move.sh");
  EXPECT_EQ(g.termination, Termination::kEngineError);
  EXPECT_NE(g.detail.find("without a move"), std::string::npos) << g.detail;
}

TEST(FakeEngines, StartFailuresAreReported) {
  UciConfig c;
  c.path = fake("no_chess960.sh");
  absl::StatusOr<std::unique_ptr<UciEngine>> e = UciEngine::start(c);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("UCI_Chess960"), absl::string_view::npos);
  c.path = fake("does_not_exist");
  e = UciEngine::start(c);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("does_not_exist"), absl::string_view::npos);
  // A player whose engine cannot start loses its game instead of stopping the job.
  UciPlayer white(c);
  RandomPlayer black(2);
  absl::StatusOr<GameRecord> g = play_game(*startpos_fen(1, true), white, black, {1000, 0, 0}, {}, {});
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->termination, Termination::kEngineError);
  EXPECT_EQ(g->result, GameResult::kBlackWins);
}

}  // namespace
}  // namespace c960::selfplay
