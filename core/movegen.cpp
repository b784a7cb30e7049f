#include "movegen.h"

#include <type_traits>

namespace c960 {
namespace {

// Sinks receive moves as (origin, target set) and decide what to do with them: store them,
// count them, or only note that one exists. The generator is written once against this shape.
struct ListSink {
  static constexpr bool StopEarly = false;
  Move* cur;
  void targets(Square from, Bitboard to) {
    while (to) *cur++ = Move(from, pop_lsb(to));
  }
  template <Direction D>
  void pawn_targets(Bitboard to) {
    while (to) {
      const Square s = pop_lsb(to);
      *cur++ = Move(s - D, s);
    }
  }
  template <Direction D>
  void promotions(Bitboard to) {
    while (to) {
      const Square s = pop_lsb(to);
      for (PieceType pt : {QUEEN, ROOK, BISHOP, KNIGHT}) *cur++ = Move::make<PROMOTION>(s - D, s, pt);
    }
  }
  void promotion_targets(Square from, Bitboard to) {
    while (to) {
      const Square s = pop_lsb(to);
      for (PieceType pt : {QUEEN, ROOK, BISHOP, KNIGHT}) *cur++ = Move::make<PROMOTION>(from, s, pt);
    }
  }
  void single(Move m) { *cur++ = m; }
  bool done() const { return false; }
};

struct CountSink {
  static constexpr bool StopEarly = false;
  int n = 0;
  void targets(Square, Bitboard to) { n += popcount(to); }
  template <Direction>
  void pawn_targets(Bitboard to) { n += popcount(to); }
  template <Direction>
  void promotions(Bitboard to) { n += 4 * popcount(to); }
  void promotion_targets(Square, Bitboard to) { n += 4 * popcount(to); }
  void single(Move) { ++n; }
  bool done() const { return false; }
};

struct AnySink {
  static constexpr bool StopEarly = true;
  bool found = false;
  void targets(Square, Bitboard to) { found |= to != 0; }
  template <Direction>
  void pawn_targets(Bitboard to) { found |= to != 0; }
  template <Direction>
  void promotions(Bitboard to) { found |= to != 0; }
  void promotion_targets(Square, Bitboard to) { found |= to != 0; }
  void single(Move) { found = true; }
  bool done() const { return found; }
};

#define C960_STOP_IF_DONE(sink) \
  if constexpr (std::remove_reference_t<decltype(sink)>::StopEarly) \
    if ((sink).done()) return

template <Color Them>
inline bool attacked(const Position& pos, Square s, Bitboard occ) {
  return (pawn_attacks(~Them, s) & pos.pieces(Them, PAWN)) || (knight_attacks(s) & pos.pieces(Them, KNIGHT)) ||
         (king_attacks(s) & pos.pieces(Them, KING)) ||
         (rook_attacks(s, occ) & pos.pieces(Them, ROOK, QUEEN)) ||
         (bishop_attacks(s, occ) & pos.pieces(Them, BISHOP, QUEEN));
}

template <Color Us, class Sink>
void generate(const Position& pos, Sink& sink) {
  constexpr Color Them = ~Us;
  constexpr Direction Up = pawn_push(Us);
  constexpr Direction UpLeft = Us == WHITE ? NORTH_WEST : SOUTH_EAST;
  constexpr Direction UpRight = Us == WHITE ? NORTH_EAST : SOUTH_WEST;
  constexpr Bitboard Rank3 = rank_bb(relative_rank(Us, RANK_3));
  constexpr Bitboard Rank8 = rank_bb(relative_rank(Us, RANK_8));

  const Square ksq = pos.king_square(Us);
  const Bitboard occ = pos.pieces();
  const Bitboard ours = pos.pieces(Us), theirs = pos.pieces(Them);
  const Bitboard checkers = pos.checkers();

  // King steps. The king is lifted off the board so a slider's ray runs through its square.
  {
    Bitboard to = king_attacks(ksq) & ~ours;
    const Bitboard occ_no_king = occ ^ square_bb(ksq);
    for (Bitboard b = to; b;) {
      const Square s = pop_lsb(b);
      if (attacked<Them>(pos, s, occ_no_king)) to ^= square_bb(s);
    }
    sink.targets(ksq, to);
    C960_STOP_IF_DONE(sink);
  }
  if (more_than_one(checkers)) return;

  // Every other move must capture the checker or block its line.
  const Bitboard check_mask = checkers ? between_bb(ksq, lsb(checkers)) : ~Bitboard(0);
  const Bitboard targets = ~ours & check_mask;

  // Pins: enemy sliders on a line to our king, seen through our own pieces.
  Bitboard pinned = 0;
  {
    Bitboard snipers = (rook_attacks(ksq, theirs) & pos.pieces(Them, ROOK, QUEEN)) |
                       (bishop_attacks(ksq, theirs) & pos.pieces(Them, BISHOP, QUEEN));
    while (snipers) {
      const Square s = pop_lsb(snipers);
      const Bitboard b = between_bb(ksq, s) & occ & ~square_bb(s);
      if (b && !more_than_one(b)) pinned |= b;
    }
  }

  // Pawns: unpinned ones set-wise, pinned ones one at a time along their pin line.
  {
    const Bitboard pawns = pos.pieces(Us, PAWN) & ~pinned;
    const Bitboard empty = ~occ;
    const Bitboard push1 = shift<Up>(pawns) & empty;
    const Bitboard push2 = shift<Up>(push1 & Rank3) & empty & check_mask;
    const Bitboard pushes = push1 & check_mask;
    const Bitboard cap_l = shift<UpLeft>(pawns) & theirs & check_mask;
    const Bitboard cap_r = shift<UpRight>(pawns) & theirs & check_mask;
    sink.template pawn_targets<Up>(pushes & ~Rank8);
    sink.template pawn_targets<Direction(Up + Up)>(push2);
    sink.template pawn_targets<UpLeft>(cap_l & ~Rank8);
    sink.template pawn_targets<UpRight>(cap_r & ~Rank8);
    sink.template promotions<Up>(pushes & Rank8);
    sink.template promotions<UpLeft>(cap_l & Rank8);
    sink.template promotions<UpRight>(cap_r & Rank8);

    for (Bitboard b = pos.pieces(Us, PAWN) & pinned; b;) {
      const Square from = pop_lsb(b);
      const Bitboard one = shift<Up>(square_bb(from)) & empty;
      const Bitboard two = shift<Up>(one & Rank3) & empty;
      const Bitboard to = ((pawn_attacks(Us, from) & theirs) | one | two) & line_bb(ksq, from) & check_mask;
      if (to & Rank8) sink.promotion_targets(from, to);
      else sink.targets(from, to);
    }
    C960_STOP_IF_DONE(sink);

    // En passant: lift both pawns and look for a slider on the king; that one test covers the
    // diagonal pin and the rank pin of two pawns side by side.
    if (const Square ep = pos.ep_square(); ep != SQ_NONE) {
      const Square capsq = ep - Up;
      if (check_mask & (square_bb(ep) | square_bb(capsq))) {
        for (Bitboard b = pawn_attacks(Them, ep) & pos.pieces(Us, PAWN); b;) {
          const Square from = pop_lsb(b);
          const Bitboard after = (occ ^ square_bb(from) ^ square_bb(capsq)) | square_bb(ep);
          if (!(rook_attacks(ksq, after) & pos.pieces(Them, ROOK, QUEEN)) &&
              !(bishop_attacks(ksq, after) & pos.pieces(Them, BISHOP, QUEEN)))
            sink.single(Move::make<EN_PASSANT>(from, ep));
        }
      }
    }
  }

  for (Bitboard b = pos.pieces(Us, KNIGHT) & ~pinned; b;) {
    const Square from = pop_lsb(b);
    sink.targets(from, knight_attacks(from) & targets);
  }
  for (Bitboard b = pos.pieces(Us, BISHOP, QUEEN); b;) {
    const Square from = pop_lsb(b);
    Bitboard to = bishop_attacks(from, occ) & targets;
    if (square_bb(from) & pinned) to &= line_bb(ksq, from);
    sink.targets(from, to);
  }
  for (Bitboard b = pos.pieces(Us, ROOK, QUEEN); b;) {
    const Square from = pop_lsb(b);
    Bitboard to = rook_attacks(from, occ) & targets;
    if (square_bb(from) & pinned) to &= line_bb(ksq, from);
    sink.targets(from, to);
  }
  C960_STOP_IF_DONE(sink);

  // Castling, as king takes own rook. The rook is lifted off for the attack test: it may be
  // the piece that shields the king's path (or its landing square) from a slider on the rank.
  if (!checkers && pos.can_castle(Us == WHITE ? WHITE_CASTLING : BLACK_CASTLING)) {
    for (CastlingSide cs : {KING_SIDE, QUEEN_SIDE}) {
      const int idx = castling_index(Us, cs);
      if (!pos.can_castle(castling_right(Us, cs)) || (occ & pos.castling_path(idx))) continue;
      const Square rsq = pos.castling_rook_square(idx);
      const Bitboard occ_no_rook = occ ^ square_bb(rsq);
      bool safe = true;
      for (Bitboard p = pos.castling_king_path(idx); p && safe;) safe = !attacked<Them>(pos, pop_lsb(p), occ_no_rook);
      if (safe) sink.single(Move::make<CASTLING>(ksq, rsq));
    }
  }
}

}  // namespace

void generate_legal(const Position& pos, MoveList& list) {
  ListSink sink{list.moves};
  if (pos.side_to_move() == WHITE) generate<WHITE>(pos, sink);
  else generate<BLACK>(pos, sink);
  list.count = int(sink.cur - list.moves);
}

int count_legal(const Position& pos) {
  CountSink sink;
  if (pos.side_to_move() == WHITE) generate<WHITE>(pos, sink);
  else generate<BLACK>(pos, sink);
  return sink.n;
}

bool has_legal_move(const Position& pos) {
  AnySink sink;
  if (pos.side_to_move() == WHITE) generate<WHITE>(pos, sink);
  else generate<BLACK>(pos, sink);
  return sink.found;
}

}  // namespace c960
