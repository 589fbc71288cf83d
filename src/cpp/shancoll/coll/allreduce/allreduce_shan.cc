// shan: the hierarchical allreduce of the GASPI shared-notification paper,
// Sec. III: the message split across node-local ranks, node-local reduction
// of each fraction in the shared segment, each local rank running the
// inter-node allreduce of its fraction with the same-local-rank ranks of the
// other nodes, the result visible node-wide.
//
//   1. every rank copies its input into its slot of the node segment;
//      node barrier;
//   2. the message is split into F fractions, F = the largest local size of
//      any node. On a node of n ranks local rank l takes fractions
//      j = l, l + n, l + 2n, ... < F, and for each of them
//   3. reduces fraction j over the node's n inputs, in local rank order,
//      into the segment's result area, then
//   4. allreduces it there, in place, with the ranks that take fraction j on
//      the other nodes (ShanState::fraction_comms[j], ordered by node),
//      using the algorithm "auto" picks for that size, op and layout
//      (between_nodes_allreduce: the rule table's row for nodes of one rank
//      on these hosts, which may name the network module, else the built-in
//      rule; rank-consistent for floating point unless args.consistent is
//      false);
//   5. node barrier: the whole result lies in the segment, readable by the
//      node; every rank copies it to recvbuf.
// F is the same on every node, so fraction j covers the same elements
// everywhere. With an uneven last node its ranks take several fractions each,
// one after the other in increasing j: no deadlock, since the lowest
// unfinished fraction always has all its ranks at it (or on their way).
// Empty fractions (fewer elements than F) are skipped on every node alike.
// On a single node the steps run chunk by chunk instead, with flags in place
// of the barriers (shan_node_pipeline.cc); on a node of two ranks, large
// messages go by single-copy reads instead (shan_node_single_copy.cc). On
// nodes of one rank each the one fraction is the whole message and no one
// else reads the segment: step 4 runs from sendbuf straight into recvbuf,
// without steps 1, 3 and 5 (their two copies made shan 0.48-0.75x
// pairwise_exchange from 256 KiB on 2 real nodes, docs/performance.md).
//
// Cost model (N nodes of n ranks, F = n; m bytes; X = the inter-node
// algorithm on N ranks and m/n bytes; alpha, beta, gamma as in
// allreduce_dissemination.cc):
//   intra    copy in m, (n - 1) m/n bytes combined, copy out m per rank;
//            two node barriers (three when the segment grows);
//   inter    X(N, m/n) per rank, all n ranks of a node at once: e.g.
//            pairwise_exchange log2 N rounds of m/n bytes, ring 2(N - 1)
//            rounds of m/(nN) bytes; so a node sends what one rank would
//            send in a flat X(N, m), spread over its n ranks;
//   time     2 m/memcpy + (n - 1) gamma m/n + X(N, m/n) + 2 barriers.
//   stats    rounds = inter-node rounds (X's, summed over the fractions this
//            rank takes); inter = X's messages; intra = the two copies.
// Results: each fraction is reduced by one rank, then by X; with a
// rank-consistent X every rank copies out the same bytes (bitwise identical
// floats). Non-commutative ops keep rank order when every node holds a
// contiguous range of ranks (virtual nodes do): local rank order inside,
// node order between (X is chosen rank-ordered); other layouts refuse them.
// Segment: after shan allgatherv's layout (NodeContext::segment_reserved), laid out
// for the largest local size so that it is identical on every node (the RMA
// transport's window needs equal segments): one input slot per local rank,
// then the result. Safe across calls with two barriers: inputs are written
// only after everyone left the previous call's reductions (its second
// barrier), the result only after everyone left its copy-out (this call's
// first barrier), and the areas do not move between them (reserve_layout).
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/shan_fractions.h"
#include "shancoll/coll/allreduce/shan_node_pipeline.h"
#include "shancoll/coll/allreduce/shan_node_single_copy.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/handshake.h"
#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

// What shan allreduce keeps per node layout (NodeContext::state).
struct ShanState : LayoutState {
  std::int64_t slot = 0;  // bytes per input slot
  // Fraction j's inter-node communicator (one rank per node, ordered by
  // node), null where this rank does not take part; built on first use.
  std::vector<std::unique_ptr<Comm>> fraction_comms;
};

struct Layout {
  std::size_t inputs;  // one slot per local rank, `stride` bytes apart
  std::size_t stride;
  std::size_t result;
};

// The layout comes from a slot capacity that only grows (doubling), not from
// this call's size: between growths the areas stay put, so a rank may write
// its input while a slower local rank still copies out the previous result.
// A growth moves them, so it first waits until the node has left the
// previous call. (A move of segment_reserved happens inside shan allgatherv's
// collective renew, which no rank reaches before leaving this algorithm.)
Layout reserve_layout(NodeContext& ctx, ShanState& st, std::int64_t bytes, double timeout) {
  if (bytes > st.slot) {
    st.slot = std::max<std::int64_t>(bytes, 2 * st.slot);
    node_barrier(ctx, timeout);
  }
  Layout l{};
  l.inputs = line_align(std::max(ctx.segment_reserved, segment_header_bytes(ctx.topo)));
  l.stride = line_align(static_cast<std::size_t>(st.slot));
  l.result = l.inputs + l.stride * static_cast<std::size_t>(ctx.topo.max_local_size());
  ctx.segment->reserve(l.result + l.stride);  // collective over the node when it grows
  return l;
}

// Built once per node layout: F splits of the whole communicator, behind a
// handshake (the splits block until every rank comes).
void build_fraction_comms(Comm& comm, NodeContext& ctx, ShanState& st, double timeout) {
  const Topology& t = ctx.topo;
  handshake(comm.mpi(), "shan allreduce's inter-node communicators", timeout);
  std::vector<std::unique_ptr<Comm>> comms(static_cast<std::size_t>(t.max_local_size()));
  for (int j = 0; j < t.max_local_size(); ++j) {
    MPI_Comm split = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm.mpi(), takes(t, j) ? 0 : MPI_UNDEFINED, t.node, &split),
              "MPI_Comm_split (shan allreduce)");
    if (split == MPI_COMM_NULL) continue;
    comms[j] = Comm::of_sub(split, timeout);  // its own dup
    MPI_Comm_free(&split);
  }
  st.fraction_comms = std::move(comms);
}

// Rank order across nodes is node order only if nodes are contiguous ranges.
void check_rank_order(const Topology& t, const AllreduceArgs& args) {
  if (args.reducer->commutative()) return;
  for (int r = 0; r < t.size; ++r) {
    if (t.node_order[r] == r) continue;
    throw ArgumentError(
        "op: 'shan' keeps a non-commutative op in rank order only when every "
        "node holds a contiguous range of ranks, and this layout does not "
        "(use binomial or mpi)");
  }
}

struct Call {
  NodeContext& ctx;
  const Topology& t;
  const AllreduceArgs& args;
  const Options& options;
  Stats& stats;
  Layout layout;
  Fractions fractions;
  std::byte* seg;

  std::size_t esize() const { return args.reducer->elem_size(); }
  std::byte* input(int local, int j) const {
    return seg + layout.inputs + layout.stride * local + fractions.lo(j) * esize();
  }
  std::byte* result(int j) const { return seg + layout.result + fractions.lo(j) * esize(); }
};

void copy_in(Call& c) {
  const std::byte* in = c.args.send ? c.args.send : c.args.recv;
  local_copy(c.input(c.t.local_rank, 0), in, static_cast<std::size_t>(c.args.bytes()));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += c.args.bytes();
}

// result = x_0 o (x_1 o (... o x_{n-1})): rank order, computed by one rank,
// so the same bytes wherever it is read. Folding from the right keeps every
// MPI_Reduce_local call in its in-place form (inout = in o inout), which
// needs no temporary copy even for non-commutative ops.
void reduce_on_node(Call& c, int j) {
  const std::int64_t n = c.fractions.len(j);
  const int last = c.t.local_size() - 1;
  if (last == 0) {
    local_copy(c.result(j), c.input(0, j), static_cast<std::size_t>(n) * c.esize());
    return;
  }
  c.args.reducer->combine(c.result(j), c.input(last - 1, j), c.input(last, j), n, nullptr);
  for (int l = last - 2; l >= 0; --l)
    c.args.reducer->combine(c.result(j), c.input(l, j), c.result(j), n, nullptr);
}

// Fraction j's allreduce with the ranks that take it on the other nodes,
// from `send` (null: in place) into `recv`.
void allreduce_fraction(NodeContext& ctx, int j, AllreduceArgs inner, const Options& given,
                        Stats& stats) {
  Comm& peers = *fraction_comm(ctx, j);
  inner.ports = 0;  // the caller's ports were not chosen for N ranks: the default
  const AllreduceAlgorithm& algorithm =
      allreduce_registry().at(between_nodes_allreduce(inner, peers.size(), ctx.topo.hosts));
  Options options = given;
  options.ranks_per_node = 1;  // every peer is on another node
  peers.set_call_timeout(options.wait_timeout());
  Stats s;
  algorithm.fn(peers, inner, options, s);
  stats.rounds += s.rounds;
  stats.inter_messages += s.inter_messages + s.intra_messages;
  stats.inter_bytes += s.inter_bytes + s.intra_bytes;
}

void allreduce_between_nodes(Call& c, int j) {
  AllreduceArgs inner = c.args;
  inner.send = nullptr;  // in place, in the segment
  inner.recv = c.result(j);
  inner.count = c.fractions.len(j);
  allreduce_fraction(c.ctx, j, inner, c.options, c.stats);
}

void copy_out(Call& c) {
  local_copy(c.args.recv, c.result(0), static_cast<std::size_t>(c.args.bytes()));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += c.args.bytes();
}

}  // namespace

void ensure_fraction_comms(Comm& comm, NodeContext& ctx, double timeout) {
  ShanState& st = ctx.state<ShanState>();
  if (st.fraction_comms.empty()) build_fraction_comms(comm, ctx, st, timeout);
}

std::size_t FractionSlots::reserve(NodeContext& ctx, std::int64_t bytes, std::size_t slots,
                                   double timeout) {
  const Topology& t = ctx.topo;
  if (!segment) segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
  if (bytes > slot) {
    slot = std::max<std::int64_t>(bytes, 2 * slot);
    node_barrier(ctx, timeout);
  }
  const std::size_t stride = line_align(static_cast<std::size_t>(slot));
  segment->reserve(stride * slots);
  return stride;
}

Comm* fraction_comm(NodeContext& ctx, int j) {
  return ctx.state<ShanState>().fraction_comms[static_cast<std::size_t>(j)].get();
}

void allreduce_shan(Comm& comm, const AllreduceArgs& args, const Options& options, Stats& stats) {
  NodeContext& ctx = comm.nodes(options.ranks_per_node);
  const Topology& t = ctx.topo;
  check_rank_order(t, args);
  stats.node_count = t.node_count;
  if (args.count == 0) return;
  if (t.node_count == 1 && shan_single_copy_fits(ctx, args))
    return shan_node_single_copy(ctx, args, options.wait_timeout(), stats);
  if (t.node_count == 1) return shan_node_pipeline(ctx, args, options.wait_timeout(), stats);
  const double timeout = options.wait_timeout();
  if (t.node_count > 1) ensure_fraction_comms(comm, ctx, timeout);
  if (t.max_local_size() == 1) return allreduce_fraction(ctx, 0, args, options, stats);
  ShanState& st = ctx.state<ShanState>();
  const Layout layout = reserve_layout(ctx, st, args.bytes(), timeout);
  const Fractions fractions{args.count, t.max_local_size()};
  Call c{ctx, t, args, options, stats, layout, fractions, ctx.segment->base()};

  copy_in(c);
  node_barrier(ctx, timeout);  // every input is in the segment
  for (int j = t.local_rank; j < c.fractions.count; j += t.local_size()) {
    if (c.fractions.len(j) == 0) continue;  // empty everywhere alike
    reduce_on_node(c, j);
    if (t.node_count > 1) allreduce_between_nodes(c, j);
  }
  node_barrier(ctx, timeout);  // every fraction is reduced: the result is node-wide
  copy_out(c);
}

}  // namespace shancoll
