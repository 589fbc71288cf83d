// pairwise: the pairwise exchange alltoall(v) (pattern/alltoall.h): in
// round k of P - 1, rank r sends its block for r + k and receives the block
// of r - k (mod P), one nonblocking send and receive waited on together with
// the call's timeout (a missing peer is a TimeoutError). Its own block is a
// local copy.
//
// Cost (alpha: latency per message, beta: time per byte, m: bytes per
// block): P - 1 rounds of one message each way, (P - 1)(alpha + beta m);
// every byte crosses once, straight from send to recv (no scratch). Between
// N nodes of n ranks each rank sends P - n messages to other nodes: a node
// sends n (P - n) = (P - P/N) P/N, growing with the square of the ranks per
// node (shan sends N - 1).
//
// Preconditions: counts and displacements of size P; what i sends j is what
// j expects from i. Zero-byte blocks are not sent (both sides know).
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/pattern/alltoall.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void alltoallv_pairwise(Comm& comm, const AlltoallvArgs& args, const Options& options,
                        Stats& stats) {
  const Topology& topo = comm.nodes(options.ranks_per_node).topo;
  const int p = comm.size(), r = comm.rank();
  const double timeout = options.wait_timeout();
  copy_self_block(comm, args, stats);
  for (int k = 1; k <= pattern::pairwise_rounds(p); ++k) {
    const int to = pattern::pairwise_send_to(r, p, k);
    const int from = pattern::pairwise_recv_from(r, p, k);
    sendrecv(args.send + args.send_displs[to], args.send_counts[to], to,
             args.recv + args.recv_displs[from], args.recv_counts[from], from, kAlltoallTag,
             comm.mpi(), "alltoall 'pairwise': a round's blocks", timeout);
    count_message(topo, to, args.send_counts[to], stats);
  }
  stats.rounds = pattern::pairwise_rounds(p);
  stats.node_count = topo.node_count;
}

}  // namespace shancoll
