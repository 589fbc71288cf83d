// Recursive doubling pattern for any P, with interleaved folding.
//
// Let 2^k be the largest power of two <= P and q = P - 2^k. The first 2q ranks
// pair up (2i, 2i+1): the even rank is an "extra" rank that folds into its odd
// partner: it sends its block to 2i+1 before the exchange and receives the
// full result from it afterwards. The 2^k remaining "core" ranks get virtual
// ranks v: rank 2i+1 -> i (i < q), rank r >= 2q -> r - q. Core virtual rank v
// stands for the blocks [first_block(v), last_block(v)] (two blocks when it
// absorbed an extra rank, else one), so a group of consecutive virtual ranks
// stands for a *contiguous* range of blocks in rank order: every exchange is
// one contiguous range (one message when blocks are packed in rank order).
// Folding neighbours (rather than the q highest ranks into the lowest) also
// keeps fold partners on the same node under consecutive rank placement.
//
// At step s (0 <= s < k) core v exchanges with v ^ 2^s: it sends the blocks
// of its group of 2^s virtual ranks and receives those of the partner group.
//
// Pure arithmetic: no MPI, unit-tested by simulation in tests/cpp.
#pragma once

namespace shancoll::pattern {

struct BlockRange {
  int first = 0;  // first block (rank order)
  int count = 0;  // number of consecutive blocks
};

struct RecursiveDoubling {
  int rank = 0;
  int size = 1;
  int pof2 = 1;    // largest power of two <= size
  int rounds = 0;  // log2(pof2): exchange steps among the core ranks
  int extra = 0;   // q = size - pof2 ranks fold into partners

  RecursiveDoubling(int rank_, int size_) : rank(rank_), size(size_) {
    while (2LL * pof2 <= size) {
      pof2 *= 2;
      ++rounds;
    }
    extra = size - pof2;
  }

  // An extra rank only folds in and receives the result at the end.
  bool is_extra() const { return rank < 2 * extra && rank % 2 == 0; }
  // The fold partner (-1 if none): the odd rank for an extra, and vice versa.
  int fold_partner() const {
    if (rank >= 2 * extra) return -1;
    return rank % 2 == 0 ? rank + 1 : rank - 1;
  }
  // Virtual rank among the core ranks (-1 for an extra rank).
  int vrank() const {
    if (is_extra()) return -1;
    return rank < 2 * extra ? rank / 2 : rank - extra;
  }
  int real_rank(int v) const { return v < extra ? 2 * v + 1 : v + extra; }
  int first_block(int v) const { return v < extra ? 2 * v : v + extra; }
  int last_block(int v) const { return v < extra ? 2 * v + 1 : v + extra; }

  // Core ranks only: the partner at `step`, and the block ranges exchanged.
  int peer(int step) const { return real_rank(vrank() ^ (1 << step)); }
  BlockRange send_blocks(int step) const { return group_blocks(vrank(), step); }
  BlockRange recv_blocks(int step) const { return group_blocks(vrank() ^ (1 << step), step); }

  // Blocks of the group of 2^step virtual ranks that contains v.
  BlockRange group_blocks(int v, int step) const {
    const int lo = v & ~((1 << step) - 1);
    const int hi = lo + (1 << step) - 1;
    return {first_block(lo), last_block(hi) - first_block(lo) + 1};
  }
};

}  // namespace shancoll::pattern
