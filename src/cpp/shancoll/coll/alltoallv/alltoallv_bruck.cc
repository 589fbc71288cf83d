// bruck: Bruck's alltoall (Bruck et al. 1997, the index algorithm of radix
// 2; pattern/alltoall.h), for small blocks: log2 P messages per rank
// instead of P - 1.
//   1. rotate: position i of a scratch buffer gets the block for rank r + i;
//   2. round k of ceil(log2 P): the blocks at positions with bit k set go,
//      packed into one message, to rank r + 2^k, and the blocks of rank
//      r - 2^k arrive at the same positions;
//   3. position i now holds the block from rank r - i: copied to recv.
// Alltoallv: an intermediate rank does not know the sizes of the blocks it
// forwards, so each round first sends the sizes of the blocks in the
// message (one 8-byte word per block), then the blocks. Alltoall: every
// block has the call's one size, no size message.
//
// Cost (m bytes per block): ceil(log2 P) rounds of one message each way
// (two for alltoallv), each of about P/2 blocks: (alpha + beta m P/2)
// log2 P, against (P - 1)(alpha + beta m) for pairwise: fewer messages,
// more bytes, so small blocks only. Local copies: the rotation, a repacking
// per round, the final copy. Scratch kept per layout and grown: a repeated
// call allocates nothing.
#include <algorithm>
#include <vector>

#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/pattern/alltoall.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

struct BruckScratch : LayoutState {
  std::vector<std::byte> held, next, out, in;  // blocks by position; repacked; messages
  std::vector<std::int64_t> size, offset;      // of every position in `held`
  std::vector<std::int64_t> out_sizes, in_sizes;
};

// A copy of n bytes, none for an empty block (whose buffer may be null).
void copy_block(std::byte* dst, const std::byte* src, std::int64_t n) {
  if (n > 0) local_copy(dst, src, static_cast<std::size_t>(n));
}

template <class T>
T* grown(std::vector<T>& v, std::size_t n) {
  if (v.size() < n) v.resize(n);
  return v.data();
}

// One round: the blocks at positions with bit k go to `to`, those of `from`
// take their places. Returns the bytes sent.
std::int64_t bruck_round(BruckScratch& s, const AlltoallvArgs& args, int p, int k, int to, int from,
                         MPI_Comm mpi, double timeout) {
  std::int64_t out_bytes = 0, moved = 0;
  for (int i = 0; i < p; ++i)
    if (pattern::alltoall_bruck_moves(i, k))
      s.out_sizes[moved++] = s.size[i], out_bytes += s.size[i];
  std::byte* out = grown(s.out, static_cast<std::size_t>(out_bytes));
  std::int64_t packed = 0;
  for (int i = 0; i < p; ++i)
    if (pattern::alltoall_bruck_moves(i, k)) {
      copy_block(out + packed, s.held.data() + s.offset[i], s.size[i]);
      packed += s.size[i];
    }
  if (args.regular) {
    std::fill_n(s.in_sizes.begin(), moved, args.send_counts[0]);
  } else {
    sendrecv(reinterpret_cast<const std::byte*>(s.out_sizes.data()), 8 * moved, to,
             reinterpret_cast<std::byte*>(s.in_sizes.data()), 8 * moved, from, kAlltoallTag + 1,
             mpi, "alltoallv 'bruck': the sizes of a round's blocks", timeout);
  }
  std::int64_t in_bytes = 0;
  for (std::int64_t j = 0; j < moved; ++j) in_bytes += s.in_sizes[j];
  std::byte* in = grown(s.in, static_cast<std::size_t>(in_bytes));
  sendrecv(out, out_bytes, to, in, in_bytes, from, kAlltoallTag, mpi,
           "alltoall 'bruck': a round's blocks", timeout);
  // Repack: positions that stayed from `held`, the others from `in`.
  std::int64_t total = 0;
  for (int i = 0, j = 0; i < p; ++i)
    total += pattern::alltoall_bruck_moves(i, k) ? s.in_sizes[j++] : s.size[i];
  std::byte* next = grown(s.next, static_cast<std::size_t>(total));
  std::int64_t at = 0, in_at = 0;
  for (int i = 0, j = 0; i < p; ++i) {
    const bool moves = pattern::alltoall_bruck_moves(i, k);
    const std::int64_t n = moves ? s.in_sizes[j++] : s.size[i];
    copy_block(next + at, moves ? in + in_at : s.held.data() + s.offset[i], n);
    if (moves) in_at += n;
    s.size[i] = n, s.offset[i] = at, at += n;
  }
  s.held.swap(s.next);
  return out_bytes;
}

}  // namespace

void alltoallv_bruck(Comm& comm, const AlltoallvArgs& args, const Options& options, Stats& stats) {
  NodeContext& ctx = comm.nodes(options.ranks_per_node);
  BruckScratch& s = ctx.state<BruckScratch>();
  const int p = comm.size(), r = comm.rank();
  const auto np = static_cast<std::size_t>(p);
  grown(s.size, np), grown(s.offset, np), grown(s.out_sizes, np), grown(s.in_sizes, np);
  std::int64_t total = 0;  // send blocks may overlap: their sum, not their extent
  for (std::int64_t c : args.send_counts) total += c;
  std::byte* held = grown(s.held, static_cast<std::size_t>(total));
  std::int64_t at = 0;
  for (int i = 0; i < p; ++i) {  // rotate
    const int d = pattern::alltoall_bruck_dest(r, p, i);
    s.size[i] = args.send_counts[d], s.offset[i] = at;
    copy_block(held + at, args.send + args.send_displs[d], s.size[i]);
    at += s.size[i];
  }
  const double timeout = options.wait_timeout();
  const int rounds = pattern::alltoall_bruck_rounds(p);
  for (int k = 0; k < rounds; ++k) {
    const int to = pattern::alltoall_bruck_send_to(r, p, k);
    const std::int64_t sent = bruck_round(
        s, args, p, k, to, pattern::alltoall_bruck_recv_from(r, p, k), comm.mpi(), timeout);
    count_message(ctx.topo, to, sent, stats);
  }
  for (int i = 0; i < p; ++i) {
    const int from = pattern::alltoall_bruck_source(r, p, i);
    if (s.size[i] != args.recv_counts[from])
      throw MpiError("alltoallv 'bruck': rank " + std::to_string(from) + " sent " +
                     std::to_string(s.size[i]) + " bytes, recvcounts[" + std::to_string(from) +
                     "] expects " + std::to_string(args.recv_counts[from]));
    copy_block(args.recv + args.recv_displs[from], s.held.data() + s.offset[i], s.size[i]);
  }
  stats.rounds = rounds;
  stats.node_count = ctx.topo.node_count;
}

}  // namespace shancoll
