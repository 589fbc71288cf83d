// pairwise: the pairwise exchange reduce-scatter. In round k = 1 .. P-1 rank
// r sends its contribution to block r + k to rank r + k and receives rank
// r - k's contribution to block r (mod P), into a slot of its own per source;
// after the last round it folds the P contributions to its block in rank
// order, x_0 o (x_1 o (... o x_{P-1})) (from the right: every
// MPI_Reduce_local call in its in-place form, no temporary for
// non-commutative ops), so any op keeps rank order.
// Cost: P - 1 rounds of one message each way, of the receiver's block
// (alpha + beta m_q; T/P elements each for a block reduce-scatter), P - 1
// combines of my block (gamma m_r) at the end; scratch (P - 1) m_r + m_r.
// The result is folded in scratch and copied out, so in place the input
// blocks in recvbuf are read before its start is written.
// Every wait has the call's timeout (sendrecv: nonblocking pair through
// wait_until), so a rank that never comes is a TimeoutError, not a hang.
#include <cstring>

#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/reduce_scatter.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void reduce_scatter_pairwise(Comm& comm, const ReduceScatterArgs& args, const Options& opt,
                             Stats& stats) {
  const Topology& topo = comm.nodes(opt.ranks_per_node).topo;
  stats.node_count = topo.node_count;
  const int p = comm.size(), r = comm.rank();
  const std::int64_t mine = args.counts[r] * args.esize();
  // Slot q: source q's contribution to my block (mine: my input's block).
  std::byte* slots = comm.scratch(static_cast<std::size_t>(mine) * (p + 1));
  std::byte* acc = slots + mine * p;
  const auto slot = [&](int q) {
    return q == r ? args.block_of(args.input(), r) : slots + mine * q;
  };
  const double timeout = opt.wait_timeout();
  for (int k = 1; k < p; ++k) {
    const auto [to, from] = pattern::pairwise_round(p, r, k);
    const std::int64_t out = args.counts[to] * args.esize();
    sendrecv(args.block_of(args.input(), to), out, to, slots + mine * from, mine, from,
             kReduceScatterTag, comm.mpi(), "reduce_scatter 'pairwise': a block from a peer",
             timeout);
    if (out > 0) count_message(topo, to, out, stats);
  }
  stats.rounds = p - 1;
  if (mine == 0) return;
  if (p == 1) {
    std::memmove(args.recv, slot(0), static_cast<std::size_t>(mine));
    return;
  }
  const std::int64_t n = args.counts[r];
  args.reducer->combine(acc, slot(p - 2), slot(p - 1), n, nullptr);
  for (int q = p - 3; q >= 0; --q) args.reducer->combine(acc, slot(q), acc, n, nullptr);
  local_copy(args.recv, acc, static_cast<std::size_t>(mine));
}

}  // namespace shancoll
