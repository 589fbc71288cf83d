// Binomial spanning tree allreduce: reduce to a root, then broadcast from it
// (the "BST" baseline of End et al., "Butterfly-like Algorithms for GASPI Split
// Phase Allreduce", Sec. I and IV; tree of Tzeng and Chen). Root 0 by default.
//
// Relative rank v = (rank - root) mod P; K = ceil(log2 P).
//   reduce     rounds b = 0 .. K-1: v with bit b set (and lower bits clear)
//              sends its accumulated value A to v - 2^b; v with bits 0..b clear
//              and v + 2^b < P receives it and computes A = A o received
//              (A covers v .. v+2^b-1, the received value the next 2^b ranks);
//   broadcast  rounds b = K-1 .. 0: v with bits 0..b clear sends the result to
//              v + 2^b (< P), which receives it directly into slot 0.
// One expression tree, computed once at the root: results are bitwise
// identical on all ranks, and in plain rank order when root = 0 (usable for
// non-commutative ops); with root != 0 the order is cyclic from the root.
// Cost: 2 ceil(log2 P) rounds, most ranks idle in most rounds; messages per
// rank: 1 (up) + its children (down), 2(P - 1) in total; combines: the number
// of children; one receive buffer.
// Preconditions: P >= 1, 0 <= rank, root < P. Pure arithmetic, no MPI.
#pragma once

#include <stdexcept>
#include <string>

#include "shancoll/pattern/dissemination.h"

namespace shancoll::pattern {

inline int binomial_depth(int size) {  // K = ceil(log2 P)
  int k = 0;
  while ((1LL << k) < size) ++k;
  return k;
}

inline ReduceSchedule binomial_schedule(int size, int rank, int root = 0) {
  check_schedule_args(size, rank, 1, "binomial_schedule");
  if (root < 0 || root >= size)
    throw std::invalid_argument("binomial_schedule: root " + std::to_string(root) +
                                " out of range [0, " + std::to_string(size) + ")");
  ReduceSchedule s;
  s.size = size, s.rank = rank;
  const int k = binomial_depth(size);
  const long long v = mod_rank(rank - root, size);
  auto real = [&](long long rel) { return mod_rank(rel + root, size); };
  s.slots[0] = "A: my accumulated value (my subtree); after the broadcast the result";
  const int r = s.add_slot("receive buffer");
  for (int b = 0; b < k; ++b) {  // reduce
    Round& rd = s.rounds.emplace_back();
    const long long bit = 1LL << b, low = (bit << 1) - 1;
    if ((v & low) == bit) {
      rd.sends.push_back({real(v - bit), 0});
    } else if ((v & low) == 0 && v + bit < size) {
      rd.recvs.push_back({real(v + bit), r});
      add_combine(rd.steps, 0, 0, r);
    }
  }
  for (int b = k - 1; b >= 0; --b) {  // broadcast
    Round& rd = s.rounds.emplace_back();
    const long long bit = 1LL << b, low = (bit << 1) - 1;
    if ((v & low) == 0 && v + bit < size)
      rd.sends.push_back({real(v + bit), 0});
    else if ((v & low) == bit)
      rd.recvs.push_back({real(v - bit), 0});
  }
  return s;
}

}  // namespace shancoll::pattern

namespace shancoll::pattern {

// ---- The binomial tree of the rooted gathers and scatters (MPICH's
// binomial gather): members 0..P-1 relative to the root's member (0).
// Member v's parent clears v's lowest set bit; its children are v + 2^i for
// every 2^i below that bit (v = 0: below P) with v + 2^i < P, in increasing
// order. Member v's subtree is the contiguous range [v, v + span(v)), so
// the blocks of a subtree travel as one message in member order and the
// root's data is the members' blocks in member order. Depth at most
// ceil(log2 P); P - 1 edges, one message each way per edge.
inline int binomial_subtree_span(int size, int v) {
  if (v == 0) return size;
  const int low = v & -v;
  return low < size - v ? low : size - v;
}

inline int binomial_tree_parent(int v) { return v == 0 ? -1 : v & (v - 1); }

// Calls f(child) for each child of member v, in increasing order.
template <class F>
void for_each_binomial_child(int size, int v, F&& f) {
  const long long limit = v == 0 ? size : (v & -v);
  for (long long bit = 1; bit < limit && v + bit < size; bit <<= 1) f(static_cast<int>(v + bit));
}

}  // namespace shancoll::pattern
