#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "args.h"
#include "commands.h"
#include "notation.h"
#include "perft.h"
#include "startpos.h"
#include "suite.h"

namespace c960::cli {
namespace {

const CommandSpec kSpec = {
    "perft",
    "c960 perft --depth D (--fen FEN | --sp N) [--moves M ...] [--divide]\n"
    "       c960 perft --epd FILE [--max-depth D]\n"
    "       c960 perft --table --depth D [--sps 0-959] [--out FILE] [--shredder]",
    "Counts the leaf nodes of the legal move tree. With --divide, prints one 'move: count' line "
    "per legal move (UCI, castling as king takes rook) before the total; the last line is always "
    "'Nodes searched: N'. --epd checks every position of a suite ('FEN ;D1 n ;D2 n ...' lines or "
    "'id / epd / perft d n' blocks) and exits 1 on any mismatch. --table writes CSV "
    "'sp,fen,depth,nodes' for a set of start positions.",
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
        {"threads", Arity::kOne, "N", "worker threads (default 1)"},
    }};

int fail(const absl::Status& s) {
  std::cerr << "c960 perft: " << s.message() << "\n";
  return kExitUsage;
}

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

int run_suite(const ParsedArgs& p) {
  absl::StatusOr<long long> max_depth = p.get_int("max-depth", 64, 1, 64);
  if (!max_depth.ok()) return fail(max_depth.status());
  const std::string path = p.get("epd");
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return fail(text.status());
  absl::StatusOr<std::vector<PerftCase>> cases = parse_perft_suite(*text);
  if (!cases.ok()) return fail(absl::InvalidArgumentError(absl::StrCat(path, ": ", cases.status().message())));

  const auto t0 = std::chrono::steady_clock::now();
  int checks = 0, mismatches = 0, errors = 0, skipped = 0;
  NodeCount nodes = 0;
  for (const PerftCase& c : *cases) {
    absl::StatusOr<Position> pos = Position::from_fen(c.fen);
    if (!pos.ok()) {
      ++errors;
      std::cout << absl::StrFormat("ERROR %s (%s:%d): %s\n", c.id, path, c.line, pos.status().message());
      continue;
    }
    for (const auto& [depth, expected] : c.expected) {
      if (depth > *max_depth) {
        ++skipped;
        continue;
      }
      const uint64_t got = perft(*pos, depth);
      ++checks;
      nodes += got;
      if (got != expected) {
        ++mismatches;
        std::cout << absl::StrFormat("MISMATCH %s depth %d expected %d actual %d (%s, line %d)\n", c.fen, depth,
                                     expected, got, c.id, c.line);
      }
    }
  }
  const double secs = seconds_since(t0);
  std::cout << absl::StrFormat("%s: %d positions, %d checks, %d mismatches, %d bad positions, %d skipped; %s nodes in %.2f s (%s)\n",
                               path, cases->size(), checks, mismatches, errors, skipped, to_string(nodes), secs,
                               rate(nodes, secs));
  return mismatches || errors ? kExitCheckFailed : kExitOk;
}

struct TableRow {
  int sp;
  std::string fen;
  uint64_t nodes;
};

int run_table(const ParsedArgs& p, int depth, int threads) {
  absl::StatusOr<std::vector<int>> sps = parse_sp_ranges(p.get("sps", "0-959"));
  if (!sps.ok()) return fail(absl::InvalidArgumentError(absl::StrCat("--sps: ", sps.status().message())));
  const bool shredder = p.has("shredder");
  const std::string out_path = p.get("out");

  std::ofstream file;
  std::string tmp_path;
  if (!out_path.empty()) {
    tmp_path = out_path + ".tmp";
    file.open(tmp_path, std::ios::trunc);
    if (!file) return fail(absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", out_path, "'")));
  }

  std::vector<TableRow> rows(sps->size());
  std::atomic<size_t> next{0}, done{0};
  std::atomic<uint64_t> total{0};
  std::mutex progress_mu;
  const bool tty = isatty(STDERR_FILENO);
  const auto t0 = std::chrono::steady_clock::now();
  int last_decile = -1;

  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < rows.size();) {
      const int sp = (*sps)[i];
      Position pos = *Position::from_fen(*startpos_fen(sp));
      rows[i] = {sp, pos.fen(shredder ? FenDialect::kShredder : FenDialect::kXFen), perft(pos, depth)};
      total += rows[i].nodes;
      const size_t d = ++done;
      std::lock_guard lock(progress_mu);
      const double secs = seconds_since(t0);
      if (tty) {
        std::cerr << absl::StrFormat("\rperft table depth %d: %d/%d positions, %d nodes, %.1f s (%s)   ", depth, d,
                                     rows.size(), total.load(), secs, rate(total.load(), secs));
      } else if (int decile = int(10 * d / rows.size()); decile != last_decile) {
        last_decile = decile;
        std::cerr << absl::StrFormat("perft table depth %d: %d/%d positions, %.1f s\n", depth, d, rows.size(), secs);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
  for (std::thread& t : pool) t.join();
  if (tty) std::cerr << "\n";

  std::ostream& out = out_path.empty() ? std::cout : file;
  out << "sp,fen,depth,nodes\n";
  NodeCount sum = 0;
  for (const TableRow& r : rows) {
    out << r.sp << "," << r.fen << "," << depth << "," << r.nodes << "\n";
    sum += r.nodes;
  }
  const double secs = seconds_since(t0);
  if (!out_path.empty()) {
    file.close();
    if (!file || std::rename(tmp_path.c_str(), out_path.c_str()) != 0)
      return fail(absl::InternalError(absl::StrCat("--out: writing '", out_path, "' failed")));
    std::cout << "wrote " << out_path << "\n";
  }
  std::cerr << absl::StrFormat("perft table depth %d: %d positions, %s nodes in %.2f s (%s)\n", depth, rows.size(),
                               to_string(sum), secs, rate(sum, secs));
  return kExitOk;
}

}  // namespace

int cmd_perft(const std::vector<std::string>& args) {
  for (const std::string& a : args)
    if (a == "--help" || a == "-h") {
      std::cout << help_text(kSpec);
      return kExitOk;
    }
  absl::StatusOr<ParsedArgs> p = parse_args(kSpec, args);
  if (!p.ok()) return fail(p.status());
  absl::StatusOr<long long> threads = p->get_int("threads", 1, 1, 1024);
  if (!threads.ok()) return fail(threads.status());

  if (p->has("epd")) {
    for (const char* o : {"depth", "fen", "sp", "moves", "divide", "table", "sps", "out"})
      if (p->has(o)) return fail(absl::InvalidArgumentError(absl::StrCat("--", o, " does not go with --epd")));
    return run_suite(*p);
  }
  if (!p->has("depth")) return fail(absl::InvalidArgumentError("--depth is required"));
  absl::StatusOr<long long> depth = p->get_int("depth", 0, 0, 30);
  if (!depth.ok()) return fail(depth.status());
  if (p->has("max-depth")) return fail(absl::InvalidArgumentError("--max-depth only goes with --epd"));

  if (p->has("table")) {
    for (const char* o : {"fen", "sp", "moves", "divide"})
      if (p->has(o)) return fail(absl::InvalidArgumentError(absl::StrCat("--", o, " does not go with --table")));
    return run_table(*p, int(*depth), int(*threads));
  }
  for (const char* o : {"sps", "out"})
    if (p->has(o)) return fail(absl::InvalidArgumentError(absl::StrCat("--", o, " only goes with --table")));

  if (p->has("fen") == p->has("sp")) return fail(absl::InvalidArgumentError("give exactly one of --fen and --sp"));
  std::string fen;
  if (p->has("sp")) {
    absl::StatusOr<long long> sp = p->get_int("sp", 0, 0, kStartPositions - 1);
    if (!sp.ok()) return fail(sp.status());
    fen = *startpos_fen(int(*sp));
  } else {
    for (const std::string& w : p->all("fen")) fen += (fen.empty() ? "" : " ") + w;
  }
  absl::StatusOr<Position> parsed = Position::from_fen(fen);
  if (!parsed.ok()) return fail(absl::InvalidArgumentError(absl::StrCat("--fen: ", parsed.status().message())));
  Position pos = *parsed;
  // Play the moves on a chain of states, then copy: the copy keeps only the final state.
  std::vector<StateInfo> states(p->all("moves").size());
  for (size_t i = 0; i < states.size(); ++i) {
    absl::StatusOr<Move> m = parse_uci(pos, p->all("moves")[i]);
    if (!m.ok()) return fail(absl::InvalidArgumentError(absl::StrCat("--moves: ", m.status().message())));
    pos.do_move(*m, states[i]);
  }
  Position root = pos;

  const auto t0 = std::chrono::steady_clock::now();
  NodeCount nodes = 0;
  if (p->has("divide") && *depth >= 1) {
    for (const DivideEntry& e : divide(root, int(*depth))) {
      std::cout << to_uci(e.move) << ": " << e.nodes << "\n";
      nodes += e.nodes;
    }
    std::cout << "\n";
  } else {
    nodes = perft(root, int(*depth));
  }
  const double secs = seconds_since(t0);
  std::cout << "Nodes searched: " << to_string(nodes) << std::endl;
  std::cerr << absl::StrFormat("time %.3f s, %s\n", secs, rate(nodes, secs));
  return kExitOk;
}

}  // namespace c960::cli
