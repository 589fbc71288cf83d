// release_gather bcast (seed: intranode-release-gather, Sec. II-C, III).
// One node: release steps carry each chunk from the root's copy in the node
// buffer to every rank (flat tree by default, read-from-parent flag), gather
// steps tell the root when a slot may be refilled (see release_gather.h).
// Several nodes: the root's data first goes to one representative per node
// over a binomial tree of nodes (point to point), then each node runs the
// intra-node bcast from its representative.
// Cost: one node, see release_gather_node.cc; between nodes ceil(log2 N)
// rounds of m bytes, N - 1 messages.
#include "shancoll/coll/door.h"
#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kBcastRgTag = 0x5b12;

void bcast_between_nodes(Comm& comm, NodeContext& ctx, const BcastArgs& args, double timeout,
                         Stats& stats) {
  const Topology& t = ctx.topo;
  const pattern::TreeNode& node = node_tree(ctx, args.root);
  if (node.parent >= 0)
    recv_bytes_waiting(args.buf, args.bytes, node.parent, kBcastRgTag, comm.mpi(), timeout);
  for (int c : node.children) {
    send_bytes_waiting(args.buf, args.bytes, c, kBcastRgTag, comm.mpi(), timeout);
    count_message(t, c, args.bytes, stats);
  }
  stats.rounds += pattern::tree_depth(t.node_count, 2);
}

}  // namespace

void bcast_release_gather(Comm& comm, const BcastArgs& args, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  const double timeout = opt.wait_timeout();
  rg_check_sockets(t, release_gather_options(opt));
  const int rep = node_representative(t, t.node, args.root);
  if (t.node_count > 1 && comm.rank() == rep) bcast_between_nodes(comm, ctx, args, timeout, stats);
  stats.node_count = t.node_count;
  if (rg_bcast_on_node(ctx, args.buf, args.bytes, t.local_rank_of[rep], release_gather_options(opt),
                       timeout, stats))
    throw_sizes_differ(ctx, args.bytes);
}

// The express of a repeated call (door.h): one node, default options, one
// chunk, not empty (the paths where set-up is much of a call).
Express bcast_release_gather_express(Comm& comm, const BcastArgs& args, const Options& opt) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  if (t.node_count > 1 || t.local_size() == 1 || args.bytes == 0 ||
      &release_gather_options(opt) != &release_gather_defaults())
    return {};
  return rg_bcast_express(ctx, args.bytes, t.local_rank_of[args.root], opt.wait_timeout());
}

}  // namespace shancoll
