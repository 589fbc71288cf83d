// binomial: the point-to-point scatter along the binomial tree of ranks
// relative to the root (pattern/binomial.h, coll/rooted_tree.h), the mirror
// of gather's: the root packs each child's subtree in member order into
// the Comm's scratch and sends it after a header of its counts; a rank
// receives its subtree, keeps its own block and sends each child its part.
// A leaf receives straight into its receive buffer.
// Cost (P ranks, m bytes in all): ceil(log2 P) rounds; 2(P - 1) messages,
// P - 1 headers of 8 bytes per rank of the subtree; the root copies
// m - m_root bytes once to pack them; an inner rank copies its own block
// out of the scratch; a block travels as many hops as its rank's depth.
#include "shancoll/coll/rooted_tree.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/binomial.h"

namespace shancoll {

void scatter_tree_root(Comm& comm, TreeScatter& tree, const TreeMembers& m,
                       const ScattervArgs& args) {
  std::int64_t bytes = 0;
  for (int k = 0; k < m.first[m.count]; ++k) {
    tree.header()[k] = args.counts[m.ranks[k]];
    if (k >= m.first[1]) bytes += tree.header()[k];
  }
  std::byte* buf = comm.scratch(static_cast<std::size_t>(bytes));
  std::int64_t at = 0;
  for (int k = m.first[1]; k < m.first[m.count]; ++k) {
    const int r = m.ranks[k];
    if (args.counts[r] > 0)
      local_copy(buf + at, args.send + args.displs[r], static_cast<std::size_t>(args.counts[r]));
    at += args.counts[r];
  }
  tree.send_down(buf);
}

const std::byte* scatter_tree_receive(Comm& comm, TreeScatter& tree) {
  const std::int64_t bytes = tree.receive_header();
  std::byte* buf = comm.scratch(static_cast<std::size_t>(bytes));
  tree.receive(buf, bytes);
  tree.send_down(buf + tree.own_bytes());
  return buf;
}

void scatterv_binomial(Comm& comm, const ScattervArgs& args, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  TreeMembers& m = rank_members(ctx, args.root);
  TreeScatter tree(comm, m, ctx.topo, opt.wait_timeout(), stats);
  stats.rounds = pattern::binomial_depth(comm.size());
  stats.node_count = ctx.topo.node_count;
  if (m.me == 0) {
    scatter_tree_root(comm, tree, m, args);
    if (args.recv && args.recv_bytes > 0)
      local_copy(args.recv, args.send + args.displs[args.root],
                 static_cast<std::size_t>(args.recv_bytes));
    tree.wait_sends();
    return;
  }
  if (!tree.has_children()) {  // a leaf: my block alone, straight where it belongs
    const std::int64_t sent = tree.receive_header();
    tree.receive(sent == args.recv_bytes ? args.recv : comm.scratch(static_cast<std::size_t>(sent)),
                 sent);
    check_received(sent, args.recv_bytes);
    return;
  }
  const std::byte* buf = scatter_tree_receive(comm, tree);
  const std::int64_t sent = tree.header()[0];
  if (sent == args.recv_bytes && sent > 0)
    local_copy(args.recv, buf, static_cast<std::size_t>(sent));
  tree.wait_sends();
  check_received(sent, args.recv_bytes);
}

}  // namespace shancoll
