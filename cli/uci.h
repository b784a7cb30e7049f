// `c960 uci`: the Universal Chess Interface on c960's own rules, perft and built-in engine, so
// that GUIs, cutechess-cli, fastchess, perftree and c960's own UCI client (selfplay/uci_engine.h)
// can use c960 as an engine. UciServer is the protocol without the process: one line in at a
// time, every line out through `emit`, searches on a thread of their own so that `stop` and
// `isready` are answered while they run.
//
// Commands: uci, isready, ucinewgame, position (startpos | fen FEN) [moves M ...],
// go perft N | depth N | nodes N | movetime MS | infinite | wtime/btime/winc/binc/movestogo,
// stop, quit, setoption name NAME [value VALUE] (UCI_Chess960, Hash, Threads), debug on|off,
// and Stockfish's `d` (the position's FEN). A malformed or unknown command is answered with
// "info string COMMAND: problem" and otherwise ignored, as Stockfish does: the session stays
// as it was (a bad `position` leaves the previous position, a bad `go` starts nothing, and a
// running search goes on). A good position, go, setoption, ucinewgame or quit stops a running
// search first and waits for its bestmove, so that a search never sees its position change.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "absl/strings/string_view.h"
#include "core/engine/search.h"
#include "core/position.h"

namespace c960::cli {

inline constexpr int kUciDefaultHashMb = 16;
inline constexpr int kUciMaxHashMb = 65536;
inline constexpr int kUciMaxThreads = 1024;  // threads of `go perft` (the search has one)
inline constexpr int kUciMaxPerftDepth = 30;
inline constexpr int kUciMaxLineBytes = 1 << 20;

class UciServer {
 public:
  // `emit` gets each output line without its '\n', from the caller's thread or the search's,
  // never from two at once.
  explicit UciServer(std::function<void(const std::string&)> emit);
  ~UciServer();  // stops a running search and waits for it
  UciServer(const UciServer&) = delete;
  UciServer& operator=(const UciServer&) = delete;

  // One input line. False after `quit` (the search is stopped and done by then).
  bool handle(absl::string_view line);
  // End of input: waits for a search that ends by itself (depth, nodes, movetime, perft) and
  // stops one that would not (infinite).
  void finish();
  bool searching() const;

 private:
  // A position with the moves that led to it, its states linked so the search sees repetitions.
  // Held by pointer: a Position's state chain points into it, so it never moves.
  struct Game {
    Position pos;
    std::deque<StateInfo> states;
  };

  void info(absl::string_view text);  // "info string TEXT"
  void cmd_uci();
  void cmd_position(const std::vector<std::string>& w);
  void cmd_go(const std::vector<std::string>& w);
  void cmd_setoption(const std::vector<std::string>& w);
  // Stops the running search (if any) and waits for its bestmove to be out.
  void stop_and_wait();
  void wait_search();
  void run_search(engine::Limits limits, bool infinite);
  void run_perft(int depth);

  std::function<void(const std::string&)> emit_;
  std::mutex emit_mu_;

  std::unique_ptr<Game> game_;
  std::unique_ptr<engine::Engine> engine_;
  bool chess960_ = false;  // UCI_Chess960: off by default, as Stockfish and GUIs expect
  int threads_ = 1;
  int hash_mb_ = kUciDefaultHashMb;

  std::thread worker_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> running_{false};
  bool infinite_ = false;  // the running search waits for stop before its bestmove
  bool perft_ = false;     // the worker runs go perft, which cannot be stopped
  std::mutex stop_mu_;
  std::condition_variable stop_cv_;
};

// Reads `in` line by line into a UciServer whose lines go to `out` (flushed each), until quit or
// the end of input. Returns the exit code (0).
int run_uci(std::istream& in, std::ostream& out);

}  // namespace c960::cli
