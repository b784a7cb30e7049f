// The fast perft's copy-make board and its recursion (perft_board), shared by two translation
// units: core/perft.cpp counts without a table, core/perft_hashed.cpp with one. The hashed
// instantiations are compiled apart, without the profile of a profile-guided build (see
// core/CMakeLists.txt): trained on the whole core, the profile made hashed perft 8 of 518 twice
// as slow as a build without it, and 33% slower even with the hot helpers always inlined, while
// the count without a table gains from it. Internal to the core: only those two files include it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/movegen.h"
#include "core/movegen_impl.h"
#include "core/perft.h"

namespace c960::perft_detail {

// The copy-make board of the fast perft: bitboards, rights, en passant, checkers and key, in
// 112 bytes; no mailbox, no undo information. Castling geometry never changes during a search,
// so it lives once in CastleInfo.

// What never changes during one perft: the castling geometry, and the Zobrist keys it counts
// with (a copy of the chosen set, next to the castling keys, so that key updates read one
// structure whichever set it is).
struct CastleInfo {
  CastlingRights mask[SQUARE_NB];
  Square rook[4];
  Bitboard path[4], king_path[4];
  Key key[CASTLING_RIGHT_NB];  // Zobrist key of each set of rights
  Key psq[PIECE_NB][SQUARE_NB];
  Key enpassant[FILE_NB];
  Key side;
};

class Board {
 public:
  Bitboard pieces() const { return by_type[ALL_PIECES]; }
  Bitboard pieces(Color c) const { return by_color[c]; }
  Bitboard pieces(Color c, PieceType pt) const { return by_color[c] & by_type[pt]; }
  Bitboard pieces(Color c, PieceType a, PieceType b) const { return by_color[c] & (by_type[a] | by_type[b]); }
  Square king_square(Color c) const { return lsb(pieces(c, KING)); }
  Square ep_square() const { return ep; }
  CastlingRights castling_rights() const { return rights; }
  Bitboard castling_path(int i) const { return ci->path[i]; }
  Bitboard castling_king_path(int i) const { return ci->king_path[i]; }
  Square castling_rook_square(int i) const { return ci->rook[i]; }

  Bitboard by_type[KING + 1];  // ALL_PIECES, then PAWN..KING
  Bitboard by_color[COLOR_NB];
  Key key;
  const CastleInfo* ci;
  CastlingRights rights;
  Square ep;
};

inline void init_board(const Position& pos, const zobrist::Keys& z, CastleInfo& ci, Board& b) {
  std::copy(&z.psq[0][0], &z.psq[0][0] + size_t(PIECE_NB) * size_t(SQUARE_NB), &ci.psq[0][0]);
  std::copy(z.enpassant, z.enpassant + FILE_NB, ci.enpassant);
  ci.side = z.side;
  for (int s = 0; s < SQUARE_NB; ++s) ci.mask[s] = NO_CASTLING;
  for (int i = 0; i < 4; ++i) {
    ci.rook[i] = pos.castling_rook_square(i);
    ci.path[i] = pos.castling_path(i);
    ci.king_path[i] = pos.castling_king_path(i);
  }
  for (int i = 0; i < 4; ++i)
    if (pos.can_castle(CastlingRights(1 << i))) {
      const Color c = Color(i / 2);
      ci.mask[pos.king_square(c)] |= CastlingRights(1 << i);
      ci.mask[ci.rook[i]] |= CastlingRights(1 << i);
    }
  for (int cr = 0; cr < CASTLING_RIGHT_NB; ++cr) {
    ci.key[cr] = 0;
    for (int i = 0; i < 4; ++i)
      if ((cr & (1 << i)) && pos.can_castle(CastlingRights(1 << i))) ci.key[cr] ^= z.castling[ci.rook[i]];
  }
  b.by_type[0] = pos.pieces();
  for (PieceType pt = PAWN; pt <= KING; ++pt) b.by_type[pt] = pos.pieces(pt);
  b.by_color[WHITE] = pos.pieces(WHITE);
  b.by_color[BLACK] = pos.pieces(BLACK);
  // The root's key in this set (the position's own key is in the global one).
  Key k = pos.side_to_move() == BLACK ? z.side : 0;
  for (Bitboard occ = pos.pieces(); occ;) {
    const Square sq = pop_lsb(occ);
    k ^= z.psq[pos.piece_on(sq)][sq];
  }
  if (pos.ep_square() != SQ_NONE) k ^= z.enpassant[file_of(pos.ep_square())];
  b.key = k ^ ci.key[pos.castling_rights()];
  b.ci = &ci;
  b.rights = pos.castling_rights();
  b.ep = pos.ep_square();
}

// The hashed count of b (depth >= kMinHashDepth, hash not empty): core/perft_hashed.cpp.
template <Sliders S>
uint64_t perft_hashed(const Board& b, Color us, int depth, PerftHash* hash);

// Internal linkage: each of the two files has its own copy, compiled with its own options.
namespace {

// The captured piece's type, for the key (NO_PIECE_TYPE if `to` is empty).
template <Color Them>
inline PieceType captured_type(const Board& b, Bitboard tb) {
  if (!(b.by_color[Them] & tb)) return NO_PIECE_TYPE;
  int pt = PAWN;
  while (!(b.by_type[pt] & tb)) ++pt;
  return PieceType(pt);
}

// Every field of the child is written once from the parent's, never copied and patched: the
// patching reads back fresh stores, which costs more than the arithmetic.
// KeepsRights: the move cannot change the castling rights (see make()).
template <Color Us, bool Hash, bool KeepsRights = false>
inline void finish(const Board& b, Board& nb, Square from, Square to, Key key_delta) {
  if constexpr (KeepsRights) {
    nb.rights = b.rights;
  } else {
    const CastlingRights lost = b.rights & (b.ci->mask[from] | b.ci->mask[to]);
    nb.rights = CastlingRights(b.rights ^ lost);
  }
  nb.ci = b.ci;
  if constexpr (Hash) {
    Key k = b.key ^ key_delta ^ b.ci->side ^ b.ci->key[b.rights] ^ b.ci->key[nb.rights];
    if (b.ep != SQ_NONE) k ^= b.ci->enpassant[file_of(b.ep)];
    if (nb.ep != SQ_NONE) k ^= b.ci->enpassant[file_of(nb.ep)];
    nb.key = k;
  }
  // Without Hash the child's key is left unset: such children are not looked up, nor their
  // children, and nothing reads it.
}

// Piece types PAWN..KING of the child: `clear` removed from every type, then `moved_toggle`
// toggled in Moved and `added` set in `added_type`.
template <PieceType Moved>
inline void set_types(const Board& b, Board& nb, Bitboard clear, Bitboard moved_toggle, PieceType added_type,
                      Bitboard added) {
  for (int pt = PAWN; pt <= KING; ++pt)
    nb.by_type[pt] = (b.by_type[pt] & ~clear) ^ (pt == Moved ? moved_toggle : 0) ^ (pt == added_type ? added : 0);
}

// A normal move (not a promotion, en passant or castle) of a piece of type Pt; Capture says
// whether `to` holds an enemy piece (a quiet move leaves the other piece types as they are).
// Push2 (pawns): 1 a double push, 0 not one, 2 either (a pinned pawn's move).
template <Color Us, PieceType Pt, bool Hash, bool Capture, int Push2 = 2>
[[gnu::always_inline]] inline void make(const Board& b, Board& nb, Square from, Square to) {
  const Bitboard fb = square_bb(from), tb = square_bb(to);
  Key delta = 0;
  if constexpr (Hash) {
    delta = b.ci->psq[make_piece(Us, Pt)][from] ^ b.ci->psq[make_piece(Us, Pt)][to];
    if constexpr (Capture) delta ^= b.ci->psq[make_piece(~Us, captured_type<~Us>(b, tb))][to];
  }
  if constexpr (Capture) {
    set_types<Pt>(b, nb, tb, fb | tb, NO_PIECE_TYPE, 0);
    nb.by_type[ALL_PIECES] = b.by_type[ALL_PIECES] ^ fb;
    nb.by_color[~Us] = b.by_color[~Us] ^ tb;
  } else {
    set_types<Pt>(b, nb, 0, fb | tb, NO_PIECE_TYPE, 0);
    nb.by_type[ALL_PIECES] = b.by_type[ALL_PIECES] ^ (fb | tb);
    nb.by_color[~Us] = b.by_color[~Us];
  }
  nb.by_color[Us] = b.by_color[Us] ^ (fb | tb);
  nb.ep = SQ_NONE;
  if constexpr (Pt == PAWN && Push2 != 0)
    if ((Push2 == 1 || (int(from) ^ int(to)) == 16) && (pawn_attacks(Us, to - pawn_push(Us)) & b.pieces(~Us, PAWN)))
      nb.ep = to - pawn_push(Us);
  // A right is lost when its king or rook leaves its square or is captured there. A quiet move
  // of any other piece changes none: it leaves a square that no king or rook with a right holds,
  // and lands on an empty one, which a king or rook with a right would occupy.
  finish<Us, Hash, !Capture && Pt != KING && Pt != ROOK>(b, nb, from, to, delta);
}

template <Color Us, bool Hash>
[[gnu::always_inline]] inline void make_promotion(const Board& b, Board& nb, Square from, Square to, PieceType promo) {
  const Bitboard fb = square_bb(from), tb = square_bb(to);
  Key delta = 0;
  if constexpr (Hash) {
    delta = b.ci->psq[make_piece(Us, PAWN)][from] ^ b.ci->psq[make_piece(Us, promo)][to];
    if (const PieceType cap = captured_type<~Us>(b, tb)) delta ^= b.ci->psq[make_piece(~Us, cap)][to];
  }
  set_types<PAWN>(b, nb, tb, fb, promo, tb);
  nb.by_type[ALL_PIECES] = (b.by_type[ALL_PIECES] ^ fb) | tb;
  nb.by_color[Us] = b.by_color[Us] ^ (fb | tb);
  nb.by_color[~Us] = b.by_color[~Us] & ~tb;
  nb.ep = SQ_NONE;
  finish<Us, Hash>(b, nb, from, to, delta);
}

template <Color Us, bool Hash>
[[gnu::always_inline]] inline void make_en_passant(const Board& b, Board& nb, Square from, Square to) {
  const Square capsq = to - pawn_push(Us);
  const Bitboard ft = square_bb(from) | square_bb(to), cb = square_bb(capsq);
  Key delta = 0;
  if constexpr (Hash)
    delta = b.ci->psq[make_piece(Us, PAWN)][from] ^ b.ci->psq[make_piece(Us, PAWN)][to] ^
            b.ci->psq[make_piece(~Us, PAWN)][capsq];
  set_types<PAWN>(b, nb, 0, ft | cb, NO_PIECE_TYPE, 0);
  nb.by_type[ALL_PIECES] = b.by_type[ALL_PIECES] ^ ft ^ cb;
  nb.by_color[Us] = b.by_color[Us] ^ ft;
  nb.by_color[~Us] = b.by_color[~Us] ^ cb;
  nb.ep = SQ_NONE;
  finish<Us, Hash>(b, nb, from, to, delta);
}

template <Color Us, bool Hash>
[[gnu::always_inline]] inline void make_castle(const Board& b, Board& nb, Square kfrom, Square rfrom) {
  const Square kto = Position::castle_king_to(Us, kfrom, rfrom), rto = Position::castle_rook_to(Us, kfrom, rfrom);
  // King and rook squares may overlap: lift both, then place both.
  const Bitboard lift = square_bb(kfrom) | square_bb(rfrom), place = square_bb(kto) | square_bb(rto);
  Key delta = 0;
  if constexpr (Hash)
    delta = b.ci->psq[make_piece(Us, KING)][kfrom] ^ b.ci->psq[make_piece(Us, KING)][kto] ^
            b.ci->psq[make_piece(Us, ROOK)][rfrom] ^ b.ci->psq[make_piece(Us, ROOK)][rto];
  set_types<KING>(b, nb, 0, square_bb(kfrom) ^ square_bb(kto), ROOK, square_bb(rfrom) ^ square_bb(rto));
  nb.by_type[ALL_PIECES] = (b.by_type[ALL_PIECES] & ~lift) | place;
  nb.by_color[Us] = (b.by_color[Us] & ~lift) | place;
  nb.by_color[~Us] = b.by_color[~Us];
  nb.ep = SQ_NONE;
  finish<Us, Hash>(b, nb, kfrom, rfrom, delta);
}

template <Color Us, bool Hash, Sliders S>
uint64_t perft_board(const Board& b, int depth, PerftHash* hash);

// Depth 1 is counted faster than a probe (a cache miss) returns it; depth 2 already pays
// (measured: perft 7 of 518 with 256 MB, 0.86 s against 1.34 s with depth 3 and up). Hashing
// depth 1 as well, prefetched, still lost: perft 8 of 518 took 13 s against 11 with 256 MB,
// 20 s against 11 with 2 GB.
constexpr int kMinHashDepth = 2;

// Makes every move it is handed and adds the perft of the result; children at depth 1, and
// children that are looked up in the table, are only made here, into `children`, and walked
// afterwards by perft_board.
template <Color Us, bool Hash, Sliders S>
struct RecurseSink {
  static constexpr bool kStopEarly = false;
  const Board& b;
  int depth;  // of the children
  PerftHash* hash;
  Board* children = nullptr;
  int child_count = 0;
  uint64_t n = 0;

  // Children too shallow to be looked up skip their key updates, and so do their children.
  // Children that are looked up are all made first, each prefetching its bucket, and walked
  // afterwards: the probes then find their buckets in cache instead of waiting for memory.
  template <class Make>
  [[gnu::always_inline]] void child(Make&& make_child) {
    if (depth == 1) {
      make_child(std::integral_constant<bool, false>{}, children[child_count++]);
      return;
    }
    if (!Hash || depth < kMinHashDepth) {
      Board nb;
      make_child(std::integral_constant<bool, false>{}, nb);
      n += perft_board<~Us, false, S>(nb, depth, hash);
    } else {
      Board& nb = children[child_count++];
      make_child(std::integral_constant<bool, Hash>{}, nb);
      hash->prefetch(nb.key);
    }
  }

  template <PieceType Pt>
  void targets(Square from, Bitboard to) {
    for (Bitboard quiet = to & ~b.pieces(~Us); quiet;) {
      const Square s = pop_lsb(quiet);
      child([&](auto h, Board& nb)
                __attribute__((always_inline)) { make<Us, Pt, decltype(h)::value, false>(b, nb, from, s); });
    }
    for (Bitboard captures = to & b.pieces(~Us); captures;) {
      const Square s = pop_lsb(captures);
      child([&](auto h, Board& nb)
                __attribute__((always_inline)) { make<Us, Pt, decltype(h)::value, true>(b, nb, from, s); });
    }
  }
  // Pushes (straight ahead) never capture; diagonal steps always do.
  template <Direction D>
  void pawn_targets(Bitboard to) {
    constexpr bool kPush2 = D == Direction(2 * pawn_push(Us));
    constexpr bool kCapture = D != pawn_push(Us) && !kPush2;
    while (to) {
      const Square s = pop_lsb(to);
      child([&](auto h, Board& nb) __attribute__((always_inline)) {
        make<Us, PAWN, decltype(h)::value, kCapture, kPush2>(b, nb, s - D, s);
      });
    }
  }
  template <Direction D>
  void promotions(Bitboard to) {
    while (to) {
      const Square s = pop_lsb(to);
      promote(s - D, s);
    }
  }
  void promotion_targets(Square from, Bitboard to) {
    while (to) promote(from, pop_lsb(to));
  }
  void promote(Square from, Square to) {
    for (PieceType pt : {QUEEN, ROOK, BISHOP, KNIGHT})
      child([&](auto h, Board& nb)
                __attribute__((always_inline)) { make_promotion<Us, decltype(h)::value>(b, nb, from, to, pt); });
  }
  void en_passant(Square from, Square to) {
    child([&](auto h, Board& nb)
              __attribute__((always_inline)) { make_en_passant<Us, decltype(h)::value>(b, nb, from, to); });
  }
  void castle(Square k, Square r) {
    child([&](auto h, Board& nb) __attribute__((always_inline)) { make_castle<Us, decltype(h)::value>(b, nb, k, r); });
  }
  bool done() const { return false; }
};

template <Color Us, bool Hash, Sliders S>
uint64_t perft_board(const Board& b, int depth, PerftHash* hash) {
  // Bulk counting: the last ply is counted from target sets, never made.
  if (depth == 1) {
    movegen::CountSink cs;
    movegen::generate<Us, S>(b, cs);
    return cs.n;
  }
  uint64_t cached;
  if constexpr (Hash)
    if (hash->probe(b.key, depth, cached)) return cached;
  RecurseSink<Us, Hash, S> rs{b, depth - 1, hash};
  if (depth == 2) {
    // All children first, then their counts: one copy of the counting code, hot in cache.
    Board leaves[MAX_MOVES];
    rs.children = leaves;
    movegen::generate<Us, S>(b, rs);
    // Locals, not the sink's fields: the loop then keeps them in registers.
    const int count = rs.child_count;
    uint64_t n = rs.n;
    for (int i = 0; i < count; ++i) {
      movegen::CountSink cs;
      movegen::generate<~Us, S>(leaves[i], cs);
      n += cs.n;
    }
    rs.n = n;
  } else if (Hash && depth - 1 >= kMinHashDepth) {
    Board children[MAX_MOVES];
    rs.children = children;
    movegen::generate<Us, S>(b, rs);
    for (int i = 0; i < rs.child_count; ++i) rs.n += perft_board<~Us, Hash, S>(children[i], depth - 1, hash);
  } else {
    movegen::generate<Us, S>(b, rs);
  }
  if constexpr (Hash) hash->store(b.key, depth, rs.n);
  return rs.n;
}

}  // namespace

}  // namespace c960::perft_detail
