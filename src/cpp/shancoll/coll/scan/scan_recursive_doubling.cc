// recursive_doubling: the point-to-point prefix reduction of
// pattern/scan.h, for scan and exscan alike. Each rank keeps its prefix (in
// recvbuf) and its group's total (scratch); in round k it swaps totals with
// rank ^ 2^k and, when that rank is lower, puts the received total on the
// left of its prefix. Every combine joins adjacent rank ranges in order, so
// non-commutative ops keep rank order.
// Cost: ceil(log2 P) rounds of at most one m-byte message sent and one
// received per rank (alpha + beta m each); at most 2 ceil(log2 P) combines
// (gamma m each), none for the total in the last round; scratch 2m.
// Exscan: the same rounds; the prefix starts empty (the first total from
// below is copied, not combined), and rank 0's recvbuf is not written.
// Every wait has the call's timeout (sendrecv: nonblocking pair through
// wait_until), so a rank that never comes is a TimeoutError, not a hang.
#include <cstring>
#include <utility>

#include "shancoll/coll/scan/scan.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/scan.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void scan_recursive_doubling(Comm& comm, const ScanArgs& args, const Options& opt, Stats& stats) {
  const Topology& topo = comm.nodes(opt.ranks_per_node).topo;
  stats.node_count = topo.node_count;
  const auto bytes = static_cast<std::size_t>(args.bytes());
  if (bytes == 0) return;
  std::byte* total = comm.scratch(2 * bytes);
  std::byte* other = total + bytes;
  // Copy the input out of recv before recv becomes the (exclusive) prefix.
  local_copy(total, args.input(), bytes);
  if (!args.exclusive && args.send) local_copy(args.recv, args.send, bytes);
  bool prefix_set = !args.exclusive;
  const int rounds = pattern::scan_rounds(comm.size());
  const double timeout = opt.wait_timeout();
  for (int k = 0; k < rounds; ++k) {
    const pattern::ScanRound round = pattern::scan_round(comm.size(), comm.rank(), k);
    if (round.peer < 0) continue;
    sendrecv(total, args.bytes(), round.peer, other, args.bytes(), round.peer, kScanTag + k,
             comm.mpi(), "recursive_doubling scan: a partner's total", timeout);
    count_message(topo, round.peer, args.bytes(), stats);
    const bool last = k + 1 == rounds;
    if (round.lower) {
      if (prefix_set)
        args.reducer->combine(args.recv, other, args.recv, args.count, nullptr);
      else
        local_copy(args.recv, other, bytes);
      prefix_set = true;
      if (!last) args.reducer->combine(total, other, total, args.count, nullptr);
    } else if (!last) {
      // total o other, written over `other` (MPI_Reduce_local's in-place
      // form needs no temporary), then the two buffers trade places.
      args.reducer->combine(other, total, other, args.count, nullptr);
      std::swap(total, other);
    }
  }
  stats.rounds = rounds;
}

}  // namespace shancoll
