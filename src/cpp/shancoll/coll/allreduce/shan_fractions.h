// shan allreduce's split of the message over the local ranks and the
// inter-node communicator of each fraction (allreduce_shan.cc), shared with
// the algorithms built on the same node split (shan scan: coll/scan/; shan
// reduce_scatter: coll/reduce_scatter/).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "shancoll/comm.h"
#include "shancoll/shm/segment.h"

namespace shancoll {

// Fraction j of F: elements [lo(j), lo(j + 1)). F is the largest local size
// of any node, the same on every node, so fraction j covers the same
// elements everywhere; on a node of n ranks local rank l takes fractions
// l, l + n, l + 2n, ... < F.
struct Fractions {
  std::int64_t elements;
  int count;
  std::int64_t lo(int j) const { return elements * j / count; }
  std::int64_t len(int j) const { return lo(j + 1) - lo(j); }
};

inline bool takes(const Topology& t, int fraction) {
  return fraction % t.local_size() == t.local_rank;
}

// Every node a contiguous range of ranks, in node order: then node order is
// rank order, and a node's blocks of a rank-ordered vector are one range
// (shan scan's and shan reduce_scatter's precondition).
inline bool nodes_contiguous(const Topology& topo) {
  for (int r = 0; r < topo.size; ++r)
    if (topo.node_order[static_cast<std::size_t>(r)] != r) return false;
  return true;
}

// Equal slots, each a whole message, in a node segment of the algorithm's
// own (the node's shared one holds other algorithms' layouts): shan scan's
// and shan reduce_scatter's inputs, sums and results.
struct FractionSlots {
  std::unique_ptr<NodeSegment> segment;
  std::int64_t slot = 0;  // bytes per slot

  // Grows the slots to hold `bytes` (every local rank has the same bytes),
  // `slots` of them, and returns the stride between them. A growth moves the
  // areas, even inside a segment big enough already, so it first waits
  // until the node has left the previous call: a slower local rank may still
  // copy out of the old areas.
  std::size_t reserve(NodeContext& ctx, std::int64_t bytes, std::size_t slots, double timeout);
};

// Builds the fraction communicators of the layout on its first call:
// collective over comm (every rank calls it before its first fraction),
// behind a handshake with `timeout`.
void ensure_fraction_comms(Comm& comm, NodeContext& ctx, double timeout);
// Fraction j's inter-node communicator: the ranks that take j, one per
// node, ordered by node; null where this rank does not take j.
Comm* fraction_comm(NodeContext& ctx, int j);

}  // namespace shancoll
