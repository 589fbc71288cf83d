// Ring pattern: P-1 steps; at every step each rank sends one block to its
// right neighbour and receives one from its left neighbour. At step s rank r
// forwards block (r - s) mod P (its own at step 0, afterwards the one it
// received at step s-1) and receives block (r - s - 1) mod P. After P-1 steps
// every rank has received every other block exactly once.
//
// Pure arithmetic: no MPI, unit-tested by simulation in tests/cpp.
#pragma once

namespace shancoll::pattern {

inline int ring_rounds(int size) { return size > 1 ? size - 1 : 0; }

inline int ring_send_to(int rank, int size) { return (rank + 1) % size; }

inline int ring_recv_from(int rank, int size) { return (rank + size - 1) % size; }

// Block that `rank` sends at `step` (0 <= step < ring_rounds(size)).
inline int ring_send_block(int rank, int size, int step) {
  return ((rank - step) % size + size) % size;
}

// Block that `rank` receives at `step`: the one its left neighbour sends.
inline int ring_recv_block(int rank, int size, int step) {
  return ring_send_block(ring_recv_from(rank, size), size, step);
}

}  // namespace shancoll::pattern
