// Rank arithmetic of the point-to-point reduce-scatters (coll/reduce_scatter/).
//
// pairwise: round k = 1 .. P-1, rank r sends its contribution to block r + k
// to rank r + k and receives rank r - k's contribution to block r (mod P):
// over the rounds every other rank's contribution arrives once.
// ring: step s = 0 .. P-2, rank r sends to r + 1 its partial of block
// r - s - 1 and receives from r - 1 the partial of block r - s - 2 (mod P);
// block b's partial starts at rank b + 1 and ends, complete, at rank b.
//
// Pure arithmetic: no MPI, checked by simulation in tests/cpp.
#pragma once

#include "shancoll/pattern/dissemination.h"  // mod_rank

namespace shancoll::pattern {

struct PairwiseRound {
  int to, from;  // to: also the block sent; from: the source of my block's contribution
};

inline PairwiseRound pairwise_round(int size, int rank, int round) {
  return {mod_rank(static_cast<long long>(rank) + round, size),
          mod_rank(static_cast<long long>(rank) - round, size)};
}

struct RingStep {
  int send_block, recv_block;  // to the right neighbour, from the left one
};

inline RingStep ring_reduce_scatter_step(int size, int rank, int step) {
  return {mod_rank(static_cast<long long>(rank) - step - 1, size),
          mod_rank(static_cast<long long>(rank) - step - 2, size)};
}

}  // namespace shancoll::pattern
