// binomial: the point-to-point gather along the binomial tree of ranks
// relative to the root (pattern/binomial.h, coll/rooted_tree.h): a rank
// receives its children's subtrees, then sends its own block and theirs to
// its parent as one message, after a header of the subtree's counts (only
// the root knows them all: MPI's gatherv). A leaf sends straight from its
// send buffer; an inner rank assembles its subtree in the Comm's scratch
// (its own block copied once); the root copies every block that arrives to
// its displacement, after checking its count.
// Cost (P ranks, m bytes in all): ceil(log2 P) rounds; 2(P - 1) messages,
// P - 1 headers of 8 bytes per rank of the subtree; the root receives
// m - m_root bytes in ceil(log2 P) messages and copies them once more; a
// block travels as many hops as its rank's depth.
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/rooted_tree.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/binomial.h"

namespace shancoll {

// The root: my block in place, the others' from the tree.
void gather_tree_root(Comm& comm, TreeGather& tree, const TreeMembers& m, const GathervArgs& args,
                      BlockCheck& check) {
  const std::int64_t bytes = tree.wait_headers();
  std::byte* buf = comm.scratch(static_cast<std::size_t>(bytes));
  tree.receive(buf);
  std::int64_t at = 0;
  for (int k = m.first[1]; k < m.first[m.count]; ++k) {
    const int r = m.ranks[k];
    const std::int64_t sent = m.header[k];
    if (check.fits(r, sent, args.counts[r]) && sent > 0)
      local_copy(args.recv + args.displs[r], buf + at, static_cast<std::size_t>(sent));
    at += sent;
  }
}

void gatherv_binomial(Comm& comm, const GathervArgs& args, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  TreeMembers& m = rank_members(ctx, args.root);
  TreeGather tree(comm, m, ctx.topo, opt.wait_timeout(), stats);
  tree.post_headers();
  stats.rounds = pattern::binomial_depth(comm.size());
  stats.node_count = ctx.topo.node_count;
  if (m.me == 0) {
    BlockCheck check;
    if (args.send && args.send_bytes > 0)
      local_copy(args.recv + args.displs[args.root], args.send,
                 static_cast<std::size_t>(args.send_bytes));
    gather_tree_root(comm, tree, m, args, check);
    check.throw_if_failed();
    return;
  }
  tree.header()[0] = args.send_bytes;
  gather_tree_send(comm, tree, args.send, args.send_bytes, [] {});
}

}  // namespace shancoll
