// The c960 binary end to end: output formats, exit codes (0 ok, 1 check failed, 2 bad input)
// and error messages that name the problem.
#include <chrono>
#include <csignal>
#include <cstdio>
#include <sstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/notation.h"
#include "core/perft.h"
#include "gtest/gtest.h"
#include "tests/process.h"
#include "tests/test_paths.h"
#include "tests/test_util.h"

namespace c960 {
namespace {

const std::string kC960 = std::string(c960::test::binary_dir()) + "/cli/c960";

test::RunResult c960(std::vector<std::string> args) {
  args.insert(args.begin(), kC960);
  return test::run(args);
}

std::vector<std::string> lines(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

void expect_usage_error(const std::vector<std::string>& args, const std::string& needle) {
  const test::RunResult r = c960(args);
  std::string joined;
  for (const auto& a : args) joined += a + " ";
  EXPECT_EQ(r.exit_code, 2) << joined << "\nstderr: " << r.err;
  EXPECT_NE(r.err.find(needle), std::string::npos)
      << joined << "\nstderr: " << r.err << "(expected '" << needle << "')";
}

TEST(Cli, Startpos) {
  EXPECT_EQ(c960({"startpos", "518"}).out, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n");
  EXPECT_EQ(c960({"startpos", "601", "--shredder"}).out, "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1\n");
  EXPECT_EQ(c960({"startpos", "--number", "RQNBBKRN"}).out, "601\n");
  EXPECT_EQ(
      c960({"startpos", "--number", "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN", "w", "GAga", "-", "0", "1"}).out,
      "601\n");
  const test::RunResult a = c960({"startpos", "--random", "--seed", "99"}),
                        b = c960({"startpos", "--random", "--seed", "99"});
  EXPECT_EQ(a.exit_code, 0);
  EXPECT_EQ(a.out, b.out);
  const int n = std::stoi(a.out);
  EXPECT_EQ(a.out.substr(a.out.find(' ') + 1), c960({"startpos", std::to_string(n)}).out);
}

TEST(Cli, StartposBadInput) {
  expect_usage_error({"startpos", "960"}, "out of range");
  expect_usage_error({"startpos", "abc"}, "not a number");
  expect_usage_error({"startpos"}, "missing N");
  expect_usage_error({"startpos", "--number", "KNRBBQRN"}, "between the rooks");
  expect_usage_error({"startpos", "--random", "--seed", "-4"}, "--seed");
  expect_usage_error({"startpos", "5", "--bogus"}, "unknown option --bogus");
  expect_usage_error({"perf", "--depth", "3"}, "c960: unknown command 'perf': did you mean 'perft'?");
  expect_usage_error({"perft", "--dept", "3"}, "unknown option --dept: did you mean --depth?");
}

TEST(Cli, PerftDivideLooksLikeStockfish) {
  const test::RunResult r = c960({"perft", "--depth", "3", "--sp", "601", "--divide"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::vector<std::string> l = lines(r.out);
  ASSERT_EQ(l.size(), 22u);  // 20 moves, a blank line, the total
  EXPECT_EQ(l.back(), "Nodes searched: 8958");
  uint64_t sum = 0;
  bool castle = false;
  for (int i = 0; i < 20; ++i) {
    const size_t colon = l[i].find(": ");
    ASSERT_NE(colon, std::string::npos) << l[i];
    sum += std::stoull(l[i].substr(colon + 2));
    castle |= l[i].substr(0, colon) == "f1g1";
  }
  EXPECT_EQ(sum, 8958u);
  EXPECT_TRUE(castle) << "601's short castle is printed king-takes-rook";
}

TEST(Cli, PerftWithMoves) {
  const test::RunResult r =
      c960({"perft", "--depth", "2", "--fen", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "--moves",
            "e2e4", "e7e5", "g1f3"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  Position pos = test::pos_of("rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq - 1 2");
  EXPECT_EQ(lines(r.out).back(), "Nodes searched: " + std::to_string(perft(pos, 2)));
}

TEST(Cli, PerftBadInput) {
  expect_usage_error({"perft", "--sp", "518"}, "--depth is required");
  expect_usage_error({"perft", "--depth", "x", "--sp", "518"}, "--depth: 'x' is not an integer");
  expect_usage_error({"perft", "--depth", "99", "--sp", "518"}, "--depth: 99 is out of range");
  expect_usage_error({"perft", "--depth", "3"}, "exactly one of --fen and --sp");
  expect_usage_error({"perft", "--depth", "3", "--sp", "1", "--fen", "8/8/8/8/8/8/8/8 w - -"},
                     "exactly one of --fen and --sp");
  expect_usage_error({"perft", "--depth", "3", "--sp", "1000"}, "--sp: 1000 is out of range");
  expect_usage_error({"perft", "--depth", "3", "--fen", "8/8/8/8/8/8/8/8", "w", "-", "-"}, "kings");
  expect_usage_error({"perft", "--depth", "3", "--sp", "518", "--moves", "e2e5"}, "--moves: move 'e2e5' is not legal");
  expect_usage_error({"perft", "--depth", "3", "--sp", "518", "--moves"}, "--moves needs at least one value");
  expect_usage_error({"perft", "--depth"}, "--depth needs a value");
  expect_usage_error({"perft", "--epd", "/nonexistent/file.epd"}, "cannot read");
  expect_usage_error({"perft", "--epd", "x", "--depth", "3"}, "--depth does not go with --epd");
  expect_usage_error({"perft", "--table", "--depth", "2", "--sps", "0-1000"}, "--sps");
  expect_usage_error({"perft", "--depth", "2", "--sp", "1", "--out", "x.csv"}, "--out only goes with --table");
  expect_usage_error({"perft", "--depth", "1", "--sp", "0", "--hash", "1048576"}, "--hash: cannot allocate");
  expect_usage_error({"perft", "--depth", "1", "--sp", "0", "--hash", "-1"}, "--hash: -1 is out of range");
  expect_usage_error({"perft", "--depth", "1", "--sp", "0", "--zobrist-seed", "0"},
                     "--zobrist-seed: 0 is out of range");
  expect_usage_error({"nonsense"}, "unknown command");
}

std::string write_temp(const std::string& text) {
  char path[] = "/tmp/c960_suite_XXXXXX";
  const int fd = mkstemp(path);
  EXPECT_EQ(write(fd, text.data(), text.size()), ssize_t(text.size()));
  close(fd);
  return path;
}

TEST(Cli, PerftSuiteExitCodes) {
  const std::string good =
      write_temp("rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1 ;D1 20 ;D2 400 ;D3 8958\n");
  const test::RunResult ok = c960({"perft", "--epd", good});
  EXPECT_EQ(ok.exit_code, 0) << ok.out << ok.err;
  EXPECT_NE(ok.out.find("0 mismatches"), std::string::npos) << ok.out;

  const std::string bad = write_temp("rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1 ;D1 20 ;D2 401\n");
  const test::RunResult mismatch = c960({"perft", "--epd", bad});
  EXPECT_EQ(mismatch.exit_code, 1);
  EXPECT_NE(mismatch.out.find(", 1 mismatch, 0 bad positions,"), std::string::npos) << mismatch.out;
  EXPECT_NE(mismatch.out.find(
                "MISMATCH rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1 depth 2 expected 401 actual 400 "
                "(line 1)\n"),
            std::string::npos)
      << mismatch.out;

  const std::string broken_fen = write_temp("8/8/8/8/8/8/8/8 w - - ;D1 0\n");
  EXPECT_EQ(c960({"perft", "--epd", broken_fen}).exit_code, 1);
  const std::string broken_syntax = write_temp("4k3/8/8/8/8/8/8/4K3 w - - ;D1 five\n");
  const test::RunResult syntax = c960({"perft", "--epd", broken_syntax});
  EXPECT_EQ(syntax.exit_code, 1) << syntax.out << syntax.err;
  EXPECT_NE(syntax.out.find("ERROR line 1 (" + broken_syntax + ":1): line 1: 'D1 five' is not a depth"),
            std::string::npos)
      << syntax.out;
  // --max-depth skips deeper entries.
  const test::RunResult skipped = c960({"perft", "--epd", bad, "--max-depth", "1"});
  EXPECT_EQ(skipped.exit_code, 0);
  for (const std::string& f : {good, bad, broken_fen, broken_syntax}) std::remove(f.c_str());
}

// Issue 36: the suite's summary writes every count as the node count is written, with thousands
// separators ("1920 checks" stood beside "717,340 nodes").
TEST(Cli, PerftSuiteSummaryGroupsEveryCount) {
  const test::RunResult r =
      c960({"perft", "--epd", std::string(c960::test::data_dir()) + "/chess960_midgame.epd", "--max-depth", "2"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(": 960 positions, 1,920 checks, 0 mismatches, 0 bad positions, 3,840 skipped; 717,340 nodes"),
            std::string::npos)
      << r.out;
}

// Issue 21: a malformed line and an illegal FEN are both bad positions (counted, named by line,
// exit 1 after the whole suite); a mismatch prints c960's divide at the lowest depth that differs
// and the command that bisects below it.
TEST(Cli, PerftSuiteBadLinesAndMismatchDivide) {
  const std::string suite = write_temp(
      "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1 ;D1 20 ;D2 400\n"
      "4k3/8/8/8/8/8/8/4K3 w - - ;D1 five\n"
      "8/8/8/8/8/8/8/8 w - - ;D1 0\n"
      "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1 ;D1 20 ;D3 8000 ;D2 401\n");
  const test::RunResult r = c960({"perft", "--epd", suite});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find(": 4 positions, 5 checks, 2 mismatches, 2 bad positions, 0 skipped;"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("ERROR line 2 (" + suite + ":2): line 2: 'D1 five'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("ERROR line 3 (" + suite + ":3): FEN piece placement"), std::string::npos) << r.out;
  // Depths 3 and 2 mismatch on line 4: the divide is the one at depth 2, c960's counts of it.
  const size_t divide = r.out.find("  c960's divide at depth 2 (line 4):\n");
  ASSERT_NE(divide, std::string::npos) << r.out;
  const std::vector<std::string> after = lines(r.out.substr(divide));
  ASSERT_GE(after.size(), 24u) << r.out;
  uint64_t sum = 0;
  for (size_t i = 1; i <= 20; ++i) {
    const size_t colon = after[i].find(": ");
    ASSERT_NE(colon, std::string::npos) << after[i];
    EXPECT_EQ(after[i].substr(0, 2), "  ") << after[i];
    sum += std::stoull(after[i].substr(colon + 2));
  }
  EXPECT_EQ(sum, 400u);  // the true count at depth 2
  EXPECT_EQ(after[22],
            "  c960 perft --depth 1 --fen 'rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1' --moves MOVE "
            "--divide");
  // The command it names runs as printed (one of the moves of the divide).
  const std::string move = after[1].substr(2, after[1].find(':') - 2);
  const test::RunResult bisect =
      c960({"perft", "--depth", "1", "--fen", "rqnbbkrn/pppppppp/8/8/8/8/PPPPPPPP/RQNBBKRN w GAga - 0 1", "--moves",
            move, "--divide", "--quiet"});
  EXPECT_EQ(bisect.exit_code, 0) << bisect.err;
  EXPECT_NE(bisect.out.find("Nodes searched: " + after[1].substr(after[1].find(": ") + 2) + "\n"), std::string::npos)
      << bisect.out;
  std::remove(suite.c_str());
}

TEST(Cli, PerftTableCsv) {
  const std::string out = write_temp("");
  const test::RunResult r =
      c960({"perft", "--table", "--depth", "3", "--sps", "0-4,518,959", "--out", out, "--threads", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(out), std::string::npos);
  const std::vector<std::string> l = lines(test::slurp(out));
  ASSERT_EQ(l.size(), 8u);
  EXPECT_EQ(l[0], "sp,fen,depth,nodes");
  const std::vector<test::StartposRow> ref = test::startpos_table();
  const int sps[] = {0, 1, 2, 3, 4, 518, 959};
  for (int i = 0; i < 7; ++i) {
    const test::StartposRow& row = ref[sps[i]];
    const std::string fen = test::pos_of(row.fen).fen();
    EXPECT_EQ(l[i + 1], std::to_string(row.sp) + "," + fen + ",3," + std::to_string(row.perft[3]));
  }
  std::remove(out.c_str());
}

// Waits (up to a minute) until `path` holds `needle` at least `n` times.
bool wait_for(const std::string& path, const std::string& needle, size_t n) {
  for (int i = 0; i < 30000; ++i) {
    const std::string text = test::slurp(path);
    size_t found = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++found;
    if (found >= n) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

TEST(Cli, PerftTableCtrlCKeepsRowsAndResumeFinishesTheTable) {
  test::ScratchDir dir;
  const std::string out = dir.file("t.csv");
  const std::vector<std::string> args = {kC960, "perft", "--table", "--depth", "4", "--sps", "0-959", "--out", out};
  {
    test::Process p(args, dir.file("log"));
    ASSERT_TRUE(wait_for(out, "\n", 3)) << test::slurp(dir.file("log"));
    p.signal(SIGINT);
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 130) << test::slurp(dir.file("log"));
  }
  EXPECT_NE(test::slurp(dir.file("log")).find("interrupted after "), std::string::npos) << test::slurp(dir.file("log"));
  const size_t kept = lines(test::slurp(out)).size();
  EXPECT_GE(kept, 3u);
  EXPECT_LT(kept, 961u);
  std::vector<std::string> resume = args;
  resume.erase(resume.begin());
  resume.insert(resume.end(), {"--resume", "--threads", "2"});
  const test::RunResult r = c960(resume);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The file an uninterrupted run writes: every row in order, with the reference counts.
  const std::vector<std::string> l = lines(test::slurp(out));
  ASSERT_EQ(l.size(), 961u);
  EXPECT_EQ(l[0], "sp,fen,depth,nodes");
  const std::vector<test::StartposRow> ref = test::startpos_table();
  uint64_t all_nodes = 0, before = 0;
  for (int sp = 0; sp < 960; ++sp) {
    ASSERT_EQ(l[sp + 1], absl::StrCat(sp, ",", test::pos_of(ref[sp].fen).fen(), ",4,", ref[sp].perft[4]));
    all_nodes += ref[sp].perft[4];
    if (size_t(sp) < kept - 1) before += ref[sp].perft[4];
  }
  // Issue 21: the summary's totals are the whole table's (positions and nodes alike), and the
  // resumed run's own part is named as such, its rate from its own nodes.
  // Issue 36: node counts with separators, as the progress line has them.
  const auto grouped = [](uint64_t n) {
    std::string digits = std::to_string(n), out;
    for (size_t i = 0; i < digits.size(); ++i)
      out += std::string(i && (digits.size() - i) % 3 == 0 ? "," : "") + digits[i];
    return out;
  };
  EXPECT_NE(r.err.find(absl::StrCat("perft table depth 4: 960 positions, ", grouped(all_nodes),
                                    " nodes; this run (resumed after ", kept - 1, " positions done before): ",
                                    961 - kept, " positions, ", grouped(all_nodes - before), " nodes in ")),
            std::string::npos)
      << r.err;
  EXPECT_EQ(test::slurp(out + ".c960-resume"), "");
}

TEST(Cli, SelfPlaySigtermKeepsGamesAndResumeFinishesTheFiles) {
  test::ScratchDir dir;
  const std::vector<std::string> args = {"selfplay", "--sps",   "0-19", "--games-per-position", "3",  "--engine",
                                         "builtin",  "--nodes", "300",  "--max-plies",          "80", "--random-plies",
                                         "2"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = args;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const test::RunResult full = c960(with({"--pgn", dir.file("full.pgn"), "--out", dir.file("full.csv")}));
  ASSERT_EQ(full.exit_code, 0) << full.err;
  const std::string pgn = dir.file("part.pgn"), csv = dir.file("part.csv");
  std::vector<std::string> argv = with({"--pgn", pgn, "--out", csv});
  argv.insert(argv.begin(), kC960);
  {
    test::Process p(argv, dir.file("log"));
    ASSERT_TRUE(wait_for(pgn, "[Event ", 2)) << test::slurp(dir.file("log"));
    p.signal(SIGTERM);
    EXPECT_EQ(p.wait(std::chrono::seconds(60)), 143) << test::slurp(dir.file("log"));
  }
  // What the signal handler writes: lines under 80 columns (issue 36: 100, broken mid-word).
  const std::string log = test::slurp(dir.file("log"));
  EXPECT_NE(log.find("c960: interrupted: finishing the work in progress and writing what is done\n"
                     "c960: interrupt again to quit at once\n"),
            std::string::npos)
      << log;
  for (absl::string_view line : absl::StrSplit(log, '\n')) {
    if (absl::StartsWith(line, "c960: ")) {
      EXPECT_LT(line.size(), 80u) << line;
    }
  }
  const std::string kept = test::slurp(pgn);
  ASSERT_LT(kept.size(), test::slurp(dir.file("full.pgn")).size());
  EXPECT_EQ(test::slurp(dir.file("full.pgn")).substr(0, kept.size()), kept);
  EXPECT_NE(test::slurp(csv).find("\nall,"), std::string::npos) << "the statistics of the games played";
  expect_usage_error(with({"--pgn", pgn, "--out", csv, "--resume", "--seed", "7"}), "--seed differs");
  const test::RunResult r = c960(with({"--pgn", pgn, "--out", csv, "--resume", "--threads", "2"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::slurp(pgn), test::slurp(dir.file("full.pgn")));
  EXPECT_EQ(test::slurp(csv), test::slurp(dir.file("full.csv")));
}

TEST(Cli, HelpForEveryCommand) {
  for (const char* cmd : {"startpos", "perft", "selfplay"}) {
    const test::RunResult r = c960({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_NE(r.out.find("usage: c960 " + std::string(cmd)), std::string::npos);
  }
  EXPECT_EQ(c960({"--help"}).exit_code, 0);
  EXPECT_EQ(c960({}).exit_code, 2);
  // A cluster job's engine is a name the workers offer: submit's help does not offer a path.
  const test::RunResult submit = c960({"submit", "--help"});
  EXPECT_EQ(submit.exit_code, 0);
  EXPECT_NE(submit.out.find("  --engine builtin|NAME "), std::string::npos) << submit.out;
  EXPECT_EQ(submit.out.find("builtin|PATH"), std::string::npos) << submit.out;
}

}  // namespace
}  // namespace c960
