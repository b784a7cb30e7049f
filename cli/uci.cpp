#include "cli/uci.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <climits>
#include <istream>
#include <new>
#include <ostream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cli/args.h"
#include "core/notation.h"
#include "core/perft.h"
#include "core/startpos.h"
#include "core/version.h"

namespace c960::cli {
namespace {

constexpr int kStandardStart = 518;  // RNBQKBNR: `position startpos`
// A clock's budget per move: its time over this many moves when no movestogo is given.
constexpr long long kMovesLeftGuess = 30;
constexpr long long kMoveOverheadMs = 30;  // kept back from the clock for the GUI's own lag

const std::vector<std::string> kCommands = {"uci",  "isready", "ucinewgame", "position", "go",
                                            "stop", "quit",    "setoption",  "debug",    "d"};

// A word of the input as messages show it: at most 64 characters, anything but printable ASCII
// as '?', so that a message is one clean line whatever came in.
std::string shown(absl::string_view word) {
  std::string out(word.substr(0, 64));
  for (char& c : out)
    if (c < 0x20 || c >= 0x7f) c = '?';
  return word.size() > 64 ? out + "..." : out;
}

bool parse_ll(absl::string_view s, long long* out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return !s.empty() && ec == std::errc() && p == s.data() + s.size();
}

// "cp 31" or "mate 3" / "mate -2" (moves, not plies), as UCI writes scores.
std::string uci_score(engine::Value v) {
  if (!engine::is_mate_score(v)) return absl::StrCat("cp ", v);
  return absl::StrCat("mate ", v > 0 ? (engine::VALUE_MATE - v + 1) / 2 : (-engine::VALUE_MATE - v) / 2);
}

}  // namespace

UciServer::UciServer(std::function<void(const std::string&)> emit)
    : emit_(std::move(emit)),
      game_(std::make_unique<Game>()),
      engine_(std::make_unique<engine::Engine>(kUciDefaultHashMb)) {
  game_->pos = *Position::from_fen(*startpos_fen(kStandardStart));
}

UciServer::~UciServer() { stop_and_wait(); }

void UciServer::info(absl::string_view text) {
  std::string line = absl::StrCat("info string ", text);
  for (char& c : line)
    if (c < 0x20 || c >= 0x7f) c = '?';  // parts of the input a message quotes
  std::lock_guard lock(emit_mu_);
  emit_(line);
}

bool UciServer::searching() const { return running_.load(); }

void UciServer::stop_and_wait() {
  if (!worker_.joinable()) return;
  {
    std::lock_guard lock(stop_mu_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  worker_.join();
}

void UciServer::wait_search() {
  if (worker_.joinable()) worker_.join();
}

void UciServer::finish() {
  if (infinite_) stop_and_wait();
  wait_search();
}

bool UciServer::handle(absl::string_view line) {
  if (line.size() > size_t(kUciMaxLineBytes)) {
    info(absl::StrCat("input: a line of ", line.size(), " bytes is longer than ", kUciMaxLineBytes, "; ignored"));
    return true;
  }
  const std::vector<std::string> w = absl::StrSplit(line, absl::ByAnyChar(" \t\r\n"), absl::SkipEmpty());
  if (w.empty()) return true;
  const std::string& cmd = w[0];
  if (cmd == "uci") {
    cmd_uci();
  } else if (cmd == "isready") {
    std::lock_guard lock(emit_mu_);
    emit_("readyok");
  } else if (cmd == "ucinewgame") {
    stop_and_wait();
    engine_->new_game();
  } else if (cmd == "position") {
    cmd_position(w);  // stops a running search once the command is known to be good
  } else if (cmd == "go") {
    cmd_go(w);  // stops a running search once the command is known to be good
  } else if (cmd == "stop") {
    // Without a search there is nothing to stop: ignored, as the protocol asks. A search ends
    // within microseconds and its bestmove is out before the next command is read; perft cannot
    // be stopped and ends by itself.
    if (perft_)
      info("stop: go perft is not stopped; it ends by itself");
    else
      stop_and_wait();
  } else if (cmd == "quit") {
    stop_and_wait();
    return false;
  } else if (cmd == "setoption") {
    cmd_setoption(w);  // stops a running search once the command is known to be good
  } else if (cmd == "debug") {
    if (w.size() != 2 || (w[1] != "on" && w[1] != "off")) info("debug: expected 'debug on' or 'debug off'");
  } else if (cmd == "d") {
    if (running_)
      info("d: a search is running; send stop first");
    else
      info(absl::StrCat("fen ", game_->pos.fen(chess960_ ? FenDialect::kShredder : FenDialect::kXFen)));
  } else {
    const std::optional<std::string> near = closest_name(cmd, kCommands);
    info(absl::StrCat("unknown command '", shown(cmd), "'",
                      near ? absl::StrCat(": did you mean '", *near, "'?") : std::string(), " (ignored)"));
  }
  return true;
}

void UciServer::cmd_uci() {
  std::lock_guard lock(emit_mu_);
  emit_(absl::StrCat("id name c960 ", absl::string_view(version().data(), version().size())));
  emit_("id author the c960 authors");
  emit_("option name UCI_Chess960 type check default false");
  emit_(absl::StrCat("option name Hash type spin default ", kUciDefaultHashMb, " min 1 max ", kUciMaxHashMb));
  emit_(absl::StrCat("option name Threads type spin default 1 min 1 max ", kUciMaxThreads));
  emit_("uciok");
}

void UciServer::cmd_position(const std::vector<std::string>& w) {
  constexpr char kUnchanged[] = "; the position is unchanged";
  if (w.size() < 2) {
    info(absl::StrCat("position: expected 'position startpos|fen FEN [moves M ...]'", kUnchanged));
    return;
  }
  size_t i = 2;
  std::string fen;
  if (w[1] == "startpos") {
    fen = *startpos_fen(kStandardStart);
  } else if (w[1] == "fen") {
    std::vector<std::string> fields;
    for (; i < w.size() && w[i] != "moves"; ++i) fields.push_back(w[i]);
    if (fields.empty()) {
      info(absl::StrCat("position fen: the FEN is missing", kUnchanged));
      return;
    }
    fen = absl::StrJoin(fields, " ");
  } else {
    info(absl::StrCat("position: '", shown(w[1]), "' is not startpos or fen", kUnchanged));
    return;
  }
  if (i < w.size() && w[i] != "moves") {
    info(absl::StrCat("position: unexpected '", shown(w[i]), "' after ", w[1], " (moves follow 'moves')", kUnchanged));
    return;
  }
  auto game = std::make_unique<Game>();
  absl::StatusOr<Position> parsed = Position::from_fen(fen);
  if (!parsed.ok()) {
    info(absl::StrCat("position fen: ", parsed.status().message(), kUnchanged));
    return;
  }
  game->pos = *parsed;
  for (size_t k = i + 1; k < w.size(); ++k) {
    absl::StatusOr<Move> m = parse_uci(game->pos, w[k]);
    if (!m.ok()) {
      info(absl::StrCat("position: moves: move ", k - i, ": ", m.status().message(), kUnchanged));
      return;
    }
    game->states.emplace_back();
    game->pos.do_move(*m, game->states.back());
  }
  stop_and_wait();
  game_ = std::move(game);
}

void UciServer::cmd_go(const std::vector<std::string>& w) {
  engine::Limits limits;
  bool infinite = false;
  long long perft_depth = 0, times[COLOR_NB] = {0, 0}, incs[COLOR_NB] = {0, 0}, movestogo = 0;
  bool timed[COLOR_NB] = {false, false};
  for (size_t i = 1; i < w.size(); ++i) {
    const std::string& p = w[i];
    // The number after `p`, in lo..hi; false (with the problem said) otherwise.
    const auto number = [&](long long lo, long long hi, long long* out) {
      if (i + 1 >= w.size()) {
        info(absl::StrCat("go ", p, ": needs a number (", lo, "..", hi, "); nothing started"));
        return false;
      }
      const std::string& v = w[++i];
      if (!parse_ll(v, out) || *out < lo || *out > hi) {
        info(absl::StrCat("go ", p, ": '", shown(v), "' is not a number in ", lo, "..", hi, "; nothing started"));
        return false;
      }
      return true;
    };
    long long n = 0;
    if (p == "perft") {
      if (!number(1, kUciMaxPerftDepth, &perft_depth)) return;
    } else if (p == "depth") {
      if (!number(1, engine::MAX_PLY - 1, &n)) return;
      limits.depth = int(n);
    } else if (p == "nodes") {
      if (!number(1, 1'000'000'000'000'000LL, &n)) return;
      limits.nodes = uint64_t(n);
    } else if (p == "movetime") {
      if (!number(1, INT_MAX, &n)) return;
      limits.movetime_ms = int(n);
    } else if (p == "infinite") {
      infinite = true;
    } else if (p == "wtime" || p == "btime") {
      // A GUI may send a clock that has run out (0 or below): searched as briefly as possible.
      const Color c = p == "wtime" ? WHITE : BLACK;
      if (!number(INT_MIN, INT_MAX, &times[c])) return;
      timed[c] = true;
    } else if (p == "winc" || p == "binc") {
      if (!number(0, INT_MAX, &incs[p == "winc" ? WHITE : BLACK])) return;
    } else if (p == "movestogo") {
      if (!number(1, 100000, &movestogo)) return;
    } else {
      info(absl::StrCat("go: '", shown(p),
                        "' is not a parameter c960 knows (perft, depth, nodes, movetime, infinite, wtime, btime, winc, "
                        "binc, movestogo); nothing started"));
      return;
    }
  }
  if (perft_depth > 0 && w.size() != 3) {
    info("go perft: takes a depth and nothing else; nothing started");
    return;
  }
  stop_and_wait();
  perft_ = perft_depth > 0;
  if (perft_) {
    running_ = true;
    worker_ = std::thread([this, d = int(perft_depth)] { run_perft(d); });
    return;
  }
  const Color us = game_->pos.side_to_move();
  if (timed[us]) {
    // A move's share of the clock: what is left over the moves to go (a guess without
    // movestogo), plus most of the increment, never more than the clock holds.
    const long long left = std::max(1LL, times[us] - kMoveOverheadMs);
    long long budget = left / (movestogo > 0 ? std::min(movestogo, 50LL) + 1 : kMovesLeftGuess) + incs[us] * 3 / 4;
    budget = std::clamp(budget, 1LL, std::max(1LL, left * 3 / 4));
    limits.movetime_ms = limits.movetime_ms ? std::min<int>(limits.movetime_ms, int(budget)) : int(budget);
  }
  if (infinite || (!limits.depth && !limits.nodes && !limits.movetime_ms)) {
    // Until stop (or, for a plain `go`, the deepest depth there is).
    limits.depth = engine::MAX_PLY - 1;
  }
  running_ = true;
  infinite_ = infinite;
  stop_ = false;
  worker_ = std::thread([this, limits, infinite] { run_search(limits, infinite); });
}

void UciServer::run_search(engine::Limits limits, bool infinite) {
  const auto t0 = std::chrono::steady_clock::now();
  const CastlingNotation notation = chess960_ ? CastlingNotation::kKingTakesRook : CastlingNotation::kKingDestination;
  uint64_t reported_nodes = 0;
  const auto info_line = [&](const engine::SearchResult& r) {
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    const long long t = ms.count();
    std::string pv;
    for (Move m : r.pv) absl::StrAppend(&pv, " ", to_uci(m, notation));
    std::lock_guard lock(emit_mu_);
    emit_(absl::StrCat("info depth ", std::max(r.depth, 1), " score ", uci_score(r.score), " nodes ", r.nodes, " nps ",
                       t > 0 ? r.nodes * 1000 / uint64_t(t) : r.nodes * 1000, " time ", t, pv.empty() ? "" : " pv",
                       pv));
    reported_nodes = r.nodes;
  };
  engine::SearchHooks hooks;
  hooks.stop = &stop_;
  hooks.on_iteration = info_line;
  const engine::SearchResult r = engine_->search(game_->pos, limits, hooks);
  if (!r.best) {
    std::lock_guard lock(emit_mu_);
    emit_(absl::StrCat("info depth 0 score ", game_->pos.in_check() ? "mate 0" : "cp 0"));
  } else if (r.nodes != reported_nodes) {
    info_line(r);  // the stopped iteration's best, when it found one
  }
  if (infinite) {
    // `go infinite` answers only after stop, even when the search has nothing more to do.
    std::unique_lock lock(stop_mu_);
    stop_cv_.wait(lock, [this] { return stop_.load(); });
  }
  {
    std::lock_guard lock(emit_mu_);
    emit_(absl::StrCat("bestmove ", r.best ? to_uci(r.best, notation) : std::string("(none)")));
  }
  running_ = false;
}

void UciServer::run_perft(int depth) {
  const CastlingNotation notation = chess960_ ? CastlingNotation::kKingTakesRook : CastlingNotation::kKingDestination;
  PerftOptions options;
  options.threads = threads_;
  const PerftResult result = perft_parallel({game_->pos}, depth, options).front();
  {
    // Stockfish's form: "move: count" per legal move, a blank line, the total, a blank line.
    std::lock_guard lock(emit_mu_);
    for (const DivideEntry& e : result.divide) emit_(absl::StrCat(to_uci(e.move, notation), ": ", to_string(e.nodes)));
    emit_("");
    emit_(absl::StrCat("Nodes searched: ", to_string(result.nodes)));
    emit_("");
  }
  running_ = false;
}

void UciServer::cmd_setoption(const std::vector<std::string>& w) {
  // setoption name NAME WORDS [value VALUE WORDS]
  constexpr char kForm[] = "setoption: expected 'setoption name NAME [value VALUE]'";
  if (w.size() < 3 || w[1] != "name") {
    info(kForm);
    return;
  }
  size_t v = 2;
  while (v < w.size() && w[v] != "value") ++v;
  const std::string name = absl::StrJoin(w.begin() + 2, w.begin() + long(v), " ");
  const std::string value = v < w.size() ? absl::StrJoin(w.begin() + long(v) + 1, w.end(), " ") : "";
  if (name.empty()) {
    info(kForm);
    return;
  }
  const bool has_value = v < w.size();
  if (absl::EqualsIgnoreCase(name, "UCI_Chess960")) {
    if (!has_value || (value != "true" && value != "false")) {
      info(absl::StrCat("setoption UCI_Chess960: the value must be true or false, not '", shown(value), "'"));
      return;
    }
    stop_and_wait();
    chess960_ = value == "true";
  } else if (absl::EqualsIgnoreCase(name, "Hash") || absl::EqualsIgnoreCase(name, "Threads")) {
    const bool hash = absl::EqualsIgnoreCase(name, "Hash");
    const long long hi = hash ? kUciMaxHashMb : kUciMaxThreads;
    long long n = 0;
    if (!has_value || !parse_ll(value, &n) || n < 1 || n > hi) {
      info(absl::StrCat("setoption ", hash ? "Hash" : "Threads", ": '", shown(value), "' is not a number in 1..", hi,
                        "; unchanged"));
      return;
    }
    stop_and_wait();
    if (!hash) {
      threads_ = int(n);
      if (n > 1) info(absl::StrCat("Threads ", n, ": go perft uses ", n, " threads; the search uses one"));
      return;
    }
    try {
      engine_.reset();  // the old table goes first, so that both never need memory at once
      engine_ = std::make_unique<engine::Engine>(size_t(n));
      hash_mb_ = int(n);
    } catch (const std::bad_alloc&) {
      engine_ = std::make_unique<engine::Engine>(size_t(kUciDefaultHashMb));
      hash_mb_ = kUciDefaultHashMb;
      info(absl::StrCat("setoption Hash: cannot allocate ", n, " MB; using ", kUciDefaultHashMb));
    }
  } else {
    info(absl::StrCat("setoption: no option named '", shown(name),
                      "' (c960 has UCI_Chess960, Hash and Threads); ignored"));
  }
}

int run_uci(std::istream& in, std::ostream& out) {
  UciServer server([&out](const std::string& line) { out << line << '\n' << std::flush; });
  std::string line;
  while (std::getline(in, line))
    if (!server.handle(line)) return 0;
  server.finish();
  return 0;
}

}  // namespace c960::cli
