// The built-in engine's search: iterative deepening PVS with quiescence search, a transposition
// table, move ordering (hash move, MVV-LVA, killers, history), check extension, null move and
// late move reductions. Single-threaded; with node or depth limits the result depends only on
// the position, its history and what this Engine searched since new_game().
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/engine/eval.h"
#include "core/position.h"

namespace c960::engine {

// Whichever limit is reached first stops the search; 0 means "no limit of this kind". With no
// limit at all the search stops after depth 1.
struct Limits {
  uint64_t nodes = 0;
  int depth = 0;
  int movetime_ms = 0;  // the one limit that makes results depend on the machine
  // Sampling among near-best moves (0 = off): after the search, every root move is tested at the
  // last completed depth against (best score - margin), and one of those that reach it is
  // picked with sample_seed. The test gets half the node limit again. Not done for mate scores.
  int sample_margin_cp = 0;
  uint64_t sample_seed = 0;
};

struct SearchResult {
  Move best = Move::none();  // none only when the side to move has no legal move
  Value score = VALUE_ZERO;  // for the side to move; mate scores per is_mate_score()
  int depth = 0;             // the last completed iteration
  uint64_t nodes = 0;
  std::vector<Move> pv;
};

// What a caller outside the search may do while it runs (the UCI front end, cli/uci.h): stop it
// from another thread (read every 1024 nodes, so a stop lands within microseconds; a search
// stopped so returns as one stopped by its limits does) and hear of each completed iteration.
// Neither changes what a search under node or depth limits finds.
struct SearchHooks {
  const std::atomic<bool>* stop = nullptr;
  // After each completed iteration: the result so far (best, score, depth, nodes, pv).
  std::function<void(const SearchResult&)> on_iteration;
};

class Engine {
 public:
  explicit Engine(size_t hash_mb = 16);
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Forgets everything learnt (hash, killers, history): the next game plays as from a fresh start.
  void new_game();
  void set_eval_terms(const EvalTerms& terms) { terms_ = terms; }

  // pos may carry its game history (states linked by do_move), which the search uses to see
  // repetitions; it is restored before returning.
  SearchResult search(Position& pos, const Limits& limits, const SearchHooks& hooks = {});

 private:
  struct TTEntry {
    Key key;
    uint16_t move;
    int16_t value;
    int8_t depth;
    uint8_t bound;
  };

  Value negamax(Position& pos, Value alpha, Value beta, int depth, int ply, bool allow_null);
  Value qsearch(Position& pos, Value alpha, Value beta, int ply);
  void sample_root_move(Position& pos, const std::vector<Move>& root, const Limits& limits, SearchResult& result);
  void score_moves(const Position& pos, const Move* moves, int n, int* scores, Move tt_move, int ply) const;
  bool should_stop();
  TTEntry* tt_slot(Key k) { return &tt_[k & (tt_.size() - 1)]; }
  void tt_store(Key k, Move m, Value v, int depth, int bound, int ply);

  std::vector<TTEntry> tt_;
  EvalTerms terms_;
  Move killers_[MAX_PLY + 1][2];
  int history_[COLOR_NB][SQUARE_NB][SQUARE_NB];
  Move pv_[MAX_PLY + 1][MAX_PLY + 1];
  int pv_len_[MAX_PLY + 1];
  StateInfo states_[MAX_PLY + 1];

  Limits limits_;
  const std::atomic<bool>* stop_ = nullptr;
  uint64_t nodes_ = 0;
  bool stopped_ = false;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace c960::engine
