// release_gather reduce (seed: intranode-release-gather, Sec. II-D, III).
// One node: gather steps carry partial results up the tree (K-nomial K=4
// below 512 bytes; above, right-skewed K-ary trees per socket joined
// socket-leader-last, as the paper chose; pattern/socket_tree.h), each
// parent combining its children's slots into its own; the root combines
// straight into its recvbuf (data-copy optimisation; MPI.IN_PLACE there
// means its input is already in recvbuf). Commutative ops only: a tree
// combines in tree order, not rank order.
// Several nodes: every node reduces to its representative (the root on the
// root's node, the leader elsewhere), then the representatives reduce over
// a binomial tree of nodes (point to point) into the root.
// Cost: one node, see release_gather_node.cc; between nodes ceil(log2 N)
// rounds of m bytes, N - 1 messages; scratch 2m on representatives.
#include "shancoll/coll/door.h"
#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kReduceRgTag = 0x5b13;

void reduce_between_nodes(Comm& comm, NodeContext& ctx, const ReduceArgs& args, std::byte* partial,
                          std::byte* tmp, double timeout, Stats& stats) {
  const Topology& t = ctx.topo;
  const pattern::TreeNode& node = node_tree(ctx, args.root);
  for (int c : node.children) {
    recv_bytes_waiting(tmp, args.bytes(), c, kReduceRgTag, comm.mpi(), timeout);
    args.reducer->combine(partial, partial, tmp, args.count, nullptr);
  }
  if (node.parent >= 0) {
    send_bytes_waiting(partial, args.bytes(), node.parent, kReduceRgTag, comm.mpi(), timeout);
    count_message(t, node.parent, args.bytes(), stats);
  }
  stats.rounds += pattern::tree_depth(t.node_count, 2);
}

}  // namespace

void reduce_release_gather(Comm& comm, const ReduceArgs& args, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  const double timeout = opt.wait_timeout();
  rg_check_sockets(t, release_gather_options(opt));
  const int rep = node_representative(t, t.node, args.root);
  const bool me_rep = comm.rank() == rep;
  const bool me_root = comm.rank() == args.root;
  const auto bytes = static_cast<std::size_t>(args.bytes());
  // A representative other than the root collects its node's result in scratch.
  std::byte* scratch = me_rep && t.node_count > 1 ? comm.scratch(2 * bytes) : nullptr;
  std::byte* partial = me_root ? args.recv : scratch;
  const std::byte* input = args.send ? args.send : args.recv;
  const bool sizes_differ =
      rg_reduce_on_node(ctx, input, partial, args.count, *args.reducer, t.local_rank_of[rep],
                        release_gather_options(opt), timeout, stats);
  if (t.node_count > 1 && me_rep)
    reduce_between_nodes(comm, ctx, args, partial, scratch + bytes, timeout, stats);
  stats.node_count = t.node_count;
  if (sizes_differ) throw_sizes_differ(ctx, args.bytes());
}

// The express of a repeated call (door.h): one node, default options, one
// chunk, not empty and not the pair's (rg_reduce_on_node's order: the
// pair's single copy first).
Express reduce_release_gather_express(Comm& comm, const ReduceArgs& args, const Options& opt) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  const ReleaseGatherOptions& o = release_gather_options(opt);
  if (t.node_count > 1 || t.local_size() == 1 || args.count == 0 ||
      &o != &release_gather_defaults() || !o.data_copy || rg_reduce_pair_fits(ctx, o, args.bytes()))
    return {};
  return rg_reduce_express(ctx, args.count, *args.reducer, t.local_rank_of[args.root],
                           opt.wait_timeout());
}

}  // namespace shancoll
