// dissemination: the dissemination barrier (Hensgen, Finkel and Manber)
// over point-to-point messages among all ranks, flat (no node structure);
// also the step between node leaders of release_gather's barrier.
// Round k of ceil(log2 P): send a zero-byte message to rank + 2^k, wait for
// one from rank - 2^k (mod P); pattern/dissemination.h has the arithmetic.
// Cost: ceil(log2 P) rounds of one zero-byte message sent and one received
// per rank (alpha each, no beta); P ceil(log2 P) messages in all.
// Every wait has the call's timeout (wait_request: spin, yield, MPI
// progress), so a rank that never comes is a TimeoutError, not a hang.
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/pattern/dissemination.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void dissemination_among(Comm& comm, int size, int me, MemberRank rank_of, const Topology& topo,
                         double timeout, Stats& stats) {
  const int rounds = pattern::dissemination_barrier_rounds(size);
  for (int k = 0; k < rounds; ++k) {
    const pattern::BarrierRound round = pattern::dissemination_barrier_round(size, me, k);
    const int to = rank_of(topo, round.to);
    const int from = rank_of(topo, round.from);
    MPI_Request recv = MPI_REQUEST_NULL, send = MPI_REQUEST_NULL;
    irecv_bytes(nullptr, 0, from, kBarrierTag + k, comm.mpi(), &recv);
    isend_bytes(nullptr, 0, to, kBarrierTag + k, comm.mpi(), &send);
    wait_request(recv, "barrier dissemination: the signal of the previous rank", timeout);
    wait_request(send, "barrier dissemination: a signal to the next rank", timeout);
    if (topo.node_of[to] == topo.node)
      ++stats.intra_messages;
    else
      ++stats.inter_messages;
  }
  stats.rounds += rounds;
}

void barrier_dissemination(Comm& comm, const Options& opt, Stats& stats) {
  const Topology& t = comm.nodes(opt.ranks_per_node).topo;
  const MemberRank itself = [](const Topology&, int i) { return i; };
  dissemination_among(comm, comm.size(), comm.rank(), itself, t, opt.wait_timeout(), stats);
  stats.node_count = t.node_count;
}

}  // namespace shancoll
