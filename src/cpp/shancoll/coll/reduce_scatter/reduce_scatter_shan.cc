// shan: reduce_scatter on the node split of shan allreduce (GASPI
// shared-notification paper, Sec. III): the node's inputs in a shared
// segment, the vector split into fractions over the local ranks, each
// fraction reduced on the node by one rank in local rank order, then
// reduce-scattered between the nodes by the ranks taking that fraction.
//
//   1. every rank copies its input vector (T elements) into its slot of the
//      node segment; node barrier;
//   2. fractions as shan allreduce's (coll/allreduce/shan_fractions.h): F =
//      the largest local size, local rank l of a node of n ranks takes
//      j = l, l + n, ... < F, and for each of them
//   3. reduces fraction j over the node's n inputs in local rank order into
//      the segment's node sum S, then (several nodes)
//   4. runs pairwise's reduce-scatter of S's fraction j with the ranks
//      taking j on the other nodes (shan allreduce's fraction communicator,
//      ordered by node): node D's share is where fraction j meets the blocks
//      of D's ranks (one range: nodes are contiguous), and lands in the
//      segment's result area R at its own place;
//   5. node barrier; every rank copies its block out of R (one node: of S).
// Rank order holds for every op: local rank order within a node, node order
// between them (pairwise keeps it). Nodes must be contiguous ranges of ranks
// (virtual nodes are; checked, else ArgumentError).
//
// One node of several ranks: pair channels instead (reduce_scatter_shan_channels.cc);
// of two ranks where single_copy=1 asks, single-copy reads
// (reduce_scatter_shan_single_copy.cc).
//
// Cost model (N nodes of n ranks; T elements of m bytes in all; X =
// pairwise on N ranks, fraction m/n: N - 1 rounds of m/(nN) bytes):
//   intra    copy in m, (n - 1) m/n bytes combined, copy out m/P per rank;
//            two node barriers (a third when the slots grow);
//   inter    X(N, m/n) per rank, the n ranks of a node at once: N - 1
//            messages of m/(nN) bytes each, so a node sends (N - 1) m/N in
//            all, as a flat pairwise of P ranks sends per rank (P - 1) m/P;
//   time     m/memcpy + (n - 1) gamma m/n + X(N, m/n) + 2 barriers;
//   stats    rounds = X's rounds (summed over the fractions this rank takes);
//            inter = X's messages; intra = the two copies.
// Segment: its own, F input slots, S and R, each of a capacity that only
// grows (doubling; a growth moves the areas, so it first waits for the
// node: a node barrier). Safe across calls with two barriers, as shan scan's:
// inputs are rewritten only after every rank passed the previous call's
// second barrier; S and R only after this call's first barrier, when every
// rank has left the previous copy-out.
#include <algorithm>
#include <memory>
#include <vector>

#include "shancoll/coll/allreduce/shan_fractions.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

struct ReduceScatterShanState : LayoutState {
  FractionSlots slots;
  std::vector<std::int64_t> counts, displs;  // a fraction's shares per node, reused
};

struct Call {
  NodeContext& ctx;
  const Topology& t;
  const ReduceScatterArgs& args;
  const Options& options;
  Stats& stats;
  Fractions fractions;
  std::byte* seg;
  std::size_t stride;

  std::size_t at(std::int64_t element) const {
    return static_cast<std::size_t>(element * args.esize());
  }
  std::byte* in(int local, int j) const { return seg + stride * local + at(fractions.lo(j)); }
  std::byte* sum(std::int64_t element) const {
    return seg + stride * t.max_local_size() + at(element);
  }
  std::byte* result(std::int64_t element) const {
    return seg + stride * (t.max_local_size() + 1) + at(element);
  }
  // The elements of node d's blocks: [first, end).
  std::int64_t first(int d) const { return args.displs[t.leader_of(d)]; }
  std::int64_t end(int d) const {
    const int last = t.ranks[d].back();
    return args.displs[last] + args.counts[last];
  }
};

void copy_in(Call& c) {
  local_copy(c.in(c.t.local_rank, 0), c.args.input(), c.at(c.args.total));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += static_cast<std::int64_t>(c.at(c.args.total));
}

// S = x_0 o (x_1 o (... o x_{n-1})), folded from the right as shan allreduce.
void reduce_on_node(Call& c, int j) {
  const std::int64_t n = c.fractions.len(j);
  std::byte* s = c.sum(c.fractions.lo(j));
  const int last = c.t.local_size() - 1;
  if (last == 0) return local_copy(s, c.in(0, j), c.at(n));
  c.args.reducer->combine(s, c.in(last - 1, j), c.in(last, j), n, nullptr);
  for (int l = last - 2; l >= 0; --l) c.args.reducer->combine(s, c.in(l, j), s, n, nullptr);
}

void reduce_scatter_between_nodes(Call& c, ReduceScatterShanState& st, int j) {
  const std::int64_t lo = c.fractions.lo(j), hi = lo + c.fractions.len(j);
  st.counts.resize(static_cast<std::size_t>(c.t.node_count));
  st.displs.resize(st.counts.size());
  for (int d = 0; d < c.t.node_count; ++d) {
    st.counts[d] = std::max<std::int64_t>(0, std::min(hi, c.end(d)) - std::max(lo, c.first(d)));
    st.displs[d] = d == 0 ? 0 : st.displs[d - 1] + st.counts[d - 1];
  }
  ReduceScatterArgs inner = c.args;
  inner.send = c.sum(lo);
  inner.recv = c.result(lo + st.displs[c.t.node]);
  inner.counts = st.counts.data();
  inner.displs = st.displs.data();
  inner.total = hi - lo;
  inner.block = false;
  Options options = c.options;
  options.ranks_per_node = 1;  // every peer is on another node
  Comm& peers = *fraction_comm(c.ctx, j);
  peers.set_call_timeout(options.wait_timeout());
  Stats s;
  reduce_scatter_pairwise(peers, inner, options, s);
  c.stats.rounds += s.rounds;
  c.stats.inter_messages += s.inter_messages + s.intra_messages;
  c.stats.inter_bytes += s.inter_bytes + s.intra_bytes;
}

void copy_out(Call& c) {
  if (c.args.counts[c.t.rank] == 0) return;
  const std::int64_t first = c.args.displs[c.t.rank];
  const std::byte* from = c.t.node_count > 1 ? c.result(first) : c.sum(first);
  local_copy(c.args.recv, from, c.at(c.args.counts[c.t.rank]));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += static_cast<std::int64_t>(c.at(c.args.counts[c.t.rank]));
}

}  // namespace

void reduce_scatter_shan(Comm& comm, const ReduceScatterArgs& args, const Options& options,
                         Stats& stats) {
  NodeContext& ctx = comm.nodes(options.ranks_per_node);
  const Topology& t = ctx.topo;
  if (!nodes_contiguous(t))
    throw ArgumentError(
        "algorithm: 'shan' needs every node to hold a contiguous range of ranks, and this "
        "layout does not (use pairwise or mpi)");
  stats.node_count = t.node_count;
  if (args.total == 0) return;
  const double timeout = options.wait_timeout();
  if (reduce_scatter_single_copy_fits(ctx, args, options.single_copy))
    return reduce_scatter_shan_single_copy(comm, ctx, args, options, stats);
  if (reduce_scatter_channels_fit(ctx, args))
    return reduce_scatter_shan_channels(comm, ctx, args, options, stats);
  if (t.node_count > 1) ensure_fraction_comms(comm, ctx, timeout);
  ReduceScatterShanState& st = ctx.state<ReduceScatterShanState>();
  // F input slots, the node's sums, the results.
  const std::size_t slots = static_cast<std::size_t>(t.max_local_size()) + 2;
  const std::size_t stride = st.slots.reserve(ctx, args.total * args.esize(), slots, timeout);
  Call c{ctx,
         t,
         args,
         options,
         stats,
         Fractions{args.total, t.max_local_size()},
         st.slots.segment->base(),
         stride};

  copy_in(c);
  node_barrier(ctx, timeout);  // every input is in the segment
  for (int j = t.local_rank; j < c.fractions.count; j += t.local_size()) {
    if (c.fractions.len(j) == 0) continue;  // empty everywhere alike
    reduce_on_node(c, j);
    if (t.node_count > 1) reduce_scatter_between_nodes(c, st, j);
  }
  node_barrier(ctx, timeout);  // every block is reduced and node-wide
  copy_out(c);
}

}  // namespace shancoll
