// Bruck's concatenation pattern (Bruck et al., 1997), ceil(log2 P) steps.
//
// Each rank keeps its blocks in a rotated buffer: relative block j is the
// block of rank (rank + j) mod P, so relative block 0 is its own. Before step
// s (distance d = 2^s) a rank holds relative blocks [0, d); at step s it sends
// relative blocks [0, n) to rank - d and receives the sender's [0, n), which
// are its own relative blocks [d, d + n), from rank + d, with
// n = min(d, P - d). After the last step it holds relative blocks [0, P).
//
// Pure arithmetic: no MPI, unit-tested by simulation in tests/cpp.
#pragma once

namespace shancoll::pattern {

inline int bruck_rounds(int size) {
  int rounds = 0;
  while ((1LL << rounds) < size) ++rounds;
  return rounds;
}

inline int bruck_distance(int step) { return 1 << step; }

inline int bruck_send_to(int rank, int size, int step) {
  return ((rank - bruck_distance(step)) % size + size) % size;
}

inline int bruck_recv_from(int rank, int size, int step) {
  return static_cast<int>((static_cast<long long>(rank) + bruck_distance(step)) % size);
}

// Blocks sent (relative [0, n)) and received (relative [d, d + n)) at `step`.
inline int bruck_block_count(int size, int step) {
  const int d = bruck_distance(step);
  return d < size - d ? d : size - d;
}

// Absolute block of relative block `rel` in the rotated buffer of `rank`.
inline int bruck_block(int rank, int size, int rel) {
  return static_cast<int>((static_cast<long long>(rank) + rel) % size);
}

}  // namespace shancoll::pattern
