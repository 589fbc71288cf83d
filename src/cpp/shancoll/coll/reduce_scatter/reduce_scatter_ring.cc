// ring: the ring reduce-scatter (the first half of ring allreduce). In step
// s = 0 .. P-2 rank r sends to r + 1 its partial sum of block r - s - 1 and
// receives from r - 1 the partial sum of block r - s - 2, adding its own
// contribution; block b's partial starts at rank b + 1 and ends, complete,
// at rank b. The partials run around the ring, so the combine order is a
// rotation of rank order: commutative ops only (the registry says so).
// Cost: P - 1 rounds of one message each way of one block (alpha + beta m_b),
// P - 1 combines of a block (gamma m_b): bandwidth optimal for large
// blocks; scratch two blocks. The result is combined in scratch and copied
// out, so in place the input blocks in recvbuf are read before its start is
// written. Every wait has the call's timeout (sendrecv through wait_until).
#include <algorithm>
#include <cstring>

#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/pattern/reduce_scatter.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void reduce_scatter_ring(Comm& comm, const ReduceScatterArgs& args, const Options& opt,
                         Stats& stats) {
  const Topology& topo = comm.nodes(opt.ranks_per_node).topo;
  stats.node_count = topo.node_count;
  const int p = comm.size(), r = comm.rank();
  const std::int64_t largest = *std::max_element(args.counts, args.counts + p) * args.esize();
  std::byte* const incoming = comm.scratch(2 * static_cast<std::size_t>(largest));
  std::byte* const partial = incoming + largest;
  const std::byte* sending =
      args.block_of(args.input(), pattern::ring_reduce_scatter_step(p, r, 0).send_block);
  const int right = pattern::mod_rank(r + 1, p), left = pattern::mod_rank(r - 1, p);
  const double timeout = opt.wait_timeout();
  for (int s = 0; s + 1 < p; ++s) {
    const auto [out, in] = pattern::ring_reduce_scatter_step(p, r, s);
    const std::int64_t out_bytes = args.counts[out] * args.esize();
    sendrecv(sending, out_bytes, right, incoming, args.counts[in] * args.esize(), left,
             kReduceScatterTag, comm.mpi(), "reduce_scatter 'ring': a partial block from the left",
             timeout);
    if (out_bytes > 0) count_message(topo, right, out_bytes, stats);
    args.reducer->combine(partial, incoming, args.block_of(args.input(), in), args.counts[in],
                          nullptr);
    sending = partial;  // the send of this step has completed: partial is free next step
  }
  stats.rounds = p - 1;
  const std::size_t mine = static_cast<std::size_t>(args.counts[r] * args.esize());
  if (mine > 0) std::memmove(args.recv, p == 1 ? args.block_of(args.input(), r) : sending, mine);
}

}  // namespace shancoll
