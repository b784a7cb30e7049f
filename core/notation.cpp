#include "core/notation.h"

#include "absl/strings/str_cat.h"
#include "core/movegen.h"

namespace c960 {
namespace {
constexpr absl::string_view kPromoChars = "  nbrq";
constexpr absl::string_view kSanPieces = "  NBRQK";
}  // namespace

std::string to_uci(Move m, CastlingNotation cn) {
  if (m == Move::none()) return "0000";
  Square to = m.to_sq();
  if (m.kind() == CASTLING && cn == CastlingNotation::kKingDestination) {
    const Color c = rank_of(m.from_sq()) == RANK_1 ? WHITE : BLACK;
    const Square kto = Position::castle_king_to(c, m.from_sq(), to);
    if (kto != m.from_sq()) to = kto;
  }
  std::string s = square_name(m.from_sq()) + square_name(to);
  if (m.kind() == PROMOTION) s += kPromoChars[m.promotion_type()];
  return s;
}

absl::StatusOr<Move> parse_uci(const Position& pos, absl::string_view uci) {
  MoveList list;
  generate_legal(pos, list);
  for (Move m : list)
    if (to_uci(m) == uci) return m;
  // The classical form, unless it names a plain king move.
  for (Move m : list)
    if (m.kind() == CASTLING && to_uci(m, CastlingNotation::kKingDestination) == uci) return m;
  if (uci.size() < 4 || uci.size() > 5 || parse_square(uci.substr(0, 2)) == SQ_NONE ||
      parse_square(uci.substr(2, 2)) == SQ_NONE || (uci.size() == 5 && kPromoChars.find(uci[4]) < 2))
    return absl::InvalidArgumentError(absl::StrCat("move '", uci, "' is not UCI notation (e.g. e2e4, e7e8q)"));
  return absl::InvalidArgumentError(absl::StrCat("move '", uci, "' is not legal in ", pos.fen()));
}

std::string to_san(const Position& pos, Move m) {
  std::string san;
  const Square from = m.from_sq(), to = m.to_sq();
  if (m.kind() == CASTLING) {
    san = to > from ? "O-O" : "O-O-O";
  } else {
    const PieceType pt = type_of(pos.piece_on(from));
    const bool capture = m.kind() == EN_PASSANT || !pos.empty(to);
    if (pt == PAWN) {
      if (capture) san += char('a' + file_of(from));
    } else {
      san += kSanPieces[pt];
      // Disambiguate by file, else by rank, else by both.
      MoveList list;
      generate_legal(pos, list);
      bool others = false, same_file = false, same_rank = false;
      for (Move o : list) {
        if (o == m || o.to_sq() != to || o.kind() == CASTLING || type_of(pos.piece_on(o.from_sq())) != pt) continue;
        others = true;
        same_file |= file_of(o.from_sq()) == file_of(from);
        same_rank |= rank_of(o.from_sq()) == rank_of(from);
      }
      if (others) {
        if (!same_file)
          san += char('a' + file_of(from));
        else if (!same_rank)
          san += char('1' + rank_of(from));
        else
          san += square_name(from);
      }
    }
    if (capture) san += 'x';
    san += square_name(to);
    if (m.kind() == PROMOTION) san += {'=', kSanPieces[m.promotion_type()]};
  }
  if (pos.gives_check(m)) {
    Position after = pos;
    StateInfo st;
    after.do_move(m, st);
    san += has_legal_move(after) ? '+' : '#';
  }
  return san;
}

absl::StatusOr<Move> parse_san(const Position& pos, absl::string_view input) {
  absl::string_view s = input;
  while (!s.empty() && absl::string_view("+#!?").find(s.back()) != absl::string_view::npos) s.remove_suffix(1);
  const auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat("SAN '", input, "': ", why));
  };
  MoveList list;
  generate_legal(pos, list);

  if (s == "O-O" || s == "0-0" || s == "O-O-O" || s == "0-0-0") {
    const bool king_side = s.size() == 3;
    for (Move m : list)
      if (m.kind() == CASTLING && (m.to_sq() > m.from_sq()) == king_side) return m;
    return bad(absl::StrCat("castling is not legal in ", pos.fen()));
  }

  PieceType pt = PAWN, promo = NO_PIECE_TYPE;
  if (!s.empty() && kSanPieces.find(s.front()) != absl::string_view::npos && s.front() != ' ') {
    pt = PieceType(kSanPieces.find(s.front()));
    s.remove_prefix(1);
  }
  if (s.size() >= 2 && kSanPieces.find(s.back()) != absl::string_view::npos && s.back() != ' ' && s.back() != 'K') {
    promo = PieceType(kSanPieces.find(s.back()));
    s.remove_suffix(1);
    if (!s.empty() && s.back() == '=') s.remove_suffix(1);
  }
  if (s.size() < 2) return bad("no destination square");
  const Square to = parse_square(s.substr(s.size() - 2));
  if (to == SQ_NONE) return bad("no destination square");
  s.remove_suffix(2);
  if (!s.empty() && s.back() == 'x') s.remove_suffix(1);
  int from_file = -1, from_rank = -1;
  for (char c : s) {
    if (c >= 'a' && c <= 'h')
      from_file = c - 'a';
    else if (c >= '1' && c <= '8')
      from_rank = c - '1';
    else
      return bad(absl::StrCat("unexpected '", std::string(1, c), "'"));
  }

  Move found = Move::none();
  for (Move m : list) {
    if (m.kind() == CASTLING || m.to_sq() != to || type_of(pos.piece_on(m.from_sq())) != pt) continue;
    if ((from_file >= 0 && file_of(m.from_sq()) != from_file) || (from_rank >= 0 && rank_of(m.from_sq()) != from_rank))
      continue;
    if ((m.kind() == PROMOTION ? m.promotion_type() : NO_PIECE_TYPE) != promo) continue;
    if (found) return bad("ambiguous: more than one legal move matches");
    found = m;
  }
  if (!found) return bad(absl::StrCat("no legal move matches in ", pos.fen()));
  return found;
}

}  // namespace c960
