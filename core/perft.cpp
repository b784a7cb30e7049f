#include "core/perft.h"

#include <unistd.h>

#include <algorithm>
#include <bit>
#include <mutex>
#include <new>
#include <sys/mman.h>
#include <thread>
#include <type_traits>

#include "core/movegen.h"
#include "core/movegen_impl.h"

namespace c960 {

std::string to_string(NodeCount n) {
  if (n == 0) return "0";
  std::string s;
  while (n) {
    s += char('0' + int(n % 10));
    n /= 10;
  }
  std::reverse(s.begin(), s.end());
  return s;
}

// ---------------------------------------------------------------------------------------------
// PerftHash

PerftHash::PerftHash(size_t megabytes) {
  // A power of two of buckets, so the index is a mask and its bits are key bits.
  const size_t want = megabytes * 1024 * 1024 / sizeof(Bucket);
  buckets_ = want ? size_t(1) << (63 - std::countl_zero(uint64_t(want))) : 0;
  if (!buckets_) return;
  index_bits_ = std::countr_zero(uint64_t(buckets_));
  // More than the machine has would only swap or be killed: refuse it like a failed mapping.
  if (bytes() / sysconf(_SC_PAGESIZE) > size_t(sysconf(_SC_PHYS_PAGES))) {
    buckets_ = 0;
    throw std::bad_alloc();
  }
  // Anonymous pages arrive zeroed, and an empty bucket is all zero, so nothing is written here:
  // each page is faulted in by the first probe or store that reaches it, and the count starts at
  // once whatever the size. Huge pages (where the system has them) spare the TLB on random
  // probes and make those first touches 512 times fewer; they need a 2 MB aligned range, so the
  // mapping is made 2 MB larger and the table starts at its first 2 MB boundary.
  map_bytes_ = bytes() + kHugePage;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    buckets_ = 0;
    throw std::bad_alloc();
  }
  map_ = p;
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(p) + kHugePage - 1) & ~uintptr_t(kHugePage - 1);
  table_ = reinterpret_cast<Bucket*>(aligned);
  madvise(table_, bytes(), MADV_HUGEPAGE);
}

PerftHash::~PerftHash() {
  if (map_) munmap(map_, map_bytes_);
}

void PerftHash::clear() {
  if (!table_) return;
  // Private anonymous pages read back as zero; they are faulted in again as the search reaches them.
  madvise(table_, bytes(), MADV_DONTNEED);
  deep_stores_.store(0, std::memory_order_relaxed);
}

namespace {

// A compact entry: the key above the index bits I, then a depth bit (0: depth 2, 1: depth 3),
// then the count in the I - 1 bits left. The all-zero word is the empty entry, never stored.
struct CompactFormat {
  int index_bits;
  int count_bits() const { return index_bits - 1; }
  bool fits(int depth, uint64_t nodes) const {
    return (depth == 2 || depth == 3) && index_bits >= 8 && nodes >> count_bits() == 0;
  }
  // Everything but the count: the word a match must have above the count bits.
  uint64_t tag(Key key, int depth) const {
    return (key >> index_bits << index_bits) | uint64_t(depth - 2) << count_bits();
  }
  uint64_t count_mask() const { return (uint64_t(1) << count_bits()) - 1; }
};

// The full slot's generation advances every 2^-kGenerationShift table of deep stores; an entry
// kStaleAge generations old (four tables of deep stores later) is stale. Measured on perft 8 of
// 518 with 16 MB: stale after one table lost half the depth-5 hits; after 4 or 16 tables did
// equally well. The generation wraps after 256: a very old entry may pass for a new one, which
// costs only its slot until it is stale again.
constexpr int kGenerationShift = 2;
constexpr int kStaleAge = 16;

}  // namespace

bool PerftHash::probe(Key key, int depth, uint64_t& nodes) const {
  if (!buckets_) return false;
  const Bucket& b = table_[key & (buckets_ - 1)];
  if (depth >= 3) {
    const uint64_t data = b.data.load(std::memory_order_relaxed);
    if ((b.check.load(std::memory_order_relaxed) ^ data) == key && int(data & 0xFF) == depth && data) {
      nodes = data >> 16;
      return true;
    }
    if (depth > 3) return false;
  }
  const CompactFormat f{index_bits_};
  if (f.index_bits < 8) return false;
  const uint64_t tag = f.tag(key, depth);
  for (const std::atomic<uint64_t>& w : b.compact) {
    const uint64_t e = w.load(std::memory_order_relaxed);
    if (e && (e & ~f.count_mask()) == tag) {
      nodes = e & f.count_mask();
      return true;
    }
  }
  return false;
}

bool PerftHash::store_compact(Bucket& b, Key key, int depth, uint64_t nodes) {
  const CompactFormat f{index_bits_};
  if (!f.fits(depth, nodes)) return false;
  const uint64_t e = f.tag(key, depth) | nodes;
  if (!e) return false;
  // Newest first. The victim is the oldest empty word, else the oldest depth-2 entry, else the
  // oldest entry (or a copy of this entry, which a racing thread may have stored meanwhile);
  // the words before it shift down one place.
  uint64_t w[kCompact];
  for (int i = 0; i < kCompact; ++i) w[i] = b.compact[i].load(std::memory_order_relaxed);
  int victim = kCompact - 1;
  const uint64_t shallow_bit = uint64_t(1) << f.count_bits();
  for (int i = kCompact - 1; i >= 0; --i)
    if (w[i] == e) {
      victim = i;
      break;
    }
  if (w[victim] != e) {
    int empty = -1, shallow = -1;
    for (int i = kCompact - 1; i >= 0; --i) {
      if (!w[i] && empty < 0) empty = i;
      if (w[i] && !(w[i] & shallow_bit) && shallow < 0) shallow = i;
    }
    victim = empty >= 0 ? empty : shallow >= 0 ? shallow : kCompact - 1;
  }
  for (int i = victim; i > 0; --i) b.compact[i].store(w[i - 1], std::memory_order_relaxed);
  b.compact[0].store(e, std::memory_order_relaxed);
  return true;
}

bool PerftHash::store_full(Bucket& b, Key key, int depth, uint64_t nodes) {
  if (nodes >> 48) return false;  // too big to fit: rare enough not to cache
  const uint64_t stores = deep_stores_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t gen = (stores >> std::max(0, index_bits_ - kGenerationShift)) & 0xFF;
  const uint64_t old = b.data.load(std::memory_order_relaxed);
  const Key old_key = b.check.load(std::memory_order_relaxed) ^ old;
  const bool stale = int((gen - (old >> 8)) & 0xFF) >= kStaleAge;
  if (old && !stale) {
    if (int(old & 0xFF) > depth) return false;  // the deeper count stays
    // A depth-3 count that gives way moves to the compact entries (measured: with 16 MB, perft 8
    // of 518 went from 13.5 to 10.1 s). The pair's key is read as a probe reads it, so a torn
    // pair moves only under a key whose bits lead here: one that a probe here would have matched.
    if (old_key != key && (old_key & (buckets_ - 1)) == (key & (buckets_ - 1)))
      store_compact(b, old_key, int(old & 0xFF), old >> 16);
  }
  const uint64_t data = nodes << 16 | gen << 8 | uint64_t(depth);
  b.check.store(key ^ data, std::memory_order_relaxed);
  b.data.store(data, std::memory_order_relaxed);
  return true;
}

void PerftHash::store(Key key, int depth, uint64_t nodes) {
  if (!buckets_) return;
  Bucket& b = table_[key & (buckets_ - 1)];
  if (depth >= 3 && store_full(b, key, depth, nodes)) return;
  store_compact(b, key, depth, nodes);
}

// ---------------------------------------------------------------------------------------------
// The copy-make board of the fast perft: bitboards, rights, en passant, checkers and key, in
// 112 bytes; no mailbox, no undo information. Castling geometry never changes during a search,
// so it lives once in CastleInfo.

namespace {

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

void init_board(const Position& pos, const zobrist::Keys& z, CastleInfo& ci, Board& b) {
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
inline void make(const Board& b, Board& nb, Square from, Square to) {
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
inline void make_promotion(const Board& b, Board& nb, Square from, Square to, PieceType promo) {
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
inline void make_en_passant(const Board& b, Board& nb, Square from, Square to) {
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
inline void make_castle(const Board& b, Board& nb, Square kfrom, Square rfrom) {
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
  void child(Make&& make_child) {
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
      child([&](auto h, Board& nb) { make<Us, Pt, decltype(h)::value, false>(b, nb, from, s); });
    }
    for (Bitboard captures = to & b.pieces(~Us); captures;) {
      const Square s = pop_lsb(captures);
      child([&](auto h, Board& nb) { make<Us, Pt, decltype(h)::value, true>(b, nb, from, s); });
    }
  }
  // Pushes (straight ahead) never capture; diagonal steps always do.
  template <Direction D>
  void pawn_targets(Bitboard to) {
    constexpr bool kPush2 = D == Direction(2 * pawn_push(Us));
    constexpr bool kCapture = D != pawn_push(Us) && !kPush2;
    while (to) {
      const Square s = pop_lsb(to);
      child([&](auto h, Board& nb) { make<Us, PAWN, decltype(h)::value, kCapture, kPush2>(b, nb, s - D, s); });
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
      child([&](auto h, Board& nb) { make_promotion<Us, decltype(h)::value>(b, nb, from, to, pt); });
  }
  void en_passant(Square from, Square to) {
    child([&](auto h, Board& nb) { make_en_passant<Us, decltype(h)::value>(b, nb, from, to); });
  }
  void castle(Square k, Square r) {
    child([&](auto h, Board& nb) { make_castle<Us, decltype(h)::value>(b, nb, k, r); });
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

template <Sliders S>
uint64_t perft_dispatch(const Board& b, Color us, int depth, PerftHash* hash) {
  const bool use_hash = hash && hash->bytes() && depth >= kMinHashDepth;
  if (us == WHITE)
    return use_hash ? perft_board<WHITE, true, S>(b, depth, hash) : perft_board<WHITE, false, S>(b, depth, hash);
  return use_hash ? perft_board<BLACK, true, S>(b, depth, hash) : perft_board<BLACK, false, S>(b, depth, hash);
}

}  // namespace

uint64_t perft(const Position& pos, int depth, PerftHash* hash, const zobrist::Keys* keys) {
  CastleInfo ci;
  Board b;
  init_board(pos, keys ? *keys : zobrist::current_keys(), ci, b);
  if (depth <= 0) return 1;
  // The slider method is chosen here, once per call, not per lookup.
  if (sliders() == Sliders::Pext) return perft_dispatch<Sliders::Pext>(b, pos.side_to_move(), depth, hash);
  return perft_dispatch<Sliders::Magic>(b, pos.side_to_move(), depth, hash);
}

uint64_t perft_reference(Position& pos, int depth) {
  if (depth <= 0) return 1;
  MoveList list;
  generate_legal(pos, list);
  if (depth == 1) return uint64_t(list.size());
  uint64_t nodes = 0;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    nodes += perft_reference(pos, depth - 1);
    pos.undo_move(m);
  }
  return nodes;
}

std::vector<DivideEntry> divide(const Position& root, int depth, PerftHash* hash, const zobrist::Keys* keys) {
  Position pos = root;
  MoveList list;
  generate_legal(pos, list);
  std::vector<DivideEntry> out;
  StateInfo st;
  for (Move m : list) {
    pos.do_move(m, st);
    out.push_back({m, perft(pos, depth - 1, hash, keys)});
    pos.undo_move(m);
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Parallel perft: roots are expanded to tasks below the root; threads take tasks, largest first.

std::vector<PerftResult> perft_parallel(const std::vector<Position>& roots, int depth, const PerftOptions& options,
                                        PerftHash* hash) {
  std::vector<PerftResult> results(roots.size());
  if (depth <= 0) {
    for (PerftResult& r : results) r.nodes = 1;
    return results;
  }

  struct Task {
    size_t root;
    int root_move;  // index into the root's divide
    Position pos;   // after one or two plies
    int depth;      // remaining
    uint64_t estimate = 0;
    uint64_t nodes = 0;
  };
  const int threads = std::max(1, options.threads);
  // Two plies when one ply would leave too few tasks to keep every thread busy to the end.
  const bool two_plies = depth >= 3 && roots.size() * 20 < size_t(threads) * 64;
  std::vector<Task> tasks;
  for (size_t r = 0; r < roots.size(); ++r) {
    Position pos = roots[r];
    MoveList list;
    generate_legal(pos, list);
    for (int i = 0; i < list.size(); ++i) {
      const Move m = list.moves[i];
      results[r].divide.push_back({m, 0});
      StateInfo st;
      pos.do_move(m, st);
      if (two_plies) {
        MoveList replies;
        generate_legal(pos, replies);
        for (Move m2 : replies) {
          StateInfo st2;
          pos.do_move(m2, st2);
          tasks.push_back({r, i, pos, depth - 2});
          pos.undo_move(m2);
        }
      } else {
        tasks.push_back({r, i, pos, depth - 1});
      }
      pos.undo_move(m);
    }
  }
  // Largest first: a shallow perft predicts the size of a subtree well enough. Roots stay
  // together (largest root first, then its largest tasks), so threads share one root's
  // transpositions in the hash table.
  std::vector<uint64_t> root_estimate(roots.size(), 0);
  if (depth >= 4 && threads > 1) {
    for (Task& t : tasks) root_estimate[t.root] += t.estimate = perft(t.pos, std::min(t.depth, 2));
    std::stable_sort(tasks.begin(), tasks.end(), [&](const Task& a, const Task& b) {
      if (a.root != b.root)
        return root_estimate[a.root] != root_estimate[b.root] ? root_estimate[a.root] > root_estimate[b.root]
                                                              : a.root < b.root;
      return a.estimate > b.estimate;
    });
  }

  std::atomic<size_t> next{0};
  std::mutex progress_mu;
  size_t done = 0;
  NodeCount done_nodes = 0;
  auto work = [&] {
    for (size_t i;
         !(options.stop && options.stop()) && (i = next.fetch_add(1, std::memory_order_relaxed)) < tasks.size();) {
      tasks[i].nodes = perft(tasks[i].pos, tasks[i].depth, hash);
      if (options.progress) {
        std::lock_guard lock(progress_mu);
        done_nodes += tasks[i].nodes;
        options.progress(++done, tasks.size(), done_nodes);
      }
    }
  };
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(work);
  work();
  for (std::thread& t : pool) t.join();

  for (const Task& t : tasks) {
    results[t.root].divide[t.root_move].nodes += t.nodes;
    results[t.root].nodes += t.nodes;
  }
  return results;
}

}  // namespace c960
