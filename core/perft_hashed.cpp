// Hashed perft: the instantiations of perft_board with a table, in a file of their own so that a
// profile-guided build compiles them without the profile (core/perft_board.h says why).
#include "core/perft_board.h"

namespace c960::perft_detail {

template <Sliders S>
uint64_t perft_hashed(const Board& b, Color us, int depth, PerftHash* hash) {
  return us == WHITE ? perft_board<WHITE, true, S>(b, depth, hash) : perft_board<BLACK, true, S>(b, depth, hash);
}

template uint64_t perft_hashed<Sliders::Pext>(const Board&, Color, int, PerftHash*);
template uint64_t perft_hashed<Sliders::Magic>(const Board&, Color, int, PerftHash*);

}  // namespace c960::perft_detail
