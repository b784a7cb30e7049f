// The local long-running commands in-process (`c960 perft --table`, `c960 selfplay`): progress
// only on a terminal, rows and games written as they finish, a clean stop on interrupt, and
// --resume continuing to the files an uninterrupted run writes. No child processes: the
// interrupt is requested in-process (cli/interrupt.h), as the signal handler does;
// tests/cli_test.cpp sends real signals to the binary.
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/provenance.h"
#include "cli/resume.h"
#include "cli/selfplay_resume.h"
#include "gtest/gtest.h"
#include "selfplay/local_runner.h"
#include "tests/test_util.h"

namespace c960::cli {
namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

Result run_io(const std::vector<std::string>& args, bool tty = false) {
  std::ostringstream out, err;
  const Io io{out, err, tty, tty};
  Result r;
  r.code = run(args, io);
  r.out = out.str();
  r.err = err.str();
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

// The pieces a terminal shows one after another: what each '\r' starts.
std::vector<std::string> redraws(const std::string& err) {
  std::vector<std::string> out;
  const std::vector<std::string> parts = absl::StrSplit(err, '\r');
  // The last piece follows the clearing of the line: the command's own output.
  for (size_t i = 1; i + 1 < parts.size(); ++i) out.push_back(parts[i].substr(0, parts[i].find('\n')));
  return out;
}

// Runs args in-process and requests an interrupt once `ready` says the run is under way.
Result run_interrupted(const std::vector<std::string>& args, const std::function<bool()>& ready, int signo) {
  std::atomic<bool> finished{false};
  std::thread watcher([&] {
    while (!finished && !ready()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!finished) request_interrupt(signo);
  });
  Result r = run_io(args);
  finished = true;
  watcher.join();
  return r;
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(CliProgress, Formats) {
  EXPECT_EQ(with_separators("0"), "0");
  EXPECT_EQ(with_separators("999"), "999");
  EXPECT_EQ(with_separators("1000"), "1,000");
  EXPECT_EQ(with_separators("123456789012"), "123,456,789,012");
  EXPECT_EQ(hms(0), "0:00:00");
  EXPECT_EQ(hms(3725.4), "1:02:05");
  EXPECT_EQ(hms(-1), "-:--:--");
  EXPECT_EQ(hms(1e12), "-:--:--");
  EXPECT_DOUBLE_EQ(eta_seconds(1, 4, 10), 30);
  EXPECT_LT(eta_seconds(0, 4, 10), 0);
}

TEST(CliProgress, OnlyOnATerminalAndFitting80Columns) {
  // Not a terminal: the one summary line, nothing redrawn (there were 21 lines for a table).
  Result r = run_io({"perft", "--table", "--depth", "3", "--sps", "0-99"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  EXPECT_EQ(count(r.out, "\n"), 101u);

  r = run_io({"perft", "--table", "--depth", "3", "--sps", "0-99"}, true);
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> shown = redraws(r.err);
  ASSERT_FALSE(shown.empty()) << r.err;
  bool counted = false;
  for (const std::string& s : shown) {
    EXPECT_LE(s.size(), kProgressWidth) << s;
    counted |= s.find("100/100 positions, ") != std::string::npos && s.find("nodes") != std::string::npos &&
               s.find("Mnps") != std::string::npos && s.find("ETA ") != std::string::npos;
  }
  EXPECT_TRUE(counted) << r.err;

  // One deep position: progress by subtrees of the root.
  r = run_io({"perft", "--depth", "4", "--sp", "518"}, true);
  ASSERT_EQ(r.code, 0) << r.err;
  shown = redraws(r.err);
  counted = false;
  for (const std::string& s : shown) counted |= s.find("400/400 subtrees, 197,281 nodes") != std::string::npos;
  EXPECT_TRUE(counted) << r.err;

  // --quiet: nothing on stderr.
  r = run_io({"perft", "--depth", "4", "--sp", "518", "--quiet"}, true);
  EXPECT_EQ(r.err, "");
  r = run_io({"perft", "--table", "--depth", "2", "--sps", "0-3", "--quiet"}, true);
  EXPECT_EQ(r.err, "");

  // Self-play: nothing redrawn without a terminal either.
  r = run_io({"selfplay", "--sps", "0-11", "--games-per-position", "1", "--engine", "builtin", "--depth", "1",
              "--max-plies", "6"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(r.err.find('\r'), std::string::npos) << r.err;
  EXPECT_EQ(count(r.err, "\n"), 1u) << r.err;
  r = run_io({"selfplay", "--sps", "0-11", "--games-per-position", "1", "--engine", "builtin", "--depth", "1",
              "--max-plies", "6"},
             true);
  ASSERT_EQ(r.code, 0) << r.err;
  counted = false;
  for (const std::string& s : redraws(r.err)) {
    EXPECT_LE(s.size(), kProgressWidth) << s;
    counted |= s.find("12/12 games") != std::string::npos;
  }
  EXPECT_TRUE(counted) << r.err;
}

TEST(CliPerftTable, InterruptKeepsRowsAndResumeFinishesTheSameFile) {
  test::ScratchDir dir;
  const std::string full = dir.file("full.csv"), part = dir.file("part.csv");
  const std::vector<std::string> args = {"perft", "--table", "--depth", "4", "--sps", "0-199", "--quiet"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = args;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  ASSERT_EQ(run_io(with({"--out", full})).code, 0);
  EXPECT_FALSE(exists(resume_path(full))) << "a finished table leaves no state";

  // Interrupted once a few rows are out: those rows stay, the state file tells what they are.
  const Result stopped = run_interrupted(
      with({"--out", part}), [&] { return count(slurp(part), "\n") >= 3; }, SIGINT);
  ASSERT_EQ(stopped.code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("--resume continues"), std::string::npos) << stopped.err;
  const std::string kept = slurp(part);
  ASSERT_LT(kept.size(), slurp(full).size());
  EXPECT_EQ(slurp(full).substr(0, kept.size()), kept);
  EXPECT_TRUE(exists(resume_path(part)));
  // Issue 36: the same command without --resume overwrote the table and its state; refused now,
  // the files as they were.
  const std::string state = slurp(resume_path(part));
  Result again = run_io(with({"--out", part}));
  EXPECT_EQ(again.code, 2);
  EXPECT_NE(again.err.find("holds an interrupted table"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("add --resume"), std::string::npos) << again.err;
  EXPECT_EQ(slurp(part), kept);
  EXPECT_EQ(slurp(resume_path(part)), state);

  // A torn last row (a process killed mid-write) is written again.
  std::ofstream(part, std::ios::app) << "12,bqnb";
  // Other options: refused, naming the option; the files stay as they are.
  Result r = run_io(with({"--out", part, "--resume", "--shredder"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--shredder differs"), std::string::npos) << r.err;
  r = run_io({"perft", "--table", "--depth", "4", "--sps", "0-198", "--out", part, "--resume"});
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sps differs: the interrupted run had '0-199', this one '0-198'"), std::string::npos) << r.err;

  r = run_io(with({"--out", part, "--resume"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(part), slurp(full));
  EXPECT_FALSE(exists(resume_path(part)));

  // Resuming a complete table does nothing; what c960 did not write is refused; a new file just
  // starts.
  r = run_io(with({"--out", part, "--resume"}));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(part), slurp(full));
  const std::string other = dir.file("other.csv");
  std::ofstream(other) << "sp,fen,depth,nodes\n0,x,4,1\n";
  r = run_io(with({"--out", other, "--resume"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("is complete or was not written by"), std::string::npos) << r.err;
  ASSERT_EQ(run_io(with({"--out", dir.file("new.csv"), "--resume"})).code, 0);
  EXPECT_EQ(slurp(dir.file("new.csv")), slurp(full));
  r = run_io(with({"--resume"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--resume needs --out"), std::string::npos) << r.err;
}

// Issue 36: a deep perft of one position stopped by Ctrl-C exited without a word. It now stops
// between subtrees and says how far it got; no count is printed (it would be wrong).
TEST(CliPerft, CtrlCOnOnePositionSaysWhereItStopped) {
  std::atomic<bool> finished{false};
  // Asked until the run ends: a request made before the command's handlers are in place is
  // cleared by them.
  std::thread asker([&] {
    while (!finished) {
      request_interrupt(SIGINT);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  });
  const Result r = run_io({"perft", "--depth", "8", "--sp", "518", "--threads", "2"});
  finished = true;
  asker.join();
  EXPECT_EQ(r.code, 130) << r.err;
  EXPECT_NE(r.err.find("c960 perft: interrupted "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("a single position's count cannot be resumed"), std::string::npos) << r.err;
  EXPECT_EQ(r.out.find("Nodes searched"), std::string::npos) << r.out;
}

TEST(CliPerftTable, RowsGoToStdoutAsTheyAreCounted) {
  // Interrupted with SIGTERM: the rows counted are on stdout, exit 128 + 15.
  std::ostringstream out, err;
  const Io io{out, err, false, false};
  std::atomic<bool> finished{false};
  Result r;
  std::thread watcher([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    if (!finished) request_interrupt(SIGTERM);
  });
  r.code = run({"perft", "--table", "--depth", "5", "--sps", "0-959", "--quiet"}, io);
  finished = true;
  watcher.join();
  ASSERT_EQ(r.code, 143) << err.str();
  const std::vector<std::string> rows = absl::StrSplit(out.str(), '\n', absl::SkipEmpty());
  ASSERT_GE(rows.size(), 1u);
  EXPECT_LT(rows.size(), 961u);
  EXPECT_EQ(rows[0], "sp,fen,depth,nodes");
  for (size_t i = 1; i < rows.size(); ++i) EXPECT_EQ(rows[i].rfind(absl::StrCat(i - 1, ","), 0), 0u) << rows[i];
}

const std::vector<std::string> kSelfPlay = {
    "selfplay", "--sps",       "0-5", "--games-per-position", "3", "--engine", "builtin", "--nodes",
    "300",      "--max-plies", "60",  "--random-plies",       "2", "--quiet"};

std::vector<std::string> selfplay_args(std::vector<std::string> more) {
  std::vector<std::string> a = kSelfPlay;
  a.insert(a.end(), more.begin(), more.end());
  return a;
}

TEST(CliSelfPlay, InterruptKeepsGamesAndResumeFinishesTheSameFiles) {
  test::ScratchDir dir;
  const std::string pgn = dir.file("full.pgn"), out = dir.file("full.csv");
  ASSERT_EQ(run_io(selfplay_args({"--pgn", pgn, "--out", out, "--threads", "2"})).code, 0);
  EXPECT_EQ(count(slurp(pgn), "[Event "), 18u);
  EXPECT_FALSE(exists(resume_path(out)));

  for (const std::string format : {"csv", "json"}) {
    const std::string full_out = dir.file("full." + format);
    ASSERT_EQ(run_io(selfplay_args({"--pgn", pgn, "--out", full_out, "--format", format})).code, 0);
    const std::string ppgn = dir.file("part-" + format + ".pgn"), pout = dir.file("part." + format);
    const std::vector<std::string> part = {"--pgn", ppgn, "--out", pout, "--format", format, "--threads", "2"};
    const Result stopped = run_interrupted(
        selfplay_args(part), [&] { return count(slurp(ppgn), "[Event ") >= 2; }, SIGINT);
    ASSERT_EQ(stopped.code, 130) << stopped.err << format << " pgn games " << count(slurp(ppgn), "[Event ");
    EXPECT_NE(stopped.err.find("--resume plays the rest"), std::string::npos) << stopped.err;
    // The games written are the first ones of the full run, in order; the table counts the
    // games played.
    const std::string kept = slurp(ppgn);
    ASSERT_LT(kept.size(), slurp(pgn).size());
    EXPECT_EQ(slurp(pgn).substr(0, kept.size()), kept);
    EXPECT_NE(slurp(pout), "");
    EXPECT_NE(slurp(pout), slurp(full_out));

    std::vector<std::string> other = part;
    other.insert(other.end(), {"--resume", "--seed", "2"});
    Result r = run_io(selfplay_args(other));
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("--seed differs: the interrupted run had '1', this one '2'"), std::string::npos) << r.err;
    // Issue 36: without --resume, refused; the files stay as they were.
    r = run_io(selfplay_args(part));
    EXPECT_EQ(r.code, 2);
    EXPECT_NE(r.err.find("add --resume"), std::string::npos) << r.err;
    EXPECT_EQ(slurp(ppgn), kept);

    std::vector<std::string> again = part;
    again.push_back("--resume");
    r = run_io(selfplay_args(again));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(slurp(ppgn), slurp(pgn));
    EXPECT_EQ(slurp(pout), slurp(full_out));
    EXPECT_FALSE(exists(resume_path(pout)));
  }
}

// An adaptive run (--target-width): the table gains each position's anytime interval and
// verdict, the PGN holds exactly the games the table counts, and an interrupted run resumed
// ends with the uninterrupted run's files; a changed rule is refused on resume.
TEST(CliSelfPlay, AnAdaptiveRunResumesToTheSameFiles) {
  test::ScratchDir dir;
  const std::vector<std::string> adaptive = {"selfplay", "--sps",          "0-9",     "--games-per-position",
                                             "24",       "--target-width", "0.7",     "--batch",
                                             "4",        "--engine",       "builtin", "--depth",
                                             "2",        "--random-plies", "4",       "--seed",
                                             "7",        "--max-plies",    "60",      "--draw-score",
                                             "10",       "--resign-score", "1000",    "--hash",
                                             "1"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = adaptive;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const std::string pgn = dir.file("full.pgn"), out = dir.file("full.csv");
  Result full = run_io(with({"--pgn", pgn, "--out", out, "--threads", "2"}));
  ASSERT_EQ(full.code, 0) << full.err;
  EXPECT_NE(full.err.find("adaptive (target width 0.7, batch 4): 10 positions: 10 narrow"), std::string::npos)
      << full.err;
  const std::string table = slurp(out);
  const std::vector<std::string> lines = absl::StrSplit(table, '\n', absl::SkipEmpty());
  ASSERT_EQ(lines.size(), 12u) << table;
  EXPECT_NE(lines[0].find(",rank,anytime_lo,anytime_hi,verdict,"), std::string::npos) << lines[0];
  int64_t games = 0;
  for (size_t i = 1; i + 1 < lines.size(); ++i) {
    EXPECT_NE(lines[i].find(",narrow,"), std::string::npos) << lines[i];
    const std::vector<std::string> f = absl::StrSplit(lines[i], ',');
    games += std::stoll(f[2]) + std::stoll(f[14]) + std::stoll(f[15]);  // games, duplicates, uncounted
  }
  EXPECT_EQ(int64_t(count(slurp(pgn), "[Event ")), games);
  EXPECT_LT(games, 10 * 24);

  const std::string ppgn = dir.file("part.pgn"), pout = dir.file("part.csv");
  const std::vector<std::string> part = with({"--pgn", ppgn, "--out", pout, "--threads", "2"});
  const Result stopped = run_interrupted(
      part, [&] { return count(slurp(resume_path(pout)), "\nrecord") >= 3; }, SIGINT);  // the date and 2 games
  ASSERT_EQ(stopped.code, 130) << stopped.err;
  EXPECT_NE(stopped.err.find("at most 240 games"), std::string::npos) << stopped.err;
  std::vector<std::string> changed = part;
  *std::find(changed.begin(), changed.end(), "0.7") = "0.6";
  changed.push_back("--resume");
  Result r = run_io(changed);
  EXPECT_EQ(r.code, 2) << r.err;
  EXPECT_NE(r.err.find("--adaptive differs"), std::string::npos) << r.err;
  std::vector<std::string> again = part;
  again.push_back("--resume");
  r = run_io(again);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(slurp(pout), table);
  EXPECT_EQ(slurp(ppgn), slurp(pgn));
}

TEST(CliSelfPlay, ResumeRefusesWhatItCannotContinue) {
  test::ScratchDir dir;
  Result r = run_io(selfplay_args({"--resume"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--resume needs --out or --pgn"), std::string::npos) << r.err;
  // A state file whose game is not what the options give.
  const std::string pgn = dir.file("g.pgn");
  std::ofstream(pgn) << "";
  std::vector<std::string> args = selfplay_args({"--pgn", pgn, "--resume"});
  {
    std::ofstream state(resume_path(pgn));
    state << "c960-resume\tselfplay\n";
  }
  r = run_io(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--positions differs"), std::string::npos) << r.err;
  std::ofstream(resume_path(pgn)) << "c960-resume\tperft-table\n";
  r = run_io(args);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("not the state of an interrupted 'selfplay' run"), std::string::npos) << r.err;
}

TEST(CliSelfPlay, SpIsOneStartPosition) {
  const std::vector<std::string> base = {
      "selfplay", "--games-per-position", "2", "--engine",       "builtin", "--depth",
      "1",        "--max-plies",          "8", "--random-plies", "2",       "--quiet"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const Result sp = run_io(with({"--sp", "518"})), sps = run_io(with({"--sps", "518"}));
  ASSERT_EQ(sp.code, 0) << sp.err;
  EXPECT_EQ(sp.out, sps.out);
  EXPECT_EQ(sp.out.find("\n518,"), sp.out.find('\n')) << sp.out;
  Result r = run_io(with({"--sp", "960"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sp: 960 is out of range"), std::string::npos) << r.err;
  r = run_io(with({"--sp", "1", "--sps", "2"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sp does not go with"), std::string::npos) << r.err;
  r = run_io(with({"--sp", "1", "--fen", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"}));
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--sp does not go with"), std::string::npos) << r.err;
  EXPECT_NE(run_io({"selfplay", "--help"}).out.find("--sp N"), std::string::npos);
}

// Issue 36: "1 threads", "1 duplicate games" in the summary line.
TEST(CliSelfPlay, TheSummaryCountsInTheRightNumber) {
  const Result r = run_io({"selfplay", "--sp", "518", "--games-per-position", "2", "--engine", "builtin", "--depth",
                           "1", "--max-plies", "8", "--random-plies", "2", "--threads", "1"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("c960 selfplay: 2 games in "), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(", 1 thread), "), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("1 threads"), std::string::npos) << r.err;
}

// Issue 20: the README's `c960 selfplay --sp 518 --games-per-position 100 --engine builtin
// --nodes 20000` played one game 100 times and printed White 1.000 [0.956, 1.000]. Games now vary
// by default (a --nodes limit's node jitter), a repeat counts once, and a spec whose games must
// all repeat is refused naming what fixes it.
TEST(CliSelfPlay, GamesVaryByDefaultAndCopiesAreNotEvidence) {
  const std::vector<std::string> base = {"selfplay", "--sp",     "518",         "--games-per-position",
                                         "12",       "--engine", "builtin",     "--format",
                                         "json",     "--quiet",  "--max-plies", "60"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  const Result r = run_io(with({"--nodes", "400"}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("\"node_jitter_percent\": 10"), std::string::npos) << r.out.substr(0, 600);
  // The total's games are the distinct ones; with the jitter most of the 12 differ.
  const size_t total = r.out.find("\"total\": ");
  ASSERT_NE(total, std::string::npos);
  int games = -1, duplicates = -1;
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("\"games\": ", total), "\"games\": %d", &games), 1);
  ASSERT_EQ(std::sscanf(r.out.c_str() + r.out.find("\"duplicates\": ", total), "\"duplicates\": %d", &duplicates), 1);
  EXPECT_EQ(games + duplicates, 12);
  EXPECT_GE(games, 8) << r.out;
  // Without any randomness: refused, naming the options that fix it.
  for (const std::vector<std::string>& more :
       {std::vector<std::string>{"--nodes", "400", "--node-jitter", "0"}, std::vector<std::string>{"--depth", "2"}}) {
    const Result refused = run_io(with(more));
    EXPECT_EQ(refused.code, 2) << refused.out;
    EXPECT_NE(refused.err.find("every game of a position would repeat the first"), std::string::npos) << refused.err;
    EXPECT_NE(refused.err.find("--random-plies K"), std::string::npos) << refused.err;
  }
  // One game per position, or randomness of another kind, is fine.
  EXPECT_EQ(run_io(with({"--depth", "1", "--sample-margin", "50"})).code, 0);
}

// Issue 20: provenance in the run's metadata: the host's CPU and the SHA-256 of
// the opening book (and of a UCI engine's binary).
TEST(CliSelfPlay, MetadataCarriesProvenance) {
  test::ScratchDir dir;
  const std::string book = dir.file("book.epd");
  std::ofstream(book) << "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - id \"a\";\n";
  const std::optional<std::string> sha = file_sha256(book);
  ASSERT_TRUE(sha.has_value());
  EXPECT_EQ(sha->size(), 64u);
  const std::string abc = dir.file("abc");
  std::ofstream(abc) << "abc";
  EXPECT_EQ(file_sha256(abc), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_FALSE(file_sha256(dir.file("none")).has_value());
  const Result r = run_io({"selfplay", "--epd", book, "--games-per-position", "2", "--engine", "builtin", "--depth",
                           "1", "--random-plies", "2", "--threads", "2", "--format", "json", "--quiet"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find(absl::StrCat("\"book_sha256\": \"", *sha, "\"")), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(absl::StrCat("\"cpu\": \"", cpu_model(), "\"")), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\"threads\""), std::string::npos) << r.out;  // files never depend on --threads
  // A match names both engines' binaries.
  const std::string sf = "/usr/games/stockfish";
  if (!file_sha256(sf)) GTEST_SKIP() << "stockfish not installed";
  const Result m = run_io({"selfplay", "--sp", "518", "--games-per-position", "2", "--engine", "builtin", "--opponent",
                           sf, "--depth", "1", "--random-plies", "2", "--format", "json", "--quiet"});
  ASSERT_EQ(m.code, 0) << m.err;
  EXPECT_NE(m.out.find(absl::StrCat("\"opponent_sha256\": \"", *file_sha256(sf), "\"")), std::string::npos) << m.out;
}

TEST(CliResumeFile, TornLastLineIsDroppedAndOptionsAreCompared) {
  test::ScratchDir dir;
  const std::string path = dir.file("x.c960-resume");
  absl::StatusOr<std::unique_ptr<ResumeLog>> log =
      ResumeLog::create(path, "demo", {{"depth", "5"}, {"name", "a\tb\nc"}}, {{"first"}});
  ASSERT_TRUE(log.ok()) << log.status();
  ASSERT_TRUE((*log)->append({"second", "with\nnewline"}).ok());
  std::ofstream(path, std::ios::app) << "record\tthi";  // killed mid-write
  absl::StatusOr<std::optional<ResumeState>> state = read_resume(path, "demo");
  ASSERT_TRUE(state.ok()) << state.status();
  ASSERT_TRUE(state->has_value());
  EXPECT_EQ((*state)->options.size(), 2u);
  EXPECT_EQ((*state)->options[1].value, "a\tb\nc");
  ASSERT_EQ((*state)->records.size(), 2u);
  EXPECT_EQ((*state)->records[1], (std::vector<std::string>{"second", "with\nnewline"}));
  EXPECT_FALSE(read_resume(path, "other").ok());
  EXPECT_FALSE(read_resume(dir.file("none"), "demo")->has_value());

  EXPECT_TRUE(check_same_options((*state)->options, {{"depth", "5"}, {"name", "a\tb\nc"}}).ok());
  EXPECT_EQ(check_same_options((*state)->options, {{"depth", "6"}, {"name", "a\tb\nc"}}).message(),
            "--resume: --depth differs: the interrupted run had '5', this one '6' (give the same options, or leave "
            "out --resume to start over)");
  EXPECT_NE(check_same_options((*state)->options, {{"depth", "5"}}).message().find("--name differs"),
            std::string::npos);
  ASSERT_TRUE((*log)->remove().ok());
  EXPECT_FALSE(exists(path));
}

TEST(LocalRunner, StopsBetweenGamesAndContinuesFromWhatWasDone) {
  selfplay::SelfPlaySpec spec;
  spec.positions = selfplay::chess960_positions({0, 1, 2});
  spec.games_per_position = 3;
  spec.limits.depth = 1;
  spec.max_plies = 10;
  spec.random_plies = 2;
  const std::vector<selfplay::PlayedGame> all = *selfplay::play_local(spec, 1);
  ASSERT_EQ(all.size(), 9u);
  int n = 0;
  absl::StatusOr<std::vector<selfplay::PlayedGame>> first = selfplay::play_local(
      spec, 1, [&](const selfplay::PlayedGame&) { ++n; }, {}, [&] { return n >= 4; });
  ASSERT_TRUE(first.ok());
  ASSERT_EQ(first->size(), 4u);
  std::vector<selfplay::PlayedGame> rest = *selfplay::play_local(spec, 2, {}, *first);
  ASSERT_EQ(rest.size(), 9u);
  for (size_t i = 0; i < 9; ++i) {
    EXPECT_EQ(rest[i].position, all[i].position);
    EXPECT_EQ(rest[i].index, all[i].index);
    EXPECT_EQ(rest[i].record.pgn, all[i].record.pgn);
  }
  // The records of the state file read back to the same games.
  spec.date = "2026.01.02";
  const std::vector<selfplay::PlayedGame> dated = *selfplay::play_local(spec, 1);
  for (const selfplay::PlayedGame& g : dated) {
    absl::StatusOr<selfplay::PlayedGame> back = game_from_record(spec, game_record(g));
    ASSERT_TRUE(back.ok()) << back.status();
    EXPECT_EQ(back->record.pgn, g.record.pgn);
    EXPECT_EQ(back->record.moves, g.record.moves);
  }
  std::vector<std::string> bad = game_record(dated[0]);
  bad[3] = std::to_string((std::stoi(bad[3]) + 1) % 3);  // a result the final position does not show
  EXPECT_FALSE(game_from_record(spec, bad).ok()) << absl::StrJoin(bad, "|");
}

}  // namespace
}  // namespace c960::cli

namespace c960::cli {
namespace {

// On a terminal selfplay prints the readable table (the 'all' row first); piped, CSV as before;
// --format chooses either way.
TEST(CliSelfPlay, ATableOnATerminalCsvWhenPiped) {
  const std::vector<std::string> args = {"selfplay", "--sps",   "0-1", "--games-per-position", "2", "--engine",
                                         "builtin",  "--depth", "1",   "--random-plies",       "2", "--quiet"};
  const Result tty = run_io(args, true), piped = run_io(args, false);
  ASSERT_EQ(tty.code, 0) << tty.err;
  ASSERT_EQ(piped.code, 0) << piped.err;
  EXPECT_EQ(piped.out.rfind("sp,fen,games,", 0), 0u) << piped.out;
  EXPECT_EQ(tty.out.find("sp,fen"), std::string::npos) << tty.out;
  const size_t all = tty.out.find("all"), first = tty.out.find("BBQNNRKR");
  ASSERT_NE(all, std::string::npos) << tty.out;
  ASSERT_NE(first, std::string::npos) << tty.out;
  EXPECT_LT(all, first) << tty.out;
  std::vector<std::string> csv = args;
  csv.insert(csv.end(), {"--format", "csv"});
  EXPECT_EQ(run_io(csv, true).out, piped.out);
  std::vector<std::string> bad = args;
  bad.insert(bad.end(), {"--format", "xml"});
  const Result r = run_io(bad, true);
  EXPECT_EQ(r.code, 2);
  EXPECT_NE(r.err.find("--format"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace c960::cli
