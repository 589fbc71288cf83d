// shan allgatherv on one node of two ranks, single copy: each rank's block
// goes straight from its own buffer into the other rank's recvbuf (cross-
// memory attach, shm/peer_memory.h), never through the node segment. The
// receiver reads the first half of the block, the owner writes the second
// half, so each core copies half of the traffic whatever the distribution
// (a broadcast-shaped input included).
//
// Cost (blocks of c_0 and c_1 bytes): per rank (c_0 + c_1)/2 copied across
// cores plus its own block copied locally (not in place); two system calls;
// the rendezvous's two flag crossings (shm/rendezvous.h). The segment path
// (allgatherv_shan.cc, gather_in_chunks) copies every block in and out:
// per rank its own block in and the other's out, through slots the other
// core has just written.
#include <algorithm>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/hash.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/rendezvous.h"

namespace shancoll {
namespace {

// From this many bytes in all. Speedup over MPICH's MPI_Allgather, 2 ranks,
// two runs, single copy against the segment path: 16-32 KiB 0.92-1.20x
// against 1.13-1.30x, 128 KiB 1.39-1.63x against 1.14-1.18x, 512 KiB
// 1.63-1.96x against 1.04-1.09x, 2 MiB 1.17-1.28x against 0.86-0.92x, 8 MiB
// 1.00x against 0.69x (each rank's local copy of its own block, 4 MiB, then
// takes half the time). Those runs were on the Intel Xeon VM; on the AMD
// EPYC VM the segment path won from 32 KiB to 1 MiB (1.7-2.8x, 2026-11-24),
// so its rule tables turn single copy off there (option single_copy=0).
constexpr std::int64_t kMinBytes = 64 << 10;

}  // namespace

// single_copy: the call's option (-1: from kMinBytes, 0: never, 1: at any size).
bool shan_single_copy_fits(NodeContext& ctx, const AllgathervArgs& args, int single_copy) {
  return single_copy != 0 && ctx.topo.node_count == 1 && ctx.topo.local_size() == 2 && args.recv &&
         (single_copy == 1 || args.total() >= kMinBytes) && ctx.peer_memory->available();
}

const std::byte* shan_single_copy(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                                  double timeout, Stats& stats) {
  Rendezvous meet(ctx, timeout);
  const Topology& t = ctx.topo;
  const int peer = 1 - t.local_rank;
  const int me_rank = comm.rank(), peer_rank = t.ranks[t.node][peer];
  const std::byte* mine = args.send ? args.send : args.recv + args.displs[me_rank];
  // Each rank posts where it wants the other's block (its own displacement:
  // displacements are local in MPI) and the counts it expects.
  meet.post(mine, args.recv + args.displs[peer_rank], fnv1a(args.counts), "recvcounts");
  copy_own_block(comm, args);
  const auto half = [](std::int64_t bytes) {
    return static_cast<std::size_t>(bytes / 2 / kCacheLine * kCacheLine);
  };
  const std::size_t theirs = half(args.counts[peer_rank]);
  const std::size_t my_half = half(args.counts[me_rank]);
  const std::size_t my_rest = static_cast<std::size_t>(args.counts[me_rank]) - my_half;
  const PeerMemory& peers = *ctx.peer_memory;
  peers.read(peer, args.recv + args.displs[peer_rank], meet.first(peer), theirs);
  peers.write(peer, meet.second(peer) + my_half, mine + my_half, my_rest);
  meet.finish();  // my block is read, and the other's written into my recvbuf
  stats.intra_messages += 2;
  stats.intra_bytes += static_cast<std::int64_t>(theirs + my_rest);
  stats.node_count = 1;
  return args.recv;
}

}  // namespace shancoll
