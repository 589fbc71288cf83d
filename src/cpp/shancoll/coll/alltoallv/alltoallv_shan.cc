// shan: alltoall(v) with node aggregation, on the node segments of the
// shared-notification collectives (seed: gaspi-shared-notification-
// collectives: node-wide shared segments, the work between nodes shared by
// the local ranks).
//
//   1. every rank posts its counts (and its send buffer's address) in the
//      node's meta segment; node barrier;
//   2. several nodes, or small blocks: every rank copies its blocks into the
//      node's data segment, where they lie as one message per destination
//      node (source local rank, then destination local rank); node barrier;
//   3. the local ranks share the node-to-node exchange (pattern/alltoall.h):
//      in step k of N - 1, local rank (k - 1) mod n sends the message for
//      node + k straight from the segment and receives the one of node - k
//      into it; node barrier;
//   4. every rank copies its blocks out of the segment: from local ranks out
//      of their messages, from other nodes out of the received ones.
//   One node, at least kSingleCopyBytes per rank on average (with
//   single_copy=1, blocks of 8 KiB on average: shm/peer_memory.h),
//   cross-memory attach available: instead of 2-4, every rank reads each of its blocks
//   straight from the sender's buffer (one copy, not two), then a node
//   barrier keeps every sender's buffer until all reads are over.
//
// One node of several ranks: pair channels instead (alltoallv_shan_channels.cc),
// unless single_copy=1 asks for this path, whose large blocks cross by
// cross-memory attach where that works (for a machine where that wins; on
// the AMD EPYC VMs the shared-memory copies do).
//
// Cost (N nodes of n ranks, m bytes per block): inter-node messages N - 1
// per node (not n (P - n) as pairwise), each of n^2 m bytes carrying every
// pair of the two nodes; every rank sends ceil((N - 1)/n) of them. Within
// the node every block is copied twice (in, out) through the segment, or
// once by single copy; 3 node barriers (2 on one node), and the counts,
// 3 P words per rank, read by every local rank (O(n P) per rank per call).
// Inter-node bytes as pairwise: each block crosses once.
//
// Safety across calls: the meta segment has two halves used in turn, so a
// rank posting call c + 1's counts never overwrites those of call c that a
// slower local rank still reads; the data segment is written only after
// the barrier that follows every rank's posting, by which every rank has
// left the previous call; a message from another node lands only in a
// receive posted after that barrier.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/alltoall.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/pair_channels.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

// Unmeasured on an idle machine: the point where a system call per block
// (single copy) should cost less than a second copy (the segment), as for
// allgatherv's single copy (allgatherv_shan_single_copy.cc: from 64 KiB).
constexpr std::int64_t kSingleCopyBytes = 64 << 10;

struct ShanState : LayoutState {
  std::unique_ptr<NodeSegment> meta, data;
  std::uint64_t calls = 0;
  std::vector<std::int64_t> out_at, in_at;  // per node: its message's offset in `data`
  std::vector<MPI_Request> requests;
};

// One local rank's posting: its send buffer's address, then its send
// counts, send displacements and receive counts (P words each).
std::size_t posting_bytes(int p) {
  return (kCacheLine + 24 * static_cast<std::size_t>(p) + kCacheLine - 1) / kCacheLine * kCacheLine;
}

struct Call {
  Comm& comm;
  NodeContext& ctx;
  const Topology& t;
  const AlltoallvArgs& args;
  ShanState& s;
  Stats& stats;
  double timeout;
  std::byte* meta = nullptr;  // this call's half

  std::byte* posting(int local) const { return meta + local * posting_bytes(t.size); }
  const std::int64_t* sc(int local) const {
    return reinterpret_cast<const std::int64_t*>(posting(local) + kCacheLine);
  }
  const std::int64_t* sd(int local) const { return sc(local) + t.size; }
  const std::int64_t* rc(int local) const { return sc(local) + 2 * t.size; }
  int local_of(int rank) const { return t.local_rank_of[rank]; }
};

ShanState& set_up(NodeContext& ctx) {
  ShanState& s = ctx.state<ShanState>();
  if (!s.meta) {
    const MPI_Comm node = ctx.topo.node_comm;
    s.meta = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
    s.meta->reserve(2 * ctx.topo.max_local_size() * posting_bytes(ctx.topo.size));
    s.data = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
    s.out_at.resize(static_cast<std::size_t>(ctx.topo.node_count) + 1);
    s.in_at.resize(static_cast<std::size_t>(ctx.topo.node_count) + 1);
    s.requests.resize(2 * static_cast<std::size_t>(ctx.topo.node_count));
  }
  return s;
}

void post(Call& c) {
  const std::size_t words = static_cast<std::size_t>(c.t.size) * sizeof(std::int64_t);
  std::byte* mine = c.posting(c.t.local_rank);
  const auto address = reinterpret_cast<std::uintptr_t>(c.args.send);
  std::memcpy(mine, &address, sizeof address);
  std::memcpy(mine + kCacheLine, c.args.send_counts.data(), words);
  std::memcpy(mine + kCacheLine + words, c.args.send_displs.data(), words);
  std::memcpy(mine + kCacheLine + 2 * words, c.args.recv_counts.data(), words);
}

// Bytes local rank i sends to node b, and all local ranks do.
std::int64_t to_node(const Call& c, int i, int b) {
  std::int64_t bytes = 0;
  for (int r : c.t.ranks[b]) bytes += c.sc(i)[r];
  return bytes;
}

// Bytes local ranks receive from rank `from`.
std::int64_t from_rank(const Call& c, int from) {
  std::int64_t bytes = 0;
  for (int j = 0; j < c.t.local_size(); ++j) bytes += c.rc(j)[from];
  return bytes;
}

// The data segment's layout: the node's outgoing messages by destination
// node, then the incoming ones by source node (none from itself).
std::int64_t lay_out(Call& c) {
  std::int64_t at = 0;
  for (int b = 0; b < c.t.node_count; ++b) {
    c.s.out_at[b] = at;
    for (int i = 0; i < c.t.local_size(); ++i) at += to_node(c, i, b);
  }
  c.s.out_at[c.t.node_count] = at;
  for (int a = 0; a < c.t.node_count; ++a) {
    c.s.in_at[a] = at;
    if (a == c.t.node) continue;
    for (int from : c.t.ranks[a]) at += from_rank(c, from);
  }
  c.s.in_at[c.t.node_count] = at;
  return at;
}

void copy_in(Call& c, std::byte* data) {
  const int me = c.t.local_rank;
  for (int b = 0; b < c.t.node_count; ++b) {
    std::int64_t at = c.s.out_at[b];
    for (int i = 0; i < me; ++i) at += to_node(c, i, b);
    for (int to : c.t.ranks[b]) {
      const std::int64_t n = c.args.send_counts[to];
      if (n > 0 && to != c.comm.rank()) {
        local_copy(data + at, c.args.send + c.args.send_displs[to], static_cast<std::size_t>(n));
        ++c.stats.intra_messages, c.stats.intra_bytes += n;
      }
      at += n;
    }
  }
}

// Step 3: my share of the node's sends and receives, posted together.
void exchange(Call& c, std::byte* data) {
  const Topology& t = c.t;
  int posted = 0;
  for (int k = 1; k <= pattern::node_exchange_steps(t.node_count); ++k) {
    if (pattern::node_exchange_local_rank(k, t.local_size()) != t.local_rank) continue;
    const int to = pattern::node_exchange_to(t.node, t.node_count, k);
    const int from = pattern::node_exchange_from(t.node, t.node_count, k);
    const int to_rank = t.ranks[to][pattern::node_exchange_local_rank(k, t.local_size_of(to))];
    const int from_rank =
        t.ranks[from][pattern::node_exchange_local_rank(k, t.local_size_of(from))];
    const std::int64_t out = c.s.out_at[to + 1] - c.s.out_at[to];
    const std::int64_t in = c.s.in_at[from + 1] - c.s.in_at[from];
    if (in > 0)
      irecv_bytes(data + c.s.in_at[from], in, from_rank, kAlltoallTag, c.comm.mpi(),
                  &c.s.requests[posted++]);
    if (out > 0) {
      isend_bytes(data + c.s.out_at[to], out, to_rank, kAlltoallTag, c.comm.mpi(),
                  &c.s.requests[posted++]);
      count_message(t, to_rank, out, c.stats);
    }
  }
  wait_requests(c.s.requests.data(), static_cast<std::size_t>(posted),
                "alltoall 'shan': a message between nodes", c.timeout);
}

void copy_out(Call& c, const std::byte* data) {
  const Topology& t = c.t;
  const int me = t.local_rank;
  for (int a = 0; a < t.node_count; ++a) {
    std::int64_t at = a == t.node ? c.s.out_at[a] : c.s.in_at[a];
    for (int i = 0; i < t.local_size_of(a); ++i) {  // the blocks of rank `from`
      const int from = t.ranks[a][i];
      std::int64_t before = 0, row = 0;  // its blocks for my lower local ranks; for all
      for (int j = 0; j < t.local_size(); ++j) {
        const std::int64_t n = a == t.node ? c.sc(i)[t.ranks[t.node][j]] : c.rc(j)[from];
        if (j < me) before += n;
        row += n;
      }
      const std::int64_t n = c.args.recv_counts[from];
      if (n > 0 && from != c.comm.rank()) {
        local_copy(c.args.recv + c.args.recv_displs[from], data + at + before,
                   static_cast<std::size_t>(n));
        ++c.stats.intra_messages, c.stats.intra_bytes += n;
      }
      at += row;
    }
  }
}

bool single_copy_fits(const Call& c, int single_copy) {
  if (c.t.node_count != 1 || !c.ctx.peer_memory->available()) return false;
  std::int64_t bytes = 0;
  const std::int64_t ranks = c.t.local_size();
  for (int i = 0; i < ranks; ++i) bytes += to_node(c, i, 0);
  // Asked for (single_copy=1): from blocks of kAskedSingleCopyMin on average.
  const std::int64_t per_rank =
      single_copy == 1 ? std::min(kSingleCopyBytes, kAskedSingleCopyMin * ranks) : kSingleCopyBytes;
  return bytes >= per_rank * ranks;
}

void single_copy(Call& c) {
  const int me = c.comm.rank();
  for (int i = 0; i < c.t.local_size(); ++i) {
    const int from = c.t.ranks[0][i];
    const std::int64_t n = c.args.recv_counts[from];
    if (from == me || n == 0) continue;
    std::uintptr_t address = 0;
    std::memcpy(&address, c.posting(i), sizeof address);
    const auto* remote = reinterpret_cast<const std::byte*>(address) + c.sd(i)[me];
    c.ctx.peer_memory->read(i, c.args.recv + c.args.recv_displs[from], remote,
                            static_cast<std::size_t>(n));
    ++c.stats.intra_messages, c.stats.intra_bytes += n;
  }
  node_barrier(c.ctx, c.timeout);  // every read of my send buffer is over
}

}  // namespace

void alltoallv_shan(Comm& comm, const AlltoallvArgs& args, const Options& options, Stats& stats) {
  NodeContext& ctx = comm.nodes(options.ranks_per_node);
  if (options.single_copy != 1 && pair_channels_fit(ctx))
    return alltoallv_shan_channels(comm, ctx, args, options, stats);
  ShanState& s = set_up(ctx);
  Call c{comm, ctx, ctx.topo, args, s, stats, options.wait_timeout()};
  c.meta =
      s.meta->base() + (s.calls++ & 1) * ctx.topo.max_local_size() * posting_bytes(ctx.topo.size);
  post(c);
  node_barrier(ctx, c.timeout);
  copy_self_block(comm, args, stats);
  stats.node_count = ctx.topo.node_count;
  stats.rounds = pattern::node_exchange_steps(ctx.topo.node_count);
  if (single_copy_fits(c, options.single_copy)) return single_copy(c);
  s.data->reserve(static_cast<std::size_t>(lay_out(c)));
  std::byte* data = s.data->base();
  copy_in(c, data);
  node_barrier(ctx, c.timeout);
  if (ctx.topo.node_count > 1) {
    exchange(c, data);
    node_barrier(ctx, c.timeout);
  }
  copy_out(c, data);
}

}  // namespace shancoll
