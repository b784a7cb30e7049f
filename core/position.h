// The board: piece placement, side to move, castling rights (as rook squares), en passant,
// clocks and the Zobrist key; FEN in three dialects; make and unmake.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/bitboard.h"
#include "core/types.h"

namespace c960 {

namespace zobrist {
// Keys are global and read-only while positions exist; init() replaces them (e.g. to test that
// results do not depend on the key set). Call it before creating positions.
void init(uint64_t seed);
uint64_t seed();
extern Key psq[PIECE_NB][SQUARE_NB];
extern Key enpassant[FILE_NB];
extern Key castling[SQUARE_NB];  // keyed by the castling rook's square
extern Key side;

// A whole key set, apart from the global one: perft may count with any (e.g. two workers
// checking each other with different sets, so that a hash collision cannot make them agree).
struct Keys {
  Key psq[PIECE_NB][SQUARE_NB];
  Key enpassant[FILE_NB];
  Key castling[SQUARE_NB];
  Key side;
};
// The set init(seed) makes, without touching the global one.
Keys make_keys(uint64_t seed);
// The global set, as it is now.
Keys current_keys();
}  // namespace zobrist

// How castling rights are written in a FEN.
enum class FenDialect {
  kXFen,      // KQkq for the outermost rook on a side, the rook's file letter otherwise
  kShredder,  // always the rook's file letter: HAha
};

// What changes from move to move and must be restored by undo_move.
struct StateInfo {
  // Copied from the previous state by do_move.
  Key key;
  CastlingRights castling_rights;
  Square ep_square;
  int rule50;
  int plies_from_null;
  // Computed by do_move.
  Bitboard checkers;
  Piece captured;
  StateInfo* previous;
};

class Position {
 public:
  Position() = default;
  // Copies keep only the current state, not the history behind it.
  Position(const Position& other);
  Position& operator=(const Position& other);

  // Parses any of plain FEN, X-FEN and Shredder-FEN. 6 fields, or 2..5 as Stockfish takes them:
  // the missing ones from the end default to castling "-", en passant "-", clocks 0 and 1.
  static absl::StatusOr<Position> from_fen(absl::string_view fen);
  std::string fen(FenDialect dialect = FenDialect::kXFen) const;

  // Placement.
  Piece piece_on(Square s) const { return board_[s]; }
  bool empty(Square s) const { return board_[s] == NO_PIECE; }
  Bitboard pieces() const { return by_type_[ALL_PIECES]; }
  Bitboard pieces(PieceType pt) const { return by_type_[pt]; }
  Bitboard pieces(PieceType a, PieceType b) const { return by_type_[a] | by_type_[b]; }
  Bitboard pieces(Color c) const { return by_color_[c]; }
  Bitboard pieces(Color c, PieceType pt) const { return by_color_[c] & by_type_[pt]; }
  Bitboard pieces(Color c, PieceType a, PieceType b) const { return by_color_[c] & pieces(a, b); }
  Square king_square(Color c) const { return lsb(pieces(c, KING)); }

  // State.
  Color side_to_move() const { return side_; }
  Square ep_square() const { return st_->ep_square; }
  CastlingRights castling_rights() const { return st_->castling_rights; }
  bool can_castle(CastlingRights cr) const { return st_->castling_rights & cr; }
  Square castling_rook_square(int index) const { return castling_rook_[index]; }
  // Squares that must be empty (except for this king and rook) to castle.
  Bitboard castling_path(int index) const { return castling_path_[index]; }
  // Squares the king passes or lands on; none may be attacked.
  Bitboard castling_king_path(int index) const { return castling_king_path_[index]; }
  Bitboard checkers() const { return st_->checkers; }
  bool in_check() const { return st_->checkers != 0; }
  Key key() const { return st_->key; }
  int rule50() const { return st_->rule50; }
  int game_ply() const { return game_ply_; }
  int fullmove_number() const { return 1 + (game_ply_ - (side_ == BLACK)) / 2; }
  const StateInfo* state() const { return st_; }

  // Attacks.
  Bitboard attackers_to(Square s, Bitboard occupied) const;
  Bitboard attackers_to(Square s) const { return attackers_to(s, pieces()); }
  // Our pieces that stand alone between the king of colour `king` and an enemy slider of
  // colour `sliders`: pinned if king and pieces share a colour, discovered-check candidates if not.
  Bitboard blockers(Color king, Color sliders) const;

  // Moves. m must be legal in this position.
  bool gives_check(Move m) const;
  void do_move(Move m, StateInfo& new_st);
  void undo_move(Move m);
  void do_null_move(StateInfo& new_st);
  void undo_null_move();

  // The key computed from scratch, to check the incremental one.
  Key compute_key() const;
  // Where king and rook end up for a castle encoded as king-takes-rook.
  static Square castle_king_to(Color c, Square king_from, Square rook_from) {
    return relative_square(c, rook_from > king_from ? SQ_G1 : SQ_C1);
  }
  static Square castle_rook_to(Color c, Square king_from, Square rook_from) {
    return relative_square(c, rook_from > king_from ? SQ_F1 : SQ_D1);
  }

 private:
  void put_piece(Piece pc, Square s);
  void remove_piece(Square s);
  void move_piece(Square from, Square to);
  void set_castling_right(Color c, Square rook_from);
  Key castling_key(CastlingRights cr) const;

  Piece board_[SQUARE_NB] = {};
  Bitboard by_type_[PIECE_TYPE_NB] = {};
  Bitboard by_color_[COLOR_NB] = {};
  CastlingRights castling_mask_[SQUARE_NB] = {};
  Square castling_rook_[4] = {SQ_NONE, SQ_NONE, SQ_NONE, SQ_NONE};
  Bitboard castling_path_[4] = {};
  Bitboard castling_king_path_[4] = {};
  Color side_ = WHITE;
  int game_ply_ = 0;
  StateInfo root_st_ = {};
  StateInfo* st_ = &root_st_;
};

inline Bitboard Position::attackers_to(Square s, Bitboard occ) const {
  return (pawn_attacks(BLACK, s) & pieces(WHITE, PAWN)) | (pawn_attacks(WHITE, s) & pieces(BLACK, PAWN)) |
         (knight_attacks(s) & pieces(KNIGHT)) | (rook_attacks(s, occ) & pieces(ROOK, QUEEN)) |
         (bishop_attacks(s, occ) & pieces(BISHOP, QUEEN)) | (king_attacks(s) & pieces(KING));
}

inline void Position::put_piece(Piece pc, Square s) {
  board_[s] = pc;
  by_type_[ALL_PIECES] |= square_bb(s);
  by_type_[type_of(pc)] |= square_bb(s);
  by_color_[color_of(pc)] |= square_bb(s);
}

inline void Position::remove_piece(Square s) {
  const Piece pc = board_[s];
  by_type_[ALL_PIECES] ^= square_bb(s);
  by_type_[type_of(pc)] ^= square_bb(s);
  by_color_[color_of(pc)] ^= square_bb(s);
  board_[s] = NO_PIECE;
}

inline void Position::move_piece(Square from, Square to) {
  const Piece pc = board_[from];
  const Bitboard ft = square_bb(from) | square_bb(to);
  by_type_[ALL_PIECES] ^= ft;
  by_type_[type_of(pc)] ^= ft;
  by_color_[color_of(pc)] ^= ft;
  board_[from] = NO_PIECE;
  board_[to] = pc;
}

std::string square_name(Square s);
// "e4" -> SQ_E4; SQ_NONE when not a square.
Square parse_square(absl::string_view s);
char piece_char(Piece pc);

}  // namespace c960
