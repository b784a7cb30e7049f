#include <chrono>
#include <fstream>
#include <memory>
#include <new>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/startpos.h"
#include "core/suite.h"

namespace c960::cli {
namespace {

constexpr char kName[] = "perft";

const CommandSpec kSpec = {
    kName,
    "c960 perft --depth D (--fen FEN | --sp N) [--moves M ...] [--divide]\n"
    "       c960 perft --epd FILE [--max-depth D]\n"
    "       c960 perft --table --depth D [--sps 0-959] [--out FILE] [--shredder]",
    "Counts the leaf nodes of the legal move tree. With --divide, prints one 'move: count' line "
    "per legal move (UCI, castling as king takes rook) before the total; the last line is always "
    "'Nodes searched: N'. --epd checks every position of a suite ('FEN ;D1 n ;D2 n ...' lines or "
    "'id / epd / perft d n' blocks) and exits 1 on any mismatch. --table writes CSV "
    "'sp,fen,depth,nodes' for a set of start positions. Counts never depend on --threads, --hash or "
    "--zobrist-seed.",
    {
        {"depth", Arity::kOne, "D", "depth in plies (1..30; 0 prints 1)"},
        {"fen", Arity::kMany, "FEN", "the position (FEN, X-FEN or Shredder-FEN; quoted or as words)"},
        {"sp", Arity::kOne, "N", "start position number 0..959"},
        {"moves", Arity::kMany, "M", "UCI moves to play from the position first"},
        {"divide", Arity::kFlag, "", "print the count below each legal move"},
        {"epd", Arity::kOne, "FILE", "check a perft suite"},
        {"max-depth", Arity::kOne, "D", "with --epd: skip entries deeper than D"},
        {"table", Arity::kFlag, "", "perft of many start positions, as CSV"},
        {"sps", Arity::kOne, "LIST", "with --table: numbers and ranges, e.g. 0-9,518,601 (default 0-959)"},
        {"out", Arity::kOne, "FILE", "with --table: write the CSV here instead of stdout"},
        {"shredder", Arity::kFlag, "", "write FENs with Shredder-FEN castling (HAha)"},
        {"threads", Arity::kOne, "N", "threads (default 1; 0: one per CPU); one position is split below the root"},
        {"hash", Arity::kOne, "MB", "transposition table size shared by all threads (default 0: off)"},
        {"zobrist-seed", Arity::kOne, "S", "seed of the Zobrist key set (counts never depend on it)"},
    }};

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string rate(NodeCount nodes, double secs) {
  return secs > 0 ? absl::StrFormat("%.1f Mnps", double(nodes) / secs / 1e6) : std::string("-");
}

absl::StatusOr<std::string> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read '", path, "'"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Perft with the options of one invocation: threads and the shared hash table.
struct PerftRunner {
  PerftOptions options;
  std::unique_ptr<PerftHash> hash;

  PerftResult run(const Position& pos, int depth) const {
    return perft_parallel({pos}, depth, options, hash.get()).front();
  }
};

// Where a suite entry is: "line 3", or "id, line 3" when the suite names it.
std::string where(const PerftCase& c) {
  const std::string line = absl::StrCat("line ", c.line);
  return c.id == line ? line : absl::StrCat(c.id, ", ", line);
}

int run_suite(const ParsedArgs& p, const PerftRunner& runner, const Io& io) {
  absl::StatusOr<long long> max_depth = p.get_int("max-depth", 64, 1, 64);
  if (!max_depth.ok()) return fail(io, kName, max_depth.status());
  const std::string path = p.get("epd");
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return fail(io, kName, text.status());
  absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(*text);
  if (!cases.ok())
    return fail(io, kName, absl::InvalidArgumentError(absl::StrCat(path, ": ", cases.status().message())));

  const auto t0 = std::chrono::steady_clock::now();
  int checks = 0, mismatches = 0, errors = 0, skipped = 0;
  NodeCount nodes = 0;
  for (const PerftCase& c : *cases) {
    absl::StatusOr<Position> pos = Position::from_fen(c.fen);
    if (!pos.ok()) {
      ++errors;
      io.out << absl::StrFormat("ERROR %s (%s:%d): %s\n", c.id, path, c.line, pos.status().message());
      continue;
    }
    for (const auto& [depth, expected] : c.expected) {
      if (depth > *max_depth) {
        ++skipped;
        continue;
      }
      const NodeCount got = runner.run(*pos, depth).nodes;
      ++checks;
      nodes += got;
      if (got != expected) {
        ++mismatches;
        io.out << absl::StrFormat("MISMATCH %s depth %d expected %d actual %s (%s)\n", c.fen, depth, expected,
                                  to_string(got), where(c));
      }
    }
  }
  const double secs = seconds_since(t0);
  io.out << absl::StrFormat(
      "%s: %d positions, %d checks, %d mismatches, %d bad positions, %d skipped; %s nodes in %.2f s (%s)\n", path,
      cases->size(), checks, mismatches, errors, skipped, to_string(nodes), secs, rate(nodes, secs));
  return mismatches || errors ? kExitCheckFailed : kExitOk;
}

int run_table(const ParsedArgs& p, int depth, const PerftRunner& runner, const Io& io) {
  absl::StatusOr<std::vector<int>> sps = parse_sp_ranges(p.get("sps", "0-959"));
  if (!sps.ok()) return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--sps: ", sps.status().message())));
  const bool shredder = p.has("shredder");
  const std::string out_path = p.get("out");
  if (p.has("out"))
    if (absl::Status s = check_output("--out", out_path); !s.ok()) return fail(io, kName, s);

  std::vector<Position> roots;
  for (int sp : *sps) roots.push_back(*Position::from_fen(*startpos_fen(sp)));

  const bool tty = io.err_is_tty;
  const auto t0 = std::chrono::steady_clock::now();
  int last_step = -1;
  PerftOptions options = runner.options;
  options.progress = [&](size_t done, size_t total, NodeCount nodes) {
    const double secs = seconds_since(t0);
    const double eta = done ? secs * double(total - done) / double(done) : 0;
    const std::string line = absl::StrFormat(
        "perft table depth %d, %d positions: %5.1f%% of tasks, %s nodes, %.1f s (%s), ETA %.0f s", depth, roots.size(),
        100.0 * double(done) / double(total), to_string(nodes), secs, rate(nodes, secs), eta);
    const int step = int(20 * done / total);  // without a terminal: a line per 5%
    if (tty)
      io.err << "\r" << line << "   " << std::flush;
    else if (step != last_step)
      io.err << line << "\n";
    last_step = step;
  };
  const std::vector<PerftResult> results = perft_parallel(roots, depth, options, runner.hash.get());
  if (tty) io.err << "\n";

  std::string csv = "sp,fen,depth,nodes\n";
  NodeCount sum = 0;
  for (size_t i = 0; i < roots.size(); ++i) {
    absl::StrAppend(&csv, (*sps)[i], ",", roots[i].fen(shredder ? FenDialect::kShredder : FenDialect::kXFen), ",",
                    depth, ",", to_string(results[i].nodes), "\n");
    sum += results[i].nodes;
  }
  const double secs = seconds_since(t0);
  if (p.has("out")) {
    if (absl::Status s = write_output("--out", out_path, csv); !s.ok()) return fail(io, kName, s);
    io.out << "wrote " << out_path << "\n";
  } else {
    io.out << csv;
  }
  io.err << absl::StrFormat("perft table depth %d: %d positions, %s nodes in %.2f s (%s)\n", depth, roots.size(),
                            to_string(sum), secs, rate(sum, secs));
  return kExitOk;
}

}  // namespace

int cmd_perft(const std::vector<std::string>& args, const Io& io) {
  ParsedArgs parsed_args;
  if (std::optional<int> rc = parse_command(kSpec, args, io, &parsed_args)) return *rc;
  const ParsedArgs* p = &parsed_args;
  absl::StatusOr<long long> threads = threads_option(*p);
  if (!threads.ok()) return fail(io, kName, threads.status());
  absl::StatusOr<long long> hash_mb = p->get_int("hash", 0, 0, 1 << 20);
  if (!hash_mb.ok()) return fail(io, kName, hash_mb.status());
  absl::StatusOr<long long> zseed = p->get_int("zobrist-seed", 0, 1, INT64_MAX);
  if (!zseed.ok()) return fail(io, kName, zseed.status());
  // Keys are global: replace them before any position exists.
  if (p->has("zobrist-seed")) zobrist::init(uint64_t(*zseed));
  PerftRunner runner;
  runner.options.threads = int(*threads);
  if (*hash_mb > 0) {
    try {
      runner.hash = std::make_unique<PerftHash>(size_t(*hash_mb));
    } catch (const std::bad_alloc&) {
      return fail(io, kName, absl::ResourceExhaustedError(absl::StrCat("--hash: cannot allocate ", *hash_mb, " MB")));
    }
  }

  if (p->has("epd")) {
    for (const char* o : {"depth", "fen", "sp", "moves", "divide", "table", "sps", "out"})
      if (p->has(o))
        return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--", o, " does not go with --epd")));
    return run_suite(*p, runner, io);
  }
  if (!p->has("depth")) return fail(io, kName, absl::InvalidArgumentError("--depth is required"));
  absl::StatusOr<long long> depth = p->get_int("depth", 0, 0, 30);
  if (!depth.ok()) return fail(io, kName, depth.status());
  if (p->has("max-depth")) return fail(io, kName, absl::InvalidArgumentError("--max-depth only goes with --epd"));

  if (p->has("table")) {
    for (const char* o : {"fen", "sp", "moves", "divide"})
      if (p->has(o))
        return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--", o, " does not go with --table")));
    return run_table(*p, int(*depth), runner, io);
  }
  for (const char* o : {"sps", "out"})
    if (p->has(o)) return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--", o, " only goes with --table")));

  if (p->has("fen") == p->has("sp"))
    return fail(io, kName, absl::InvalidArgumentError("give exactly one of --fen and --sp"));
  std::string fen;
  if (p->has("sp")) {
    absl::StatusOr<long long> sp = p->get_int("sp", 0, 0, kStartPositions - 1);
    if (!sp.ok()) return fail(io, kName, sp.status());
    fen = *startpos_fen(int(*sp));
  } else {
    for (const std::string& w : p->all("fen")) fen += (fen.empty() ? "" : " ") + w;
  }
  absl::StatusOr<Position> parsed = Position::from_fen(fen);
  if (!parsed.ok())
    return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--fen: ", parsed.status().message())));
  Position pos = *parsed;
  // Play the moves on a chain of states, then copy: the copy keeps only the final state.
  // --moves "e2e4 e7e5" (one word, as perftree passes them) and --moves "" serve too.
  std::vector<std::string> moves;
  for (const std::string& w : p->all("moves"))
    for (absl::string_view m : absl::StrSplit(w, ' ', absl::SkipWhitespace())) moves.emplace_back(m);
  std::vector<StateInfo> states(moves.size());
  for (size_t i = 0; i < states.size(); ++i) {
    absl::StatusOr<Move> m = parse_uci(pos, moves[i]);
    if (!m.ok()) return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--moves: ", m.status().message())));
    pos.do_move(*m, states[i]);
  }
  Position root = pos;

  const auto t0 = std::chrono::steady_clock::now();
  const PerftResult result = runner.run(root, int(*depth));
  const NodeCount nodes = result.nodes;
  if (p->has("divide") && *depth >= 1) {
    for (const DivideEntry& e : result.divide) io.out << to_uci(e.move) << ": " << to_string(e.nodes) << "\n";
    io.out << "\n";
  }
  const double secs = seconds_since(t0);
  io.out << "Nodes searched: " << to_string(nodes) << std::endl;
  io.err << absl::StrFormat("time %.3f s, %s\n", secs, rate(nodes, secs));
  return kExitOk;
}

}  // namespace c960::cli
