// shan: Allgather(V) over node-wide shared segments with shared
// notifications (seed: gaspi-shared-notification-collectives, Sec. II;
// Algorithm 1).
//
//   1. LoadBalance parts 1-3 (in parallel over local ranks, published in the
//      segment): global block ids, continuous across nodes; each local rank
//      gets an even share of the node's blocks. They need the counts only.
//   2. local allgatherv: every rank copies its contribution into the node
//      segment at its displacement, block by block, flagging each block.
//   3. every local rank writes its share to the next node (notified write),
//      each block as soon as it is flagged; every local rank meanwhile
//      catches *any* notification that reaches the node and forwards the
//      block on, unless the next node is where it came from. The node is
//      done when it holds every block.
//   The result is read in place from the segment (or copied to recvbuf).
//   The paper copies everything in and synchronises before the first write;
//   flagging blocks instead lets the ring start with the first block copied,
//   which matters when one rank holds most of the data (broadcast-shaped
//   input: it alone copies m bytes, and its blocks then leave one by one,
//   pipelined, instead of all at once, sharing the link, hop after hop).
//
// Cost (N nodes, n ranks per node, m bytes in all, b-byte blocks): each
// block crosses N-1 node boundaries, once each (pipelined ring of nodes);
// inter-node messages per node per call ~ m/(N b) * (N-1), independent of n;
// each local rank sends ~1/n of them. Time ~ (N-1 + m/(N b)) (alpha + b beta)
// for the ring plus 2 copies of m/N... within the node: one copy in, and one
// copy out only for a private recvbuf. Three node barriers per call. The
// block size b: pattern/shan_blocks.h (pipeline_block_size for broadcast-
// shaped inputs).
//
// On one node with a private recvbuf the result never goes through this
// segment: blocks of at most 336 bytes go beside their flags
// (allgatherv_shan_inline.cc); on two ranks with single copy on, straight
// between the two ranks' buffers (allgatherv_shan_single_copy.cc); else
// in chunks through a ring per rank (allgatherv_shan_chunk_ring.cc).
//
// On nodes of one rank each, with a private recvbuf and the two-sided
// transport, the segment would only add a copy in and a copy out of every
// byte (0.71-0.87x allgatherv_ring from 256 KiB per rank on 2 real nodes,
// docs/performance.md): the blocks then go from sendbuf and land in recvbuf
// (`direct`), the flags stay in the segment. The rma transport writes into
// the segment's window, so it keeps the segment.
//
// Safety across calls: the segment is the result. Through rma a node writes
// into its successor only after the successor signalled READY for this call
// (a zero-byte notification sent after its entry barrier, i.e. after all its
// ranks finished reading the previous result). Through two_sided data lands
// only in receives the successor posted, after that same barrier: no READY
// (it cost a round trip per call, 10 us under MPICH's OFI/tcp between 2 real
// nodes). A message of the next call cannot match a receive of this one:
// each (sender, id) carries one message per call, and MPI matches them in
// the order sent.
#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/cost.h"
#include "shancoll/pattern/shan_blocks.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/transport/transport.h"

namespace shancoll {
namespace {

constexpr int kReadyId = 0;
constexpr int kFirstBlockId = 8;  // ids 1..7 unused: READY keeps its cache line
// Where everything lives in the node segment; identical on every node, so a
// remote writer can compute offsets in its target's segment.
struct Layout {
  std::size_t notify;  // notification slots (8 bytes each), slot 0 = READY
  std::size_t data;    // the result, extent bytes
  std::size_t claim;   // one claim word per block
  std::size_t lower;   // LoadBalance part 1: node_count * columns
  std::size_t first;   // LoadBalance part 2: first block id per rank
  std::size_t end;
};

Layout make_layout(const Topology& t, std::int64_t blocks, std::int64_t extent) {
  Layout l{};
  l.notify = segment_header_bytes(t) - kCacheLine;
  l.data = line_align(l.notify + 8 * (kFirstBlockId + blocks));
  l.claim = line_align(l.data + extent);
  l.lower = line_align(l.claim + 8 * blocks);
  l.first = line_align(l.lower + 8 * static_cast<std::size_t>(t.node_count * t.max_local_size()));
  l.end = line_align(l.first + 8 * static_cast<std::size_t>(t.size));
  return l;
}

// shan's layout capacities (blocks, result bytes) on a node layout: the
// segment layout only changes with them, and then on a fresh zeroed segment,
// so flags never land on stale bytes of an earlier layout.
struct Capacities : LayoutState {
  std::int64_t blocks = -1;
  std::int64_t extent = -1;
};

// The layout for this call. It is laid out for capacities that only grow
// (doubling), and a change of layout takes a fresh zero-filled segment, so
// no flag ever starts on stale bytes (user data could look like an epoch).
// Capacities follow the same call history everywhere, so every rank and
// node agrees on them (the remote writers rely on it). The new segment is
// never smaller than the old one: shan allreduce lays out its data after
// it (NodeContext::segment_reserved) and would otherwise shrink and regrow
// it, call after call.
Layout reserve_layout(NodeContext& ctx, std::int64_t blocks, std::int64_t extent) {
  Capacities& c = ctx.state<Capacities>();
  if (blocks > c.blocks || extent > c.extent) {
    c.blocks = std::max(blocks, 2 * std::max<std::int64_t>(c.blocks, 32));
    c.extent = std::max(extent, 2 * std::max<std::int64_t>(c.extent, 4096));
    ctx.segment_reserved = make_layout(ctx.topo, c.blocks, c.extent).end;
    ctx.segment->renew(std::max(ctx.segment_reserved, ctx.segment->size()));
  }
  return make_layout(ctx.topo, c.blocks, c.extent);
}

// State of one call on one rank.
struct Call {
  Comm& comm;
  NodeContext& ctx;
  const Topology& t;
  const AllgathervArgs& args;
  const Options& opt;
  Stats& stats;
  std::uint64_t epoch;
  double timeout = opt.wait_timeout();
  std::int64_t block_size = 0;
  std::int64_t blocks = 0;
  Layout layout{};
  std::byte* seg = nullptr;
  bool direct = false;        // see one_rank_nodes_receiving
  std::byte* data = nullptr;  // the result: the segment's data area, or recvbuf (direct)

  std::int64_t* lower() const { return reinterpret_cast<std::int64_t*>(seg + layout.lower); }
  std::int64_t* first() const { return reinterpret_cast<std::int64_t*>(seg + layout.first); }
  std::byte* notify(int id) const { return seg + layout.notify + 8 * static_cast<std::size_t>(id); }
  std::byte* claim_word(std::int64_t b) const { return seg + layout.claim + 8 * b; }

  shan::Block locate(std::int64_t b) const {
    return shan::locate(b, t.node_order, first(), args.counts, args.displs, block_size);
  }
  std::int64_t node_first_block(int n) const {  // first id of node n (its first rank's)
    return n == t.node_count ? blocks : first()[t.ranks[n][0]];
  }
};

void copy_in(Call& c) {
  const int r = c.comm.rank();
  const std::int64_t bytes = c.args.counts[r];
  if (bytes == 0) return;
  const std::byte* src = c.args.send ? c.args.send : c.args.recv + c.args.displs[r];
  local_copy(c.data + c.args.displs[r], src, static_cast<std::size_t>(bytes));
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += bytes;
}

// Several nodes: copy_in block by block, each block's notification slot on
// this node set to the epoch as soon as the block is in the segment (slots of
// the node's own blocks are otherwise unused: notifications only ever arrive
// for foreign blocks). The rank that sends a block waits for its slot alone,
// so the ring starts with the first block copied instead of the last, and a
// single large contribution (broadcast-shaped input: one rank copies all m
// bytes) is forwarded while it is still being copied. Needs the block ids
// (load_balance) first; they depend on the counts only. `between` runs after
// every block: the copying rank keeps receiving (READY or blocks whose
// receive it posted) and sends its own share as it goes.
template <class Between>
void copy_in_blocks(Call& c, Between&& between) {
  const int r = c.comm.rank();
  const std::int64_t bytes = c.args.counts[r];
  if (bytes == 0) return;
  const std::byte* src = c.args.send ? c.args.send : c.args.recv + c.args.displs[r];
  std::byte* dst = c.data + c.args.displs[r];
  const std::int64_t first = c.first()[r];
  for (std::int64_t k = 0, at = 0; at < bytes; ++k, at += c.block_size) {
    const std::int64_t n = std::min(c.block_size, bytes - at);
    if (!c.direct) local_copy(dst + at, src + at, static_cast<std::size_t>(n));
    release_store(c.notify(kFirstBlockId + static_cast<int>(first + k)), c.epoch);
    between();
  }
  if (c.direct) return;  // sent from where they are (block_source); copy_own follows
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += bytes;
}

// A private recvbuf gets this rank's own contribution straight from sendbuf,
// right after copy_in while the other local ranks are still copying theirs
// (in place it is already there); copy_out then copies only the other
// ranks' contributions out of the segment. Measured: cheaper than copying
// the own part back out of the segment after the barrier.
void copy_own(Call& c) {
  const int r = c.comm.rank();
  if (!c.args.recv || !c.args.send || c.args.counts[r] == 0) return;
  copy_own_block(c.comm, c.args);
  c.stats.intra_messages += 1;
  c.stats.intra_bytes += c.args.counts[r];
}

// Copies every contribution but this rank's from the segment to recvbuf,
// merging contributions that lie back to back into one memcpy.
void copy_out(Call& c) {
  const std::byte* result = c.data;
  const auto& counts = c.args.counts;
  const auto& displs = c.args.displs;
  const std::size_t me = static_cast<std::size_t>(c.comm.rank());
  std::int64_t run_begin = 0;
  std::int64_t run_end = 0;  // [run_begin, run_end) is pending
  std::int64_t copied = 0;
  auto flush = [&] {
    if (run_end > run_begin) {
      local_copy(c.args.recv + run_begin, result + run_begin,
                 static_cast<std::size_t>(run_end - run_begin));
      copied += run_end - run_begin;
    }
  };
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (r == me || counts[r] == 0) continue;
    if (displs[r] != run_end) {
      flush();
      run_begin = displs[r];
    }
    run_end = displs[r] + counts[r];
  }
  flush();
  if (copied > 0) {
    c.stats.intra_messages += 1;
    c.stats.intra_bytes += copied;
  }
}

// LoadBalance parts 1 and 2, each local rank taking the columns c with
// c % local_size == local_rank; a node barrier separates and ends them.
void load_balance(Call& c) {
  const int columns = c.t.max_local_size();
  for (int col = c.t.local_rank; col < columns; col += c.t.local_size()) {
    shan::part1_lower_blocks(c.t.ranks, c.args.counts, c.block_size, col, columns, c.lower());
  }
  node_barrier(c.ctx, c.timeout);
  for (int col = c.t.local_rank; col < columns; col += c.t.local_size()) {
    shan::part2_first_blocks(c.t.ranks, c.args.counts, c.block_size, col, columns, c.lower(),
                             c.first());
  }
  node_barrier(c.ctx, c.timeout);
}

// The rank of the previous node that sends block b here: the owner of its
// working share if the block started there, else the rank that received it
// there (with receives posted, the receiver forwards: catch_and_forward).
int sender_of(const Call& c, const Transport& tr, std::int64_t b) {
  const int prev = c.t.prev_node();
  const std::int64_t begin = c.node_first_block(prev);
  const std::int64_t end = c.node_first_block(prev + 1);
  if (b < begin || b >= end) return tr.receiver(prev, kFirstBlockId + static_cast<int>(b));
  return c.t.ranks[prev][shan::working_rank(end - begin, c.t.local_size_of(prev), b - begin)];
}

// The notifications this rank receives itself (two_sided posts receives
// straight into the segment, or recvbuf, for them), each with its sender:
// the foreign blocks whose id falls on it.
// The lists a call between nodes builds, kept per layout with their
// capacity: a repeated call allocates nothing.
struct CallLists : LayoutState {
  std::vector<Expected> expected;
  std::vector<std::int64_t> pending;
};

const std::vector<Expected>& expected_here(const Call& c, const Transport& tr,
                                           std::vector<Expected>& out) {
  out.clear();
  const int me = c.comm.rank();
  const std::int64_t mine_begin = c.node_first_block(c.t.node);
  const std::int64_t mine_end = c.node_first_block(c.t.node + 1);
  for (std::int64_t b = 0; b < c.blocks; ++b) {
    if (b == mine_begin) b = mine_end;
    if (b >= c.blocks) break;
    const int id = kFirstBlockId + static_cast<int>(b);
    if (tr.receiver(c.t.node, id) != me) continue;
    const shan::Block blk = c.locate(b);
    out.push_back(
        {id, c.data + blk.offset, static_cast<std::size_t>(blk.bytes), sender_of(c, tr, b)});
  }
  return out;
}

// Where block b is read from: the result (segment or recvbuf), except that
// direct sends this rank's own blocks from sendbuf, before copy_own.
const std::byte* block_source(const Call& c, const shan::Block& blk) {
  const int me = c.comm.rank();
  if (c.direct && c.args.send && blk.rank == me)
    return c.args.send + (blk.offset - c.args.displs[me]);
  return c.data + blk.offset;
}

void send_block(Call& c, Transport& tr, std::int64_t b) {
  const shan::Block blk = c.locate(b);
  const std::size_t offset = c.layout.data + static_cast<std::size_t>(blk.offset);
  tr.put_notify(c.t.next_node(), offset, block_source(c, blk), static_cast<std::size_t>(blk.bytes),
                kFirstBlockId + static_cast<int>(b));
  c.stats.inter_messages += 1;
  c.stats.inter_bytes += blk.bytes;
}

void signal_ready(Call& c, Transport& tr) {
  if (c.t.local_rank == 0) tr.put_notify(c.t.prev_node(), 0, nullptr, 0, kReadyId);
}

// Foreign blocks in the order they should arrive: those of the previous
// node first, then the one before, around the ring.
std::vector<std::int64_t>& foreign_blocks(const Call& c, std::vector<std::int64_t>& ids) {
  ids.clear();
  for (int d = 1; d < c.t.node_count; ++d) {
    const int n = (c.t.node - d + c.t.node_count) % c.t.node_count;
    for (std::int64_t b = c.node_first_block(n); b < c.node_first_block(n + 1); ++b) {
      ids.push_back(b);
    }
  }
  return ids;
}

// Whether this rank forwards block b, which has arrived: as in the paper,
// the local rank that claims it first; where the transport posts receives,
// the next node must know the sender in advance, so its receiver does.
bool forwards(Call& c, const Transport& tr, std::int64_t b) {
  if (!tr.posts_receives()) return claim(c.claim_word(b), c.epoch);
  return tr.receiver(c.t.node, kFirstBlockId + static_cast<int>(b)) == c.comm.rank();
}

// Lines 13-19 of Algorithm 1: catch any notification for this node; the
// rank that forwards() it sends it on, unless the next node is where the
// block started. Returns true once every foreign block is here.
bool catch_and_forward(Call& c, Transport& tr, std::vector<std::int64_t>& pending) {
  const int next = c.t.next_node();
  const std::int64_t next_begin = c.node_first_block(next);
  const std::int64_t next_end = c.node_first_block(next + 1);
  std::size_t kept = 0;
  for (std::int64_t b : pending) {
    if (acquire_load(c.notify(kFirstBlockId + static_cast<int>(b))) < c.epoch) {
      pending[kept++] = b;
      continue;
    }
    const bool came_from_next = b >= next_begin && b < next_end;
    if (!came_from_next && forwards(c, tr, b)) {
      send_block(c, tr, b);
      c.stats.forwarded += 1;
    }
  }
  pending.resize(kept);
  return pending.empty();
}

// For the timeout message: which notifications never came, and what their
// slots hold instead (an older epoch, or something that is not an epoch).
std::string describe_missing(const Call& c, const std::vector<std::int64_t>& pending) {
  std::string text = "; epoch " + std::to_string(c.epoch) + ", " + std::to_string(pending.size()) +
                     " block(s) missing:";
  for (std::size_t i = 0; i < pending.size() && i < 8; ++i) {
    const std::int64_t b = pending[i];
    text += " block " + std::to_string(b) + " (slot holds " +
            std::to_string(acquire_load(c.notify(kFirstBlockId + static_cast<int>(b)))) + ")";
  }
  return text;
}

// Whether every block of this node is in the segment (copy_in_blocks).
bool own_blocks_copied(const Call& c, std::int64_t& next) {
  const std::int64_t end = c.node_first_block(c.t.node + 1);
  while (next < end && acquire_load(c.notify(kFirstBlockId + static_cast<int>(next))) >= c.epoch)
    ++next;
  return next == end;
}

void exchange_between_nodes(Call& c, Transport& tr) {
  const Topology& t = c.t;
  tr.begin(c.epoch, c.layout.notify);
  auto progress = [&] { tr.progress(); };

  node_barrier(c.ctx, c.timeout);  // everyone is done reading the previous result
  if (!tr.posts_receives()) signal_ready(c, tr);
  load_balance(c);  // two node barriers: the block ids are published
  if (tr.posts_receives()) tr.expect(expected_here(c, tr, c.ctx.state<CallLists>().expected));
  const std::int64_t node_begin = c.node_first_block(t.node);
  const std::int64_t node_blocks = c.node_first_block(t.node + 1) - node_begin;
  const std::int64_t mine = shan::working_blocks(node_blocks, t.local_size(), t.local_rank);
  std::int64_t next_send =
      node_begin + shan::working_offset(node_blocks, t.local_size(), t.local_rank);
  const std::int64_t send_end = next_send + mine;
  std::int64_t next_copied = node_begin;  // the node's blocks seen in the segment so far
  auto ready = [&] {                      // rma only (see the header comment)
    return tr.posts_receives() || acquire_load(c.notify(kReadyId)) >= c.epoch;
  };
  // This rank's share of the node's blocks, in order, each once it is copied
  // in and the next node is READY.
  auto send_copied = [&] {
    if (!ready()) return;
    while (next_send < send_end &&
           acquire_load(c.notify(kFirstBlockId + static_cast<int>(next_send))) >= c.epoch) {
      send_block(c, tr, next_send++);
    }
  };
  copy_in_blocks(c, [&] {  // flags each block: no barrier before sending
    tr.progress();
    send_copied();
  });
  copy_own(c);

  wait_until(ready, progress, "READY from the next node (shan allgatherv)", c.timeout);

  // Forwards whatever arrives while the share is sent. Done when the share
  // is sent, every foreign block is here and every block of the node is in.
  std::vector<std::int64_t>& pending = foreign_blocks(c, c.ctx.state<CallLists>().pending);
  auto step = [&] {
    send_copied();
    const bool arrived = catch_and_forward(c, tr, pending);
    return next_send == send_end && arrived && own_blocks_copied(c, next_copied);
  };
  try {
    wait_until(step, progress, "blocks of this node or from the previous node (shan allgatherv)",
               c.timeout);
  } catch (const TimeoutError& e) {
    throw TimeoutError(e.what() + describe_missing(c, pending));
  }
  tr.end(c.timeout);
  c.stats.rounds = t.node_count - 1;
}

// Whether the result goes straight into recvbuf, not through the segment:
// on nodes of one rank each nobody else reads it, and a transport that posts
// receives lets the receiver say where the data lands.
bool one_rank_nodes_receiving(const Topology& t, const Transport& tr) {
  return t.max_local_size() == 1 && tr.posts_receives();
}

}  // namespace

const std::byte* allgatherv_shan(Comm& comm, const AllgathervArgs& args, const Options& opt,
                                 Stats& stats) {
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  if (shan_inline_fits(ctx, args)) return shan_inline(comm, ctx, args, opt.wait_timeout(), stats);
  if (shan_single_copy_fits(ctx, args, opt.single_copy))
    return shan_single_copy(comm, ctx, args, opt.wait_timeout(), stats);
  if (shan_chunk_ring_fits(ctx, args))
    return shan_chunk_ring(comm, ctx, args, opt.ring_window, opt.wait_timeout(), stats);
  Call c{comm, ctx, ctx.topo, args, opt, stats, comm.next_epoch()};
  Transport* tr = c.t.node_count > 1 ? &comm.transport(ctx, opt.transport) : nullptr;
  const bool one_rank_receiving = tr && one_rank_nodes_receiving(c.t, *tr);
  c.direct = one_rank_receiving && args.recv;
  const std::int64_t max_blocks = std::min<std::int64_t>(1 << 20, comm.tag_ub() - kFirstBlockId);
  std::int64_t largest_node = 0;  // bytes of the node holding the most
  for (const std::vector<int>& node : c.t.ranks) {
    std::int64_t bytes = 0;
    for (int r : node) bytes += args.counts[r];
    largest_node = std::max(largest_node, bytes);
  }
  std::int64_t preferred = shan::pipeline_block_size(largest_node, args.total(), c.t.node_count);
  // direct: no copy-in to overlap with, so unless a pipeline pays, each
  // contribution goes in one message (256 KiB blocks at 2 nodes: 1 MiB per
  // rank 316 us, one block 249, the ring 265; docs/performance.md). Decided
  // without recvbuf, which only this rank knows: every rank cuts the same blocks.
  if (one_rank_receiving && preferred == 0)
    preferred = *std::max_element(args.counts.begin(), args.counts.end());
  c.block_size = shan::choose_block_size(opt.block_size, args.counts, max_blocks, preferred);
  for (std::int64_t n : args.counts) c.blocks += shan::blocks_of(n, c.block_size);
  c.layout = reserve_layout(ctx, c.blocks, args.extent());
  c.seg = ctx.segment->base();
  c.data = c.direct ? args.recv : c.seg + c.layout.data;
  stats.node_count = c.t.node_count;
  stats.block_count = c.blocks;

  if (tr) {
    exchange_between_nodes(c, *tr);
  } else {
    node_barrier(ctx, c.timeout);  // everyone is done reading the previous result
    copy_in(c);
    copy_own(c);
    node_barrier(ctx, c.timeout);  // the node's data is complete
  }
  if (!args.recv) return c.data;
  if (!c.direct) copy_out(c);
  return args.recv;
}

}  // namespace shancoll
