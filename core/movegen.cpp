#include "core/movegen.h"

#include "core/movegen_impl.h"

namespace c960 {
namespace {

// Sinks (see movegen_impl.h): store the moves, count them, or note that one exists.
struct ListSink {
  static constexpr bool kStopEarly = false;
  Move* cur;
  template <PieceType>
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
  void en_passant(Square from, Square to) { *cur++ = Move::make<EN_PASSANT>(from, to); }
  void castle(Square king, Square rook) { *cur++ = Move::make<CASTLING>(king, rook); }
  bool done() const { return false; }
};

struct AnySink {
  static constexpr bool kStopEarly = true;
  bool found = false;
  template <PieceType>
  void targets(Square, Bitboard to) {
    found |= to != 0;
  }
  template <Direction>
  void pawn_targets(Bitboard to) {
    found |= to != 0;
  }
  template <Direction>
  void promotions(Bitboard to) {
    found |= to != 0;
  }
  void promotion_targets(Square, Bitboard to) { found |= to != 0; }
  void en_passant(Square, Square) { found = true; }
  void castle(Square, Square) { found = true; }
  bool done() const { return found; }
};

// The one place where move generation picks its slider method and side to move.
template <class Sink>
void generate_any(const Position& pos, Sink& sink) {
  if (sliders() == Sliders::Pext) {
    if (pos.side_to_move() == WHITE)
      movegen::generate<WHITE, Sliders::Pext>(pos, sink);
    else
      movegen::generate<BLACK, Sliders::Pext>(pos, sink);
  } else {
    if (pos.side_to_move() == WHITE)
      movegen::generate<WHITE, Sliders::Magic>(pos, sink);
    else
      movegen::generate<BLACK, Sliders::Magic>(pos, sink);
  }
}

}  // namespace

void generate_legal(const Position& pos, MoveList& list) {
  ListSink sink{list.moves};
  generate_any(pos, sink);
  list.count = int(sink.cur - list.moves);
}

int count_legal(const Position& pos) {
  movegen::CountSink sink;
  generate_any(pos, sink);
  return int(sink.n);
}

bool has_legal_move(const Position& pos) {
  AnySink sink;
  generate_any(pos, sink);
  return sink.found;
}

}  // namespace c960
