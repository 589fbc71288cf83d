// shan on one node of two ranks, single copy: the inputs and results move
// straight between the two ranks' own buffers (cross-memory attach,
// shm/peer_memory.h), never through the shared segment.
//
//   split (from kSplitMinBytes): the paper's node-local step, pair_reduce
//     with halves (coll/pair_reduce.cc): local rank l reads fraction l of
//     the peer's input, combines it with its own in rank order into its
//     recvbuf and writes it into the peer's. Both cores copy and combine at
//     once, each half.
//   whole (smaller messages): each rank reads the peer's whole input and
//     reduces the whole message itself; one system call, no write. In place
//     a rank first reads the peer's whole input into scratch and combines
//     only after the peer has read its own (the rendezvous's finish).
//
// Cost model (m bytes, single-copy bandwidth B_x, gamma per byte combined,
// f one flag crossing, sigma a system call, chunks of C bytes):
//   split  m/(2 B_x) read + gamma m/2 + m/(2 B_x) written, per rank, both
//          ranks at once; 2 f + 2 sigma ceil(m/(2C));
//   whole  m/B_x + gamma m + 2 f + sigma;
//   the shared-segment pipeline (shan_node_pipeline.cc) copies m in and out
//   through slots the peer has just written (slower across cores than the
//   clean lines of an input) and waits 3 f per chunk. From n = 3 ranks the
//   split's share per rank shrinks but each rank would copy from n - 1
//   peers; larger nodes keep the pipeline (not measurable on 2 cores).
// Measured (2 ranks, from Python): see kSplitMinBytes; docs/performance.md.
// Results: every element is x_0 o x_1, computed once (split) or by both
// ranks with the same kernel (whole): the same bytes on both ranks; rank
// order for non-commutative ops.
#include "shancoll/coll/allreduce/shan_node_single_copy.h"

#include <algorithm>
#include <cstdint>

#include "shancoll/coll/pair_reduce.h"
#include "shancoll/comm.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/rendezvous.h"

namespace shancoll {
namespace {

// Below this the pipeline is as fast: 8 KiB took 3.1 us either way, 16 KiB
// 3.3 us against 3.8 us (2 ranks, from Python).
constexpr std::int64_t kMinBytes = 16 << 10;
// From here split beats whole (two system calls per chunk instead of one):
// speedup over MPICH's allreduce, three alternating runs each, split against
// whole: 16 KiB 2.1-2.7x against 2.7-3.0x, 32-48 KiB even, 64 KiB
// 2.5-2.7x against 2.2-2.4x, 256 KiB 2.6-3.1x against 1.6-2.5x, 1 MiB
// 2.5-3.1x against 1.5-1.7x.
constexpr std::int64_t kSplitMinBytes = 64 << 10;

void run_whole(NodeContext& ctx, const AllreduceArgs& args, double timeout, Stats& stats) {
  const int me = ctx.topo.local_rank, peer = 1 - me;
  const std::size_t esize = args.reducer->elem_size();
  const std::size_t bytes = static_cast<std::size_t>(args.bytes());
  const std::size_t chunk = std::max<std::size_t>(1, kPairChunkBytes / esize) * esize;
  Rendezvous meet(ctx, timeout);
  // The shape is pair_reduce's (count, element size): a rank that runs it
  // against one that runs this is refused too.
  meet.post(args.send ? args.send : args.recv, nullptr,
            static_cast<std::uint64_t>(args.count) * 131 + esize, "count");
  const std::byte* theirs = meet.first(peer);
  const PeerMemory& peers = *ctx.peer_memory;
  if (args.send) {  // a chunk into recvbuf, combined there while in cache
    std::byte* tmp = meet.scratch(chunk);
    for (std::size_t off = 0; off < bytes; off += chunk) {
      const std::size_t len = std::min(chunk, bytes - off);
      peers.read(peer, args.recv + off, theirs + off, len);
      combine_in_rank_order(*args.reducer, me, args.recv + off, args.send + off, args.recv + off,
                            static_cast<std::int64_t>(len / esize), tmp);
    }
    meet.finish();
  } else {  // in place: recvbuf is my input until the peer has read it
    std::byte* copy = meet.scratch(2 * bytes);
    peers.read(peer, copy, theirs, bytes);
    meet.finish();
    combine_in_rank_order(*args.reducer, me, args.recv, args.recv, copy, args.count, copy + bytes);
  }
  stats.intra_messages += 1;
  stats.intra_bytes += static_cast<std::int64_t>(bytes);
}

}  // namespace

bool shan_single_copy_fits(NodeContext& ctx, const AllreduceArgs& args) {
  return ctx.topo.local_size() == 2 && args.bytes() >= kMinBytes && ctx.peer_memory->available();
}

void shan_node_single_copy(NodeContext& ctx, const AllreduceArgs& args, double timeout,
                           Stats& stats) {
  if (args.bytes() < kSplitMinBytes) return run_whole(ctx, args, timeout, stats);
  pair_reduce(ctx, args.send ? args.send : args.recv, args.recv, args.count, args.count / 2,
              *args.reducer, timeout, stats);
}

}  // namespace shancoll
