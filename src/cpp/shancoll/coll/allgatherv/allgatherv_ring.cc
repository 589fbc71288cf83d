// ring: the flat ring allgatherv (pattern/ring.h).
//
// Cost model (alpha: latency per message, beta: time per byte, m_i: bytes of
// rank i, M = sum m_i):
//   rounds            P - 1, each one exchange with both neighbours (a
//                     nonblocking send and receive, waited on with the
//                     call's timeout: a missing neighbour is a TimeoutError);
//   bytes sent        M - m_{(r+1) mod P} by rank r (every block but the one
//                     it receives last), which is bandwidth optimal;
//   time              sum over steps s of (alpha + beta * max_i m_i in flight)
//                     = (P - 1)(alpha + beta m) for regular counts m, but
//                     (P - 1)(alpha + beta M) when one rank holds everything
//                     (broadcast distribution): the big block crosses P - 1
//                     links one after the other.
// Blocks are sent from and received into the receive buffer at their
// displacements: no scratch memory, no extra copy; gaps are never written.
//
// Preconditions: recv != nullptr; counts and displs (bytes) of size P, known
// and identical on every rank; blocks do not overlap. Any P >= 1, zero counts
// (empty blocks are not sent: MPI_PROC_NULL on both sides), in place
// (send == nullptr), messages of any size (MPI-4 large counts, else split).
#include <mpi.h>

#include <string>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/error.h"
#include "shancoll/pattern/ring.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kRingTag = 0x5a11;  // comm.mpi() is a private dup: the tag is ours alone

}  // namespace

const std::byte* allgatherv_ring(Comm& comm, const AllgathervArgs& args, const Options& options,
                                 Stats& stats) {
  const Topology& topo = comm.nodes(options.ranks_per_node).topo;  // collective on first use
  if (!args.recv && args.extent() > 0) {  // an empty result needs no buffer
    throw ArgumentError("recvbuf: algorithm 'ring' needs a receive buffer (rank " +
                        std::to_string(comm.rank()) + ")");
  }
  const int p = comm.size();
  const int r = comm.rank();
  const int next = pattern::ring_send_to(r, p);
  const int prev = pattern::ring_recv_from(r, p);
  const double timeout = options.wait_timeout();
  copy_own_block(comm, args);
  for (int step = 0; step < pattern::ring_rounds(p); ++step) {
    const int sb = pattern::ring_send_block(r, p, step);
    const int rb = pattern::ring_recv_block(r, p, step);
    sendrecv(args.recv + args.displs[sb], args.counts[sb], next, args.recv + args.displs[rb],
             args.counts[rb], prev, kRingTag, comm.mpi(), "allgatherv 'ring': a round's blocks",
             timeout);
    count_message(topo, next, args.counts[sb], stats);
  }
  stats.rounds = pattern::ring_rounds(p);
  stats.node_count = topo.node_count;
  return args.recv;
}

}  // namespace shancoll
