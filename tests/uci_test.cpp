// Issue 21: `c960 uci`, the UCI front end (cli/uci.h). In process: the handshake, perft counts
// of Chess960 start positions against tests/data/chess960_startpos_perft.csv in Stockfish's
// divide form, both castling notations, searches that return legal moves, stop during `go
// infinite`, and malformed commands that are answered and change nothing. As a process (there is
// no cutechess-cli or fastchess in Debian bookworm): the same protocol over pipes, stop of a
// depth-30 search, quit and end of input; and c960's own UCI client playing `c960 selfplay
// --engine` games against `c960 uci` through a shell wrapper.
#include "cli/uci.h"

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "core/movegen.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/startpos.h"
#include "core/version.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

using namespace std::chrono_literals;

const std::string kC960 = std::string(c960::test::binary_dir()) + "/cli/c960";

// A UciServer whose lines are collected, with waits for the line that ends an answer.
class Session {
 public:
  Session() : server_([this](const std::string& line) { add(line); }) {}

  void send(const std::string& line) { EXPECT_TRUE(server_.handle(line)) << line; }
  bool quit() { return server_.handle("quit"); }
  // The lines up to and including the first after those already taken that starts with
  // `prefix`, within `timeout`; fails the test (and returns what came) otherwise.
  std::vector<std::string> until(const std::string& prefix, std::chrono::milliseconds timeout = 30s) {
    std::unique_lock lock(mu_);
    std::vector<std::string> out;
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      while (next_ < lines_.size()) {
        out.push_back(lines_[next_++]);
        if (absl::StartsWith(out.back(), prefix)) return out;
      }
      if (cv_.wait_until(lock, end) == std::cv_status::timeout && next_ == lines_.size()) {
        ADD_FAILURE() << "no line starting with '" << prefix << "' within " << timeout.count() << " ms; got:\n"
                      << absl::StrJoin(out, "\n");
        return out;
      }
    }
  }
  // Whether a line starting with `prefix` comes within `timeout` (taking the lines up to it).
  bool comes(const std::string& prefix, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    const auto end = std::chrono::steady_clock::now() + timeout;
    for (;;) {
      while (next_ < lines_.size())
        if (absl::StartsWith(lines_[next_++], prefix)) return true;
      if (cv_.wait_until(lock, end) == std::cv_status::timeout && next_ == lines_.size()) return false;
    }
  }
  // isready answered: the session is alive and has read everything before.
  void ready() {
    send("isready");
    const std::vector<std::string> l = until("readyok");
    EXPECT_EQ(l.back(), "readyok");
  }
  // The one "info string" line a command answers with (the session then still ready).
  std::string complaint(const std::string& command) {
    send(command);
    send("isready");
    const std::vector<std::string> l = until("readyok");
    std::string said;
    for (const std::string& x : l)
      if (absl::StartsWith(x, "info string ")) said = x;
    EXPECT_EQ(l.size(), 2u) << command << ": " << absl::StrJoin(l, "\n");
    return said;
  }
  bool searching() const { return server_.searching(); }

 private:
  void add(const std::string& line) {
    {
      std::lock_guard lock(mu_);
      lines_.push_back(line);
    }
    cv_.notify_all();
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<std::string> lines_;
  size_t next_ = 0;
  cli::UciServer server_;  // last: it stops its search before the members it writes to go
};

// The divide of Stockfish's `go perft`: "move: count" lines, a blank line, "Nodes searched: N",
// a blank line. Checks the form and that the lines add up; returns the moves and the total.
struct Divide {
  std::vector<std::pair<std::string, uint64_t>> moves;
  uint64_t total = 0;
};
Divide read_divide(Session& s) {
  Divide d;
  const std::vector<std::string> l = s.until("Nodes searched: ");
  EXPECT_GE(l.size(), 3u);
  if (l.size() < 3) return d;
  uint64_t sum = 0;
  for (size_t i = 0; i + 2 < l.size(); ++i) {
    const std::vector<std::string> parts = absl::StrSplit(l[i], ": ");
    uint64_t n = 0;
    EXPECT_TRUE(parts.size() == 2 && absl::SimpleAtoi(parts[1], &n)) << l[i];
    if (parts.size() == 2) d.moves.emplace_back(parts[0], n);
    sum += n;
  }
  EXPECT_EQ(l[l.size() - 2], "");
  EXPECT_TRUE(absl::SimpleAtoi(l.back().substr(16), &d.total)) << l.back();
  EXPECT_EQ(sum, d.total);
  EXPECT_EQ(s.until("").back(), "");  // the blank line after the total
  return d;
}

// "bestmove M" -> M, checked to be legal in `pos`.
void expect_legal_bestmove(const std::string& line, const Position& pos) {
  ASSERT_TRUE(absl::StartsWith(line, "bestmove ")) << line;
  const std::vector<std::string> w = absl::StrSplit(line, ' ');
  ASSERT_GE(w.size(), 2u);
  EXPECT_TRUE(parse_uci(pos, w[1]).ok()) << line << " in " << pos.fen();
}

TEST(Uci, HandshakeDeclaresTheOptions) {
  Session s;
  s.send("uci");
  const std::vector<std::string> l = s.until("uciok");
  ASSERT_GE(l.size(), 6u);
  EXPECT_EQ(l[0], absl::StrCat("id name c960 ", std::string(version())));
  EXPECT_TRUE(absl::StartsWith(l[1], "id author ")) << l[1];
  const std::string all = absl::StrJoin(l, "\n");
  EXPECT_TRUE(absl::StrContains(all, "\noption name UCI_Chess960 type check default false\n")) << all;
  EXPECT_TRUE(absl::StrContains(all, "\noption name Hash type spin default 16 min 1 max 65536\n")) << all;
  EXPECT_TRUE(absl::StrContains(all, "\noption name Threads type spin default 1 min 1 max 1024\n")) << all;
  EXPECT_EQ(l.back(), "uciok");
  s.ready();
}

TEST(Uci, PerftOfStartPositionsMatchesTheTable) {
  const std::vector<test::StartposRow> table = test::startpos_table();
  Session s;
  s.send("setoption name Threads value 2");
  EXPECT_EQ(s.until("info string ").back(), "info string Threads 2: go perft uses 2 threads; the search uses one");
  for (int sp : {0, 1, 359, 518, 601, 959}) {
    SCOPED_TRACE(sp);
    s.send("position fen " + table[sp].fen);
    s.send("go perft 4");
    const Divide d = read_divide(s);
    EXPECT_EQ(d.total, table[sp].perft[4]);
    EXPECT_EQ(d.moves.size(), table[sp].perft[1]);
  }
  // After moves, against the core's own count.
  s.send("position startpos moves e2e4 e7e5 g1f3");
  s.send("go perft 3");
  Position pos = test::pos_of(*startpos_fen(518));
  StateInfo st[3];
  const char* moves[] = {"e2e4", "e7e5", "g1f3"};
  for (int i = 0; i < 3; ++i) pos.do_move(*parse_uci(pos, moves[i]), st[i]);
  EXPECT_EQ(read_divide(s).total, perft(pos, 3));
}

TEST(Uci, CastlingIsKingTakesRookInChess960ModeAndBothFormsAreRead) {
  Session s;
  const std::string fen = "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1";
  const auto moves_of = [](const Divide& d) {
    std::vector<std::string> m;
    for (const auto& [move, n] : d.moves) m.push_back(move);
    return m;
  };
  // Off by default, as Stockfish and GUIs expect: the king's destination.
  s.send("position fen " + fen);
  s.send("go perft 1");
  std::vector<std::string> m = moves_of(read_divide(s));
  EXPECT_NE(std::find(m.begin(), m.end(), "e1g1"), m.end());
  EXPECT_NE(std::find(m.begin(), m.end(), "e1c1"), m.end());
  EXPECT_EQ(std::find(m.begin(), m.end(), "e1h1"), m.end());
  s.send("setoption name UCI_Chess960 value true");
  s.send("go perft 1");
  m = moves_of(read_divide(s));
  EXPECT_NE(std::find(m.begin(), m.end(), "e1h1"), m.end());
  EXPECT_NE(std::find(m.begin(), m.end(), "e1a1"), m.end());
  EXPECT_EQ(std::find(m.begin(), m.end(), "e1g1"), m.end());
  // Either form plays the same castle.
  std::string after[2];
  for (int i = 0; i < 2; ++i) {
    s.send("position fen " + fen + " moves " + (i ? "e1g1" : "e1h1"));
    s.send("d");
    const std::vector<std::string> l = s.until("info string fen ");
    after[i] = l.back();
  }
  EXPECT_EQ(after[0], after[1]);
  EXPECT_TRUE(absl::StrContains(after[0], "r3k2r/8/8/8/8/8/8/R4RK1 b")) << after[0];
}

TEST(Uci, GoDepthReportsEachDepthAndALegalMove) {
  Session s;
  const std::string fen = "bqnb1rkr/pp3ppp/3ppn2/2p5/5P2/P2P4/NPP1P1PP/BQ1BNRKR w HFhf - 2 9";
  s.send("ucinewgame");
  s.send("position fen " + fen);
  s.send("go depth 5");
  const std::vector<std::string> l = s.until("bestmove ");
  int depth = 0;
  for (const std::string& line : l) {
    if (!absl::StartsWith(line, "info depth ")) continue;
    const std::vector<std::string> w = absl::StrSplit(line, ' ');
    ASSERT_GE(w.size(), 13u) << line;
    EXPECT_EQ(w[3], "score") << line;
    EXPECT_TRUE(w[4] == "cp" || w[4] == "mate") << line;
    EXPECT_EQ(w[6], "nodes") << line;
    EXPECT_NE(std::find(w.begin(), w.end(), "pv"), w.end()) << line;
    int d = 0;
    ASSERT_TRUE(absl::SimpleAtoi(w[2], &d)) << line;
    EXPECT_EQ(d, depth + 1) << line;  // one line per completed depth, in order
    depth = d;
    // The pv is legal from the position, move after move.
    Position pos = test::pos_of(fen);
    std::vector<StateInfo> st(w.size());
    for (size_t i = std::find(w.begin(), w.end(), "pv") - w.begin() + 1; i < w.size(); ++i) {
      absl::StatusOr<Move> m = parse_uci(pos, w[i]);
      ASSERT_TRUE(m.ok()) << line << ": " << w[i];
      pos.do_move(*m, st[i]);
    }
  }
  EXPECT_EQ(depth, 5);
  expect_legal_bestmove(l.back(), test::pos_of(fen));
  // go nodes N: the same move twice from a new game (the search is deterministic under nodes).
  std::string best[2];
  for (std::string& b : best) {
    s.send("ucinewgame");
    s.send("position startpos moves d2d4");
    s.send("go nodes 20000");
    b = s.until("bestmove ").back();
    expect_legal_bestmove(b, [] {
      Position p = test::pos_of(*startpos_fen(518));
      static StateInfo st;
      p.do_move(*parse_uci(p, "d2d4"), st);
      return p;
    }());
  }
  EXPECT_EQ(best[0], best[1]);
  // A clock: answered within the time it was given.
  s.send("position startpos");
  const auto t0 = std::chrono::steady_clock::now();
  s.send("go wtime 2000 btime 2000 winc 0 binc 0");
  expect_legal_bestmove(s.until("bestmove ", 5s).back(), test::pos_of(*startpos_fen(518)));
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  // Mated or stalemated: no move to give.
  s.send("position fen 7k/6Q1/6K1/8/8/8/8/8 b - - 0 1");
  s.send("go depth 3");
  const std::vector<std::string> mated = s.until("bestmove ");
  EXPECT_EQ(mated.back(), "bestmove (none)");
  EXPECT_EQ(mated.front(), "info depth 0 score mate 0");
}

TEST(Uci, StopEndsAnInfiniteSearchAndItWaitsForIt) {
  Session s;
  s.send("position startpos");
  s.send("go infinite");
  EXPECT_FALSE(s.comes("bestmove ", 300ms));
  EXPECT_TRUE(s.searching());
  s.ready();  // answered during the search
  // A malformed command does not disturb it.
  s.send("go depth zero");
  EXPECT_FALSE(s.comes("bestmove ", 100ms));
  EXPECT_TRUE(s.searching());
  const auto t0 = std::chrono::steady_clock::now();
  s.send("stop");
  // stop waits for the search: its bestmove is out before the next command is read.
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 500ms);
  EXPECT_FALSE(s.searching());
  const std::vector<std::string> l = s.until("bestmove ", 1ms);
  expect_legal_bestmove(l.back(), test::pos_of(*startpos_fen(518)));
  // A mate in one is found at once, but `go infinite` still answers only after stop.
  s.send("position fen 7k/8/6K1/8/8/8/8/1Q6 w - - 0 1");
  s.send("go infinite");
  EXPECT_TRUE(s.comes("info depth 1 score mate 1 ", 5s));
  EXPECT_FALSE(s.comes("bestmove ", 300ms));
  s.send("stop");
  EXPECT_EQ(s.until("bestmove ", 1ms).back(), "bestmove b1b8");
  // A good command during a search stops it first: its bestmove comes before the new one's.
  s.send("position startpos");
  s.send("go depth 60");
  s.send("position startpos moves e2e4");
  s.send("go depth 1");
  const std::vector<std::string> both = s.until("bestmove ");
  expect_legal_bestmove(both.back(), test::pos_of(*startpos_fen(518)));
  Position after_e4 = test::pos_of(*startpos_fen(518));
  StateInfo st;
  after_e4.do_move(*parse_uci(after_e4, "e2e4"), st);
  expect_legal_bestmove(s.until("bestmove ").back(), after_e4);
  EXPECT_FALSE(s.quit());
}

TEST(Uci, MalformedCommandsAreAnsweredAndChangeNothing) {
  Session s;
  s.send("position fen bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1 moves e2e4");
  s.send("d");
  const std::string before = s.until("info string fen ").back();
  const std::pair<const char*, const char*> cases[] = {
      {"foo", "unknown command 'foo'"},
      {"isredy", "did you mean 'isready'?"},
      {"position", "position: expected"},
      {"position fen", "position fen: the FEN is missing"},
      {"position fen 8/8/8/8/8/8/8/8 w - - 0 1", "position fen: FEN piece placement"},
      {"position fen xx", "FEN field count"},
      {"position startpos moves e2e5", "position: moves: move 1: move 'e2e5' is not legal"},
      {"position startpos moves e2e4 zz", "move 2"},
      {"position startpos e2e4", "unexpected 'e2e4'"},
      {"position middle", "'middle' is not startpos or fen"},
      {"go depth", "go depth: needs a number"},
      {"go depth -1", "go depth: '-1' is not a number in 1..127"},
      {"go depth 1000", "go depth: '1000' is not a number in 1..127"},
      {"go nodes x", "go nodes: 'x' is not a number"},
      {"go movetime 0", "go movetime: '0' is not a number"},
      {"go perft 0", "go perft: '0' is not a number in 1..30"},
      {"go perft 31", "go perft: '31' is not a number in 1..30"},
      {"go perft 2 depth 3", "go perft: takes a depth and nothing else"},
      {"go sideways", "go: 'sideways' is not a parameter"},
      {"setoption", "setoption: expected 'setoption name NAME [value VALUE]'"},
      {"setoption value 3", "setoption: expected"},
      {"setoption name Hash value lots", "setoption Hash: 'lots' is not a number in 1..65536"},
      {"setoption name Hash value 0", "setoption Hash: '0'"},
      {"setoption name Threads value 2000", "setoption Threads: '2000'"},
      {"setoption name UCI_Chess960 value maybe", "setoption UCI_Chess960: the value must be true or false"},
      {"setoption name Ponder value true", "no option named 'Ponder'"},
      {"debug sometimes", "debug: expected 'debug on' or 'debug off'"},
  };
  for (const auto& [command, problem] : cases) {
    const std::string said = s.complaint(command);
    EXPECT_TRUE(absl::StartsWith(said, "info string ")) << command << " -> " << said;
    EXPECT_TRUE(absl::StrContains(said, problem)) << command << " -> " << said;
  }
  // No answer but the complaints: the position is as it was, nothing searched.
  s.send("d");
  EXPECT_EQ(s.until("info string fen ").back(), before);
  EXPECT_FALSE(s.searching());
  // Control characters, long lines, blank lines.
  EXPECT_TRUE(absl::StrContains(s.complaint(std::string("go\x01 depth 2")), "unknown command"));
  EXPECT_TRUE(absl::StrContains(s.complaint(std::string(cli::kUciMaxLineBytes + 1, 'x')), "longer than"));
  s.send("");
  s.send("   \t ");
  s.send("stop");  // nothing to stop: ignored
  s.ready();
  // Options that are good take effect.
  s.send("setoption name hash value 1");
  s.send("setoption name UCI_Chess960 value true");
  s.send("go depth 2");
  expect_legal_bestmove(s.until("bestmove ").back(), [] {
    Position p = test::pos_of("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/BBQNNRKR w HFhf - 0 1");
    static StateInfo st;
    p.do_move(*parse_uci(p, "e2e4"), st);
    return p;
  }());
}

// The binary, over pipes.
TEST(UciProcess, SpeaksTheProtocolOverPipes) {
  const std::vector<test::StartposRow> table = test::startpos_table();
  test::Conversation c({kC960, "uci"});
  ASSERT_TRUE(c.send("uci"));
  ASSERT_TRUE(c.read_until("uciok", 10s)) << "no uciok";
  ASSERT_TRUE(c.send("isready"));
  ASSERT_TRUE(c.read_until("readyok", 10s));
  for (int sp : {2, 518, 700}) {
    ASSERT_TRUE(c.send("position fen " + table[sp].fen));
    ASSERT_TRUE(c.send("go perft 3"));
    const std::optional<std::vector<std::string>> l = c.read_until("Nodes searched: ", 30s);
    ASSERT_TRUE(l) << sp;
    EXPECT_EQ(l->back(), absl::StrCat("Nodes searched: ", table[sp].perft[3])) << sp;
    EXPECT_EQ(l->size(), table[sp].perft[1] + 2) << sp;
    EXPECT_EQ(c.read_line(10s), std::optional<std::string>("")) << sp;
  }
  // Malformed input does not kill it.
  for (const char* bad : {"position fen", "go depth x", "setoption name Hash value -5", "\x7f\x01garbage", "go perft"})
    ASSERT_TRUE(c.send(bad));
  ASSERT_TRUE(c.send("isready"));
  std::vector<std::string> seen;
  const std::optional<std::vector<std::string>> answered = c.read_until("readyok", 10s, &seen);
  ASSERT_TRUE(answered) << absl::StrJoin(seen, "\n");
  EXPECT_EQ(answered->size(), 6u) << absl::StrJoin(*answered, "\n");  // five complaints, readyok
  // What it echoes of the input is printable.
  EXPECT_EQ((*answered)[3], "info string unknown command '??garbage' (ignored)");
  // A legal move from a depth search.
  ASSERT_TRUE(c.send("position fen " + table[359].fen + " moves e2e4"));
  ASSERT_TRUE(c.send("go depth 4"));
  std::optional<std::vector<std::string>> best = c.read_until("bestmove ", 30s);
  ASSERT_TRUE(best);
  Position pos = test::pos_of(table[359].fen);
  StateInfo st;
  pos.do_move(*parse_uci(pos, "e2e4"), st);
  expect_legal_bestmove(best->back(), pos);
  // stop ends a depth-30 search promptly.
  ASSERT_TRUE(c.send("position startpos"));
  ASSERT_TRUE(c.send("go depth 30"));
  std::this_thread::sleep_for(300ms);
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(c.send("stop"));
  best = c.read_until("bestmove ", 5s);
  ASSERT_TRUE(best) << "no bestmove after stop";
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  expect_legal_bestmove(best->back(), test::pos_of(*startpos_fen(518)));
  // quit during a search: it stops and exits at once.
  ASSERT_TRUE(c.send("go infinite"));
  ASSERT_TRUE(c.send("quit"));
  EXPECT_EQ(c.wait(5s), 0);
}

TEST(UciProcess, EndOfInputFinishesTheSearchThenExits) {
  test::Conversation c({kC960, "uci"});
  ASSERT_TRUE(c.send("position startpos"));
  ASSERT_TRUE(c.send("go depth 3"));
  c.close_input();
  const std::optional<std::vector<std::string>> best = c.read_until("bestmove ", 30s);
  ASSERT_TRUE(best);
  expect_legal_bestmove(best->back(), test::pos_of(*startpos_fen(518)));
  EXPECT_EQ(c.wait(10s), 0);
}

// c960's own UCI client (selfplay/uci_engine.h) drives `c960 uci` through a wrapper: it checks
// the option declarations, sets UCI_Chess960 and plays whole games.
TEST(UciProcess, SelfplayPlaysGamesAgainstC960Uci) {
  test::ScratchDir dir;
  const std::string wrapper = dir.file("c960-uci");
  test::write_file(wrapper, "#!/bin/sh\nexec " + kC960 + " uci\n");
  ASSERT_EQ(chmod(wrapper.c_str(), 0755), 0);
  const test::RunResult r = test::run({kC960,
                                       "selfplay",
                                       "--sps",
                                       "0,518",
                                       "--games-per-position",
                                       "2",
                                       "--engine",
                                       wrapper,
                                       "--option",
                                       "Hash=8",
                                       "--nodes",
                                       "800",
                                       "--random-plies",
                                       "2",
                                       "--max-plies",
                                       "120",
                                       "--quiet",
                                       "--out",
                                       dir.file("stats.csv"),
                                       "--pgn",
                                       dir.file("games.pgn")});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  const std::string csv = test::read_file(dir.file("stats.csv"));
  const std::vector<std::string> rows = absl::StrSplit(csv, '\n', absl::SkipEmpty());
  ASSERT_GE(rows.size(), 3u) << csv;
  const std::vector<std::string> header = absl::StrSplit(rows[0], ',');
  ASSERT_EQ(header[0], "sp") << csv;
  for (size_t i = 1; i < rows.size(); ++i) {
    const std::vector<std::string> cells = absl::StrSplit(rows[i], ',');
    ASSERT_EQ(cells.size(), header.size()) << rows[i];
    for (size_t k = 0; k < header.size(); ++k) {
      if (header[k] == "games") {
        EXPECT_EQ(cells[k], cells[0] == "all" ? "4" : "2") << rows[i];
      }
      for (const char* failure : {"illegal_move", "engine_crash", "engine_hang", "engine_error"}) {
        if (header[k] == failure) {
          EXPECT_EQ(cells[k], "0") << failure << ": " << rows[i];
        }
      }
    }
  }
  // The games name the engine by its id name.
  const std::string pgn = test::read_file(dir.file("games.pgn"));
  size_t named = 0;
  for (size_t at = 0; (at = pgn.find("[White \"c960 ", at)) != std::string::npos; ++at) ++named;
  EXPECT_EQ(named, 4u) << pgn.substr(0, 2000);
}

}  // namespace
}  // namespace c960
