// pieces: allreduce on one node as a reduce-scatter and an allgather through
// the node's shared segment, in the shape of Intel MPI's shm allreduce
// (observed with perf and uprobes, docs/performance.md: each rank's inputs
// go into the segment in pieces with a flag each, the owner of a fraction
// reads them out and reduces, the results come back the same way), with the
// copies out of the results one piece behind the reductions.
//
// n local ranks, m bytes, the message cut into rounds of at most
// kRoundBytes (the segment does not grow with m); a round's elements split
// into n fractions, fraction j = [lo(j), lo(j + 1)) reduced by local rank j.
// Per round, local rank l:
//   1. copies fraction j of its input, for every j != l (l + 1 first), into
//      its region A in pieces of `block_size` bytes (64 KiB), publishing
//      after each piece how many of fraction j's pieces are in (one flag
//      line per rank and fraction): no wait, every rank copies at once;
//   2. for each piece k of fraction l, once every rank's piece k is in:
//      combines the n inputs in rank order (its own from its own buffer,
//      the others' from their regions A) into its recvbuf, copies the
//      piece into its region B and publishes it; then copies out piece
//      k - 1 of every other fraction (a wait for what its owner did a piece
//      earlier);
//   3. copies out the other fractions' remaining pieces.
// The copies into regions A and B are a ring writer's (shm/ring_stores.h):
// plain stores while the cores are near, around the cache while far, by
// the writer's own timings (the reader takes the lines back otherwise).
// Where a round's regions lie: regions A and B of a rank are two rings of
// `ring_window` bytes, each round's bytes after the previous round's, back
// to back, starting over at 0 where a round would pass the end. A rank needs
// no wait of its own to write a place again, whatever round lay there: it
// writes region A of round g only once it finished round g - 1, so once
// every owner had published its results of g - 1, after reading their
// inputs; and region B only once every rank's inputs of g are in, so once
// every rank finished round g - 1. Without the option the window holds two
// rounds of this call's size: two places, reused call after call, which the
// caches keep. On the Zen 4 VM a 2 MiB ring, whose lines come round from the
// shared L3 rather than from the other core's L2, ran 4-256 KiB two to
// three times faster (docs/performance.md, "Allreduce through a ring").
// Counters only grow (round << 32 | pieces): nothing is reset between calls.
// Several nodes: shan (its node step, then the inter-node allreduce per
// fraction); this algorithm is the node step alone.
//
// Cost model (n local ranks, m bytes, pieces of b bytes, memcpy at bandwidth
// B, gamma per byte combined, f one flag crossing between cores):
//   per rank  (n-1)/n m copied in (in long runs: one copy per piece, no
//             wait between them), m/n combined over n inputs and copied into
//             recvbuf, (n-1)/n m copied out: about 2 m/B + gamma m (n-1)/n,
//             as shan's pipeline, with its waits moved: phase 1 has none,
//             and each copy out waits for a piece finished a step earlier;
//   latency   f per piece of the fraction, ceil(m / (n b)) pieces, plus one
//             round's start;
//   memory    2 n max(2 kRoundBytes, ring_window) bytes of segment,
//             whatever m is.
// The C floor on the AMD EPYC VM (Zen 3; benchmarks/c/pair_floor.c,
// pieces-seg-ovl): 1 MiB in 75 us against 86 for shan's lock-step chunks
// and 114 for release_gather's reduce then bcast.
// Results: each fraction is combined by its owner alone, in rank order (one
// node holds ranks 0..n-1 in order): every rank copies out the same bytes,
// and non-commutative ops keep rank order.
// In place: the owner reads its own fraction's input from recvbuf, a piece
// at a time, before it writes that piece's result there; every other part
// of recvbuf was copied into region A in phase 1 before phase 3 writes it.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/comm.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/chunk_ring.h"  // ring_bytes
#include "shancoll/shm/flags.h"
#include "shancoll/shm/ring_stores.h"
#include "shancoll/shm/segment.h"

namespace shancoll {
namespace {

constexpr std::int64_t kRoundBytes = 1 << 20;   // at most, per round
constexpr std::int64_t kPieceBytes = 64 << 10;  // block_size 0: the C floor's best at 64 KiB-2 MiB
constexpr std::size_t kPage = 4096;
// Rings whose starts lie a multiple of the window apart would put the same
// offset of every ring (and of the caller's page-aligned buffers) in the
// same cache sets: stagger them.
constexpr std::size_t kStagger = 17 * kCacheLine;

// Kept per node layout: its own segment (counting flags must survive other
// algorithms' calls), the rounds done so far and where the next one goes,
// identical on every local rank.
struct PiecesState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t rounds = 0;
  std::int64_t window = 0;  // the rings' bytes
  std::int64_t cursor = 0;  // where the next round may start in them
  // Per local rank, its fraction's pieces this rank copied out so far in the
  // round: kept here so that a repeated call allocates nothing.
  std::vector<std::int64_t> copied;
  // How this rank stores into its rings (shm/ring_stores.h): region A per
  // reader (the fraction's owner), region B read by every other rank.
  std::vector<RingStores> input_stores;
  RingStores result_stores;
};

// Flag lines per local rank: one per fraction (pieces in), then these.
enum Line { kOut, kBytes0, kBytes1, kLines };

std::uint64_t tag(std::uint64_t round, std::int64_t pieces) {
  return round << 32 | static_cast<std::uint64_t>(pieces);
}

std::size_t header_bytes(int n) {
  return (static_cast<std::size_t>(n) * (n + kLines) * kCacheLine + kPage - 1) / kPage * kPage;
}

// The segment's bytes for rings of `window` bytes.
std::size_t segment_bytes(int n, std::int64_t window) {
  return header_bytes(n) +
         static_cast<std::size_t>(2 * n) * (static_cast<std::size_t>(window) + kStagger);
}

struct Round {
  const AllreduceArgs& args;
  int n, me;
  std::byte* base;
  std::size_t stride;  // from one ring to the next
  std::size_t place;   // this round's offset in the rings
  std::uint64_t seq;   // this round's number, from 1
  std::int64_t first;  // its first element
  std::int64_t count;  // its elements
  std::int64_t piece;  // elements per piece
  std::size_t esize;
  double timeout;
  PiecesState* stores;  // input_stores and result_stores

  std::byte* line(int rank, int index) const {
    return base + (static_cast<std::size_t>(rank) * (n + kLines) + index) * kCacheLine;
  }
  std::byte* in_flag(int rank, int fraction) const { return line(rank, fraction); }
  std::byte* flag(int rank, Line l) const { return line(rank, n + l); }
  std::byte* region(int rank, int which) const {  // 0: A (inputs), 1: B (results)
    const std::size_t ring = static_cast<std::size_t>(rank) * 2 + which;
    return base + header_bytes(n) + ring * stride + place;
  }
  std::int64_t lo(int j) const { return count * j / n; }
  std::int64_t pieces(int j) const { return (lo(j + 1) - lo(j) + piece - 1) / piece; }
  // Piece k of fraction j: its first element in the round and its length.
  std::int64_t at(int j, std::int64_t k) const { return lo(j) + k * piece; }
  std::int64_t len(int j, std::int64_t k) const { return std::min(piece, lo(j + 1) - at(j, k)); }
  std::size_t bytes_at(std::int64_t element) const {
    return static_cast<std::size_t>(element) * esize;
  }
  const std::byte* input() const { return (args.send ? args.send : args.recv) + bytes_at(first); }
  std::byte* output() const { return args.recv + bytes_at(first); }
};

// 1. Every fraction but mine into my region A, a flag per piece.
void copy_in(const Round& r, Stats& stats) {
  for (int t = 1; t < r.n; ++t) {
    const int j = (r.me + t) % r.n;
    for (std::int64_t k = 0; k < r.pieces(j); ++k) {
      const std::size_t off = r.bytes_at(r.at(j, k)), bytes = r.bytes_at(r.len(j, k));
      r.stores->input_stores[static_cast<std::size_t>(j)].copy(r.region(r.me, 0) + off,
                                                               r.input() + off, bytes);
      release_store(r.in_flag(r.me, j), tag(r.seq, k + 1));  // after the data (flags.h)
      stats.intra_messages += 1;
      stats.intra_bytes += static_cast<std::int64_t>(bytes);
    }
  }
}

// The round's size and place, as each rank wrote them into its bytes line
// before its first piece (the elements, at most 1 MiB of them, in the low
// half; the place in lines above): a rank whose own differ refuses before
// it reads a piece (the others then time out). Two lines, alternating by
// round: a rank is at most one round ahead of another (it finishes a round
// only with every other rank's pieces).
std::uint64_t shape(const Round& r) {
  return static_cast<std::uint64_t>(r.place / kCacheLine) << 32 |
         static_cast<std::uint64_t>(r.count);
}
std::byte* shape_line(const Round& r, int rank) {
  return r.flag(rank, r.seq % 2 ? kBytes1 : kBytes0);
}

void check_same_shape(const Round& r, int other) {
  if (acquire_load(shape_line(r, other)) == shape(r)) return;
  throw ArgumentError("count or ring_window: the local ranks' calls differ (local rank " +
                      std::to_string(other) + " and this one, " + std::to_string(r.me) +
                      "): MPI requires the same count on every rank, shancoll the same options");
}

// Where piece k's fold goes first: recvbuf, whence it is stored into region
// B by the ring's way (shm/ring_stores.h: around the cache while the cores
// are far). In place, recvbuf holds my input, which the fold overwrites
// before it reads it unless I am the last rank (the first combine's b); then
// the fold goes into region B by plain stores and is copied into recvbuf.
bool fold_into_recvbuf(const Round& r) { return r.args.send || r.me == r.n - 1; }

// 2. Piece k of my fraction: x_0 o (x_1 o (... o x_{n-1})), folded from the
// right (MPI_Reduce_local's in-place form), into recvbuf and region B.
void reduce_piece(const Round& r, std::int64_t k, Stats& stats) {
  const std::size_t off = r.bytes_at(r.at(r.me, k));
  for (int l = 0; l < r.n; ++l) {
    if (l == r.me) continue;
    wait_flag_reaches(r.in_flag(l, r.me), tag(r.seq, k + 1), "pieces allreduce: inputs", r.timeout);
    if (k == 0) check_same_shape(r, l);
  }
  auto x = [&](int l) { return l == r.me ? r.input() + off : r.region(l, 0) + off; };
  std::byte* shared = r.region(r.me, 1) + off;
  const bool to_recvbuf = fold_into_recvbuf(r);
  std::byte* out = to_recvbuf ? r.output() + off : shared;
  const Reducer& red = *r.args.reducer;
  const std::int64_t len = r.len(r.me, k);
  red.combine(out, x(r.n - 2), x(r.n - 1), len, nullptr);
  for (int l = r.n - 3; l >= 0; --l) red.combine(out, x(l), out, len, nullptr);
  if (to_recvbuf)
    r.stores->result_stores.copy(shared, out, r.bytes_at(len));
  else
    local_copy(r.output() + off, out, r.bytes_at(len));
  release_store(r.flag(r.me, kOut), tag(r.seq, k + 1));
  stats.block_count += 1;
}

// 3. Piece k of fraction j, from its owner's region B into recvbuf.
void copy_out(const Round& r, int j, std::int64_t k, Stats& stats) {
  wait_flag_reaches(r.flag(j, kOut), tag(r.seq, k + 1), "pieces allreduce: results", r.timeout);
  const std::size_t off = r.bytes_at(r.at(j, k)), bytes = r.bytes_at(r.len(j, k));
  local_copy(r.output() + off, r.region(j, 1) + off, bytes);
  stats.intra_messages += 1;
  stats.intra_bytes += static_cast<std::int64_t>(bytes);
}

void run_round(const Round& r, std::vector<std::int64_t>& copied, Stats& stats) {
  release_store(shape_line(r, r.me), shape(r));
  copy_in(r, stats);
  copied.assign(static_cast<std::size_t>(r.n), 0);
  for (std::int64_t k = 0; k < r.pieces(r.me); ++k) {
    reduce_piece(r, k, stats);
    for (int j = 0; j < r.n; ++j)  // the others' previous piece
      if (j != r.me && k >= 1 && copied[j] < std::min(k, r.pieces(j)))
        copy_out(r, j, copied[j]++, stats);
  }
  for (int j = 0; j < r.n; ++j)
    while (j != r.me && copied[j] < r.pieces(j)) copy_out(r, j, copied[j]++, stats);
  stats.rounds += 2;  // the reduce-scatter and the allgather
}

// The node's segment, with room for rings of `window` bytes (collective over
// the node where it is made or grows: every local rank is in the same call
// with the same count and options; a grown segment's counting flags start
// from 0 again, which the rounds' numbers only ever pass).
NodeSegment& segment_for(NodeContext& ctx, PiecesState& s, std::int64_t window) {
  const std::size_t want = segment_bytes(ctx.topo.local_size(), std::max(window, 2 * kRoundBytes));
  if (!s.segment) {
    const MPI_Comm node = ctx.topo.node_comm;
    s.segment = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
  }
  if (s.segment->size() < want) s.segment->reserve(want);
  return *s.segment;
}

// Where the next round of `bytes` goes in rings of `window` bytes.
std::size_t place(PiecesState& s, std::int64_t window, std::int64_t bytes) {
  if (window != s.window) s.window = window, s.cursor = 0;
  const auto size = static_cast<std::int64_t>(line_align(static_cast<std::size_t>(bytes)));
  if (s.cursor + size > window) s.cursor = 0;
  const std::int64_t at = s.cursor;
  s.cursor += size;
  return static_cast<std::size_t>(at);
}

void pieces_on_node(NodeContext& ctx, const AllreduceArgs& args, const Options& options,
                    Stats& stats) {
  const int n = ctx.topo.local_size();
  const auto esize = static_cast<std::int64_t>(args.reducer->elem_size());
  PiecesState& s = ctx.state<PiecesState>();
  const std::int64_t block = options.block_size > 0 ? options.block_size : kPieceBytes;
  const std::int64_t piece = std::max<std::int64_t>(1, block / esize);
  std::int64_t round_bytes = std::min(kRoundBytes, args.count * esize);
  const std::int64_t window = options.ring_window > 0
                                  ? ring_bytes(options.ring_window)
                                  : 2 * static_cast<std::int64_t>(line_align(round_bytes));
  round_bytes = std::min(round_bytes, window / 2);  // at least two places
  const std::int64_t per_round = std::max<std::int64_t>(1, round_bytes / esize);
  const NodeSegment& segment = segment_for(ctx, s, window);
  Round r{args,
          n,
          ctx.topo.local_rank,
          segment.base(),
          0,
          0,
          0,
          0,
          0,
          piece,
          static_cast<std::size_t>(esize),
          options.wait_timeout(),
          &s};
  s.input_stores.resize(static_cast<std::size_t>(n));
  r.stride = (segment.size() - header_bytes(n)) / (2 * static_cast<std::size_t>(n)) / kCacheLine *
             kCacheLine;
  try {
    for (std::int64_t first = 0; first < args.count; first += per_round) {
      r.seq = ++s.rounds;
      r.first = first;
      r.count = std::min(per_round, args.count - first);
      r.place = place(s, window, r.count * esize);
      run_round(r, s.copied, stats);
    }
  } catch (...) {  // a refused or timed-out round: every rank's next call starts the rings over
    s.window = 0;
    throw;
  }
}

}  // namespace

void allreduce_pieces(Comm& comm, const AllreduceArgs& args, const Options& options, Stats& stats) {
  NodeContext& ctx = comm.nodes(options.ranks_per_node);
  const Topology& t = ctx.topo;
  if (t.node_count > 1) return allreduce_shan(comm, args, options, stats);
  stats.node_count = 1;
  if (args.count == 0) return;
  if (t.local_size() == 1) {
    if (args.send) local_copy(args.recv, args.send, static_cast<std::size_t>(args.bytes()));
    return;
  }
  pieces_on_node(ctx, args, options, stats);
}

}  // namespace shancoll
