// Recursive doubling prefix reduction (scan / exscan), for any P.
//
// Round k (0-based) of ceil(log2 P): rank r exchanges with r ^ 2^k when that
// rank exists. Before round k, r holds the reduction of its aligned group of
// 2^k ranks, [r & ~(2^k - 1), min(that + 2^k, P) - 1], in rank order (its
// "total"); the partner holds the adjacent group's. So after the exchange
//   - both totals become the union's, the lower group's on the left;
//   - a rank whose partner is lower also takes the partner's total into its
//     prefix, on the left: the partner's group lies entirely below it.
// Every combine joins two adjacent ranges in rank order: non-commutative ops
// keep their order. A partner beyond P - 1 means no exchange that round (the
// group above r is empty); the last round needs no new total.
// Cost: ceil(log2 P) rounds, at most one message of m bytes each way per
// round; rank r receives popcount-many prefixes from below, at most
// 2 ceil(log2 P) combines of m bytes.
//
// Pure arithmetic: no MPI, checked symbolically in tests/cpp.
#pragma once

namespace shancoll::pattern {

struct ScanRound {
  int peer = -1;       // -1: no exchange this round
  bool lower = false;  // the peer's group is below mine: its total goes left of my prefix
};

inline int scan_rounds(int size) {
  int rounds = 0;
  for (long long span = 1; span < size; span *= 2) ++rounds;
  return rounds;
}

inline ScanRound scan_round(int size, int rank, int round) {
  const long long peer = rank ^ (1LL << round);
  if (peer >= size) return {};
  return {static_cast<int>(peer), peer < rank};
}

}  // namespace shancoll::pattern
