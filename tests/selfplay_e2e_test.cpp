// Self-play end to end: reproducible games from a spec, and `c960 selfplay` with the built-in
// engine and with Stockfish, every game read back by pgn-extract.
#include <array>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "gtest/gtest.h"
#include "selfplay/local_runner.h"
#include "selfplay/spec.h"
#include "tests/selfplay_test_util.h"
#include "tests/test_paths.h"

namespace c960::selfplay {
namespace {

using c960::test::run_command;

SelfPlaySpec builtin_spec() {
  SelfPlaySpec s;
  s.positions = chess960_positions({0, 518, 959});
  s.games_per_position = 2;
  s.limits.nodes = 1500;
  s.random_plies = 4;
  s.seed = 42;
  s.hash_mb = 2;
  return s;
}

TEST(SelfPlaySpec, ValidationNamesTheField) {
  const auto error = [](auto change) {
    SelfPlaySpec s = builtin_spec();
    change(s);
    return std::string(s.validate().message());
  };
  EXPECT_EQ(error([](SelfPlaySpec&) {}), "");
  EXPECT_NE(error([](SelfPlaySpec& s) {
              s.positions = {StartPosition{PositionKind::kChess960, "960", "x", 960, -1}};
            }).find("positions"),
            std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.games_per_position = 0; }).find("games_per_position"), std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.limits.depth = 3; }).find("exactly one"), std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.limits = {}; }).find("exactly one"), std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.random_plies = 41; }).find("random_plies"), std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.options = {{"Hash", "1"}}; }).find("options"), std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.max_plies = 3; }).find("max_plies"), std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) { s.adjudication.resign_score_cp = 0; }).find("resign_score_cp"),
            std::string::npos);
  EXPECT_NE(error([](SelfPlaySpec& s) {
              s.limits = {0, 5, 0};
              s.node_jitter_percent = 10;
            }).find("node_jitter_percent"),
            std::string::npos);
}

TEST(SelfPlaySpec, GamesAreReproducibleAndDiffer) {
  const SelfPlaySpec spec = builtin_spec();
  Players a = *make_players(spec), b = *make_players(spec);
  const GameRecord x = *play_selfplay_game(spec, 518, 1, a);
  const GameRecord other = *play_selfplay_game(spec, 518, 0, a);  // a has now played two games
  const GameRecord y = *play_selfplay_game(spec, 518, 1, b);
  EXPECT_EQ(x.moves, y.moves);
  EXPECT_EQ(x.pgn, y.pgn);
  EXPECT_EQ(x.opening_plies, 4);
  EXPECT_NE(x.moves, other.moves);
  EXPECT_FALSE(play_selfplay_game(spec, 960, 0, a).ok());
  // The seeds of neighbouring games are unrelated.
  EXPECT_NE(game_seed(1, 0, 1), game_seed(1, 1, 0));
  EXPECT_NE(game_seed(1, 0, 0), game_seed(2, 0, 0));
}

TEST(SelfPlaySpec, SamplingMakesGamesDifferWithoutRandomPlies) {
  SelfPlaySpec spec = builtin_spec();
  spec.random_plies = 0;
  spec.sample_margin_cp = 30;
  spec.max_plies = 40;
  Players p = *make_players(spec);
  const GameRecord a = *play_selfplay_game(spec, 300, 0, p), b = *play_selfplay_game(spec, 300, 1, p);
  const GameRecord a2 = *play_selfplay_game(spec, 300, 0, p);
  EXPECT_NE(a.moves, b.moves);
  EXPECT_EQ(a.moves, a2.moves);
  spec.engine = "/usr/games/stockfish";
  EXPECT_NE(spec.validate().message().find("sample_margin_cp"), absl::string_view::npos);
}

TEST(SelfPlaySpec, PgnHasDateTimeControlOpeningMarkAndSides) {
  SelfPlaySpec spec = builtin_spec();
  spec.date = "2026.11.30";
  spec.max_plies = 12;
  Players p = *make_players(spec);
  const GameRecord g = *play_selfplay_game(spec, 518, 0, p);
  EXPECT_NE(g.pgn.find("[Date \"2026.11.30\"]"), std::string::npos) << g.pgn;
  EXPECT_NE(g.pgn.find("[TimeControl \"-\"]"), std::string::npos) << g.pgn;
  EXPECT_NE(g.pgn.find("{random opening}"), std::string::npos) << g.pgn;
  EXPECT_EQ(g.white.substr(g.white.size() - 8), " (White)") << g.white;
  EXPECT_EQ(g.black.substr(g.black.size() - 8), " (Black)") << g.black;
  // Issue 36: the tags name the engine, not "NAME (White)", and the start position by number.
  const std::string engine = g.white.substr(0, g.white.size() - 8);
  EXPECT_NE(g.pgn.find("[White \"" + engine + "\"]\n[Black \"" + engine + "\"]"), std::string::npos) << g.pgn;
  EXPECT_NE(g.pgn.find("[StartPosition \"518\"]"), std::string::npos) << g.pgn;
  EXPECT_EQ(time_control(MoveLimits{0, 0, 2000}), "1/2");
  spec.date = "2026.13.01";
  EXPECT_NE(spec.validate().message().find("date"), absl::string_view::npos);
}

TEST(SelfPlaySpec, ThreadCountDoesNotChangeTheGames) {
  const SelfPlaySpec spec = builtin_spec();
  const std::vector<PlayedGame> one = *play_local(spec, 1), two = *play_local(spec, 2);
  ASSERT_EQ(one.size(), 6u);
  ASSERT_EQ(two.size(), 6u);
  for (size_t i = 0; i < one.size(); ++i) {
    EXPECT_EQ(one[i].position, two[i].position);
    EXPECT_EQ(one[i].record.moves, two[i].record.moves);
  }
}

// Checks a PGN file with pgn-extract: no complaint, and each game's move count (from its UCI
// rendering) equal to the PlyCount tag we wrote.
void expect_pgn_accepted(const std::string& file, size_t games) {
  ASSERT_FALSE(c960::test::pgn_extract_path().empty()) << "pgn-extract not installed";
  EXPECT_EQ(c960::test::pgn_extract_errors(file), "");
  const c960::test::CommandResult r = run_command(c960::test::pgn_extract_path() + " -s -Wuci '" + file + "'");
  ASSERT_EQ(r.exit_code, 0);
  std::vector<int> plycounts, uci_counts;
  for (absl::string_view line : absl::StrSplit(r.output, '\n')) {
    if (absl::StartsWith(line, "[PlyCount \""))
      plycounts.push_back(std::stoi(std::string(line.substr(11))));
    else if (!line.empty() && line[0] != '[') {
      std::vector<absl::string_view> w = absl::StrSplit(line, ' ', absl::SkipEmpty());
      uci_counts.push_back(int(w.size()) - 1);  // minus the result
    }
  }
  EXPECT_EQ(plycounts.size(), games);
  EXPECT_EQ(uci_counts, plycounts);
}

std::string c960_binary() { return std::string(c960::test::binary_dir()) + "/cli/c960"; }

struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::string get(size_t row, const std::string& col) const {
    return rows[row][size_t(std::find(header.begin(), header.end(), col) - header.begin())];
  }
};
CsvTable parse_csv(const std::string& text) {
  CsvTable t;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipEmpty())) {
    std::vector<std::string> cells = absl::StrSplit(line, ',');
    if (t.header.empty())
      t.header = cells;
    else
      t.rows.push_back(cells);
  }
  return t;
}

TEST(SelfPlayCommand, BuiltinEngineRunWritesStatsAndPgn) {
  c960::test::ScratchDir dir;
  const c960::test::CommandResult r =
      run_command(c960_binary() +
                  " selfplay --sps 0,518,959 --games-per-position 3 --engine builtin --nodes 1500 --random-plies 2"
                  " --seed 7 --threads 2 --quiet --max-plies 300 --out " +
                  dir.file("stats.csv") + " --pgn " + dir.file("games.pgn"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CsvTable t = parse_csv(c960::test::read_file(dir.file("stats.csv")));
  ASSERT_EQ(t.rows.size(), 4u);
  int games = 0;
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.get(i, "games"), "3");
    EXPECT_EQ(std::stoi(t.get(i, "white_wins")) + std::stoi(t.get(i, "draws")) + std::stoi(t.get(i, "black_wins")), 3);
    games += std::stoi(t.get(i, "games"));
  }
  EXPECT_EQ(t.get(3, "sp"), "all");
  EXPECT_EQ(std::stoi(t.get(3, "games")), games);
  expect_pgn_accepted(dir.file("games.pgn"), 9);

  // JSON of the same run: the same games (reproducible), so the same totals.
  const c960::test::CommandResult j =
      run_command(c960_binary() +
                  " selfplay --sps 0,518,959 --games-per-position 3 --engine builtin --nodes 1500 --random-plies 2"
                  " --seed 7 --threads 1 --quiet --max-plies 300 --format json");
  ASSERT_EQ(j.exit_code, 0) << j.output;
  EXPECT_NE(j.output.find(absl::StrCat("\"white_wins\": ", t.get(3, "white_wins"), ", \"draws\": ", t.get(3, "draws"))),
            std::string::npos)
      << j.output;
}

TEST(SelfPlayCommand, TheReadmesOnePositionRunPlaysVariedOpeningsAndReportsEffectiveGames) {
  // The README's example (--sp 518 --games-per-position 100 --engine builtin --nodes 20000),
  // shortened: without --random-plies a run of one position plays random plies, so its games do
  // not mostly follow one line, and the effective number of games is beside the count.
  const c960::test::CommandResult r = run_command(
      c960_binary() + " selfplay --sp 518 --games-per-position 16 --engine builtin --nodes 1000 --quiet --format csv");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CsvTable t = parse_csv(r.output);
  ASSERT_EQ(t.rows.size(), 2u);
  const int games = std::stoi(t.get(0, "games"));
  EXPECT_GE(games, 15);
  EXPECT_GE(std::stoi(t.get(0, "lines")), games - 2) << r.output;
  EXPECT_GE(std::stod(t.get(0, "effective_games")), 0.8 * games) << r.output;
  EXPECT_LE(std::stod(t.get(0, "effective_games")), games);
  // Told to play no random plies, its games mostly follow one line, and every output says so.
  const std::string one_line = c960_binary() +
                               " selfplay --sp 518 --games-per-position 16 --engine builtin --nodes 1000 --quiet"
                               " --random-plies 0 --node-jitter 2 --format ";
  const c960::test::CommandResult text = run_command(one_line + "text");
  ASSERT_EQ(text.exit_code, 0) << text.output;
  EXPECT_NE(text.output.find("mostly follow one line"), std::string::npos) << text.output;
  const c960::test::CommandResult json = run_command(one_line + "json");
  ASSERT_EQ(json.exit_code, 0) << json.output;
  EXPECT_NE(json.output.find("\"mostly_one_line\": 1"), std::string::npos) << json.output;
  const CsvTable c = parse_csv(run_command(one_line + "csv").output);
  ASSERT_EQ(c.rows.size(), 2u);
  EXPECT_LT(std::stod(c.get(0, "effective_games")), 0.5 * std::stod(c.get(0, "games")));
}

TEST(SelfPlayCommand, StockfishRun) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed";
  c960::test::ScratchDir dir;
  const c960::test::CommandResult r = run_command(
      c960_binary() + " selfplay --sps 1,600 --games-per-position 2 --engine " + sf +
      " --option Hash=4 --option Threads=1 --nodes 3000 --random-plies 2 --threads 2 --quiet --max-plies 200"
      " --resign-moves 3 --resign-score 800 --out " +
      dir.file("stats.csv") + " --pgn " + dir.file("games.pgn"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const CsvTable t = parse_csv(c960::test::read_file(dir.file("stats.csv")));
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.get(2, "games"), "4");
  for (const char* failure : {"illegal_move", "engine_crash", "engine_hang", "engine_error"})
    EXPECT_EQ(t.get(2, failure), "0") << failure;
  const std::string pgn = c960::test::read_file(dir.file("games.pgn"));
  // Every game names the engine by its "id name", the first of each thread included.
  size_t named = 0;
  for (size_t at = 0; (at = pgn.find("[White \"Stockfish", at)) != std::string::npos; ++at) ++named;
  EXPECT_EQ(named, 4u);
  expect_pgn_accepted(dir.file("games.pgn"), 4);
}

// A match of the built-in engine (A) against Stockfish (B) at low nodes: the pentanomial counts
// of the JSON are the ones the PGN's games give, pair by pair (Round "id.N": games 2k+1 and 2k+2
// of a position are a pair, A White in the first), and A and B hold the colours they should.
TEST(SelfPlayCommand, AMatchsPentanomialCountsAgreeWithItsPgn) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed";
  c960::test::ScratchDir dir;
  const c960::test::CommandResult r =
      run_command(c960_binary() + " selfplay --engine builtin --opponent " + sf +
                  " --opponent-option 'Skill Level=0' --opponent-option Hash=4 --sps 0-2 --games-per-position 8"
                  " --nodes 2000 --random-plies 4 --max-plies 200 --threads 2 --quiet --format json --out " +
                  dir.file("m.json") + " --pgn " + dir.file("m.pgn"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string pgn = c960::test::read_file(dir.file("m.pgn"));
  expect_pgn_accepted(dir.file("m.pgn"), 24);
  // Each game's tags, in file order.
  std::map<std::string, std::array<int64_t, 5>> penta;  // by position id
  std::map<std::string, std::map<int, int>> a_half;     // position -> game number -> A's half points
  size_t games = 0;
  for (size_t at = 0; (at = pgn.find("[Event ", at)) != std::string::npos; ++at) {
    const auto tag = [&](const std::string& name) {
      const size_t t = pgn.find("[" + name + " \"", at);
      const size_t from = t + name.size() + 3;
      return pgn.substr(from, pgn.find('"', from) - from);
    };
    const std::string round = tag("Round"), white = tag("White"), black = tag("Black"), result = tag("Result");
    const std::string id = round.substr(0, round.find('.'));
    const int number = std::stoi(round.substr(round.find('.') + 1));  // 1-based
    const bool a_white = number % 2 == 1;
    EXPECT_EQ(absl::StartsWith(a_white ? white : black, "c960"), true) << round << " " << white << " " << black;
    EXPECT_EQ(absl::StartsWith(a_white ? black : white, "Stockfish"), true) << round;
    const int white_half = result == "1-0" ? 2 : result == "1/2-1/2" ? 1 : 0;
    ASSERT_NE(result, "*");
    a_half[id][number] = a_white ? white_half : 2 - white_half;
    ++games;
  }
  EXPECT_EQ(games, 24u);
  for (const auto& [id, by_number] : a_half)
    for (int first = 1; first <= 8; first += 2) {
      ASSERT_TRUE(by_number.count(first) && by_number.count(first + 1)) << id << " " << first;
      ++penta[id][size_t(by_number.at(first) + by_number.at(first + 1))];
    }
  const std::string json = c960::test::read_file(dir.file("m.json"));
  for (const auto& [id, cells] : penta) {
    const size_t at = json.find("{\"id\": \"" + id + "\"");
    ASSERT_NE(at, std::string::npos) << id;
    const size_t from = json.find("\"pentanomial\": [", at) + 16;
    EXPECT_EQ(json.substr(from, json.find(']', from) - from),
              absl::StrCat(cells[0], ", ", cells[1], ", ", cells[2], ", ", cells[3], ", ", cells[4]))
        << id;
  }
  EXPECT_NE(json.find("\"engines\": {\"a\": \"builtin\""), std::string::npos);
}

// An SPRT stops a match where the pairs, taken round by round over the positions, decide it:
// the same games on one thread or two, fewer than the cap. (Deterministic engines: Stockfish's
// Skill Level draws from a clock-seeded generator, so it is not used here.)
TEST(SelfPlayMatch, AnSprtStopsAtTheSamePairWhateverTheThreads) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed";
  SelfPlaySpec s;
  s.positions = chess960_positions({0, 1, 2, 3, 4});
  s.games_per_position = 60;
  s.engine = "builtin";
  s.hash_mb = 2;
  s.opponent = sf;
  s.opponent_options = {{"Threads", "1"}, {"Hash", "4"}};
  s.limits.nodes = 1000;
  s.random_plies = 4;
  s.max_plies = 200;
  s.seed = 3;
  s.sprt.elo0 = 0;
  s.sprt.elo1 = 50;
  bool complete1 = false, complete2 = false;
  const auto one = play_local(s, 1, {}, {}, {}, &complete1);
  const auto two = play_local(s, 2, {}, {}, {}, &complete2);
  ASSERT_TRUE(one.ok()) << one.status();
  ASSERT_TRUE(two.ok()) << two.status();
  EXPECT_TRUE(complete1);
  EXPECT_TRUE(complete2);
  ASSERT_EQ(one->size(), two->size());
  EXPECT_LT(one->size(), s.positions.size() * size_t(s.games_per_position));
  EXPECT_EQ(one->size() % 2, 0u);
  for (size_t i = 0; i < one->size(); ++i) {
    EXPECT_EQ((*one)[i].position, (*two)[i].position);
    EXPECT_EQ((*one)[i].index, (*two)[i].index);
    EXPECT_EQ((*one)[i].record.moves, (*two)[i].record.moves);
  }
}

// A time control with an increment, the built-in engine against Stockfish: the games finish,
// and the PGN names the time control; a time control without a base is a usage error.
TEST(SelfPlayCommand, AMatchUnderATimeControl) {
  const std::string sf = c960::test::stockfish_path();
  if (sf.empty()) GTEST_SKIP() << "stockfish not installed";
  c960::test::ScratchDir dir;
  const c960::test::CommandResult r =
      run_command(c960_binary() + " selfplay --engine builtin --opponent " + sf +
                  " --opponent-option Hash=4 --sps 518 --games-per-position 2 --tc 0.6+0.05 --max-plies 60 --quiet"
                  " --format csv --out " +
                  dir.file("m.csv") + " --pgn " + dir.file("m.pgn"));
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string pgn = c960::test::read_file(dir.file("m.pgn"));
  size_t games = 0;
  for (size_t at = 0; (at = pgn.find("[TimeControl \"0.6+0.05\"]", at)) != std::string::npos; ++at) ++games;
  EXPECT_EQ(games, 2u);
  expect_pgn_accepted(dir.file("m.pgn"), 2);
  const CsvTable t = parse_csv(c960::test::read_file(dir.file("m.csv")));
  EXPECT_EQ(t.get(0, "pairs"), "1");
  const c960::test::CommandResult bad =
      run_command(c960_binary() + " selfplay --engine builtin --sps 518 --games-per-position 2 --tc 0+1");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("--tc"), std::string::npos) << bad.output;
}

TEST(SelfPlayCommand, BadUsageExitsTwoNamingTheProblem) {
  const std::string base = c960_binary() + " selfplay --sps 0 --games-per-position 1 ";
  const std::map<std::string, std::string> cases = {
      {"--nodes 100", "--engine"},
      {"--engine builtin", "exactly one"},
      {"--engine builtin --nodes 100 --depth 3", "exactly one"},
      {"--engine builtin --nodes 100 --format xml", "--format"},
      {"--engine builtin --nodes 0", "--nodes"},
      {"--engine builtin --nodes 100 --option Hash=1", "options"},
      {"--engine /nonexistent/engine --nodes 100", "/nonexistent/engine"},
      {"--engine " + c960::test::stockfish_path() + " --nodes 100 --option NoSuchOption=1", "NoSuchOption"},
      {"--engine builtin --nodes 100 --threads -1", "--threads"},
  };
  for (const auto& [args, needle] : cases) {
    const c960::test::CommandResult r = run_command(base + args);
    EXPECT_EQ(r.exit_code, 2) << args;
    EXPECT_NE(r.output.find(needle), std::string::npos) << args << ": " << r.output;
  }
  const c960::test::CommandResult sps =
      run_command(c960_binary() + " selfplay --sps 960 --games-per-position 1 --engine builtin --nodes 1");
  EXPECT_EQ(sps.exit_code, 2);
  EXPECT_NE(sps.output.find("--sps"), std::string::npos) << sps.output;
}

}  // namespace
}  // namespace c960::selfplay
