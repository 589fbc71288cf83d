// recursive_doubling: recursive doubling allgatherv for any P
// (pattern/recursive_doubling.h).
//
// Non-powers of two: with 2^k <= P < 2^(k+1) and q = P - 2^k, the first 2q
// ranks pair up (2i, 2i+1) and each even one folds into its odd neighbour
// (interleaved folding): it sends its block before the exchange and receives
// all other blocks after it. Neighbours, not the q highest ranks, because then
// every exchange is one contiguous range of blocks and, with consecutive rank
// placement, the fold messages stay within a node.
//
// Cost model (alpha: latency per message, beta: time per byte, gamma: memcpy
// time per byte, m_i: bytes of rank i, M = sum m_i):
//   rounds            log2(2^k), plus 2 (fold, unfold) when P is not a power
//                     of two;
//   bytes sent        at step s a core rank sends all it holds: the blocks
//                     of its group of 2^s virtual ranks (one or two blocks
//                     each), (P - 1) m for regular counts m and P = 2^k; a
//                     core rank with an extra partner also sends it M minus
//                     the extra's own block at the end;
//   time              k alpha + (P - 1) m beta for regular counts, P = 2^k;
//                     the folds add 2 alpha + M beta (m in, M - m out).
//                     One large block (broadcast distribution) is carried at
//                     every step: k (alpha + M beta), like Bruck, unlike the
//                     ring's (P - 1)(alpha + M beta).
// The exchange works in place in the receive buffer when the blocks are
// packed in rank order (displs[i] = displs[0] + sum of the counts before i,
// empty blocks ignored), the usual layout. Any other layout (gaps, other
// order) goes through the communicator's scratch memory in packed order and
// costs one more copy of M (M gamma); gaps are never written.
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
#include "shancoll/pattern/recursive_doubling.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kRecursiveDoublingTag = 0x5a13;  // comm.mpi() is a private dup: the tag is ours alone

// The blocks packed in rank order: block i at work + offset[i].
struct Packed {
  std::byte* work = nullptr;
  std::vector<std::int64_t> offset;  // P + 1 prefix sums of the counts
  bool in_recv = false;              // work is the receive buffer itself

  std::int64_t begin(pattern::BlockRange b) const { return offset[b.first]; }
  std::int64_t bytes(pattern::BlockRange b) const {
    return offset[b.first + b.count] - offset[b.first];
  }
};

// Works in the receive buffer when its non-empty blocks are already packed in
// rank order, else in scratch memory. Puts the own block in place.
Packed make_packed(Comm& comm, const AllgathervArgs& args) {
  const int p = comm.size();
  Packed pk;
  pk.offset.assign(p + 1, 0);
  for (int i = 0; i < p; ++i) pk.offset[i + 1] = pk.offset[i] + args.counts[i];
  std::int64_t base = 0;  // displacement of packed offset 0
  bool have_base = false;
  pk.in_recv = true;
  for (int i = 0; i < p && pk.in_recv; ++i) {
    if (args.counts[i] == 0) continue;
    if (!have_base) base = args.displs[i] - pk.offset[i], have_base = true;
    pk.in_recv = args.displs[i] - pk.offset[i] == base;
  }
  const int r = comm.rank();
  if (pk.in_recv) {
    pk.work = args.recv + base;
    copy_own_block(comm, args);
  } else {
    pk.work = comm.scratch(static_cast<std::size_t>(pk.offset[p]));
    copy_bytes(pk.work + pk.offset[r], args.send ? args.send : args.recv + args.displs[r],
               args.counts[r]);
  }
  return pk;
}

// From packed order back to the displacements (everything but the own block,
// which copy_own_block places, or which is already there when in place).
void unpack(Comm& comm, const AllgathervArgs& args, const Packed& pk) {
  for (int i = 0; i < comm.size(); ++i) {
    if (i != comm.rank())
      copy_bytes(args.recv + args.displs[i], pk.work + pk.offset[i], args.counts[i]);
  }
  copy_own_block(comm, args);
}

// Before the exchange: an extra rank hands its block to its odd partner.
void fold(Comm& comm, const pattern::RecursiveDoubling& rd, const Packed& pk, const Topology& topo,
          double timeout, Stats& stats) {
  const int partner = rd.fold_partner();
  if (rd.is_extra()) {
    const pattern::BlockRange mine{rd.rank, 1};
    sendrecv(pk.work + pk.begin(mine), pk.bytes(mine), partner, nullptr, 0, MPI_PROC_NULL,
             kRecursiveDoublingTag, comm.mpi(),
             "allgatherv 'recursive_doubling': the fold into a partner", timeout);
    count_message(topo, partner, pk.bytes(mine), stats);
  } else {
    const pattern::BlockRange theirs{partner, 1};
    sendrecv(nullptr, 0, MPI_PROC_NULL, pk.work + pk.begin(theirs), pk.bytes(theirs), partner,
             kRecursiveDoublingTag, comm.mpi(),
             "allgatherv 'recursive_doubling': the fold into a partner", timeout);
  }
}

// The core ranks: log2(2^k) exchanges of doubling contiguous ranges.
void exchange(Comm& comm, const pattern::RecursiveDoubling& rd, const Packed& pk,
              const Topology& topo, double timeout, Stats& stats) {
  for (int step = 0; step < rd.rounds; ++step) {
    const pattern::BlockRange out = rd.send_blocks(step), in = rd.recv_blocks(step);
    const int peer = rd.peer(step);
    sendrecv(pk.work + pk.begin(out), pk.bytes(out), peer, pk.work + pk.begin(in), pk.bytes(in),
             peer, kRecursiveDoublingTag, comm.mpi(),
             "allgatherv 'recursive_doubling': an exchange", timeout);
    count_message(topo, peer, pk.bytes(out), stats);
  }
}

// After the exchange: the core rank sends its extra partner the blocks before
// and after the extra's own (two ranges, so the own block is not sent back).
void unfold(Comm& comm, const pattern::RecursiveDoubling& rd, const Packed& pk,
            const Topology& topo, double timeout, Stats& stats) {
  const int extra = rd.is_extra() ? rd.rank : rd.fold_partner();
  const pattern::BlockRange parts[2] = {{0, extra}, {extra + 1, rd.size - extra - 1}};
  for (const auto& part : parts) {
    std::byte* at = pk.work + pk.begin(part);
    if (rd.is_extra()) {
      sendrecv(nullptr, 0, MPI_PROC_NULL, at, pk.bytes(part), rd.fold_partner(),
               kRecursiveDoublingTag, comm.mpi(),
               "allgatherv 'recursive_doubling': the unfold to a partner", timeout);
    } else {
      sendrecv(at, pk.bytes(part), rd.fold_partner(), nullptr, 0, MPI_PROC_NULL,
               kRecursiveDoublingTag, comm.mpi(),
               "allgatherv 'recursive_doubling': the unfold to a partner", timeout);
      count_message(topo, rd.fold_partner(), pk.bytes(part), stats);
    }
  }
}

}  // namespace

const std::byte* allgatherv_recursive_doubling(Comm& comm, const AllgathervArgs& args,
                                               const Options& options, Stats& stats) {
  const Topology& topo = comm.nodes(options.ranks_per_node).topo;  // collective on first use
  if (!args.recv && args.extent() > 0) {  // an empty result needs no buffer
    throw ArgumentError("recvbuf: algorithm 'recursive_doubling' needs a receive buffer (rank " +
                        std::to_string(comm.rank()) + ")");
  }
  const pattern::RecursiveDoubling rd(comm.rank(), comm.size());
  stats.rounds = rd.rounds + (rd.extra > 0 ? 2 : 0);  // of the schedule, the same on all ranks
  stats.node_count = topo.node_count;
  if (comm.size() == 1 || args.total() == 0) {
    copy_own_block(comm, args);
    return args.recv;
  }
  const Packed pk = make_packed(comm, args);
  const bool folded = rd.fold_partner() >= 0;
  const double timeout = options.wait_timeout();
  if (folded) fold(comm, rd, pk, topo, timeout, stats);
  if (!rd.is_extra()) exchange(comm, rd, pk, topo, timeout, stats);
  if (folded) unfold(comm, rd, pk, topo, timeout, stats);
  if (!pk.in_recv) unpack(comm, args, pk);
  return args.recv;
}

}  // namespace shancoll
