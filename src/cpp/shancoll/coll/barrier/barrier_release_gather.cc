// release_gather barrier (seed: intranode-release-gather, Sec. II-B: a
// barrier is a gather step without data followed by a release step).
//   1. gather, on each node: every rank waits for its children's gather
//      flags on the reduce phase's tree (K-nomial, K = 4), then sets its
//      own; local rank 0 has then heard from every local rank;
//   2. several nodes: the node leaders (local ranks 0) run a dissemination
//      barrier among themselves, point to point on the communicator
//      (pattern/dissemination.h), each wait with the call's timeout;
//   3. release, on each node: local rank 0 sets its release line, which
//      every other local rank reads.
// The flags and counters are release_gather's own (RgBarrier,
// release_gather.h): counters that only grow, no reset between calls, and
// the barrier's steps interleave with bcast's and reduce's on one layout.
// Memory ordering: each rank's writes before the call happen before its
// gather flag's release store; the acquire loads up the tree and the
// release store / acquire load of local rank 0's line carry them on, so
// after the call every rank of the node sees every other's earlier writes.
// Cost (L local ranks, N nodes, K = 4): flags: ceil(log4 L) hops up, one
// down; at L = 2, two cache-line transfers per barrier (rank 1's gather
// line to rank 0, rank 0's release line to rank 1), one after the other;
// between nodes ceil(log2 N) rounds, one zero-byte message per leader each.

#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/coll/door.h"
#include "shancoll/coll/release_gather/release_gather.h"

namespace shancoll {
namespace {

void between_leaders(Comm& comm, const Topology& t, double timeout, Stats& stats) {
  const MemberRank leader = [](const Topology& topo, int n) { return topo.leader_of(n); };
  dissemination_among(comm, t.node_count, t.node, leader, t, timeout, stats);
}

}  // namespace

void barrier_release_gather(Comm& comm, const Options& opt, Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  const double timeout = opt.wait_timeout();
  stats.node_count = t.node_count;
  if (t.local_size() == 1) {  // a node of one: nothing to wait for on it
    if (t.node_count > 1) between_leaders(comm, t, timeout, stats);
    return;
  }
  RgBarrier node(ctx, timeout, stats);
  node.gather();
  if (t.node_count > 1 && node.root()) between_leaders(comm, t, timeout, stats);
  node.release();
  // The node's two steps; one flag store that others wait for: a gather
  // flag (local rank 0: its release line).
  stats.rounds += 2;
  stats.intra_messages += 1;
}

// The express of a repeated call (door.h): one node of several ranks.
Express barrier_release_gather_express(Comm& comm, const Options& opt) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  if (ctx.topo.node_count > 1 || ctx.topo.local_size() == 1) return {};
  return rg_barrier_express(ctx, opt.wait_timeout());
}

}  // namespace shancoll
