// shan: scan and exscan on the node split of shan allreduce (GASPI
// shared-notification paper, Sec. III): the node's inputs in a shared
// segment, the message split into fractions over the local ranks, each
// fraction's node prefix computed by one rank in local rank order, the
// node totals' exclusive prefix computed between the nodes, then combined.
//
//   1. every rank copies its input into its slot of the node segment;
//      node barrier;
//   2. fractions as shan allreduce's (coll/allreduce/shan_fractions.h):
//      F = the largest local size; local rank l of a node of n ranks takes
//      j = l, l + n, ... < F, and for each of them
//   3. computes the node prefix of fraction j, out_0 = in_0,
//      out_i = out_{i-1} o in_i, in the segment's output slots;
//   4. (several nodes) runs recursive_doubling's exscan of the node total
//      out_{n-1} with the ranks taking j on the other nodes (shan
//      allreduce's fraction communicator, ordered by node), into E, and
//      puts E on the left of every out_i (not on node 0, which has no E);
//   5. node barrier; rank l copies out_l (scan), or out_{l-1}, E on a
//      node's first rank (exscan; global rank 0 writes nothing).
// Rank order holds for every op when every node is a contiguous range of
// ranks (virtual nodes are; checked, else ArgumentError): local rank order
// within a node, node order between them.
//
// One node of two ranks (the pair paths): exscan computes nothing, rank 1's
// result is rank 0's input, which goes to it as release_gather's bcast from
// rank 0 (one copy through the segment's slots, pipelined, or single copy;
// inlined beside the flag up to 56 bytes); scan with a commutative op is
// release_gather's reduce to rank 1, rank 0 keeping its input. Instead of
// the steps above (both inputs copied in, a prefix, two barriers, the copy
// out). Their cost is release_gather_node.cc's at 2 ranks: exscan m bytes
// copied in by rank 0 and out by rank 1 in pipelined chunks (or shared
// between them by single copy), no barrier; scan the reduce's, then rank 0's
// local copy of m. Measured on the AMD EPYC Zen 4 VM (docs/performance.md):
// Open MPI's exscan, one message at 2 ranks, took 6.4 us at 64 KiB against
// these steps' 11.2, the bcast 5.4; the reduce beat the steps at every size
// but 0.5-1 MiB, where rank 0's copy after its share of the reduce made it
// 15-40% slower.
//
// Cost model (N nodes of n ranks; m bytes; X = recursive_doubling's exscan
// on N ranks and m/n bytes: ceil(log2 N) rounds):
//   intra    copy in m, (n - 1) m/n bytes combined for the node prefix,
//            n m/n for E, copy out m per rank; two node barriers (a third
//            when the slots grow);
//   inter    X(N, m/n) per rank, the n ranks of a node at once: a node sends
//            what one rank's flat recursive doubling would send, over n ranks;
//   time     2 m/memcpy + (2n - 1) gamma m/n + X(N, m/n) + 2 barriers,
//            against recursive doubling's ceil(log2 P) (alpha + beta m) +
//            2 ceil(log2 P) gamma m.
//   stats    rounds = X's rounds (summed over the fractions this rank takes);
//            inter = X's messages; intra = the two copies.
// Segment: its own (not the node's shared one, whose other users lay out
// other data), F input slots, F output slots and E, each a slot of a
// capacity that only grows (doubling; a growth moves the areas,
// so it first waits for the node: a node barrier). Safe across calls with two barriers:
// inputs are rewritten only after every rank passed the previous call's
// second barrier, so no rank still reads them; outputs and E only after this
// call's first barrier, so every rank has left the previous copy-out.
#include <algorithm>
#include <memory>

#include "shancoll/coll/allreduce/shan_fractions.h"
#include "shancoll/coll/door.h"
#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

struct ScanShanState : LayoutState {
  FractionSlots slots;
};

struct Call {
  NodeContext& ctx;
  const Topology& t;
  const ScanArgs& args;
  const Options& options;
  Stats& stats;
  Fractions fractions;
  std::byte* seg;
  std::size_t stride;

  std::size_t esize() const { return args.reducer->elem_size(); }
  std::size_t offset(int j) const { return static_cast<std::size_t>(fractions.lo(j)) * esize(); }
  std::byte* in(int local, int j) const { return seg + stride * local + offset(j); }
  std::byte* out(int local, int j) const {
    return seg + stride * (t.max_local_size() + local) + offset(j);
  }
  std::byte* node_prefix(int j) const { return seg + stride * 2 * t.max_local_size() + offset(j); }
};

void copy_in(Call& c) {
  local_copy(c.in(c.t.local_rank, 0), c.args.input(), static_cast<std::size_t>(c.args.bytes()));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += c.args.bytes();
}

void prefix_on_node(Call& c, int j) {
  const std::int64_t n = c.fractions.len(j);
  local_copy(c.out(0, j), c.in(0, j), static_cast<std::size_t>(n) * c.esize());
  for (int l = 1; l < c.t.local_size(); ++l)
    c.args.reducer->combine(c.out(l, j), c.out(l - 1, j), c.in(l, j), n, nullptr);
}

// E = the totals of the nodes below mine (fraction j), then E o out_l.
void exscan_between_nodes(Call& c, int j) {
  Comm& peers = *fraction_comm(c.ctx, j);
  ScanArgs inner = c.args;
  inner.send = c.out(c.t.local_size() - 1, j);
  inner.recv = c.node_prefix(j);
  inner.count = c.fractions.len(j);
  inner.exclusive = true;
  Options options = c.options;
  options.ranks_per_node = 1;  // every peer is on another node
  peers.set_call_timeout(options.wait_timeout());
  Stats s;
  scan_recursive_doubling(peers, inner, options, s);
  c.stats.rounds += s.rounds;
  c.stats.inter_messages += s.inter_messages + s.intra_messages;
  c.stats.inter_bytes += s.inter_bytes + s.intra_bytes;
  if (c.t.node == 0) return;
  for (int l = 0; l < c.t.local_size(); ++l)
    c.args.reducer->combine(c.out(l, j), c.node_prefix(j), c.out(l, j), inner.count, nullptr);
}

void copy_out(Call& c) {
  const int l = c.t.local_rank;
  const std::byte* from = nullptr;
  if (!c.args.exclusive)
    from = c.out(l, 0);
  else if (l > 0)
    from = c.out(l - 1, 0);
  else if (c.t.node > 0)
    from = c.node_prefix(0);
  if (!from) return;  // exscan on rank 0: recvbuf stays as it was
  local_copy(c.args.recv, from, static_cast<std::size_t>(c.args.bytes()));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += c.args.bytes();
}

// Exscan on one node of two ranks: rank 0's input to rank 1 (header). The
// root only reads its buffer (release_gather copies or lends it out), so
// rank 0's input, const to the caller, may stand as the bcast's buffer.
void exscan_pair(Comm& comm, const ScanArgs& args, const Options& options, Stats& stats) {
  const BcastArgs bcast{comm.rank() == 0 ? const_cast<std::byte*>(args.input()) : args.recv,
                        args.bytes(), 0};
  bcast_release_gather(comm, bcast, options, stats);
}

// The pairs' expresses (door.h): the bcast's or the reduce's replay on the
// scan's buffers, as exscan_pair and scan_pair call them.
bool exscan_pair_express(const Express& e, const std::byte* send, std::byte* recv) {
  NodeContext& ctx = *static_cast<NodeContext*>(e.state);
  std::byte* buf = ctx.topo.local_rank == 0 ? const_cast<std::byte*>(send ? send : recv) : recv;
  return rg_bcast_replay(ctx, buf, e.count, 0, e.timeout);
}

bool scan_pair_express(const Express& e, const std::byte* send, std::byte* recv) {
  NodeContext& ctx = *static_cast<NodeContext*>(e.state);
  if (!rg_reduce_replay(ctx, send ? send : recv, recv, e.count, *e.reducer, 1, e.timeout))
    return false;
  if (ctx.topo.local_rank == 0 && send)
    local_copy(recv, send, static_cast<std::size_t>(e.count) * e.reducer->elem_size());
  return true;
}

// Scan on one node of two ranks, commutative op: rank 1's result is the
// reduction of both inputs (release_gather's reduce to rank 1), rank 0's its
// own input (a local copy, after its part of the reduce).
void scan_pair(Comm& comm, const ScanArgs& args, const Options& options, Stats& stats) {
  reduce_release_gather(comm, {args.send, args.recv, args.count, args.reducer, 1}, options, stats);
  if (comm.rank() == 0 && args.send)
    local_copy(args.recv, args.send, static_cast<std::size_t>(args.bytes()));
}

}  // namespace

void scan_shan(Comm& comm, const ScanArgs& args, const Options& options, Stats& stats) {
  NodeContext& ctx = comm.nodes(options.ranks_per_node);
  const Topology& t = ctx.topo;
  if (!nodes_contiguous(t))
    throw ArgumentError(
        "algorithm: 'shan' needs every node to hold a contiguous range of ranks, and this "
        "layout does not (use recursive_doubling or mpi)");
  stats.node_count = t.node_count;
  if (args.count == 0) return;
  if (t.node_count == 1 && t.local_size() == 2) {  // the pair paths (header)
    if (args.exclusive) return exscan_pair(comm, args, options, stats);
    if (args.reducer->commutative()) return scan_pair(comm, args, options, stats);
  }
  const double timeout = options.wait_timeout();
  if (t.node_count > 1) ensure_fraction_comms(comm, ctx, timeout);
  ScanShanState& st = ctx.state<ScanShanState>();
  // F input slots, F output slots, E.
  const std::size_t slots = 2 * static_cast<std::size_t>(t.max_local_size()) + 1;
  const std::size_t stride = st.slots.reserve(ctx, args.bytes(), slots, timeout);
  Call c{ctx,
         t,
         args,
         options,
         stats,
         Fractions{args.count, t.max_local_size()},
         st.slots.segment->base(),
         stride};

  copy_in(c);
  node_barrier(ctx, timeout);  // every input is in the segment
  for (int j = t.local_rank; j < c.fractions.count; j += t.local_size()) {
    if (c.fractions.len(j) == 0) continue;  // empty everywhere alike
    prefix_on_node(c, j);
    if (t.node_count > 1) exscan_between_nodes(c, j);
  }
  node_barrier(ctx, timeout);  // every prefix is complete and node-wide
  copy_out(c);
}

// The express of a repeated call on one node of two ranks (the pair paths),
// with release_gather's defaults: the bcast's or the reduce's, on the scan's
// buffers.
Express scan_shan_express(Comm& comm, const ScanArgs& args, const Options& opt) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  const Topology& t = ctx.topo;
  if (t.node_count != 1 || t.local_size() != 2 || args.count == 0) return {};
  if (args.exclusive) {
    Express e = bcast_release_gather_express(comm, {args.recv, args.bytes(), 0}, opt);
    if (e.run) e.run = exscan_pair_express;
    return e;
  }
  if (!args.reducer->commutative()) return {};
  Express e =
      reduce_release_gather_express(comm, {args.send, args.recv, args.count, args.reducer, 1}, opt);
  if (e.run) e.run = scan_pair_express;
  return e;
}

}  // namespace shancoll
