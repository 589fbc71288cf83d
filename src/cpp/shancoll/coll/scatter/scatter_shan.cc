// shan scatter: the mirror of shan gather (gather_shan.cc). One message per
// node, then local reads from the node's segment.
//   1. between nodes, a binomial tree of representatives (the root; a
//      node's leader elsewhere; coll/rooted_tree.h): the root sends each
//      child node its subtree's blocks as one message, after their counts;
//      a representative keeps its node's blocks and sends on the rest;
//   2. on each node, every local rank posts its receive size (and, on the
//      root's node, where cross-memory attach works and the block has at
//      least 32 KiB, its receive buffer's address) in a cache line of the
//      node's control segment; the representative lays the node's blocks
//      out in the data segment, tells each rank its offset and the size it
//      was sent, copies the blocks in (or writes a posted block's first
//      part straight into its owner's receive buffer while the owner reads
//      the rest straight from the root's send buffer, the root copying its
//      own block meanwhile, the parts sized so that every core copies as
//      much, rooted_node.h's owner_share: one copy, split over the cores,
//      where the segment and the MPI libraries make two) and flags them
//      written;
//   3. every rank copies its block out of the segment.
// Cost (N nodes of L ranks, m bytes in all): between nodes ceil(log2 N)
// rounds, N - 1 messages of blocks and N - 1 headers (8 bytes per rank);
// on a node two flag crossings (post, then layout with the blocks already
// written; three, post, layout and written, when the segment grows) and two
// copies per block; a posted block one copy, split between the root and its
// owner (two system calls; the root then waits for its owner's done flag, a
// fourth crossing).
// One node of several ranks: pair channels instead (scatter_shan_channels.cc),
// unless single_copy=1 asks for this path, whose large blocks cross by
// cross-memory attach where that works (for a machine where that wins; on
// the AMD EPYC VMs the shared-memory copies do).
// Safety across calls: every flag holds the node's call number (flags.h);
// the representative writes a call's layout and blocks only after every
// local rank has said it is done with the previous call's.
#include <memory>

#include "shancoll/coll/rooted_node.h"
#include "shancoll/coll/rooted_tree.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/pattern/binomial.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/pair_channels.h"
#include "shancoll/shm/peer_memory.h"

namespace shancoll {
namespace {

struct ShanScatterState : RootedNodeState {};

// One call's view of the node's segments (coll/rooted_node.h); the
// representative's line says every block is in place.
class NodeStep : public RootedNodeLines {
 public:
  NodeStep(NodeContext& ctx, double timeout)
      : RootedNodeLines(ctx, ctx.state<ShanScatterState>(), timeout) {}

  // Post: the receive size, the receive buffer's address (0: through the
  // segment), the call. Layout: the block's offset, the segment's bytes,
  // the bytes sent, the call, and for a posted block where its owner reads
  // it from and the root's part, which the owner leaves out. Done: the rank
  // has its block.
  std::byte* written() const { return representative_line(); }

  // A rank other than the representative: posts my receive buffer, waits
  // for my block and copies it out; the bytes I was sent.
  std::int64_t receive(std::byte* recv, std::int64_t bytes, bool single, NodeContext& ctx,
                       int root_local, Stats& stats) {
    const int me = t_.local_rank;
    std::uint64_t* p = post(me);
    p[0] = static_cast<std::uint64_t>(bytes);
    p[1] = single ? reinterpret_cast<std::uint64_t>(recv) : 0;
    release_store(&p[2], epoch_);
    const std::uint64_t* l = layout(me);
    wait(reinterpret_cast<const std::byte*>(&l[3]), epoch_, "scatter shan: my block's place");
    data_->reserve(static_cast<std::size_t>(l[1]));
    const auto sent = static_cast<std::int64_t>(l[2]);
    if (single && sent == bytes && bytes > 0 && l[5] < static_cast<std::uint64_t>(bytes)) {
      const std::size_t part = l[5];
      ctx.peer_memory->read(root_local, recv + part,
                            reinterpret_cast<const std::byte*>(l[4]) + part,
                            static_cast<std::size_t>(bytes) - part);
      stats.intra_messages += 1, stats.intra_bytes += bytes - static_cast<std::int64_t>(part);
    }
    wait(written(), epoch_, "scatter shan: the representative's blocks");
    if (!single && sent == bytes && bytes > 0) {
      local_copy(recv, data() + l[0], static_cast<std::size_t>(bytes));
      stats.intra_messages += 1, stats.intra_bytes += bytes;
    }
    release_store(done(me), epoch_);
    return sent;
  }

  // The representative: every local rank's block but mine (local rank j's
  // `give(j)` bytes at `from(j)`) to its owner, by the segment or straight
  // into its receive buffer; a block whose size its owner does not expect
  // is not written (the owner refuses the call). `copy_own` copies my own
  // block (`own` bytes) while the owners of posted blocks read theirs.
  template <class Give, class From, class CopyOwn>
  void deliver(NodeContext& ctx, Give&& give, From&& from, std::int64_t own, CopyOwn&& copy_own,
               Stats& stats) {
    const int me = t_.local_rank;
    std::int64_t total = 0, posted = 0;
    int blocks = 0;
    for (int j = 0; j < l_; ++j) {
      if (j == me) continue;
      wait(done(j), epoch_ - 1, "scatter shan: a local rank's previous block");
      wait(line(j) + 16, epoch_, "scatter shan: a local rank's receive size");
      if (through_segment(j, give(j))) total += give(j);
      if (is_posted(j, give(j))) posted += give(j), ++blocks;
    }
    // The owners read by cross-memory attach as fast as I copy my own
    // block (Zen 4: a weight of 1 beat 0.5 and 0.33 at 64 KiB-16 MiB).
    const std::int64_t share = owner_share(own, 1.0, posted, blocks);
    const auto publish = [&] {  // every local rank's layout line
      std::int64_t at = 0;
      for (int j = 0; j < l_; ++j) {
        if (j == me) continue;
        std::uint64_t* l = layout(j);
        l[0] = static_cast<std::uint64_t>(at), l[1] = static_cast<std::uint64_t>(total);
        l[2] = static_cast<std::uint64_t>(give(j));
        l[4] = reinterpret_cast<std::uint64_t>(from(j));
        l[5] = root_part(give(j), share);
        release_store(&l[3], epoch_);
        if (through_segment(j, give(j))) at += give(j);
      }
    };
    const auto copy_blocks = [&] {
      std::int64_t at = 0;
      for (int j = 0; j < l_; ++j) {
        const std::int64_t bytes = j == me ? 0 : give(j);
        if (j == me || bytes != static_cast<std::int64_t>(post(j)[0]) || bytes == 0) continue;
        if (post(j)[1] != 0) {
          const std::size_t part = root_part(bytes, share);
          if (part > 0)
            ctx.peer_memory->write(j, reinterpret_cast<void*>(post(j)[1]), from(j), part);
        } else {
          local_copy(data() + at, from(j), static_cast<std::size_t>(bytes));
          at += bytes;
        }
        stats.intra_messages += 1, stats.intra_bytes += bytes;
      }
      release_store(written(), epoch_);
    };
    // The segment grows collectively, once every local rank knows the total
    // from its layout line: then layout, growth, blocks. Otherwise (every
    // rank sees the same segment) the blocks go first and one crossing, the
    // layout line, tells each rank both where its block is and that it is there.
    if (data_->base() && static_cast<std::size_t>(total) <= data_->size()) {
      copy_blocks();
      publish();
    } else {
      publish();
      data_->reserve(static_cast<std::size_t>(total));
      copy_blocks();
    }
    release_store(done(me), epoch_);  // the next call's representative may be another rank
    copy_own();
    // A posted block's owner reads its part from my buffer: not mine again
    // (the caller's) until every such read is over.
    for (int j = 0; blocks > 0 && j < l_; ++j)
      if (j != me) wait(done(j), epoch_, "scatter shan: a local rank's read of its block");
  }

 private:
  // Local rank j's block goes through the segment: expected, and not posted.
  bool through_segment(int j, std::int64_t bytes) const {
    return bytes > 0 && bytes == static_cast<std::int64_t>(post(j)[0]) && post(j)[1] == 0;
  }
  // Or straight between the buffers: expected, and posted.
  bool is_posted(int j, std::int64_t bytes) const {
    return bytes > 0 && bytes == static_cast<std::int64_t>(post(j)[0]) && post(j)[1] != 0;
  }
};

}  // namespace

void scatterv_shan(Comm& comm, const ScattervArgs& args, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  const double timeout = opt.wait_timeout();
  if (opt.single_copy != 1 && pair_channels_fit(ctx))
    return scatterv_shan_channels(comm, ctx, args, opt, stats);
  TreeMembers& m = node_members(ctx, args.root);
  const bool shared = t.local_size() > 1;
  stats.node_count = t.node_count;
  stats.rounds = shared + pattern::binomial_depth(t.node_count);
  if (comm.rank() != m.rep[m.me]) {
    const bool single = m.me == 0 && ctx.peer_memory->available() &&
                        args.recv_bytes >= single_copy_min(opt.single_copy, kRootedSingleCopyMin);
    const std::int64_t sent =
        NodeStep(ctx, timeout)
            .receive(args.recv, args.recv_bytes, single, ctx, t.local_rank_of[args.root], stats);
    check_received(sent, args.recv_bytes);
    return;
  }
  TreeScatter tree(comm, m, t, timeout, stats);
  const std::vector<int>& local = t.ranks[t.node];
  if (m.me == 0) {
    scatter_tree_root(comm, tree, m, args);
    const std::int64_t own = args.recv ? args.recv_bytes : 0;  // 0 in place
    const auto copy_own = [&] {
      if (own > 0)
        local_copy(args.recv, args.send + args.displs[args.root], static_cast<std::size_t>(own));
    };
    if (shared) {
      const auto give = [&](int j) { return args.counts[local[j]]; };
      const auto from = [&](int j) { return args.send + args.displs[local[j]]; };
      NodeStep(ctx, timeout).deliver(ctx, give, from, own, copy_own, stats);
    } else {
      copy_own();
    }
    tree.wait_sends();
    return;
  }
  const std::byte* buf = scatter_tree_receive(comm, tree);
  std::int64_t* counts = tree.header();  // my node's first, in local order
  std::int64_t own_at = 0;
  for (int j = 0; j < t.local_rank; ++j) own_at += counts[j];
  if (shared) {
    const auto give = [&](int j) { return counts[j]; };
    const auto from = [&](int j) {
      std::int64_t at = 0;
      for (int i = 0; i < j; ++i) at += counts[i];
      return buf + at;
    };
    NodeStep(ctx, timeout).deliver(ctx, give, from, 0, [] {}, stats);  // nothing posted here
  }
  const std::int64_t sent = counts[t.local_rank];
  if (sent == args.recv_bytes && sent > 0)
    local_copy(args.recv, buf + own_at, static_cast<std::size_t>(sent));
  tree.wait_sends();
  check_received(sent, args.recv_bytes);
}

}  // namespace shancoll
