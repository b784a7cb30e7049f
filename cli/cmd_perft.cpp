#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <new>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cli/args.h"
#include "cli/commands.h"
#include "cli/interrupt.h"
#include "cli/progress.h"
#include "cli/resume.h"
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
    "       c960 perft --table --depth D [--sps 0-959] [--out FILE [--resume]] [--shredder]",
    "Counts the leaf nodes of the legal move tree. With --divide, prints one 'move: count' line "
    "per legal move (UCI, castling as king takes rook) before the total; the last line is always "
    "'Nodes searched: N'. --epd checks every position of a suite ('FEN ;D1 n ;D2 n ...' lines or "
    "'id / epd / perft d n' blocks) and exits 1 on any mismatch. --table writes CSV "
    "'sp,fen,depth,nodes' for a set of start positions, a row as soon as it is counted, in the "
    "order of --sps. Ctrl-C (SIGINT) or SIGTERM stops a table cleanly: the positions in progress "
    "finish, their rows are written, and the exit code is 130 (143 for SIGTERM); a second Ctrl-C "
    "quits at once. With --out, the same command with --resume then continues the table, and the "
    "file ends as an uninterrupted run would have written it. Progress (positions or subtrees "
    "done, nodes, speed, time left) is drawn on stderr only when it is a terminal. Counts never "
    "depend on --threads, --hash or --zobrist-seed.",
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
        {"resume", Arity::kFlag, "",
         absl::StrCat("with --out: continue an interrupted table (FILE", kResumeSuffix,
                      " holds its options; exit 2 if they differ)")},
        {"shredder", Arity::kFlag, "", "write FENs with Shredder-FEN castling (HAha)"},
        {"threads", Arity::kOne, "N", "threads (default 1; 0: one per CPU); one position is split below the root"},
        {"hash", Arity::kOne, "MB", "transposition table size shared by all threads (default 0: off)"},
        {"zobrist-seed", Arity::kOne, "S", "seed of the Zobrist key set (counts never depend on it)"},
        {"quiet", Arity::kFlag, "", "no progress and no timing line on stderr"},
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

// A FEN as one shell word, for the commands a message suggests.
std::string shell_quoted(absl::string_view s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

int run_suite(const ParsedArgs& p, const PerftRunner& runner, const Io& io) {
  absl::StatusOr<long long> max_depth = p.get_int("max-depth", 64, 1, 64);
  if (!max_depth.ok()) return fail(io, kName, max_depth.status());
  const std::string path = p.get("epd");
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return fail(io, kName, text.status());
  // A malformed line is a bad position, as an illegal FEN is: counted, named, and the rest of
  // the suite still checked.
  const std::vector<PerftCase> cases = parse_perft_suite_entries(*text);

  const auto t0 = std::chrono::steady_clock::now();
  int checks = 0, mismatches = 0, errors = 0, skipped = 0;
  // Counts with thousands separators, as the node count has them.
  const auto grouped = [](auto n) { return with_separators(absl::StrCat(n)); };
  NodeCount nodes = 0;
  for (const PerftCase& c : cases) {
    if (!c.error.empty()) {
      ++errors;
      io.out << absl::StrFormat("ERROR %s (%s:%d): %s\n", c.id, path, c.line, c.error);
      continue;
    }
    absl::StatusOr<Position> pos = Position::from_fen(c.fen);
    if (!pos.ok()) {
      ++errors;
      io.out << absl::StrFormat("ERROR %s (%s:%d): %s\n", c.id, path, c.line, pos.status().message());
      continue;
    }
    int lowest_mismatch = 0;
    PerftResult divided;  // at lowest_mismatch
    for (const auto& [depth, expected] : c.expected) {
      if (depth > *max_depth) {
        ++skipped;
        continue;
      }
      PerftResult result = runner.run(*pos, depth);
      const NodeCount got = result.nodes;
      ++checks;
      nodes += got;
      if (got != expected) {
        ++mismatches;
        io.out << absl::StrFormat("MISMATCH %s depth %d expected %d actual %s (%s)\n", c.fen, depth, expected,
                                  to_string(got), where(c));
        if (lowest_mismatch == 0 || depth < lowest_mismatch) {
          lowest_mismatch = depth;
          divided = std::move(result);
        }
      }
    }
    if (lowest_mismatch == 0) continue;
    // Where the counts part: c960's divide at the lowest depth that differs, to set beside a
    // trusted engine's ("go perft D" in Stockfish); the move whose counts differ is the next step.
    io.out << absl::StrFormat("  c960's divide at depth %d (%s):\n", lowest_mismatch, where(c));
    for (const DivideEntry& e : divided.divide) io.out << "  " << to_uci(e.move) << ": " << to_string(e.nodes) << "\n";
    if (lowest_mismatch > 1)
      io.out << absl::StrFormat(
          "  compare with a trusted engine's divide, then bisect below the move that differs:\n"
          "  c960 perft --depth %d --fen %s --moves MOVE --divide\n",
          lowest_mismatch - 1, shell_quoted(c.fen));
    else
      io.out << "  compare with a trusted engine's legal moves: one is missing or extra\n";
  }
  const double secs = seconds_since(t0);
  io.out << for_out(
      io, absl::StrFormat("%s: %s positions, %s checks, %d %s, %d bad %s, %s skipped; %s nodes in %.2f s "
                          "(%s)",
                          path, grouped(cases.size()), grouped(checks), mismatches,
                          mismatches == 1 ? "mismatch" : "mismatches", errors, errors == 1 ? "position" : "positions",
                          grouped(skipped), with_separators(to_string(nodes)), secs, rate(nodes, secs)));
  return mismatches || errors ? kExitCheckFailed : kExitOk;
}

// "0-9,518,601": the numbers as ranges (the --sps a table was made with, in its state file).
std::string ranges_string(const std::vector<int>& numbers) {
  std::string out;
  for (size_t i = 0; i < numbers.size();) {
    size_t j = i;
    while (j + 1 < numbers.size() && numbers[j + 1] == numbers[j] + 1) ++j;
    absl::StrAppend(&out, out.empty() ? "" : ",", numbers[i]);
    if (j > i) absl::StrAppend(&out, "-", numbers[j]);
    i = j + 1;
  }
  return out;
}

absl::Status write_fd(int fd, absl::string_view text, const std::string& path) {
  for (size_t done = 0; done < text.size();) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", path, "': ", strerror(errno)));
    done += size_t(n);
  }
  return absl::OkStatus();
}

constexpr int kDeepTable = 6;  // from this depth on, a table's batches hold one position per thread
constexpr char kTableHeader[] = "sp,fen,depth,nodes\n";
constexpr char kTableKind[] = "perft-table";

// The rows of an interrupted table at `path` that are the first rows of this one: their number
// and nodes, and the file's length up to them (a torn last row is cut off). Rows must be exactly
// those this run would write, but for the counts, which are not recomputed.
struct TablePrefix {
  size_t rows = 0;
  NodeCount nodes = 0;
  size_t bytes = 0;
};
absl::StatusOr<TablePrefix> read_table_prefix(const std::string& path, const std::vector<std::string>& row_starts) {
  absl::StatusOr<std::string> text = read_file(path);
  if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("--out: ", text.status().message()));
  TablePrefix prefix;
  if (!absl::StartsWith(*text, kTableHeader))
    return absl::InvalidArgumentError(
        absl::StrCat("--resume: ", path, " does not start with the header ", absl::StripSuffix(kTableHeader, "\n")));
  prefix.bytes = sizeof kTableHeader - 1;
  while (prefix.rows < row_starts.size()) {
    const size_t eol = text->find('\n', prefix.bytes);
    if (eol == std::string::npos) break;  // torn: written again
    const absl::string_view row = absl::string_view(*text).substr(prefix.bytes, eol - prefix.bytes);
    const absl::string_view count = absl::StripPrefix(row, row_starts[prefix.rows]);
    if (count.size() == row.size() || count.empty() || count.size() > 39 ||
        count.find_first_not_of("0123456789") != absl::string_view::npos)
      return absl::InvalidArgumentError(
          absl::StrCat("--resume: ", path, ": row ", prefix.rows + 1, " is not '", row_starts[prefix.rows], "N'"));
    NodeCount n = 0;
    for (char c : count) n = n * 10 + NodeCount(c - '0');
    prefix.nodes += n;
    ++prefix.rows;
    prefix.bytes = eol + 1;
  }
  if (prefix.rows == row_starts.size() && prefix.bytes != text->size())
    return absl::InvalidArgumentError(absl::StrCat("--resume: ", path, " has more rows than the table"));
  return prefix;
}

int run_table(const ParsedArgs& p, int depth, const PerftRunner& runner, const Io& io) {
  absl::StatusOr<std::vector<int>> sps = parse_sp_ranges(p.get("sps", "0-959"));
  if (!sps.ok()) return fail(io, kName, absl::InvalidArgumentError(absl::StrCat("--sps: ", sps.status().message())));
  const bool shredder = p.has("shredder");
  const bool quiet = p.has("quiet");
  const bool to_file = p.has("out");
  const std::string out_path = p.get("out");
  if (p.has("resume") && !to_file)
    return fail(io, kName, absl::InvalidArgumentError("--resume needs --out (the table to continue)"));
  if (to_file)
    if (absl::Status s = check_output("--out", out_path); !s.ok()) return fail(io, kName, s);

  std::vector<Position> roots;
  std::vector<std::string> row_starts;  // "sp,fen,depth,"
  for (int sp : *sps) {
    roots.push_back(*Position::from_fen(*startpos_fen(sp)));
    row_starts.push_back(
        absl::StrCat(sp, ",", roots.back().fen(shredder ? FenDialect::kShredder : FenDialect::kXFen), ",", depth, ","));
  }
  const std::vector<ResumeOption> options = {
      {"depth", absl::StrCat(depth)}, {"sps", ranges_string(*sps)}, {"shredder", shredder ? "yes" : "no"}};

  // Where the table starts: row 0, or after the rows of the interrupted run.
  TablePrefix prefix;
  const std::string state_path = resume_path(out_path);
  bool resuming = false;
  if (p.has("resume")) {
    absl::StatusOr<std::optional<ResumeState>> state = read_resume(state_path, kTableKind);
    if (!state.ok()) return fail(io, kName, state.status());
    if (*state) {
      if (absl::Status s = check_same_options((*state)->options, options); !s.ok()) return fail(io, kName, s);
      absl::StatusOr<TablePrefix> read = read_table_prefix(out_path, row_starts);
      if (!read.ok()) return fail(io, kName, read.status());
      prefix = *read;
      resuming = true;
    } else if (::access(out_path.c_str(), F_OK) == 0) {
      // A finished run leaves no state file: a table with exactly this run's rows is done, so
      // resuming it does nothing (scripts may always pass --resume).
      if (absl::StatusOr<TablePrefix> done = read_table_prefix(out_path, row_starts);
          done.ok() && done->rows == row_starts.size()) {
        if (!quiet) io.err << "c960 perft: " << out_path << " already holds the whole table; nothing to resume\n";
        return kExitOk;
      }
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--resume: there is no ", state_path, ", so ", out_path,
                                                          " is complete or was not written by c960 perft --table")));
    }
  } else if (to_file && ::access(state_path.c_str(), F_OK) == 0) {
    // An interrupted run's table and state are not overwritten by a command that forgot --resume.
    return fail(io, kName,
                absl::InvalidArgumentError(
                    absl::StrCat("--out: ", out_path, " holds an interrupted table (", state_path,
                                 "): add --resume to continue it, or delete both files to start again")));
  }

  int fd = -1;
  std::unique_ptr<ResumeLog> log;
  if (to_file) {
    fd = ::open(out_path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | (resuming ? 0 : O_TRUNC), 0666);
    if (fd < 0 || (resuming && ::ftruncate(fd, off_t(prefix.bytes)) != 0) || ::lseek(fd, 0, SEEK_END) < 0) {
      const int e = errno;
      if (fd >= 0) ::close(fd);
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", out_path, "': ", strerror(e))));
    }
    absl::StatusOr<std::unique_ptr<ResumeLog>> created = ResumeLog::create(state_path, kTableKind, options);
    absl::Status s = created.ok() ? absl::OkStatus() : created.status();
    if (s.ok() && !resuming) s = write_fd(fd, kTableHeader, out_path);
    if (!s.ok()) {
      ::close(fd);
      return fail(io, kName, s);
    }
    log = *std::move(created);
  }

  // What the progress line shows; the batch's part comes from perft_parallel's callback.
  struct Done {
    std::mutex mu;
    size_t rows = 0;  // this run's
    NodeCount nodes = 0;
    size_t batch_rows = 0, batch_tasks = 0, batch_total = 0;
    NodeCount batch_nodes = 0;
  } done;
  const size_t total = roots.size();
  const auto t0 = std::chrono::steady_clock::now();
  ProgressLine line(io, !quiet, [&] {
    std::lock_guard lock(done.mu);
    const double secs = seconds_since(t0);
    const NodeCount nodes = done.nodes + done.batch_nodes;
    const double part =
        double(done.rows) +
        (done.batch_total ? double(done.batch_rows) * double(done.batch_tasks) / double(done.batch_total) : 0);
    return absl::StrFormat("perft %d: %d/%d positions, %s nodes, %s, ETA %s", depth, prefix.rows + done.rows, total,
                           with_separators(to_string(nodes)), rate(nodes, secs),
                           hms(eta_seconds(part, double(total - prefix.rows), secs)));
  });
  if (!to_file) line.write_out(kTableHeader);

  InterruptScope interrupts;
  // Batches of positions, each keeping every thread busy (perft_parallel splits below the root,
  // largest subtrees first); a batch's rows are written when it ends, in order. A shallow position
  // takes milliseconds: four per thread keep perft_parallel's split at one ply, which costs less
  // than a split two plies deep. A deep one is split two plies deep anyway: one per thread, so
  // that rows come, and an interrupt is answered, as soon as possible.
  const size_t threads = size_t(std::max(1, runner.options.threads));
  const size_t batch = depth >= kDeepTable ? threads : 4 * threads;
  PerftOptions batch_options = runner.options;
  batch_options.progress = [&](size_t tasks_done, size_t tasks_total, NodeCount nodes) {
    std::lock_guard lock(done.mu);
    done.batch_tasks = tasks_done;
    done.batch_total = tasks_total;
    done.batch_nodes = nodes;
  };
  size_t next = prefix.rows;
  while (next < total && !interrupt_signal()) {
    const size_t end = std::min(total, next + batch);
    {
      std::lock_guard lock(done.mu);
      done.batch_rows = end - next;
    }
    const std::vector<Position> part(roots.begin() + long(next), roots.begin() + long(end));
    const std::vector<PerftResult> results = perft_parallel(part, depth, batch_options, runner.hash.get());
    std::string rows;
    NodeCount sum = 0;
    for (size_t i = 0; i < part.size(); ++i) {
      absl::StrAppend(&rows, row_starts[next + i], to_string(results[i].nodes), "\n");
      sum += results[i].nodes;
    }
    if (to_file) {
      if (absl::Status s = write_fd(fd, rows, out_path); !s.ok()) {
        line.stop();
        ::close(fd);
        return fail(io, kName, s);
      }
    } else {
      line.write_out(rows);
    }
    std::lock_guard lock(done.mu);
    done.rows += part.size();
    done.nodes += sum;
    done.batch_rows = done.batch_tasks = done.batch_total = 0;
    done.batch_nodes = 0;
    next = end;
  }
  line.stop();
  const double secs = seconds_since(t0);
  if (to_file) {
    const bool synced = ::fsync(fd) == 0;
    const int e = errno;
    ::close(fd);
    if (!synced)
      return fail(io, kName,
                  absl::InvalidArgumentError(absl::StrCat("--out: cannot write '", out_path, "': ", strerror(e))));
  }
  const int signo = interrupt_signal();
  if (next < total) {
    io.err << for_err(io, absl::StrFormat("c960 perft: interrupted after %d of %d positions%s", next, total,
                                          to_file ? absl::StrCat("; rows so far are in ", out_path,
                                                                 ", and the same command with --resume continues")
                                                  : ""));
    return kExitSignalBase + signo;
  }
  if (to_file) {
    if (absl::Status s = log->remove(); !s.ok()) return fail(io, kName, s);
    io.out << "wrote " << out_path << "\n";
  }
  // Totals over every row of the table; time and rate are this run's, and a resumed run says
  // which part was its own.
  // Node counts with separators, as the progress line has them ("Nodes searched: N" and the
  // table's rows keep plain digits for tools).
  if (!quiet && !resuming)
    io.err << for_err(io, absl::StrFormat("perft table depth %d: %d positions, %s nodes in %.2f s (%s)", depth, total,
                                          with_separators(to_string(done.nodes)), secs, rate(done.nodes, secs)));
  if (!quiet && resuming)
    io.err << for_err(
        io, absl::StrFormat("perft table depth %d: %d positions, %s nodes; this run (resumed after %d positions done "
                            "before): %d positions, %s nodes in %.2f s (%s)",
                            depth, total, with_separators(to_string(prefix.nodes + done.nodes)), prefix.rows, done.rows,
                            with_separators(to_string(done.nodes)), secs, rate(done.nodes, secs)));
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
    for (const char* o : {"depth", "fen", "sp", "moves", "divide", "table", "sps", "out", "resume"})
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
  for (const char* o : {"sps", "out", "resume"})
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

  // Progress per finished subtree (perft_parallel splits below the root); the walk itself is not
  // touched, so progress costs it nothing.
  struct Done {
    std::mutex mu;
    size_t tasks = 0, total = 0;
    NodeCount nodes = 0;
  } done;
  const auto t0 = std::chrono::steady_clock::now();
  PerftOptions options = runner.options;
  options.progress = [&](size_t tasks, size_t total, NodeCount nodes) {
    std::lock_guard lock(done.mu);
    done.tasks = tasks;
    done.total = total;
    done.nodes = nodes;
  };
  // Ctrl-C (SIGTERM) stops the count between subtrees and says so; a second one kills at once.
  InterruptScope interrupts;
  options.stop = [] { return interrupt_signal() != 0; };
  ProgressLine line(io, !p->has("quiet"), [&] {
    std::lock_guard lock(done.mu);
    const double secs = seconds_since(t0);
    if (done.tasks == 0) return absl::StrFormat("perft %d: counting, %s elapsed", *depth, hms(secs));
    return absl::StrFormat("perft %d: %d/%d subtrees, %s nodes, %s, ETA %s", *depth, done.tasks, done.total,
                           with_separators(to_string(done.nodes)), rate(done.nodes, secs),
                           hms(eta_seconds(double(done.tasks), double(done.total), secs)));
  });
  const PerftResult result = perft_parallel({root}, int(*depth), options, runner.hash.get()).front();
  line.stop();
  if (const int signo = interrupt_signal()) {
    std::lock_guard lock(done.mu);
    const std::string counted =
        done.total ? absl::StrFormat("after %d of %d subtrees (%s nodes counted, %s elapsed)", done.tasks, done.total,
                                     with_separators(to_string(done.nodes)), hms(seconds_since(t0)))
                   : absl::StrFormat("before the first subtree was done (%s elapsed)", hms(seconds_since(t0)));
    io.err << for_err(
        io, absl::StrCat("c960 perft: interrupted ", counted, "; a single position's count cannot be resumed"));
    return kExitSignalBase + signo;
  }
  const NodeCount nodes = result.nodes;
  if (p->has("divide") && *depth >= 1) {
    for (const DivideEntry& e : result.divide) io.out << to_uci(e.move) << ": " << to_string(e.nodes) << "\n";
    io.out << "\n";
  }
  const double secs = seconds_since(t0);
  io.out << "Nodes searched: " << to_string(nodes) << std::endl;
  if (!p->has("quiet")) io.err << absl::StrFormat("time %.3f s, %s\n", secs, rate(nodes, secs));
  return kExitOk;
}

const CommandSpec& perft_spec() { return kSpec; }

}  // namespace c960::cli
