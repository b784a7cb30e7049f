#include "core/position.h"

#include <algorithm>
#include <charconv>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "core/prng.h"

namespace c960 {

namespace zobrist {
Key psq[PIECE_NB][SQUARE_NB];
Key enpassant[FILE_NB];
Key castling[SQUARE_NB];
Key side;
namespace {
uint64_t current_seed = 0;
constexpr uint64_t kDefaultSeed = 1070372;
struct Init {
  Init() { zobrist::init(kDefaultSeed); }
} const init_;
}  // namespace

Keys make_keys(uint64_t s) {
  Keys keys;
  Prng rng(s);
  for (auto& piece : keys.psq)
    for (Key& k : piece) k = rng.rand64();
  for (Key& k : keys.enpassant) k = rng.rand64();
  for (Key& k : keys.castling) k = rng.rand64();
  keys.side = rng.rand64();
  return keys;
}

Keys current_keys() {
  Keys keys;
  std::copy(&psq[0][0], &psq[0][0] + size_t(PIECE_NB) * size_t(SQUARE_NB), &keys.psq[0][0]);
  std::copy(enpassant, enpassant + FILE_NB, keys.enpassant);
  std::copy(castling, castling + SQUARE_NB, keys.castling);
  keys.side = side;
  return keys;
}

void init(uint64_t s) {
  current_seed = s;
  const Keys keys = make_keys(s);
  std::copy(&keys.psq[0][0], &keys.psq[0][0] + size_t(PIECE_NB) * size_t(SQUARE_NB), &psq[0][0]);
  std::copy(keys.enpassant, keys.enpassant + FILE_NB, enpassant);
  std::copy(keys.castling, keys.castling + SQUARE_NB, castling);
  side = keys.side;
}
uint64_t seed() { return current_seed; }
}  // namespace zobrist

namespace {
constexpr absl::string_view kPieceChars = " PNBRQK  pnbrqk";

absl::Status fen_error(absl::string_view field, absl::string_view problem) {
  return absl::InvalidArgumentError(absl::StrCat("FEN ", field, ": ", problem));
}

bool parse_int(absl::string_view s, int& out) {
  if (s.empty() || s.size() > 9) return false;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && p == s.data() + s.size();
}
}  // namespace

std::string square_name(Square s) { return {char('a' + file_of(s)), char('1' + rank_of(s))}; }

Square parse_square(absl::string_view s) {
  if (s.size() != 2 || s[0] < 'a' || s[0] > 'h' || s[1] < '1' || s[1] > '8') return SQ_NONE;
  return make_square(File(s[0] - 'a'), Rank(s[1] - '1'));
}

char piece_char(Piece pc) { return kPieceChars[pc]; }

Position::Position(const Position& other) { *this = other; }

Position& Position::operator=(const Position& other) {
  if (this == &other) return *this;
  std::copy(std::begin(other.board_), std::end(other.board_), board_);
  std::copy(std::begin(other.by_type_), std::end(other.by_type_), by_type_);
  std::copy(std::begin(other.by_color_), std::end(other.by_color_), by_color_);
  std::copy(std::begin(other.castling_mask_), std::end(other.castling_mask_), castling_mask_);
  std::copy(std::begin(other.castling_rook_), std::end(other.castling_rook_), castling_rook_);
  std::copy(std::begin(other.castling_path_), std::end(other.castling_path_), castling_path_);
  std::copy(std::begin(other.castling_king_path_), std::end(other.castling_king_path_), castling_king_path_);
  side_ = other.side_;
  game_ply_ = other.game_ply_;
  root_st_ = *other.st_;
  root_st_.previous = nullptr;
  st_ = &root_st_;
  return *this;
}

void Position::set_castling_right(Color c, Square rook_from) {
  const Square kfrom = king_square(c);
  const CastlingSide side = rook_from > kfrom ? KING_SIDE : QUEEN_SIDE;
  const int idx = castling_index(c, side);
  const CastlingRights cr = castling_right(c, side);
  st_->castling_rights |= cr;
  castling_mask_[kfrom] |= cr;
  castling_mask_[rook_from] |= cr;
  castling_rook_[idx] = rook_from;
  const Square kto = castle_king_to(c, kfrom, rook_from);
  const Square rto = castle_rook_to(c, kfrom, rook_from);
  castling_path_[idx] =
      (between_bb(rook_from, rto) | between_bb(kfrom, kto)) & ~(square_bb(kfrom) | square_bb(rook_from));
  castling_king_path_[idx] = between_bb(kfrom, kto);
}

absl::StatusOr<Position> Position::from_fen(absl::string_view fen) {
  std::vector<absl::string_view> f = absl::StrSplit(fen, ' ', absl::SkipEmpty());
  // As Stockfish: the fields after the side to move may be left off from the end; castling and
  // en passant then default to "-", the clocks to 0 and 1.
  if (f.size() < 2 || f.size() > 6)
    return fen_error("field count", absl::StrCat("has ", f.size(),
                                                 " fields; expected 6 (or 2 to 5: placement and side to move, "
                                                 "then castling, en passant and clocks as far as given)"));
  const size_t given = f.size();
  static constexpr absl::string_view kDefaults[6] = {"", "", "-", "-", "0", "1"};
  for (size_t i = given; i < 6; ++i) f.push_back(kDefaults[i]);

  Position pos;
  pos.st_ = &pos.root_st_;
  pos.root_st_ = StateInfo{};
  pos.root_st_.ep_square = SQ_NONE;

  // 1. Piece placement, from rank 8 down.
  std::vector<absl::string_view> ranks = absl::StrSplit(f[0], '/');
  if (ranks.size() != 8) return fen_error("piece placement", absl::StrCat("has ", ranks.size(), " ranks; expected 8"));
  for (int i = 0; i < 8; ++i) {
    const Rank r = Rank(7 - i);
    int file = 0;
    for (char ch : ranks[i]) {
      if (ch >= '1' && ch <= '8') {
        file += ch - '0';
      } else if (const size_t idx = kPieceChars.find(ch); ch != ' ' && idx != absl::string_view::npos) {
        if (file < 8) pos.put_piece(Piece(idx), make_square(File(file), r));
        ++file;
      } else {
        return fen_error("piece placement", absl::StrCat("bad character '", std::string(1, ch), "' in rank ", r + 1));
      }
      if (file > 8) break;
    }
    if (file != 8)
      return fen_error("piece placement", file > 8
                                              ? absl::StrCat("rank ", r + 1, " has more than 8 squares")
                                              : absl::StrCat("rank ", r + 1, " has ", file, " squares; expected 8"));
  }
  for (Color c : {WHITE, BLACK}) {
    const int kings = popcount(pos.pieces(c, KING));
    if (kings != 1)
      return fen_error("piece placement",
                       absl::StrCat(c == WHITE ? "white" : "black", " has ", kings, " kings; expected 1"));
  }
  if (pos.pieces(PAWN) & (rank_bb(RANK_1) | rank_bb(RANK_8)))
    return fen_error("piece placement",
                     absl::StrCat("pawn on ", square_name(lsb(pos.pieces(PAWN) & (rank_bb(RANK_1) | rank_bb(RANK_8)))),
                                  " (pawns cannot stand on the first or last rank)"));

  // 2. Side to move.
  if (f[1] == "w")
    pos.side_ = WHITE;
  else if (f[1] == "b")
    pos.side_ = BLACK;
  else
    return fen_error("side to move", absl::StrCat("'", f[1], "' is not 'w' or 'b'"));

  // 3. Castling: KQkq (outermost rook), or a rook's file letter (X-FEN and Shredder-FEN).
  if (f[2] != "-") {
    if (f[2].size() > 4) return fen_error("castling", absl::StrCat("'", f[2], "' has more than 4 rights"));
    for (char ch : f[2]) {
      const Color c = (ch >= 'a' && ch <= 'z') ? BLACK : WHITE;
      const char up = char(c == BLACK ? ch - 32 : ch);
      const char* who = c == WHITE ? "white" : "black";
      const Square ksq = pos.king_square(c);
      const Bitboard home = rank_bb(relative_rank(c, RANK_1));
      if (!(home & square_bb(ksq)))
        return fen_error("castling", absl::StrCat("right '", std::string(1, ch), "' but the ", who,
                                                  " king is not on its first rank"));
      const Bitboard rooks = pos.pieces(c, ROOK) & home;
      Square rsq = SQ_NONE;
      if (up == 'K' || up == 'Q') {
        const Bitboard side_rooks = rooks & (up == 'K' ? ~(square_bb(ksq) * 2 - 1) : square_bb(ksq) - 1);
        if (!side_rooks)
          return fen_error("castling",
                           absl::StrCat("right '", std::string(1, ch), "' but ", who, " has no rook on the ",
                                        up == 'K' ? "king" : "queen", " side of its king"));
        rsq = up == 'K' ? msb(side_rooks) : lsb(side_rooks);
      } else if (up >= 'A' && up <= 'H') {
        rsq = relative_square(c, make_square(File(up - 'A'), RANK_1));
        if (!(rooks & square_bb(rsq)))
          return fen_error("castling", absl::StrCat("right '", std::string(1, ch), "' but there is no ", who,
                                                    " rook on ", square_name(rsq)));
      } else {
        return fen_error("castling", absl::StrCat("bad character '", std::string(1, ch), "'"));
      }
      const CastlingSide side = rsq > ksq ? KING_SIDE : QUEEN_SIDE;
      if (pos.st_->castling_rights & castling_right(c, side))
        return fen_error("castling",
                         absl::StrCat(who, " has two rights on its ", side == KING_SIDE ? "king" : "queen", " side"));
      pos.set_castling_right(c, rsq);
    }
  }

  // 4. En passant: only a square the last double push passed.
  if (f[3] != "-") {
    const Square ep = parse_square(f[3]);
    if (ep == SQ_NONE) return fen_error("en passant", absl::StrCat("'", f[3], "' is not a square"));
    const Color us = pos.side_, them = ~us;
    if (relative_rank(us, ep) != RANK_6)
      return fen_error("en passant", absl::StrCat(f[3], " is not on the ", us == WHITE ? "6th" : "3rd", " rank"));
    const Square pushed = ep - pawn_push(us);
    if (pos.piece_on(pushed) != make_piece(them, PAWN))
      return fen_error("en passant", absl::StrCat(f[3], " has no ", them == WHITE ? "white" : "black", " pawn on ",
                                                  square_name(pushed), " that could have just moved two squares"));
    if (!pos.empty(ep) || !pos.empty(ep + pawn_push(us)))
      return fen_error("en passant", absl::StrCat(f[3], ": the squares the pawn passed are not empty"));
    // Kept only when a pawn can take: otherwise equal positions would get different keys.
    if (pawn_attacks(them, ep) & pos.pieces(us, PAWN)) pos.st_->ep_square = ep;
  }

  // 5, 6. Clocks.
  int rule50 = 0, fullmove = 1;
  if (!parse_int(f[4], rule50) || rule50 < 0)
    return fen_error("halfmove clock", absl::StrCat("'", f[4], "' is not a non-negative integer"));
  if (!parse_int(f[5], fullmove) || fullmove < 1)
    return fen_error("fullmove number", absl::StrCat("'", f[5], "' is not a positive integer"));
  if (rule50 > 100000 || fullmove > 100000)
    return fen_error(rule50 > 100000 ? "halfmove clock" : "fullmove number", "is out of range (at most 100000)");
  pos.st_->rule50 = rule50;
  pos.game_ply_ = 2 * (fullmove - 1) + (pos.side_ == BLACK);

  if (pos.attackers_to(pos.king_square(~pos.side_)) & pos.pieces(pos.side_))
    return fen_error("side to move",
                     absl::StrCat("the side not to move (", pos.side_ == WHITE ? "black" : "white", ") is in check"));

  pos.st_->checkers = pos.attackers_to(pos.king_square(pos.side_)) & pos.pieces(~pos.side_);
  pos.st_->key = pos.compute_key();
  pos.st_->captured = NO_PIECE;
  pos.st_->previous = nullptr;
  return pos;
}

std::string Position::fen(FenDialect dialect) const {
  std::string s;
  for (int r = RANK_8; r >= RANK_1; --r) {
    int empty_run = 0;
    for (int fl = FILE_A; fl <= FILE_H; ++fl) {
      const Piece pc = piece_on(make_square(File(fl), Rank(r)));
      if (pc == NO_PIECE) {
        ++empty_run;
        continue;
      }
      if (empty_run) s += char('0' + empty_run);
      empty_run = 0;
      s += piece_char(pc);
    }
    if (empty_run) s += char('0' + empty_run);
    if (r > RANK_1) s += '/';
  }
  s += side_ == WHITE ? " w " : " b ";
  bool any = false;
  for (Color c : {WHITE, BLACK})
    for (CastlingSide cs : {KING_SIDE, QUEEN_SIDE}) {
      if (!can_castle(castling_right(c, cs))) continue;
      any = true;
      const Square rsq = castling_rook_[castling_index(c, cs)];
      char ch = char('A' + file_of(rsq));
      if (dialect == FenDialect::kXFen) {
        // KQ when no other rook of ours stands further out on that side of the home rank.
        const Bitboard outside = cs == KING_SIDE ? ~(square_bb(rsq) * 2 - 1) : square_bb(rsq) - 1;
        if (!(outside & pieces(c, ROOK) & rank_bb(relative_rank(c, RANK_1)))) ch = cs == KING_SIDE ? 'K' : 'Q';
      }
      s += c == WHITE ? ch : char(ch + 32);
    }
  if (!any) s += '-';
  s += ' ';
  s += ep_square() == SQ_NONE ? "-" : square_name(ep_square());
  s += ' ' + std::to_string(st_->rule50) + ' ' + std::to_string(fullmove_number());
  return s;
}

Key Position::castling_key(CastlingRights cr) const {
  Key k = 0;
  for (int i = 0; i < 4; ++i)
    if (cr & (1 << i)) k ^= zobrist::castling[castling_rook_[i]];
  return k;
}

Key Position::compute_key() const {
  Key k = side_ == BLACK ? zobrist::side : 0;
  for (Bitboard b = pieces(); b;) {
    const Square s = pop_lsb(b);
    k ^= zobrist::psq[piece_on(s)][s];
  }
  if (ep_square() != SQ_NONE) k ^= zobrist::enpassant[file_of(ep_square())];
  return k ^ castling_key(castling_rights());
}

Bitboard Position::blockers(Color king, Color sliders) const {
  const Square ksq = king_square(king);
  Bitboard snipers = ((rook_attacks(ksq, 0) & pieces(sliders, ROOK, QUEEN)) |
                      (bishop_attacks(ksq, 0) & pieces(sliders, BISHOP, QUEEN)));
  Bitboard result = 0;
  const Bitboard occ = pieces() ^ snipers;
  while (snipers) {
    const Square s = pop_lsb(snipers);
    const Bitboard b = between_bb(ksq, s) & ~square_bb(s) & occ;
    if (b && !more_than_one(b)) result |= b;
  }
  return result;
}

bool Position::gives_check(Move m) const {
  const Color us = side_, them = ~us;
  const Square from = m.from_sq(), to = m.to_sq();
  const Square ksq = king_square(them);
  const Bitboard occ = pieces();

  switch (m.kind()) {
    case NORMAL: {
      const PieceType pt = type_of(piece_on(from));
      const Bitboard after = (occ ^ square_bb(from)) | square_bb(to);
      // Direct check.
      if (pt == PAWN ? bool(pawn_attacks(us, to) & square_bb(ksq)) : bool(attacks_bb(pt, to, after) & square_bb(ksq)))
        return true;
      // Discovered check: the piece leaves a line between one of our sliders and their king.
      return (blockers(them, us) & square_bb(from)) && !aligned(from, to, ksq);
    }
    case PROMOTION: {
      const Bitboard after = (occ ^ square_bb(from)) | square_bb(to);
      if (attacks_bb(m.promotion_type(), to, after) & square_bb(ksq)) return true;
      return (blockers(them, us) & square_bb(from)) && !aligned(from, to, ksq);
    }
    case EN_PASSANT: {
      const Square capsq = make_square(file_of(to), rank_of(from));
      const Bitboard after = (occ ^ square_bb(from) ^ square_bb(capsq)) | square_bb(to);
      return (pawn_attacks(us, to) & square_bb(ksq)) || (rook_attacks(ksq, after) & pieces(us, ROOK, QUEEN)) ||
             (bishop_attacks(ksq, after) & pieces(us, BISHOP, QUEEN));
    }
    case CASTLING: {
      const Square kto = castle_king_to(us, from, to), rto = castle_rook_to(us, from, to);
      const Bitboard after = (occ ^ square_bb(from) ^ square_bb(to)) | square_bb(kto) | square_bb(rto);
      // Only the rook can give check: the king never does, and nothing else moved.
      return rook_attacks(rto, after) & square_bb(ksq);
    }
  }
  return false;
}

void Position::do_move(Move m, StateInfo& ns) {
  ns.key = st_->key;
  ns.castling_rights = st_->castling_rights;
  ns.ep_square = SQ_NONE;
  ns.rule50 = st_->rule50 + 1;
  ns.plies_from_null = st_->plies_from_null + 1;
  ns.previous = st_;
  st_ = &ns;
  ++game_ply_;

  const Color us = side_, them = ~us;
  const Square from = m.from_sq(), to = m.to_sq();
  const Piece pc = piece_on(from);
  Key k = ns.key ^ zobrist::side;
  if (ns.previous->ep_square != SQ_NONE) k ^= zobrist::enpassant[file_of(ns.previous->ep_square)];

  Piece captured = NO_PIECE;
  if (m.kind() == CASTLING) {
    const Piece rook = piece_on(to);
    const Square kto = castle_king_to(us, from, to), rto = castle_rook_to(us, from, to);
    // King and rook squares may overlap (e.g. they swap): lift both before placing either.
    remove_piece(from);
    remove_piece(to);
    put_piece(pc, kto);
    put_piece(rook, rto);
    k ^= zobrist::psq[pc][from] ^ zobrist::psq[pc][kto] ^ zobrist::psq[rook][to] ^ zobrist::psq[rook][rto];
  } else {
    if (m.kind() == EN_PASSANT) {
      const Square capsq = to - pawn_push(us);
      captured = piece_on(capsq);
      remove_piece(capsq);
      k ^= zobrist::psq[captured][capsq];
    } else if ((captured = piece_on(to)) != NO_PIECE) {
      remove_piece(to);
      k ^= zobrist::psq[captured][to];
    }
    move_piece(from, to);
    k ^= zobrist::psq[pc][from] ^ zobrist::psq[pc][to];
    if (captured != NO_PIECE) ns.rule50 = 0;
    if (type_of(pc) == PAWN) {
      ns.rule50 = 0;
      if ((int(to) ^ int(from)) == 16 && (pawn_attacks(us, to - pawn_push(us)) & pieces(them, PAWN))) {
        ns.ep_square = to - pawn_push(us);
        k ^= zobrist::enpassant[file_of(ns.ep_square)];
      } else if (m.kind() == PROMOTION) {
        const Piece promo = make_piece(us, m.promotion_type());
        remove_piece(to);
        put_piece(promo, to);
        k ^= zobrist::psq[pc][to] ^ zobrist::psq[promo][to];
      }
    }
  }

  // Rights go when the king or a castling rook leaves its square, or that rook is taken.
  const CastlingRights lost = ns.castling_rights & (castling_mask_[from] | castling_mask_[to]);
  if (lost) {
    k ^= castling_key(lost);
    ns.castling_rights &= ~lost;
  }

  ns.key = k;
  ns.captured = captured;
  side_ = them;
  ns.checkers = attackers_to(king_square(them)) & pieces(us);
}

void Position::undo_move(Move m) {
  side_ = ~side_;
  const Color us = side_;
  const Square from = m.from_sq(), to = m.to_sq();

  if (m.kind() == CASTLING) {
    const Square kto = castle_king_to(us, from, to), rto = castle_rook_to(us, from, to);
    const Piece king = piece_on(kto), rook = piece_on(rto);
    remove_piece(kto);
    remove_piece(rto);
    put_piece(king, from);
    put_piece(rook, to);
  } else {
    if (m.kind() == PROMOTION) {
      remove_piece(to);
      put_piece(make_piece(us, PAWN), to);
    }
    move_piece(to, from);
    if (st_->captured != NO_PIECE) put_piece(st_->captured, m.kind() == EN_PASSANT ? to - pawn_push(us) : to);
  }
  st_ = st_->previous;
  --game_ply_;
}

void Position::do_null_move(StateInfo& ns) {
  ns = *st_;
  ns.previous = st_;
  st_ = &ns;
  if (ns.ep_square != SQ_NONE) {
    ns.key ^= zobrist::enpassant[file_of(ns.ep_square)];
    ns.ep_square = SQ_NONE;
  }
  ns.key ^= zobrist::side;
  ++ns.rule50;
  ns.plies_from_null = 0;
  ns.captured = NO_PIECE;
  side_ = ~side_;
  ns.checkers = 0;  // a null move is only made when not in check
}

void Position::undo_null_move() {
  st_ = st_->previous;
  side_ = ~side_;
}

}  // namespace c960
