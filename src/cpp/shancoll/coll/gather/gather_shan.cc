// shan gather (the node aggregation of gaspi-shared-notification-
// collectives, Sec. II, applied to a rooted gather): every node sends one
// message, whatever its ranks.
//   1. on each node, every local rank posts its block's size (and, on the
//      root's node, where cross-memory attach works and the block has at
//      least 32 KiB, its send buffer's address) in a cache line of the
//      node's control segment; the representative (the root on its node,
//      the leader elsewhere) lays the node's blocks out in the data segment
//      in local order and tells each rank its offset;
//   2. every rank copies its block into the segment and sets its flag; on
//      the root's node the root copies each block from there to its
//      displacement, or, for a posted block, reads its first part straight
//      from the owner's send buffer while the owner writes the rest
//      straight into the root's receive buffer (shm/peer_memory.h), the
//      root copying its own block meanwhile, the parts sized so that every
//      core copies as much (rooted_node.h, owner_share): one copy, split
//      over the cores, where the segment and the MPI libraries make two
//      (in, then out);
//   3. between nodes, a binomial tree of representatives
//      (coll/rooted_tree.h): a representative sends its node's blocks and
//      its children's subtrees to its parent as one message, after their
//      counts; the root copies them to their displacements.
// Cost (N nodes of L ranks, m bytes in all): on a node, three flag
// crossings (post, layout, done) and one copy per block into the segment,
// the leader's message straight from the segment; the root's node: a
// posted block in one copy, split between its owner and the root (two
// system calls, and the root's release line a fourth crossing), the
// others in two; between nodes ceil(log2 N) rounds,
// N - 1 messages of blocks (and N - 1 headers, 8 bytes per rank), each
// block crossing as many node boundaries as its node's depth, and the root
// copies what arrives once more.
// One node of several ranks: pair channels instead (gather_shan_channels.cc),
// unless single_copy=1 asks for this path, whose large blocks cross by
// cross-memory attach where that works (for a machine where that wins; on
// the AMD EPYC VMs the shared-memory copies do).
// Safety across calls: every flag holds the node's call number (flags.h);
// a rank posts the next call's size only after the representative has
// released this call's (the segment read, the posted buffers read), so a
// post, a layout and a block in the segment are never overwritten while read.
#include <memory>

#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/rooted_node.h"
#include "shancoll/coll/rooted_tree.h"
#include "shancoll/pattern/binomial.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/pair_channels.h"
#include "shancoll/shm/peer_memory.h"

namespace shancoll {
namespace {

struct ShanGatherState : RootedNodeState {};

// The root's copy of its own block against an owner's write into the root's
// memory by cross-memory attach (process_vm_writev), byte for byte: about
// half as dear on Zen 4 (1 MiB: 62-67 us with 0.5, 56 with 0.33, 83 with 1;
// 4 MiB 188 with 0.5, 227-244 with 0.33 and 1).
constexpr double kOwnCopyWeight = 0.5;

// One call's view of the node's segments (coll/rooted_node.h); the
// representative's line says it has read every block.
class NodeStep : public RootedNodeLines {
 public:
  NodeStep(NodeContext& ctx, double timeout)
      : RootedNodeLines(ctx, ctx.state<ShanGatherState>(), timeout) {}

  // Post: the block's bytes, its send buffer's address (0: through the
  // segment), the call. Layout: its offset, the segment's bytes, the call,
  // and for a posted block where the owner writes it (0: nowhere, the root
  // does not take it) and the root's part, which the owner leaves out.
  // Done: the block is in the segment (or the owner's part is written).
  std::byte* released() const { return representative_line(); }

  // A rank other than the representative: posts my block, copies it into
  // the segment (or, posted, writes its second half into the root's receive
  // buffer while the root reads the first) and flags it.
  void contribute(const std::byte* send, std::int64_t bytes, bool single, NodeContext& ctx,
                  int root_local, Stats& stats) {
    const int me = t_.local_rank;
    wait(released(), epoch_ - 1, "gather shan: the representative's previous call");
    std::uint64_t* p = post(me);
    p[0] = static_cast<std::uint64_t>(bytes);
    p[1] = single ? reinterpret_cast<std::uint64_t>(send) : 0;
    release_store(&p[2], epoch_);
    const std::uint64_t* l = layout(me);
    wait(reinterpret_cast<const std::byte*>(&l[2]), epoch_, "gather shan: my block's place");
    data_->reserve(static_cast<std::size_t>(l[1]));
    if (!single && bytes > 0) {
      local_copy(data() + l[0], send, static_cast<std::size_t>(bytes));
      stats.intra_messages += 1, stats.intra_bytes += bytes;
    }
    if (single && l[3] != 0 && l[4] < static_cast<std::uint64_t>(bytes)) {
      const std::size_t part = l[4];
      ctx.peer_memory->write(root_local, reinterpret_cast<std::byte*>(l[3]) + part, send + part,
                             static_cast<std::size_t>(bytes) - part);
      stats.intra_messages += 1, stats.intra_bytes += bytes - static_cast<std::int64_t>(part);
    }
    release_store(done(me), epoch_);
    if (single) wait(released(), epoch_, "gather shan: the root's read of my block");
  }

  // The representative: waits for every post and lays the blocks that go
  // through the segment out in local order, mine (`own` bytes; -1: not in
  // the segment) included; a posted block's owner is told where to write
  // it (`target(j)`, 0: nowhere) and the root's part, which the root
  // sizes with the bytes it copies of its own (`direct`). Returns the
  // segment's bytes, which it reserves.
  template <class Target>
  std::int64_t lay_out(std::int64_t own, Target&& target, std::int64_t direct = 0) {
    const int me = t_.local_rank;
    std::int64_t total = 0, posted = 0;
    int blocks = 0;
    for (int j = 0; j < l_; ++j) {
      if (j != me) wait(line(j) + 16, epoch_, "gather shan: a local rank's block size");
      if (j != me && post(j)[1] == 0) total += static_cast<std::int64_t>(post(j)[0]);
      if (j != me && post(j)[1] != 0 && target(j) != 0)
        posted += static_cast<std::int64_t>(post(j)[0]), ++blocks;
      if (j == me && own > 0) total += own;
    }
    share_ = owner_share(direct, kOwnCopyWeight, posted, blocks);
    std::int64_t at = 0;
    for (int j = 0; j < l_; ++j) {
      if (j == me) {
        own_offset_ = at;
        at += own > 0 ? own : 0;
        continue;
      }
      std::uint64_t* l = layout(j);
      l[0] = static_cast<std::uint64_t>(at), l[1] = static_cast<std::uint64_t>(total);
      l[3] = post(j)[1] != 0 ? target(j) : 0;
      l[4] = root_part(static_cast<std::int64_t>(post(j)[0]), share_);
      release_store(&l[2], epoch_);
      if (post(j)[1] == 0) at += static_cast<std::int64_t>(post(j)[0]);
    }
    data_->reserve(static_cast<std::size_t>(total));
    return total;
  }
  std::int64_t own_offset() const { return own_offset_; }
  // What each posted block's owner writes of it (lay_out's share).
  std::int64_t share() const { return share_; }

 private:
  std::int64_t own_offset_ = 0;
  std::int64_t share_ = 0;
};

// The root on its node: every local block to its displacement, read from
// its owner (posted) or from the segment; `copy_own` copies the root's own
// block (`own` bytes) once the owners know their parts, while they write.
template <class CopyOwn>
void root_node(NodeStep& n, NodeContext& ctx, const GathervArgs& a, BlockCheck& check,
               std::int64_t own, CopyOwn&& copy_own, Stats& stats) {
  const Topology& t = ctx.topo;
  const auto rank_of = [&](int j) { return t.ranks[t.node][j]; };
  const auto target = [&](int j) -> std::uint64_t {  // the owner writes there if it fits
    const int r = rank_of(j);
    const bool fits = static_cast<std::int64_t>(n.post(j)[0]) == a.counts[r];
    return fits ? reinterpret_cast<std::uint64_t>(a.recv + a.displs[r]) : 0;
  };
  n.lay_out(-1, target, own);
  copy_own();
  std::int64_t at = 0;
  for (int j = 0; j < n.size(); ++j) {
    if (j == t.local_rank) continue;
    const int r = rank_of(j);
    const auto bytes = static_cast<std::int64_t>(n.post(j)[0]);
    const std::uint64_t address = n.post(j)[1];
    const bool fits = check.fits(r, bytes, a.counts[r]) && bytes > 0;
    if (address != 0) {
      const std::size_t part = root_part(bytes, n.share());
      if (fits && part > 0)
        ctx.peer_memory->read(j, a.recv + a.displs[r], reinterpret_cast<const void*>(address),
                              part);
      n.wait(n.done(j), n.epoch(), "gather shan: a local rank's part of its block");
    } else {
      n.wait(n.done(j), n.epoch(), "gather shan: a local rank's block");
      if (fits) local_copy(a.recv + a.displs[r], n.data() + at, static_cast<std::size_t>(bytes));
      at += bytes;
    }
    if (fits) stats.intra_messages += 1, stats.intra_bytes += bytes;
  }
  release_store(n.released(), n.epoch());
}

// A leader (not the root's node): the node's blocks in the segment, in
// local order, their counts in the tree's header; returns their bytes.
std::int64_t leader_node(NodeStep& n, const Topology& t, const GathervArgs& a, TreeGather& tree) {
  const std::int64_t total = n.lay_out(a.send_bytes, [](int) { return std::uint64_t{0}; });
  if (a.send_bytes > 0)
    local_copy(n.data() + n.own_offset(), a.send, static_cast<std::size_t>(a.send_bytes));
  for (int j = 0; j < n.size(); ++j) {
    if (j == t.local_rank) {
      tree.header()[j] = a.send_bytes;
      continue;
    }
    n.wait(n.done(j), n.epoch(), "gather shan: a local rank's block");
    tree.header()[j] = static_cast<std::int64_t>(n.post(j)[0]);
  }
  return total;
}

}  // namespace

void gatherv_shan(Comm& comm, const GathervArgs& args, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  const double timeout = opt.wait_timeout();
  if (opt.single_copy != 1 && pair_channels_fit(ctx))
    return gatherv_shan_channels(comm, ctx, args, opt, stats);
  TreeMembers& m = node_members(ctx, args.root);
  const bool shared = t.local_size() > 1;
  stats.node_count = t.node_count;
  stats.rounds = shared + pattern::binomial_depth(t.node_count);
  if (comm.rank() != m.rep[m.me]) {
    const bool single = m.me == 0 && ctx.peer_memory->available() &&
                        args.send_bytes >= single_copy_min(opt.single_copy, kRootedSingleCopyMin);
    NodeStep(ctx, timeout)
        .contribute(args.send, args.send_bytes, single, ctx, t.local_rank_of[args.root], stats);
    return;
  }
  TreeGather tree(comm, m, t, timeout, stats);
  tree.post_headers();  // the other nodes' counts arrive meanwhile
  if (m.me == 0) {
    BlockCheck check;
    const std::int64_t own = args.send ? args.send_bytes : 0;  // 0 in place
    const auto copy_own = [&] {
      if (own > 0)
        local_copy(args.recv + args.displs[args.root], args.send, static_cast<std::size_t>(own));
    };
    if (shared) {
      NodeStep n(ctx, timeout);
      root_node(n, ctx, args, check, own, copy_own, stats);
    } else {
      copy_own();
    }
    gather_tree_root(comm, tree, m, args, check);
    check.throw_if_failed();
    return;
  }
  if (!shared) {
    tree.header()[0] = args.send_bytes;
    gather_tree_send(comm, tree, args.send, args.send_bytes, [] {});
    return;
  }
  NodeStep n(ctx, timeout);
  const std::int64_t bytes = leader_node(n, t, args, tree);
  gather_tree_send(comm, tree, n.data(), bytes, [&] { release_store(n.released(), n.epoch()); });
}

}  // namespace shancoll
