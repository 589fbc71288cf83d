// binomial: the point-to-point baseline. The root's data travels down the
// binomial tree (pattern/tree.h, knomial with K = 2) rooted at the root:
// receive from the parent, then send to every child, largest subtree first.
// Cost: ceil(log2 P) rounds of m bytes; P - 1 messages in all.
#include <cstring>

#include "shancoll/coll/rooted.h"
#include "shancoll/pattern/tree.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void bcast_binomial(Comm& comm, const BcastArgs& args, const Options& opt, Stats& stats) {
  const pattern::TreeShape shape{pattern::TreeKind::knomial, 2, true};
  const pattern::TreeNode node = pattern::tree_node(comm.size(), comm.rank(), args.root, shape);
  const double timeout = opt.wait_timeout();
  const Topology& topo = comm.nodes(opt.ranks_per_node).topo;
  if (node.parent >= 0)
    recv_bytes_waiting(args.buf, args.bytes, node.parent, kBcastTag, comm.mpi(), timeout);
  for (int c : node.children) {
    send_bytes_waiting(args.buf, args.bytes, c, kBcastTag, comm.mpi(), timeout);
    count_message(topo, c, args.bytes, stats);
  }
  stats.rounds = pattern::tree_depth(comm.size(), 2);
  stats.node_count = topo.node_count;
}

}  // namespace shancoll
