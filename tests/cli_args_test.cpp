// The c960 tool's library in-process, no child processes and no sockets: the argument parser,
// the exit-code policy, the output writer, the client's retry rules, the self-play option
// table against SelfPlaySpec's limits, and whole commands run on string streams.
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "cli/args.h"
#include "cli/client.h"
#include "cli/cluster_command.h"
#include "cli/command.h"
#include "cli/commands.h"
#include "cli/exit_codes.h"
#include "cli/selfplay_args.h"
#include "cluster/text_wrap.h"
#include "gtest/gtest.h"
#include "selfplay/spec.h"
#include "tests/test_util.h"

namespace c960::cli {
namespace {

const CommandSpec kSpec = {"demo",
                           "c960 demo [WORD]",
                           "A command for the tests.",
                           {{"flag", Arity::kFlag, "", "a flag"},
                            {"one", Arity::kOne, "V", "one value"},
                            {"many", Arity::kMany, "W", "many values"},
                            {"num", Arity::kOne, "N", "a number"}},
                           1};

ParsedArgs parse_ok(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> p = parse_args(kSpec, args);
  EXPECT_TRUE(p.ok()) << p.status().message();
  return p.ok() ? *p : ParsedArgs();
}

std::string parse_error(const std::vector<std::string>& args) {
  absl::StatusOr<ParsedArgs> p = parse_args(kSpec, args);
  EXPECT_FALSE(p.ok());
  EXPECT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(p.status().message());
}

TEST(CliArgs, FlagsAndValues) {
  const ParsedArgs p = parse_ok({"--flag", "--one", "x", "--many", "a", "b", "c", "--num=7"});
  EXPECT_TRUE(p.has("flag"));
  EXPECT_EQ(p.get("one"), "x");
  EXPECT_EQ(p.all("many"), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(p.get("num"), "7");
  EXPECT_FALSE(p.has("nothing"));
  EXPECT_EQ(p.get("nothing", "fallback"), "fallback");
  EXPECT_TRUE(p.all("nothing").empty());
  EXPECT_TRUE(p.positional().empty());
}

TEST(CliArgs, InlineValues) {
  EXPECT_EQ(parse_ok({"--one=a=b"}).get("one"), "a=b");
  EXPECT_EQ(parse_ok({"--one="}).get("one", "fallback"), "") << "an empty value is a value";
  EXPECT_EQ(parse_ok({"--many=a", "b"}).all("many"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(parse_error({"--flag=yes"}), "--flag takes no value");
}

TEST(CliArgs, ManyValuesStopAtTheNextOption) {
  const ParsedArgs p = parse_ok({"--many", "a", "b", "--one", "x"});
  EXPECT_EQ(p.all("many"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.get("one"), "x");
  // Repeating a many-valued option adds to it.
  EXPECT_EQ(parse_ok({"--many", "a", "--many", "b"}).all("many"), (std::vector<std::string>{"a", "b"}));
}

TEST(CliArgs, RepeatedSingleOptionsAreErrors) {
  EXPECT_EQ(parse_error({"--one", "a", "--one", "b"}), "--one is given more than once");
  EXPECT_EQ(parse_error({"--flag", "--flag"}), "--flag is given more than once");
}

TEST(CliArgs, ClosestNameIsWhatAUserMeant) {
  const std::vector<std::string> commands = {"startpos", "perft", "perftree", "status", "selfplay", "submit"};
  EXPECT_EQ(closest_name("perf", commands), "perft");     // one deletion
  EXPECT_EQ(closest_name("stauts", commands), "status");  // a swap of neighbours
  EXPECT_EQ(closest_name("selfpaly", commands), "selfplay");
  EXPECT_EQ(closest_name("perfte", commands), "perft");  // nearest wins over perftree (2)
  EXPECT_EQ(closest_name("submt", commands), "submit");
  EXPECT_EQ(closest_name("perft", commands), std::nullopt);  // the name itself is not a suggestion
  EXPECT_EQ(closest_name("sta", commands), std::nullopt);
  EXPECT_EQ(closest_name("xyz", commands), std::nullopt);
  EXPECT_EQ(closest_name("", commands), std::nullopt);
  EXPECT_EQ(parse_error({"--flg"}), "unknown option --flg: did you mean --flag? (see c960 demo --help)");
}

TEST(CliArgs, UnknownOptionsAndMissingValues) {
  EXPECT_EQ(parse_error({"--bogus"}), "unknown option --bogus (see c960 demo --help)");
  EXPECT_EQ(parse_error({"--bogus=1"}), "unknown option --bogus (see c960 demo --help)");
  EXPECT_EQ(parse_error({"--one"}), "--one needs a value (V)");
  EXPECT_EQ(parse_error({"--one", "--flag"}), "--one needs a value (V)");
  EXPECT_EQ(parse_error({"--many"}), "--many needs at least one value (W)");
  EXPECT_EQ(parse_error({"--many", "--flag"}), "--many needs at least one value (W)");
  // A value may look like a negative number or a lone "--".
  EXPECT_EQ(parse_ok({"--num", "-4"}).get("num"), "-4");
  EXPECT_EQ(parse_ok({"--one", "--"}).get("one"), "--");
}

TEST(CliArgs, PositionalLimits) {
  EXPECT_EQ(parse_ok({"word", "--flag"}).positional(), (std::vector<std::string>{"word"}));
  EXPECT_EQ(parse_error({"one", "two"}), "unexpected argument 'two' (see c960 demo --help)");
  EXPECT_EQ(parse_error({"--"}), "unexpected argument '--' (see c960 demo --help)");
  CommandSpec none = kSpec;
  none.max_positional = 0;
  EXPECT_FALSE(parse_args(none, {"word"}).ok());
}

TEST(CliArgs, GetIntBoundsAndGarbage) {
  const auto get = [](const std::string& v, long long lo = -5, long long hi = 5) {
    return parse_ok({"--num", v}).get_int("num", 0, lo, hi);
  };
  EXPECT_EQ(*parse_ok({}).get_int("num", 42, 0, 1), 42) << "the fallback need not be in range";
  EXPECT_EQ(*get("5"), 5);
  EXPECT_EQ(*get("-5"), -5);
  EXPECT_EQ(get("6").status().message(), "--num: 6 is out of range -5..5");
  EXPECT_EQ(get("-6").status().message(), "--num: -6 is out of range -5..5");
  for (const char* garbage : {"3x", "x3", " 3", "3 ", "+3", "0x10", "1e3", "99999999999999999999"})
    EXPECT_EQ(get(garbage).status().message(), absl::StrCat("--num: '", garbage, "' is not an integer")) << garbage;
  EXPECT_EQ(parse_ok({"--num="}).get_int("num", 0, 0, 1).status().message(), "--num: '' is not an integer");
  EXPECT_EQ(*get("9223372036854775807", 0, INT64_MAX), INT64_MAX);
}

struct Captured {
  std::ostringstream out, err;
  Io io{out, err};
};

TEST(CliArgs, HelpAnywhereWins) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--help"}, {"--one", "x", "-h"}, {"--bogus", "--help"}, {"a", "b", "--help"}}) {
    Captured c;
    ParsedArgs p;
    EXPECT_EQ(parse_command(kSpec, args, c.io, &p), std::optional<int>(kExitOk));
    EXPECT_EQ(c.out.str(), help_text(kSpec, cluster::stdout_columns()));  // the terminal's width, else 80
    EXPECT_EQ(c.err.str(), "");
  }
  const std::string help = help_text(kSpec);
  EXPECT_EQ(help.rfind("usage: c960 demo [WORD]\n", 0), 0u) << help;
  for (const char* line : {"  --one V ", "  --many W ...", "  --flag ", "  --help "})
    EXPECT_NE(help.find(line), std::string::npos) << line;
}

TEST(CliArgs, ParseCommandFailsWithTheCommandsName) {
  Captured c;
  ParsedArgs p;
  EXPECT_EQ(parse_command(kSpec, {"--one"}, c.io, &p), std::optional<int>(kExitUsage));
  EXPECT_EQ(c.err.str(), "c960 demo: --one needs a value (V)\n");
  EXPECT_EQ(c.out.str(), "");
  Captured ok;
  EXPECT_EQ(parse_command(kSpec, {"--one", "v"}, ok.io, &p), std::nullopt);
  EXPECT_EQ(p.get("one"), "v");
}

TEST(CliExitCodes, Policy) {
  EXPECT_EQ(kExitOk, 0);
  EXPECT_EQ(kExitCheckFailed, 1);
  EXPECT_EQ(kExitUsage, 2);
  // What the coordinator refuses because of the request is bad input.
  for (absl::StatusCode c : {absl::StatusCode::kInvalidArgument, absl::StatusCode::kNotFound,
                             absl::StatusCode::kAlreadyExists, absl::StatusCode::kResourceExhausted})
    EXPECT_EQ(exit_code_for(c), kExitUsage) << absl::StatusCodeToString(c);
  for (absl::StatusCode c : {absl::StatusCode::kUnavailable, absl::StatusCode::kDeadlineExceeded,
                             absl::StatusCode::kInternal, absl::StatusCode::kCancelled, absl::StatusCode::kUnknown})
    EXPECT_EQ(exit_code_for(c), kExitCheckFailed) << absl::StatusCodeToString(c);
  EXPECT_EQ(exit_code_for(absl::StatusCode::kOk), kExitOk);
}

TEST(CliExitCodes, FailPrintsOneLineAndReturnsTheCode) {
  Captured c;
  EXPECT_EQ(fail(c.io, "perft", "--depth is required"), kExitUsage);
  EXPECT_EQ(fail(c.io, "watch", absl::InternalError("gone"), kExitCheckFailed), kExitCheckFailed);
  EXPECT_EQ(c.err.str(), "c960 perft: --depth is required\nc960 watch: gone\n");
  EXPECT_EQ(c.out.str(), "");
}

using test::ScratchDir;
std::string slurp(const std::string& path) { return test::read_file(path); }

TEST(CliOutput, WritesWholeFilesAndLeavesNoTemporaries) {
  ScratchDir dir;
  const std::string path = dir.file("out.csv");
  ASSERT_TRUE(write_output("--out", path, "a,b\n1,2\n").ok());
  EXPECT_EQ(slurp(path), "a,b\n1,2\n");
  // Replaces a longer file whole, not in place.
  ASSERT_TRUE(write_output("--out", path, "x\n").ok());
  EXPECT_EQ(slurp(path), "x\n");
  ASSERT_TRUE(write_output("--out", dir.file("empty"), "").ok());
  EXPECT_EQ(slurp(dir.file("empty")), "");
  std::vector<std::string> names = dir.names();
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"empty", "out.csv"}));
  EXPECT_TRUE(check_output("--out", path).ok());
  EXPECT_EQ(dir.names().size(), 2u) << "the check leaves nothing behind";
}

TEST(CliOutput, RefusesUnwritablePathsNamingTheOption) {
  ScratchDir dir;
  const std::string missing = dir.file("no/such/dir/out.csv");
  for (const absl::Status& s : {write_output("--pgn", missing, "x"), check_output("--pgn", missing)}) {
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message().rfind(absl::StrCat("--pgn: cannot write '", missing, "'"), 0), 0u) << s.message();
  }
  // A directory is no output file; what was there stays.
  std::filesystem::create_directory(dir.file("sub"));
  EXPECT_FALSE(write_output("--out", dir.file("sub"), "x").ok());
  EXPECT_FALSE(check_output("--out", dir.file("sub")).ok());
  EXPECT_TRUE(std::filesystem::is_directory(dir.file("sub")));
  EXPECT_EQ(dir.names().size(), 1u) << "a failed write leaves no temporary file";
  EXPECT_FALSE(write_output("--out", "", "x").ok());
}

TEST(CliClient, RetryClassification) {
  using C = grpc::StatusCode;
  for (bool idempotent : {false, true}) {
    EXPECT_TRUE(should_retry(C::UNAVAILABLE, idempotent));
    EXPECT_EQ(should_retry(C::DEADLINE_EXCEEDED, idempotent), idempotent);
    for (C c : {C::OK, C::INVALID_ARGUMENT, C::NOT_FOUND, C::ALREADY_EXISTS, C::RESOURCE_EXHAUSTED, C::INTERNAL,
                C::UNKNOWN, C::CANCELLED, C::FAILED_PRECONDITION, C::PERMISSION_DENIED})
      EXPECT_FALSE(should_retry(c, idempotent)) << int(c);
  }
  for (bool got : {false, true}) {
    EXPECT_TRUE(should_reconnect(C::UNAVAILABLE, got));
    EXPECT_TRUE(should_reconnect(C::DEADLINE_EXCEEDED, got));
    EXPECT_EQ(should_reconnect(C::CANCELLED, got), got);
    EXPECT_FALSE(should_reconnect(C::NOT_FOUND, got));
    EXPECT_FALSE(should_reconnect(C::INVALID_ARGUMENT, got));
  }
}

TEST(CliClient, RetriesBackOffExponentiallyUpToTheCap) {
  RetryPolicy policy;
  policy.max_retries = 8;
  policy.initial_backoff_ms = 100;
  policy.max_backoff_ms = 5000;
  std::vector<int64_t> waits;
  int calls = 0;
  const auto sleep = [&](int64_t ms) { waits.push_back(ms); };
  grpc::Status s = call_with_retry([&] { return ++calls, grpc::Status(grpc::StatusCode::UNAVAILABLE, "down"); }, true,
                                   policy, sleep);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE);
  EXPECT_EQ(calls, 9);
  EXPECT_EQ(waits, (std::vector<int64_t>{100, 200, 400, 800, 1600, 3200, 5000, 5000}));

  // A refusal is final at once; a transient failure followed by an answer is an answer.
  calls = 0;
  waits.clear();
  s = call_with_retry([&] { return ++calls, grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no"); }, true, policy,
                      sleep);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(waits.empty());
  calls = 0;
  s = call_with_retry([&] { return ++calls < 3 ? grpc::Status(grpc::StatusCode::UNAVAILABLE, "") : grpc::Status::OK; },
                      false, policy, sleep);
  EXPECT_TRUE(s.ok());
  EXPECT_EQ(calls, 3);
  calls = 0;
  s = call_with_retry([&] { return ++calls, grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED, ""); }, false, policy,
                      sleep);
  EXPECT_EQ(calls, 1) << "a call that may have done its work is not repeated";
  EXPECT_EQ(next_backoff_ms(3000, policy), 5000);
}

TEST(CliClient, CoordinatorAddress) {
  EXPECT_EQ(resolve_coordinator("h:1", "e:2"), "h:1");
  EXPECT_EQ(resolve_coordinator(std::nullopt, "e:2"), "e:2");
  EXPECT_EQ(resolve_coordinator(std::nullopt, ""), cluster::kDefaultCoordinator);
  EXPECT_EQ(resolve_coordinator(std::nullopt, nullptr), cluster::kDefaultCoordinator);
}

// The self-play options accept exactly what SelfPlaySpec::validate accepts at their edges.
absl::StatusOr<selfplay::SelfPlaySpec> selfplay_spec(const std::vector<std::string>& extra) {
  const CommandSpec spec = {"selfplay", "", "", selfplay_spec_options(), 0};
  std::vector<std::string> args = {"--engine", "builtin"};
  if (std::find(extra.begin(), extra.end(), "--games-per-position") == extra.end())
    args.insert(args.end(), {"--games-per-position", "1"});
  args.insert(args.end(), extra.begin(), extra.end());
  absl::StatusOr<ParsedArgs> p = parse_args(spec, args);
  if (!p.ok()) return p.status();
  return selfplay_spec_from_args(*p);
}

TEST(CliSelfPlayOptions, LimitsComeFromTheSpec) {
  using namespace selfplay;
  struct Edge {
    std::vector<std::string> base;
    std::string option;
    long long hi;
  };
  const std::vector<std::string> nodes = {"--nodes", "100"};
  const Edge edges[] = {
      {{}, "--nodes", (long long)kMaxNodesLimit},
      {{}, "--depth", kMaxDepthLimit},
      {{}, "--movetime", kMaxMovetimeMs},
      {nodes, "--random-plies", kMaxRandomPlies},
      {nodes, "--node-jitter", kMaxNodeJitterPercent},
      {nodes, "--sample-margin", kMaxSampleMarginCp},
      {nodes, "--max-plies", kMaxPlyLimit},
      {nodes, "--draw-moves", kMaxAdjudicationMoves},
      {nodes, "--draw-score", kMaxDrawScoreCp},
      {nodes, "--draw-min-ply", kMaxDrawMinPly},
      {nodes, "--resign-moves", kMaxAdjudicationMoves},
      {nodes, "--resign-score", kMaxResignScoreCp},
      {nodes, "--hash", kMaxHashMb},
      {nodes, "--engine-timeout", kMaxEngineTimeoutMs},
  };
  for (const Edge& e : edges) {
    std::vector<std::string> args = e.base;
    args.insert(args.end(), {e.option, std::to_string(e.hi)});
    absl::StatusOr<SelfPlaySpec> at = selfplay_spec(args);
    EXPECT_TRUE(at.ok()) << e.option << ": " << at.status().message();
    args.back() = std::to_string(e.hi + 1);
    absl::StatusOr<SelfPlaySpec> over = selfplay_spec(args);
    ASSERT_FALSE(over.ok()) << e.option;
    EXPECT_EQ(over.status().message().rfind(e.option + ":", 0), 0u) << over.status().message();
  }
  absl::StatusOr<SelfPlaySpec> defaults = selfplay_spec(nodes);
  ASSERT_TRUE(defaults.ok()) << defaults.status().message();
  EXPECT_EQ(defaults->positions.size(), 960u);
  EXPECT_EQ(defaults->seed, kDefaultSeed);
  EXPECT_EQ(defaults->hash_mb, kDefaultHashMb);
  EXPECT_EQ(defaults->engine_timeout_ms, kDefaultEngineTimeoutMs);
  EXPECT_EQ(defaults->adjudication.draw_score_cp, kDefaultDrawScoreCp);
  EXPECT_EQ(defaults->adjudication.resign_score_cp, kDefaultResignScoreCp);
  EXPECT_TRUE(selfplay_spec({"--nodes", "1", "--games-per-position", std::to_string(kMaxGamesPerPosition)}).ok());
  EXPECT_EQ(
      selfplay_spec({"--nodes", "1", "--games-per-position", std::to_string(kMaxGamesPerPosition + 1)})
          .status()
          .message(),
      absl::StrCat("--games-per-position: ", kMaxGamesPerPosition + 1, " is out of range 1..", kMaxGamesPerPosition));
}

TEST(CliSelfPlayOptions, HelpShowsTheSpecsLimits) {
  std::string help;
  for (const OptionSpec& o : selfplay_spec_options()) help += o.help + "\n";
  for (const std::string& part :
       {absl::StrCat("(0..", selfplay::kMaxRandomPlies, ", default 0; ", selfplay::kDefaultOnePositionRandomPlies,
                     " for a run of one position)"),
        absl::StrCat("(1..", selfplay::kMaxHashMb, ", default ", selfplay::kDefaultHashMb, ")"),
        absl::StrCat("(default ", selfplay::kDefaultSeed, ")"),
        absl::StrCat("(1..", selfplay::kMaxGamesPerPosition, ")")})
    EXPECT_NE(help.find(part), std::string::npos) << part << " not in\n" << help;
}

// Whole commands, in-process.
int run_captured(const std::vector<std::string>& args, std::string* out, std::string* err) {
  Captured c;
  const int code = run(args, c.io);
  *out = c.out.str();
  *err = c.err.str();
  return code;
}

TEST(CliRun, CommandsWriteToTheGivenStreams) {
  std::string out, err;
  EXPECT_EQ(run_captured({"startpos", "518"}, &out, &err), kExitOk);
  EXPECT_EQ(out, "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n");
  EXPECT_EQ(err, "");
  EXPECT_EQ(run_captured({"perft", "--depth", "2", "--sp", "518"}, &out, &err), kExitOk);
  EXPECT_EQ(out, "Nodes searched: 400\n");
  EXPECT_EQ(run_captured({"startpos", "960"}, &out, &err), kExitUsage);
  EXPECT_EQ(err.rfind("c960 startpos: ", 0), 0u) << err;
  EXPECT_EQ(run_captured({}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("usage: c960 <command>"), std::string::npos);
  EXPECT_EQ(run_captured({"--help"}, &out, &err), kExitOk);
  EXPECT_NE(out.find("usage: c960 <command>"), std::string::npos);
  EXPECT_EQ(run_captured({"nonsense"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("unknown command 'nonsense'"), std::string::npos);
}

TEST(CliRun, EveryCommandHasHelp) {
  for (const char* cmd : {"startpos", "perft", "selfplay", "submit", "status", "watch", "results", "cancel"}) {
    std::string out, err;
    EXPECT_EQ(run_captured({cmd, "--help"}, &out, &err), kExitOk) << cmd;
    EXPECT_EQ(out.rfind(absl::StrCat("usage: c960 ", cmd), 0), 0u) << out;
    EXPECT_EQ(err, "");
  }
}

TEST(CliRun, UsageErrorsNeedNoCoordinator) {
  std::string out, err;
  EXPECT_EQ(run_captured({"watch"}, &out, &err), kExitUsage);
  EXPECT_EQ(err, "c960 watch: give the job id\n");
  EXPECT_EQ(run_captured({"submit", "perft", "--depth", "3", "--sps", "1", "--fen", "x"}, &out, &err), kExitUsage);
  EXPECT_EQ(err, "c960 submit: give one of --sp, --sps and --fen\n");
  EXPECT_EQ(run_captured({"submit", "perft", "--depth", "3", "--engine", "builtin"}, &out, &err), kExitUsage);
  EXPECT_EQ(err, "c960 submit: --engine: not an option of perft\n");
  EXPECT_EQ(run_captured({"results", "job-1", "--format", "xml"}, &out, &err), kExitUsage);
  EXPECT_EQ(err, "c960 results: --format: 'xml' is not text, csv or json\n");
}

TEST(CliRun, OutputFilesGoThroughTheWriter) {
  ScratchDir dir;
  std::string out, err;
  ASSERT_EQ(run_captured({"perft", "--table", "--depth", "1", "--sps", "518", "--out", dir.file("t.csv")}, &out, &err),
            kExitOk)
      << err;
  EXPECT_EQ(out, absl::StrCat("wrote ", dir.file("t.csv"), "\n"));
  EXPECT_EQ(slurp(dir.file("t.csv")),
            "sp,fen,depth,nodes\n518,rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1,1,20\n");
  // An unwritable output is bad input, found before any work.
  const std::string bad = dir.file("missing/t.csv");
  EXPECT_EQ(run_captured({"perft", "--table", "--depth", "1", "--sps", "518", "--out", bad}, &out, &err), kExitUsage);
  EXPECT_EQ(err.rfind(absl::StrCat("c960 perft: --out: cannot write '", bad, "'"), 0), 0u) << err;
  EXPECT_EQ(run_captured({"selfplay", "--sps", "0", "--games-per-position", "1", "--engine", "builtin", "--nodes", "10",
                          "--quiet", "--pgn", bad},
                         &out, &err),
            kExitUsage);
  EXPECT_EQ(err.rfind(absl::StrCat("c960 selfplay: --pgn: cannot write '", bad, "'"), 0), 0u) << err;
}

}  // namespace
}  // namespace c960::cli

namespace c960::cli {
namespace {

// The first CSV column of each row.
std::vector<std::string> first_column(const std::string& csv) {
  std::vector<std::string> out;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) out.push_back(line.substr(0, line.find(',')));
  return out;
}

TEST(CliSelfPlayPositions, FenEpdAndDfrcRowsAreKeyedById) {
  const std::vector<std::string> base = {"selfplay", "--games-per-position", "1", "--engine", "builtin", "--depth",
                                         "1",        "--max-plies",          "8", "--quiet"};
  const auto with = [&](std::vector<std::string> more) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    return a;
  };
  std::string out, err;
  ASSERT_EQ(run_captured(with({"--fen", "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1",
                               "bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w HAhf - 0 1"}),
                         &out, &err),
            kExitOk)
      << err;
  EXPECT_EQ(first_column(out), (std::vector<std::string>{"1", "2", "all"})) << out;
  EXPECT_NE(out.find("bbqnnrkr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq"), std::string::npos) << out;

  ASSERT_EQ(run_captured(with({"--dfrc", "1000,497280"}), &out, &err), kExitOk) << err;
  EXPECT_EQ(first_column(out), (std::vector<std::string>{"1000", "497280", "all"})) << out;
  // --random N: reproducible from the seed, within the set.
  std::string again;
  ASSERT_EQ(run_captured(with({"--dfrc", "all", "--random", "3", "--seed", "5"}), &out, &err), kExitOk) << err;
  ASSERT_EQ(run_captured(with({"--dfrc", "all", "--random", "3", "--seed", "5"}), &again, &err), kExitOk) << err;
  EXPECT_EQ(out, again);
  EXPECT_EQ(first_column(out).size(), 4u);
  ASSERT_EQ(run_captured(with({"--sps", "10-19", "--random", "2"}), &out, &err), kExitOk) << err;
  for (const std::string& id : first_column(out)) {
    if (id != "all") {
      EXPECT_TRUE(std::stoi(id) >= 10 && std::stoi(id) <= 19) << id;
    }
  }

  test::ScratchDir dir;
  const std::string book = dir.file("book.epd");
  std::ofstream(book) << "# book\nrnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - id \"kp\";\n"
                      << "rnbqkbnr/pppp1ppp/8/4p3/4P3/8/PPPP1PPP/RNBQKBNR w KQkq - 0 2\n";
  ASSERT_EQ(run_captured(with({"--epd", book, "--format", "json"}), &out, &err), kExitOk) << err;
  EXPECT_NE(out.find("\"metadata\": {\"version\": "), std::string::npos) << out;
  EXPECT_NE(out.find("\"id\": \"kp\""), std::string::npos) << out;
  EXPECT_NE(out.find("\"id\": \"3\""), std::string::npos) << out;  // no id: the line number
}

TEST(CliSelfPlayPositions, BadPositionsAreUsageErrorsNamingTheOption) {
  const std::vector<std::string> base = {"selfplay", "--games-per-position", "1", "--engine", "builtin", "--depth",
                                         "1"};
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--sps", "0", "--fen", "8/8/8/8/8/8/8/8 w - - 0 1"}, "give one of --sps, --fen, --epd, --dfrc"},
      {{"--fen", "8/8/8/8/8/8/8/8 w - - 0 1"}, "--fen 1: "},
      {{"--fen", "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1"}, "checkmate"},
      {{"--epd", "/nonexistent/book.epd"}, "--epd: cannot read"},
      {{"--dfrc", "921600"}, "--dfrc: "},
      {{"--fen", "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1", "--random", "1"}, "--random goes with"},
      {{"--sps", "0-3", "--random", "5"}, "--random"},
  };
  for (const auto& [more, expect] : cases) {
    std::vector<std::string> a = base;
    a.insert(a.end(), more.begin(), more.end());
    std::string out, err;
    EXPECT_EQ(run_captured(a, &out, &err), kExitUsage) << expect;
    EXPECT_NE(err.find(expect), std::string::npos) << err;
  }
}

TEST(CliPerftree, SpeaksPerftreesScriptInterface) {
  std::string out, err;
  const std::string start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
  ASSERT_EQ(run_captured({"perftree", "2", start, "e2e4 e7e5"}, &out, &err), kExitOk) << err;
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[lines.size() - 2], "");
  EXPECT_EQ(lines.size() - 2, 29u);  // 29 moves after 1. e4 e5
  long long sum = 0;
  for (size_t i = 0; i + 2 < lines.size(); ++i) {
    EXPECT_EQ(lines[i].find(' '), 4u) << lines[i];
    sum += std::stoll(lines[i].substr(5));
  }
  const std::string total = lines.back();
  EXPECT_EQ(std::to_string(sum), total);
  ASSERT_EQ(run_captured({"perftree", "1", start}, &out, &err), kExitOk) << err;
  EXPECT_EQ(out.substr(out.size() - 4), "\n20\n");
  EXPECT_EQ(run_captured({"perftree", "1", start, "e2e5"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("MOVES"), std::string::npos) << err;
  EXPECT_EQ(run_captured({"perftree", "x", start}, &out, &err), kExitUsage);
  EXPECT_EQ(run_captured({"perftree", "1", start, "e2e4", "extra"}, &out, &err), kExitUsage);
  // c960 perft takes the moves in one word too, and none at all.
  ASSERT_EQ(run_captured({"perft", "--depth", "2", "--fen", start, "--moves", "e2e4 e7e5"}, &out, &err), kExitOk);
  EXPECT_EQ(out, "Nodes searched: " + total + "\n");
  ASSERT_EQ(run_captured({"perft", "--depth", "1", "--fen", start, "--moves", ""}, &out, &err), kExitOk);
  EXPECT_EQ(out, "Nodes searched: 20\n");
}

TEST(CliArgs, ThreadsZeroIsOnePerCpu) {
  std::string out, err;
  EXPECT_EQ(run_captured({"perft", "--depth", "2", "--sp", "518", "--threads", "0"}, &out, &err), kExitOk) << err;
  EXPECT_EQ(out, "Nodes searched: 400\n");
  EXPECT_EQ(run_captured({"perft", "--depth", "2", "--sp", "518", "--threads", "-1"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("--threads"), std::string::npos) << err;
  EXPECT_EQ(run_captured({"selfplay", "--sps", "0", "--games-per-position", "1", "--engine", "builtin", "--depth", "1",
                          "--max-plies", "4", "--quiet", "--threads", "0"},
                         &out, &err),
            kExitOk)
      << err;
}

TEST(CliRun, SubmitNamesAWrongJobKind) {
  std::string out, err;
  EXPECT_EQ(run_captured({"submit", "foo"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("'foo' is not a job kind"), std::string::npos) << err;
}

TEST(CliRun, HelpCommandPrintsThatCommandsHelp) {
  std::string out, err;
  EXPECT_EQ(run_captured({"help", "perft"}, &out, &err), kExitOk);
  EXPECT_EQ(out.rfind("usage: c960 perft", 0), 0u) << out;
  EXPECT_EQ(run_captured({"help", "nonsense"}, &out, &err), kExitUsage);
  EXPECT_NE(err.find("unknown command 'nonsense'"), std::string::npos) << err;
}

}  // namespace
}  // namespace c960::cli

namespace c960::cli {
// The coordinator names request fields; the user sees the options they typed.
TEST(CliWords, CoordinatorFieldsBecomeOptions) {
  EXPECT_EQ(in_cli_words("submit", "split_depth: 5 is not in 0..3"), "--split-depth: 5 is not in 0..3");
  EXPECT_EQ(in_cli_words("submit", "start_positions: '0-1000' is not a range"), "--sps: '0-1000' is not a range");
  EXPECT_EQ(in_cli_words("submit", "store_games_sample: given without store_games SAMPLE"),
            "--store-games sample:N: given without store_games SAMPLE");
  EXPECT_EQ(in_cli_words("submit", "games_per_position: 192000000 units is more than 2000000; raise games_per_unit"),
            "--games-per-position: 192000000 units is more than 2000000; raise --games-per-unit");
  const std::string depth = in_cli_words("submit", "depth: 20 is not in 1..16");
  EXPECT_EQ(depth.rfind("--depth: 20 is not in 1..16 for a cluster perft job", 0), 0u) << depth;
  EXPECT_EQ(in_cli_words("results", "job_id: no job 'x'"), "JOB: no job 'x'");
  // Not a field: unchanged (also a field name that is only a prefix of a word).
  EXPECT_EQ(in_cli_words("submit", "the coordinator is shutting down"), "the coordinator is shutting down");
  EXPECT_EQ(in_cli_words("submit", "depthless: x"), "depthless: x");
}

}  // namespace c960::cli
