// bruck: Bruck's concatenation allgatherv (pattern/bruck.h).
//
// Cost model (alpha: latency per message, beta: time per byte, gamma: memcpy
// time per byte, m_i: bytes of rank i, M = sum m_i):
//   rounds            ceil(log2 P), one exchange each (a nonblocking send and
//                     receive, waited on with the call's timeout);
//   bytes sent        at step s the first n_s = min(2^s, P - 2^s) blocks of
//                     the rotated buffer, so relative block j is sent at every
//                     step with n_s > j (the own block ceil(log2 P) times):
//                     (P - 1) m for regular counts m;
//   time              ceil(log2 P) alpha + (P - 1) m beta + 2 M gamma for
//                     regular counts (latency optimal: small messages); with
//                     one large block (broadcast distribution) every step
//                     carries it: ceil(log2 P)(alpha + M beta), still far
//                     below the ring's (P - 1)(alpha + M beta). The 2 M gamma
//                     are the copies into and out of the rotated temporary.
// The temporary is the communicator's scratch memory (grown, never allocated
// per call), blocks in rotated order: relative block j is the block of rank
// (r + j) mod P, so every step sends a prefix and receives a contiguous range.
// At the end every block is copied to its displacement; gaps are not written.
//
// Preconditions: recv != nullptr; counts and displs (bytes) of size P, known
// and identical on every rank; blocks do not overlap. Any P >= 1, zero counts
// (empty ranges are not sent), in place (send == nullptr), messages of any
// size (MPI-4 large counts, else split into INT_MAX chunks).
#include <mpi.h>

#include <climits>
#include <cstring>
#include <string>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/pattern/bruck.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kBruckTag = 0x5a12;  // comm.mpi() is a private dup: the tag is ours alone

}  // namespace

const std::byte* allgatherv_bruck(Comm& comm, const AllgathervArgs& args, const Options& options,
                                  Stats& stats) {
  const Topology& topo = comm.nodes(options.ranks_per_node).topo;  // collective on first use
  if (!args.recv && args.extent() > 0) {  // an empty result needs no buffer
    throw ArgumentError("recvbuf: algorithm 'bruck' needs a receive buffer (rank " +
                        std::to_string(comm.rank()) + ")");
  }
  const int p = comm.size();
  const int r = comm.rank();
  stats.rounds = pattern::bruck_rounds(p);
  stats.node_count = topo.node_count;
  copy_own_block(comm, args);
  if (p == 1) return args.recv;

  // offset[j]: where relative block j starts in the rotated temporary.
  std::vector<std::int64_t> offset(p + 1, 0);
  for (int j = 0; j < p; ++j)
    offset[j + 1] = offset[j] + args.counts[pattern::bruck_block(r, p, j)];
  if (offset[p] == 0) return args.recv;  // nothing to move anywhere (same on all ranks)
  std::byte* tmp = comm.scratch(static_cast<std::size_t>(offset[p]));
  copy_bytes(tmp, args.recv + args.displs[r], args.counts[r]);

  const double timeout = options.wait_timeout();
  for (int step = 0; step < pattern::bruck_rounds(p); ++step) {
    const int d = pattern::bruck_distance(step);
    const int n = pattern::bruck_block_count(p, step);
    const int to = pattern::bruck_send_to(r, p, step);
    sendrecv(tmp, offset[n], to, tmp + offset[d], offset[d + n] - offset[d],
             pattern::bruck_recv_from(r, p, step), kBruckTag, comm.mpi(),
             "allgatherv 'bruck': a round's blocks", timeout);
    count_message(topo, to, offset[n], stats);
  }
  for (int j = 1; j < p; ++j) {
    const int b = pattern::bruck_block(r, p, j);
    copy_bytes(args.recv + args.displs[b], tmp + offset[j], args.counts[b]);
  }
  return args.recv;
}

}  // namespace shancoll
