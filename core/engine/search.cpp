#include "core/engine/search.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "core/movegen.h"
#include "core/prng.h"

namespace c960::engine {
namespace {

enum Bound : uint8_t { BOUND_NONE, BOUND_UPPER, BOUND_LOWER, BOUND_EXACT };

// Move ordering tiers: hash move, then good captures and queen promotions, then killers, then
// quiet moves by history.
constexpr int kHashMoveScore = 1 << 30;
constexpr int kCaptureScore = 1 << 28;
constexpr int kKillerScore = 1 << 27;
constexpr int kHistoryMax = 1 << 20;

bool is_capture(const Position& pos, Move m) {
  // A castle's destination is our own rook: not a capture.
  return m.kind() == EN_PASSANT || (m.kind() != CASTLING && !pos.empty(m.to_sq()));
}

bool is_tactical(const Position& pos, Move m) {
  return is_capture(pos, m) || (m.kind() == PROMOTION && m.promotion_type() == QUEEN);
}

// Mate scores are stored relative to the node, not the root, so that they stay right when
// the entry is found at another ply.
Value value_to_tt(Value v, int ply) {
  return v >= VALUE_MATE_IN_MAX_PLY ? v + ply : v <= -VALUE_MATE_IN_MAX_PLY ? v - ply : v;
}
Value value_from_tt(Value v, int ply) {
  return v >= VALUE_MATE_IN_MAX_PLY ? v - ply : v <= -VALUE_MATE_IN_MAX_PLY ? v + ply : v;
}

// A position seen before since the last irreversible move (two-fold inside the search tree or
// against the game history: either way the side to move can force the repetition).
bool is_repetition(const Position& pos) {
  const StateInfo* st = pos.state();
  const int end = std::min(st->rule50, st->plies_from_null);
  const StateInfo* p = st;
  for (int i = 2; i <= end; i += 2) {
    if (!p->previous || !p->previous->previous) break;  // history before the root FEN is unknown
    p = p->previous->previous;
    if (p->key == st->key) return true;
  }
  return false;
}

bool has_non_pawn_material(const Position& pos, Color c) { return pos.pieces(c) & ~pos.pieces(c, PAWN, KING); }

// Picks the best-scored remaining move and swaps it to index i.
void pick_move(Move* moves, int* scores, int n, int i) {
  int best = i;
  for (int j = i + 1; j < n; ++j)
    if (scores[j] > scores[best]) best = j;
  std::swap(moves[i], moves[best]);
  std::swap(scores[i], scores[best]);
}

}  // namespace

Engine::Engine(size_t hash_mb) {
  // A power of two of entries, at least 1024.
  size_t entries = 1024;
  while (entries * 2 * sizeof(TTEntry) <= hash_mb * 1024 * 1024) entries *= 2;
  tt_.resize(entries);
  new_game();
}

void Engine::new_game() {
  std::fill(tt_.begin(), tt_.end(), TTEntry{});
  std::memset(history_, 0, sizeof(history_));
  for (auto& k : killers_) k[0] = k[1] = Move::none();
}

bool Engine::should_stop() {
  if (stopped_) return true;
  if (limits_.nodes && nodes_ >= limits_.nodes) {
    stopped_ = true;
  } else if ((nodes_ & 1023) == 0) {
    // The clock and the stop flag are read every 1024 nodes: reading the clock costs about as
    // much as a node.
    if (stop_ && stop_->load(std::memory_order_relaxed))
      stopped_ = true;
    else if (limits_.movetime_ms &&
             std::chrono::steady_clock::now() - start_ >= std::chrono::milliseconds(limits_.movetime_ms))
      stopped_ = true;
  }
  return stopped_;
}

void Engine::tt_store(Key k, Move m, Value v, int depth, int bound, int ply) {
  TTEntry* e = tt_slot(k);
  // Keep a deeper entry of the same position unless this one is exact; always take other keys.
  if (e->key == k && e->depth > depth && bound != BOUND_EXACT) return;
  if (!m && e->key == k) m = Move(e->move);
  *e = TTEntry{k, m.raw(), int16_t(value_to_tt(v, ply)), int8_t(std::clamp(depth, -1, 127)), uint8_t(bound)};
}

void Engine::score_moves(const Position& pos, const Move* moves, int n, int* scores, Move tt_move, int ply) const {
  for (int i = 0; i < n; ++i) {
    const Move m = moves[i];
    if (m == tt_move)
      scores[i] = kHashMoveScore;
    else if (is_capture(pos, m)) {
      const PieceType victim = m.kind() == EN_PASSANT ? PAWN : type_of(pos.piece_on(m.to_sq()));
      const PieceType attacker = type_of(pos.piece_on(m.from_sq()));
      scores[i] = kCaptureScore + kPieceValue[victim] * 16 - kPieceValue[attacker] / 16 +
                  (m.kind() == PROMOTION ? kPieceValue[m.promotion_type()] : 0);
    } else if (m.kind() == PROMOTION)
      scores[i] =
          m.promotion_type() == QUEEN ? kCaptureScore + kPieceValue[QUEEN] : -kKillerScore;  // underpromotions last
    else if (m == killers_[ply][0])
      scores[i] = kKillerScore + 1;
    else if (m == killers_[ply][1])
      scores[i] = kKillerScore;
    else
      scores[i] = history_[pos.side_to_move()][m.from_sq()][m.to_sq()];
  }
}

SearchResult Engine::search(Position& pos, const Limits& limits, const SearchHooks& hooks) {
  limits_ = limits;
  stop_ = hooks.stop;
  nodes_ = 0;
  stopped_ = false;
  start_ = std::chrono::steady_clock::now();
  const bool unlimited = !limits.nodes && !limits.depth && !limits.movetime_ms;
  const int max_depth = limits.depth ? std::min(limits.depth, MAX_PLY - 1) : unlimited ? 1 : MAX_PLY - 1;

  SearchResult result;
  MoveList list;
  generate_legal(pos, list);
  if (list.size() == 0) {
    result.score = pos.in_check() ? -VALUE_MATE : VALUE_DRAW;
    return result;
  }
  std::vector<Move> root(list.begin(), list.end());
  result.best = root[0];

  for (int depth = 1; depth <= max_depth; ++depth) {
    Value alpha = -VALUE_INFINITE;
    const Value beta = VALUE_INFINITE;
    Move iter_best = Move::none();
    Value iter_score = -VALUE_INFINITE;
    std::vector<Move> iter_pv;
    for (size_t i = 0; i < root.size(); ++i) {
      const Move m = root[i];
      const bool check = pos.gives_check(m);
      ++nodes_;
      pos.do_move(m, states_[0]);
      Value v;
      const int new_depth = depth - 1 + (check ? 1 : 0);
      if (i == 0)
        v = -negamax(pos, -beta, -alpha, new_depth, 1, true);
      else {
        v = -negamax(pos, -alpha - 1, -alpha, new_depth, 1, true);
        if (v > alpha && !stopped_) v = -negamax(pos, -beta, -alpha, new_depth, 1, true);
      }
      pos.undo_move(m);
      if (stopped_) break;
      if (v > alpha) {
        alpha = v;
        iter_best = m;
        iter_score = v;
        iter_pv.assign(1, m);
        iter_pv.insert(iter_pv.end(), pv_[1], pv_[1] + pv_len_[1]);
        // Keep the best move first for the next iteration, the rest in their order.
        std::rotate(root.begin(), root.begin() + i, root.begin() + i + 1);
      }
    }
    // A partly searched iteration still counts if it found a move: that move was searched
    // fully and beat the first (previous best) move's score, or is that move.
    if (iter_best) {
      result.best = iter_best;
      result.score = iter_score;
      result.pv = iter_pv;
      if (!stopped_) result.depth = depth;
    }
    if (stopped_) break;
    if (hooks.on_iteration) {
      result.nodes = nodes_;
      hooks.on_iteration(result);
    }
    // A mate found within the full-width depth cannot be bettered by searching deeper.
    if (is_mate_score(result.score) && VALUE_MATE - std::abs(result.score) <= depth) break;
  }
  if (limits.sample_margin_cp > 0 && result.depth >= 1 && !is_mate_score(result.score) && root.size() > 1)
    sample_root_move(pos, root, limits, result);
  result.nodes = nodes_;
  return result;
}

void Engine::sample_root_move(Position& pos, const std::vector<Move>& root, const Limits& limits,
                              SearchResult& result) {
  stopped_ = false;
  if (limits.nodes) limits_.nodes = nodes_ + limits.nodes / 2 + 1;
  const Value threshold = result.score - limits.sample_margin_cp;
  std::vector<Move> candidates = {result.best};
  for (const Move m : root) {
    if (m == result.best) continue;
    const bool check = pos.gives_check(m);
    pos.do_move(m, states_[0]);
    // Null window at the threshold: does this move score at least best - margin?
    const Value v = -negamax(pos, -threshold, -threshold + 1, result.depth - 1 + (check ? 1 : 0), 1, true);
    pos.undo_move(m);
    if (stopped_) break;
    if (v >= threshold) candidates.push_back(m);
  }
  stopped_ = false;
  Prng prng(limits.sample_seed);
  const Move pick = candidates[prng.below(candidates.size())];
  if (pick != result.best) {
    result.best = pick;
    result.pv.assign(1, pick);
  }
}

Value Engine::negamax(Position& pos, Value alpha, Value beta, int depth, int ply, bool allow_null) {
  pv_len_[ply] = 0;
  if (depth <= 0) return qsearch(pos, alpha, beta, ply);
  ++nodes_;
  if (should_stop()) return VALUE_ZERO;
  const bool pv_node = beta - alpha > 1;
  const bool in_check = pos.in_check();

  if (pos.rule50() >= 100 || is_repetition(pos)) return VALUE_DRAW;
  if (ply >= MAX_PLY) return evaluate(pos, terms_);
  // Mate distance pruning: no line from here beats a mate already found closer to the root.
  alpha = std::max(alpha, mated_in(ply));
  beta = std::min(beta, mate_in(ply + 1));
  if (alpha >= beta) return alpha;

  TTEntry* tte = tt_slot(pos.key());
  const bool tt_hit = tte->key == pos.key();
  const Move tt_move = tt_hit ? Move(tte->move) : Move::none();
  if (tt_hit && !pv_node && tte->depth >= depth) {
    const Value v = value_from_tt(tte->value, ply);
    if (tte->bound == BOUND_EXACT || (tte->bound == BOUND_LOWER && v >= beta) ||
        (tte->bound == BOUND_UPPER && v <= alpha))
      return v;
  }

  const Value static_eval = in_check ? -VALUE_INFINITE : evaluate(pos, terms_);

  // Null move: if passing still holds beta, a real move will too (not in pawn endings, where
  // zugzwang makes passing the best move).
  if (!pv_node && !in_check && allow_null && depth >= 3 && static_eval >= beta &&
      has_non_pawn_material(pos, pos.side_to_move())) {
    const int r = 2 + depth / 4;
    pos.do_null_move(states_[ply]);
    const Value v = -negamax(pos, -beta, -beta + 1, depth - 1 - r, ply + 1, false);
    pos.undo_null_move();
    if (stopped_) return VALUE_ZERO;
    if (v >= beta) return is_mate_score(v) ? beta : v;
  }

  MoveList list;
  generate_legal(pos, list);
  if (list.size() == 0) return in_check ? mated_in(ply) : VALUE_DRAW;
  int scores[MAX_MOVES];
  score_moves(pos, list.moves, list.count, scores, tt_move, ply);

  const Value old_alpha = alpha;
  Value best = -VALUE_INFINITE;
  Move best_move = Move::none();
  for (int i = 0; i < list.count; ++i) {
    pick_move(list.moves, scores, list.count, i);
    const Move m = list.moves[i];
    const bool tactical = is_tactical(pos, m);
    const bool check = pos.gives_check(m);
    // Check extension, bounded so that perpetual checks cannot blow the tree up.
    const int new_depth = depth - 1 + (check && ply < 2 * MAX_PLY / 3 ? 1 : 0);

    pos.do_move(m, states_[ply]);
    Value v;
    if (i == 0)
      v = -negamax(pos, -beta, -alpha, new_depth, ply + 1, true);
    else {
      // Late quiet moves are searched shallower first; a surprise gets the full depth.
      int r = 0;
      if (depth >= 3 && i >= 3 && !tactical && !check && !in_check) r = 1 + (i >= 8) + (!pv_node && depth >= 6);
      v = -negamax(pos, -alpha - 1, -alpha, new_depth - r, ply + 1, true);
      if (r && v > alpha && !stopped_) v = -negamax(pos, -alpha - 1, -alpha, new_depth, ply + 1, true);
      if (pv_node && v > alpha && v < beta && !stopped_) v = -negamax(pos, -beta, -alpha, new_depth, ply + 1, true);
    }
    pos.undo_move(m);
    if (stopped_) return VALUE_ZERO;

    if (v > best) {
      best = v;
      best_move = m;
      if (v > alpha) {
        alpha = v;
        pv_[ply][0] = m;
        std::copy(pv_[ply + 1], pv_[ply + 1] + pv_len_[ply + 1], pv_[ply] + 1);
        pv_len_[ply] = pv_len_[ply + 1] + 1;
        if (v >= beta) {
          if (!tactical) {
            if (killers_[ply][0] != m) {
              killers_[ply][1] = killers_[ply][0];
              killers_[ply][0] = m;
            }
            int& h = history_[pos.side_to_move()][m.from_sq()][m.to_sq()];
            h = std::min(h + depth * depth, kHistoryMax);
          }
          break;
        }
      }
    }
  }
  tt_store(pos.key(), best_move, best, depth,
           best >= beta       ? BOUND_LOWER
           : best > old_alpha ? BOUND_EXACT
                              : BOUND_UPPER,
           ply);
  return best;
}

Value Engine::qsearch(Position& pos, Value alpha, Value beta, int ply) {
  pv_len_[ply] = 0;
  ++nodes_;
  if (should_stop()) return VALUE_ZERO;
  if (ply >= MAX_PLY) return evaluate(pos, terms_);
  const bool in_check = pos.in_check();

  Value best = -VALUE_INFINITE;
  if (!in_check) {
    // Stand pat: the side to move need not capture.
    best = evaluate(pos, terms_);
    if (best >= beta) return best;
    alpha = std::max(alpha, best);
  }

  MoveList list;
  generate_legal(pos, list);
  if (list.size() == 0) return in_check ? mated_in(ply) : VALUE_DRAW;
  // Out of check every evasion is searched; otherwise captures and queen promotions only.
  int n = 0;
  for (int i = 0; i < list.count; ++i)
    if (in_check || is_tactical(pos, list.moves[i])) list.moves[n++] = list.moves[i];
  int scores[MAX_MOVES];
  score_moves(pos, list.moves, n, scores, Move::none(), ply);

  for (int i = 0; i < n; ++i) {
    pick_move(list.moves, scores, n, i);
    const Move m = list.moves[i];
    pos.do_move(m, states_[ply]);
    const Value v = -qsearch(pos, -beta, -alpha, ply + 1);
    pos.undo_move(m);
    if (stopped_) return VALUE_ZERO;
    if (v > best) {
      best = v;
      if (v > alpha) {
        alpha = v;
        if (v >= beta) break;
      }
    }
  }
  return best;
}

}  // namespace c960::engine
