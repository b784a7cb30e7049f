// The legal move generator, written once for any board type and any sink. Internal to the core:
// movegen.cpp instantiates it for Position, perft.cpp for its compact copy-make board.
//
// Templated on the slider method too (see Sliders in bitboard.h): callers choose it once, at
// their entry point, so that no lookup inside pays for the choice.
//
// A Board provides: pieces(), pieces(c), pieces(c, pt), pieces(c, pt, pt), king_square(c),
// ep_square(), castling_rights(), castling_path(i), castling_king_path(i),
// castling_rook_square(i).
// A Sink receives moves grouped by origin and target set, so that a counting sink adds a
// popcount where a list sink writes moves:
//   targets<Pt>(from, to)          moves of one piece (a pinned pawn's too, never promotions)
//   pawn_targets<D>(to)            unpinned pawn moves, origin = target - D, not promotions
//   promotions<D>(to)              unpinned pawn promotions, four each
//   promotion_targets(from, to)    a pinned pawn's promotions
//   en_passant(from, to), castle(king, rook)
//   kStopEarly / done()             to stop at the first move
#pragma once

#include <bit>
#include <type_traits>

#include "core/bitboard.h"
#include "core/types.h"

namespace c960::movegen {

#define C960_STOP_IF_DONE(sink)                                      \
  if constexpr (std::remove_reference_t<decltype(sink)>::kStopEarly) \
    if ((sink).done()) return

// The enemy pieces that attack squares, read once per position: attacked() runs once for every
// king step and every square a castling king crosses.
struct Attackers {
  Bitboard pawns, knights, king, rq, bq;
};

// Slider lookups only where an empty-board ray meets a slider: most squares see none.
template <Color Them, Sliders S>
[[gnu::always_inline]] inline bool attacked(const Attackers& a, Square s, Bitboard occ) {
  return (pawn_attacks(~Them, s) & a.pawns) || (knight_attacks(s) & a.knights) || (king_attacks(s) & a.king) ||
         ((RookRays[s] & a.rq) && (rook_attacks<S>(s, occ) & a.rq)) ||
         ((BishopRays[s] & a.bq) && (bishop_attacks<S>(s, occ) & a.bq));
}

// Castling, as king takes own rook, when the right is held, the path is empty and no square the
// king crosses is attacked. The rook is lifted off for the attack test: it may be the piece that
// shields the king's path (or its landing square) from a slider on the rank.
template <Color Us, CastlingSide Cs, Sliders S, class Board, class Sink>
[[gnu::always_inline]] inline void castle(const Board& pos, Sink& sink, const Attackers& them, CastlingRights rights,
                                          Square ksq, Bitboard occ) {
  constexpr int kIdx = castling_index(Us, Cs);
  if (!(rights & (1 << kIdx)) || (occ & pos.castling_path(kIdx))) return;
  const Square rsq = pos.castling_rook_square(kIdx);
  const Bitboard occ_no_rook = occ ^ square_bb(rsq);
  for (Bitboard p = pos.castling_king_path(kIdx); p;)
    if (attacked<~Us, S>(them, pop_lsb(p), occ_no_rook)) return;
  sink.castle(ksq, rsq);
}

// Every move but the king's steps, once the checkers (at most one) and the pinned pieces are
// known. Check: the king is in check (every move must capture the checker or block its line);
// Pins: some piece of ours is pinned. Both are known at compile time, so that the common case
// (neither) pays for no mask.
template <Color Us, Sliders S, bool Check, bool Pins, class Board, class Sink>
[[gnu::always_inline]] inline void moves(const Board& pos, Sink& sink, const Attackers& them, Square ksq, Bitboard occ,
                                         Bitboard ours, Bitboard theirs, Bitboard checkers, Bitboard pinned) {
  constexpr Color Them = ~Us;
  constexpr Direction Up = pawn_push(Us);
  constexpr Direction UpLeft = Us == WHITE ? NORTH_WEST : SOUTH_EAST;
  constexpr Direction UpRight = Us == WHITE ? NORTH_EAST : SOUTH_WEST;
  constexpr Bitboard Rank3 = rank_bb(relative_rank(Us, RANK_3));
  constexpr Bitboard Rank8 = rank_bb(relative_rank(Us, RANK_8));

  // Every other move must capture the checker or block its line.
  Bitboard check_mask = ~Bitboard(0);
  if constexpr (Check) check_mask = between_bb(ksq, lsb(checkers));
  const Bitboard targets = ~ours & check_mask;
  const Bitboard free = Pins ? ~pinned : ~Bitboard(0);

  // Pawns: unpinned ones set-wise, pinned ones one at a time along their pin line.
  {
    const Bitboard pawns = pos.pieces(Us, PAWN) & free;
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

    if constexpr (Pins)
      for (Bitboard b = pos.pieces(Us, PAWN) & pinned; b;) {
        const Square from = pop_lsb(b);
        const Bitboard one = shift<Up>(square_bb(from)) & empty;
        const Bitboard two = shift<Up>(one & Rank3) & empty;
        const Bitboard to = ((pawn_attacks(Us, from) & theirs) | one | two) & line_bb(ksq, from) & check_mask;
        if (to & Rank8)
          sink.promotion_targets(from, to);
        else
          sink.template targets<PAWN>(from, to);
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
          if (!(rook_attacks<S>(ksq, after) & them.rq) && !(bishop_attacks<S>(ksq, after) & them.bq))
            sink.en_passant(from, ep);
        }
      }
    }
  }

  for (Bitboard b = pos.pieces(Us, KNIGHT) & free; b;) {
    const Square from = pop_lsb(b);
    sink.template targets<KNIGHT>(from, knight_attacks(from) & targets);
  }
  // Sliders: free ones first; pinned ones (rare) stay on their pin line.
  for (Bitboard b = pos.pieces(Us, BISHOP) & free; b;) {
    const Square from = pop_lsb(b);
    sink.template targets<BISHOP>(from, bishop_attacks<S>(from, occ) & targets);
  }
  for (Bitboard b = pos.pieces(Us, ROOK) & free; b;) {
    const Square from = pop_lsb(b);
    sink.template targets<ROOK>(from, rook_attacks<S>(from, occ) & targets);
  }
  for (Bitboard b = pos.pieces(Us, QUEEN) & free; b;) {
    const Square from = pop_lsb(b);
    sink.template targets<QUEEN>(from, queen_attacks<S>(from, occ) & targets);
  }
  if constexpr (Pins) {
    for (Bitboard b = pos.pieces(Us, BISHOP) & pinned; b;) {
      const Square from = pop_lsb(b);
      sink.template targets<BISHOP>(from, bishop_attacks<S>(from, occ) & targets & line_bb(ksq, from));
    }
    for (Bitboard b = pos.pieces(Us, ROOK) & pinned; b;) {
      const Square from = pop_lsb(b);
      sink.template targets<ROOK>(from, rook_attacks<S>(from, occ) & targets & line_bb(ksq, from));
    }
    for (Bitboard b = pos.pieces(Us, QUEEN) & pinned; b;) {
      const Square from = pop_lsb(b);
      sink.template targets<QUEEN>(from, queen_attacks<S>(from, occ) & targets & line_bb(ksq, from));
    }
  }
  C960_STOP_IF_DONE(sink);

  // Castling, as king takes own rook, never out of check.
  if constexpr (!Check) {
    const CastlingRights rights = pos.castling_rights();
    castle<Us, KING_SIDE, S>(pos, sink, them, rights, ksq, occ);
    castle<Us, QUEEN_SIDE, S>(pos, sink, them, rights, ksq, occ);
  }
  (void)checkers;
}

template <Color Us, Sliders S, class Board, class Sink>
[[gnu::always_inline]] inline void generate(const Board& pos, Sink& sink) {
  constexpr Color Them = ~Us;

  const Square ksq = pos.king_square(Us);
  const Bitboard occ = pos.pieces();
  const Bitboard ours = pos.pieces(Us), theirs = pos.pieces(Them);

  const Attackers them{pos.pieces(Them, PAWN), pos.pieces(Them, KNIGHT), pos.pieces(Them, KING),
                       pos.pieces(Them, ROOK, QUEEN), pos.pieces(Them, BISHOP, QUEEN)};

  // Checkers and pins in one pass: an enemy slider on a line to our king, seen through our own
  // pieces, gives check if nothing stands between, and pins the one piece that does (or marks an
  // enemy piece in between, which no mask below lets through).
  Bitboard checkers = (pawn_attacks(Us, ksq) & them.pawns) | (knight_attacks(ksq) & them.knights);
  Bitboard pinned = 0;
  Bitboard snipers = 0;
  if (RookRays[ksq] & them.rq) snipers |= rook_attacks<S>(ksq, theirs) & them.rq;
  if (BishopRays[ksq] & them.bq) snipers |= bishop_attacks<S>(ksq, theirs) & them.bq;
  while (snipers) {
    const Square s = pop_lsb(snipers);
    const Bitboard b = between_bb(ksq, s) & occ & ~square_bb(s);
    if (!b)
      checkers |= square_bb(s);
    else if (!more_than_one(b))
      pinned |= b;
  }

  // King steps. The king is lifted off the board so a slider's ray runs through its square.
  {
    Bitboard to = king_attacks(ksq) & ~ours;
    const Bitboard occ_no_king = occ ^ square_bb(ksq);
    for (Bitboard b = to; b;) {
      const Square s = pop_lsb(b);
      if (attacked<Them, S>(them, s, occ_no_king)) to ^= square_bb(s);
    }
    sink.template targets<KING>(ksq, to);
    C960_STOP_IF_DONE(sink);
  }
  if (more_than_one(checkers)) return;
  // The rest is written three times, with "in check" and "has pinned pieces" known at compile
  // time: most positions have neither, and then no mask below costs anything.
  if (checkers)
    moves<Us, S, true, true>(pos, sink, them, ksq, occ, ours, theirs, checkers, pinned);
  else if (pinned)
    moves<Us, S, false, true>(pos, sink, them, ksq, occ, ours, theirs, checkers, pinned);
  else
    moves<Us, S, false, false>(pos, sink, them, ksq, occ, ours, theirs, checkers, pinned);
}

#undef C960_STOP_IF_DONE

// Counts moves without making a list: the bulk counting at the last ply of perft. Its methods,
// like the other hot helpers, are always inlined, whatever a profile-guided build's training ran.
struct CountSink {
  static constexpr bool kStopEarly = false;
  uint64_t n = 0;
  template <PieceType>
  [[gnu::always_inline]] void targets(Square, Bitboard to) {
    n += popcount(to);
  }
  template <Direction>
  [[gnu::always_inline]] void pawn_targets(Bitboard to) {
    n += popcount(to);
  }
  template <Direction>
  [[gnu::always_inline]] void promotions(Bitboard to) {
    n += 4 * popcount(to);
  }
  [[gnu::always_inline]] void promotion_targets(Square, Bitboard to) { n += 4 * popcount(to); }
  [[gnu::always_inline]] void en_passant(Square, Square) { ++n; }
  [[gnu::always_inline]] void castle(Square, Square) { ++n; }
  bool done() const { return false; }
};

}  // namespace c960::movegen
