// binomial: the point-to-point baseline. Contributions travel up the binomial
// tree (pattern/tree.h, knomial with K = 2): a rank receives each child's
// partial result, smallest subtree first, combines it into its own, and
// sends the result to its parent. Rooted at the root for commutative ops;
// for non-commutative ones rooted at rank 0, where every child's subtree is
// the next block of ranks (plain rank order), then one message to the root.
// Cost: ceil(log2 P) rounds of m bytes (+1 for a non-commutative op with
// root != 0); P - 1 messages; scratch 3m per rank (partial, message, tmp).
#include <cstring>

#include "shancoll/coll/rooted.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/tree.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {

void reduce_binomial(Comm& comm, const ReduceArgs& args, const Options& opt, Stats& stats) {
  const bool commutative = args.reducer->commutative();
  const int tree_root = commutative ? args.root : 0;
  const pattern::TreeShape shape{pattern::TreeKind::knomial, 2, false};
  const pattern::TreeNode node = pattern::tree_node(comm.size(), comm.rank(), tree_root, shape);
  const double timeout = opt.wait_timeout();
  const Topology& topo = comm.nodes(opt.ranks_per_node).topo;
  const auto bytes = static_cast<std::size_t>(args.bytes());
  std::byte* scratch = comm.scratch(3 * bytes);
  const bool me_root = comm.rank() == args.root;
  std::byte* acc = me_root ? args.recv : scratch;
  if (args.send && acc != args.send && bytes) local_copy(acc, args.send, bytes);
  for (int c : node.children) {
    recv_bytes_waiting(scratch + bytes, args.bytes(), c, kReduceTag, comm.mpi(), timeout);
    args.reducer->combine(acc, acc, scratch + bytes, args.count, scratch + 2 * bytes);
  }
  if (node.parent >= 0) {
    send_bytes_waiting(acc, args.bytes(), node.parent, kReduceTag, comm.mpi(), timeout);
    count_message(topo, node.parent, args.bytes(), stats);
  } else if (!me_root) {  // rank 0 of a non-commutative reduce: the result to the root
    send_bytes_waiting(acc, args.bytes(), args.root, kReduceTag, comm.mpi(), timeout);
    count_message(topo, args.root, args.bytes(), stats);
  }
  if (me_root && tree_root != args.root)
    recv_bytes_waiting(args.recv, args.bytes(), tree_root, kReduceTag, comm.mpi(), timeout);
  stats.rounds = pattern::tree_depth(comm.size(), 2) + (tree_root != args.root);
  stats.node_count = topo.node_count;
}

}  // namespace shancoll
