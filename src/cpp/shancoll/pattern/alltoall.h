// The rank arithmetic of alltoall(v): pairwise exchange, Bruck's alltoall
// and shan's node-to-node exchange. Pure: no MPI, checked for every rank
// at once by tests/cpp/alltoall_pattern_checks.h.
#pragma once

#include "shancoll/pattern/dissemination.h"  // mod_rank

namespace shancoll::pattern {

// ---- Pairwise exchange: round k (1..P-1) sends rank's block for
// rank + k and receives the block of rank - k (mod P). Every ordered pair
// of distinct ranks meets in exactly one round, and in every round each rank
// sends one message and receives one, so no rank waits on two peers at once.
inline int pairwise_rounds(int size) { return size - 1; }
inline int pairwise_send_to(int rank, int size, int round) { return mod_rank(rank + round, size); }
inline int pairwise_recv_from(int rank, int size, int round) {
  return mod_rank(rank - static_cast<long long>(round), size);
}

// ---- Bruck's alltoall (Bruck et al. 1997, index algorithm with radix 2).
// Rank r keeps its blocks rotated: position i holds, at the start, r's
// block for rank r + i. In round k (distance 2^k) every block whose position
// has bit k set moves on to rank r + 2^k, keeping its position; a block at
// position i thus travels i ranks in all and ends at its destination r + i.
// After the last round position i at rank d holds the block from d - i.
// Cost: ceil(log2 P) rounds, one message each way per round carrying the
// blocks with that bit set (about P/2 blocks): P/2 log2 P blocks sent per
// rank against P - 1 for pairwise, in log2 P messages against P - 1.
inline int alltoall_bruck_rounds(int size) {
  int rounds = 0;
  while ((1LL << rounds) < size) ++rounds;
  return rounds;
}
inline int alltoall_bruck_send_to(int rank, int size, int round) {
  return mod_rank(rank + (1LL << round), size);
}
inline int alltoall_bruck_recv_from(int rank, int size, int round) {
  return mod_rank(rank - (1LL << round), size);
}
inline bool alltoall_bruck_moves(int position, int round) { return (position >> round) & 1; }
// The destination of position i at the start, and the source of position i
// at the end, on rank `rank`.
inline int alltoall_bruck_dest(int rank, int size, int position) {
  return mod_rank(rank + static_cast<long long>(position), size);
}
inline int alltoall_bruck_source(int rank, int size, int position) {
  return mod_rank(rank - static_cast<long long>(position), size);
}

// ---- shan's node-to-node exchange over N nodes: in step k (1..N-1) node
// n sends one message, everything its ranks have for node n + k, and
// receives one from node n - k (mod N). The local ranks share the steps:
// step k is local rank (k - 1) mod (the node's rank count)'s, on the
// sending and on the receiving node alike (each computes the other's from
// its rank count), so a node's N - 1 messages leave from all of its ranks,
// and a pair of ranks exchanges at most one message per direction.
inline int node_exchange_steps(int nodes) { return nodes - 1; }
inline int node_exchange_to(int node, int nodes, int step) { return mod_rank(node + step, nodes); }
inline int node_exchange_from(int node, int nodes, int step) {
  return mod_rank(node - static_cast<long long>(step), nodes);
}
inline int node_exchange_local_rank(int step, int local_size) { return (step - 1) % local_size; }

}  // namespace shancoll::pattern
