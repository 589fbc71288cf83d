// Bcast and reduce on one node from the release and gather steps (Sec. II-C,
// II-D), every chunk through one slot of the node segment.
//
// Cost (L local ranks, m bytes, c-byte chunks, depth d of the tree):
//   bcast:  m/c chunks; per chunk the root copies c bytes in, every other rank
//           copies c bytes out (in parallel); flags: d hops down, d hops up.
//           The root waits only when all `buffers` slots are still being read.
//           Inlined (m <= 312; 56 on nodes of more than 8 ranks): one line
//           transfer's wait for each reader (they all read the root's
//           lines), and the root reads its children's gather lines once per
//           8 calls. A call of one chunk that repeats the last one (root,
//           size, default options) goes from the region's plan to the line
//           or slot (rg_bcast_repeat), no RgPhase: 83-167 instructions less
//           per call at 8 B, about 200-330 at 1-4 KiB (callgrind, root and
//           reader; reduce alike).
//           Line transfers per call at 2 ranks, flat tree (a store to a line
//           the other core holds also sends it an invalidation, off the
//           reader's path):
//             8 B    reader: the root's line (1); its gather line stored.
//                    Root: its line stored; the reader's gather line read
//                    once per 8 calls.
//             256 B  reader: the root's release line (1), then the slot's 4
//                    lines together (4): two waves. Root: 4 lines and its
//                    release line stored; a gather line read per 4 calls.
//             2 KiB  the same with 32 lines; 8 KiB with 128 (one chunk).
//           Lines beside their own flags past 56 bytes (the reader copying
//           while the root writes) lose on the AMD EPYC Zen 3 VM: the reader
//           catches up with the writer and each line crosses twice, about
//           0.03 us per line more (benchmarks/c/pair_floor.c seg-bcast-lined;
//           docs/performance.md, "Small bcast and reduce on Zen 3").
//           Single copy: no copy in; every other rank reads c bytes from its
//           parent's buffer (a system call each); the root waits for the
//           last chunk's gather.
//   reduce: m/c chunks; per chunk every non-root copies (leaf) or combines
//           (inner rank: its input with its children's slots) c bytes into its
//           slot; each rank combines its children's slots in turn, the root
//           straight into its recvbuf (data-copy optimisation). A writer waits
//           only when its parent has not yet consumed the slot's previous chunk.
//           Inlined (m <= 312): one line transfer's wait per tree edge (the
//           child's chunk beside its flag, past 56 bytes in the lines after
//           it, which the parent loads while it polls), d in a row; a child
//           reads its parent's gather line once per 8 calls. A repeat of the
//           last call in one chunk goes from the region's plan to the lines
//           or slots (rg_reduce_repeat), no RgPhase, as bcast's. Intel Xeon
//           EMR VM, 2 ranks, MPICH preload (docs/performance.md): 64 B 0.35
//           us against 0.60 through a slot, 128 B 0.40 against 0.62, 256 B
//           0.50 against 0.63 (its 5 lines polled while the child writes
//           them; polling the flag alone, then reading: 0.44-0.52).
#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/flags.h"

namespace shancoll {

int node_representative(const Topology& t, int node, int root) {
  return t.node_of[root] == node ? root : t.leader_of(node);
}

namespace {

// The last root's tree over nodes (a loop of calls keeps its root).
struct NodeTreeMemo : LayoutState {
  int root = -1;
  pattern::TreeNode node;
};

}  // namespace

const pattern::TreeNode& node_tree(NodeContext& ctx, int root) {
  NodeTreeMemo& memo = ctx.state<NodeTreeMemo>();
  if (memo.root == root) return memo.node;
  const Topology& t = ctx.topo;
  const pattern::TreeShape binomial{pattern::TreeKind::knomial, 2, true};
  pattern::TreeNode n = pattern::tree_node(t.node_count, t.node, t.node_of[root], binomial);
  if (n.parent >= 0) n.parent = node_representative(t, n.parent, root);
  for (int& c : n.children) c = node_representative(t, c, root);
  memo.node = std::move(n);
  memo.root = root;
  return memo.node;
}

bool rg_bcast_on_node(NodeContext& ctx, std::byte* buf, std::int64_t bytes, int local_root,
                      const ReleaseGatherOptions& o, double timeout, Stats& stats, bool refuses) {
  if (ctx.topo.local_size() == 1) return false;
  bool differ = false;
  if (!refuses && rg_bcast_repeat(ctx, buf, bytes, local_root, o, timeout, stats, differ))
    return differ;
  RgPhase phase(ctx, o, false, local_root, bytes, 1, timeout, stats);
  if (refuses) phase.refuse();
  for (std::int64_t off = 0; off < bytes; off += phase.chunk_bytes()) {
    const auto n = static_cast<std::size_t>(std::min(phase.chunk_bytes(), bytes - off));
    if (phase.single_copy()) {
      phase.bcast_single_copy(buf, static_cast<std::size_t>(off), n);  // counts its copies
    } else {
      const std::byte* data = phase.bcast_release(buf + off, n);
      if (!phase.root() && !phase.sizes_differ())
        local_copy(buf + off, data, n);  // after the acquire in the release
      stats.intra_messages += 1;
      stats.intra_bytes += static_cast<std::int64_t>(n);
    }
    phase.bcast_gather(off + phase.chunk_bytes() >= bytes);
    stats.rounds += 2;
    stats.block_count += 1;
  }
  return phase.sizes_differ();
}

void throw_sizes_differ(const NodeContext& ctx, std::int64_t bytes) {
  throw ArgumentError("count: the local ranks' calls differ (this one, local rank " +
                      std::to_string(ctx.topo.local_rank) + ", has " + std::to_string(bytes) +
                      " bytes; another has not): MPI requires the same on every rank");
}

bool rg_reduce_on_node(NodeContext& ctx, const std::byte* send, std::byte* result,
                       std::int64_t count, const Reducer& reducer, int local_root,
                       const ReleaseGatherOptions& o, double timeout, Stats& stats) {
  const std::size_t elem = reducer.elem_size();
  const std::int64_t bytes = count * static_cast<std::int64_t>(elem);
  if (ctx.topo.local_size() == 1) {
    if (send != result && bytes > 0) local_copy(result, send, static_cast<std::size_t>(bytes));
    return false;
  }
  if (rg_reduce_pair_fits(ctx, o, bytes)) {
    rg_reduce_pair(ctx, send, result, count, reducer, local_root, false, timeout, stats);
    return false;  // the pair compares its sizes itself
  }
  bool differ = false;
  if (rg_reduce_repeat(ctx, send, result, count, reducer, local_root, o, timeout, stats, differ))
    return differ;
  RgPhase phase(ctx, o, true, local_root, bytes, elem, timeout, stats);
  const std::int64_t chunk = phase.chunk_bytes() / static_cast<std::int64_t>(elem);
  for (std::int64_t first = 0; first < count; first += chunk) {
    const std::int64_t n = std::min(chunk, count - first);
    const std::size_t off = static_cast<std::size_t>(first) * elem;
    std::byte* slot = phase.reduce_slot(o.data_copy);
    std::byte* dst = slot ? slot : result + off;
    rg_reduce_chunk(
        phase.node().children, [&](int c) { return phase.reduce_child(c); }, send + off, dst, n,
        reducer, &phase.stores());
    count_reduce_chunk(phase.node().children.size(), n * static_cast<std::int64_t>(elem), stats);
    if (phase.root() && slot) {  // no data-copy optimisation: one more copy out
      local_copy(result + off, slot, static_cast<std::size_t>(n) * elem);
      stats.intra_messages += 1;
      stats.intra_bytes += n * static_cast<std::int64_t>(elem);
    }
    phase.reduce_publish();
    stats.rounds += 1;
    stats.block_count += 1;
  }
  return phase.sizes_differ();
}

}  // namespace shancoll
