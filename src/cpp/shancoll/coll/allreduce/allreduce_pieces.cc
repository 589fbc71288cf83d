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
//      the others' from their regions A) into its region B, copies the
//      piece into recvbuf and publishes it; then copies out piece k - 1 of
//      every other fraction (a wait for what its owner did a piece earlier);
//   3. copies out the other fractions' remaining pieces, then says the
//      round is done.
// Two sets of regions alternate by round, so a rank writes a set again once
// every rank said it finished the round before the last (no node barrier).
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
//   memory    2 n (kRoundBytes + kRoundBytes) bytes of segment, whatever m is.
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
#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"

namespace shancoll {
namespace {

constexpr std::size_t kRoundBytes = 1 << 20;    // per region: the segment's size per rank / 4
constexpr std::int64_t kPieceBytes = 64 << 10;  // block_size 0: the C floor's best at 64 KiB-2 MiB
constexpr int kSets = 2;                        // region sets, alternating by round
constexpr std::size_t kPage = 4096;
// Regions kRoundBytes apart would put the same offset of every region (and
// of the caller's page-aligned buffers) in the same cache sets: stagger them.
constexpr std::size_t kRegionStride = kRoundBytes + 17 * kCacheLine;

// Kept per node layout: its own segment (counting flags must survive other
// algorithms' calls) and the rounds done so far, identical on every local rank.
struct PiecesState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t rounds = 0;
};

// Flag lines per local rank: one per fraction (pieces in), then these.
enum Line { kOut, kDone, kBytes0, kBytes1, kLines };

std::uint64_t tag(std::uint64_t round, std::int64_t pieces) {
  return round << 32 | static_cast<std::uint64_t>(pieces);
}

struct Round {
  const AllreduceArgs& args;
  int n, me;
  std::byte* base;
  std::uint64_t seq;   // this round's number, from 1
  std::int64_t first;  // its first element
  std::int64_t count;  // its elements
  std::int64_t piece;  // elements per piece
  std::size_t esize;
  double timeout;

  std::byte* line(int rank, int index) const {
    return base + (static_cast<std::size_t>(rank) * (n + kLines) + index) * kCacheLine;
  }
  std::byte* in_flag(int rank, int fraction) const { return line(rank, fraction); }
  std::byte* flag(int rank, Line l) const { return line(rank, n + l); }
  std::byte* region(int rank, int which) const {  // 0: A (inputs), 1: B (results)
    const std::size_t header =
        (static_cast<std::size_t>(n) * (n + kLines) * kCacheLine + kPage - 1) / kPage * kPage;
    const std::size_t index = (static_cast<std::size_t>(rank) * kSets + seq % kSets) * 2 + which;
    return base + header + index * kRegionStride;
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
      local_copy(r.region(r.me, 0) + off, r.input() + off, bytes);
      release_store(r.in_flag(r.me, j), tag(r.seq, k + 1));  // after the data (flags.h)
      stats.intra_messages += 1;
      stats.intra_bytes += static_cast<std::int64_t>(bytes);
    }
  }
}

// The round's size, as each rank wrote it into its set's bytes line before
// its first piece: a rank whose own differs refuses (the others then time out).
void check_same_size(const Round& r, int other) {
  const Line l = r.seq % kSets ? kBytes1 : kBytes0;
  const std::uint64_t theirs = acquire_load(r.flag(other, l));
  if (theirs == static_cast<std::uint64_t>(r.count)) return;
  throw ArgumentError("count: the local ranks' calls differ (local rank " + std::to_string(other) +
                      " and this one, " + std::to_string(r.me) +
                      "): MPI requires the same on every rank");
}

// 2. Piece k of my fraction: x_0 o (x_1 o (... o x_{n-1})), folded from the
// right (MPI_Reduce_local's in-place form) into region B, then into recvbuf.
void reduce_piece(const Round& r, std::int64_t k, Stats& stats) {
  const std::size_t off = r.bytes_at(r.at(r.me, k));
  for (int l = 0; l < r.n; ++l) {
    if (l == r.me) continue;
    wait_flag_reaches(r.in_flag(l, r.me), tag(r.seq, k + 1), "pieces allreduce: inputs", r.timeout);
    if (k == 0) check_same_size(r, l);
  }
  auto x = [&](int l) { return l == r.me ? r.input() + off : r.region(l, 0) + off; };
  std::byte* out = r.region(r.me, 1) + off;
  const Reducer& red = *r.args.reducer;
  const std::int64_t len = r.len(r.me, k);
  red.combine(out, x(r.n - 2), x(r.n - 1), len, nullptr);
  for (int l = r.n - 3; l >= 0; --l) red.combine(out, x(l), out, len, nullptr);
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

void run_round(const Round& r, Stats& stats) {
  for (int l = 0; l < r.n; ++l)  // every rank left the round that used this set
    if (l != r.me)
      wait_flag_reaches(r.flag(l, kDone), r.seq < kSets ? 0 : r.seq - kSets,
                        "pieces allreduce: the previous calls", r.timeout);
  release_store(r.flag(r.me, r.seq % kSets ? kBytes1 : kBytes0),
                static_cast<std::uint64_t>(r.count));
  copy_in(r, stats);
  std::vector<std::int64_t> copied(static_cast<std::size_t>(r.n), 0);
  for (std::int64_t k = 0; k < r.pieces(r.me); ++k) {
    reduce_piece(r, k, stats);
    for (int j = 0; j < r.n; ++j)  // the others' previous piece
      if (j != r.me && k >= 1 && copied[j] < std::min(k, r.pieces(j)))
        copy_out(r, j, copied[j]++, stats);
  }
  for (int j = 0; j < r.n; ++j)
    while (j != r.me && copied[j] < r.pieces(j)) copy_out(r, j, copied[j]++, stats);
  release_store(r.flag(r.me, kDone), r.seq);
  stats.rounds += 2;  // the reduce-scatter and the allgather
}

void pieces_on_node(NodeContext& ctx, const AllreduceArgs& args, const Options& options,
                    Stats& stats) {
  const Topology& t = ctx.topo;
  const std::size_t esize = args.reducer->elem_size();
  PiecesState& s = ctx.state<PiecesState>();
  const int n = t.local_size();
  if (!s.segment) {  // collective over the node, on its first use only
    s.segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
    const std::size_t header =
        (static_cast<std::size_t>(n) * (n + kLines) * kCacheLine + kPage - 1) / kPage * kPage;
    s.segment->reserve(header + static_cast<std::size_t>(n) * kSets * 2 * kRegionStride);
  }
  const std::int64_t block = options.block_size > 0 ? options.block_size : kPieceBytes;
  const std::int64_t piece = std::max<std::int64_t>(1, block / static_cast<std::int64_t>(esize));
  const std::int64_t per_round =
      std::max<std::int64_t>(1, static_cast<std::int64_t>(kRoundBytes / esize));
  for (std::int64_t first = 0; first < args.count; first += per_round) {
    const Round r{args,
                  n,
                  t.local_rank,
                  s.segment->base(),
                  ++s.rounds,
                  first,
                  std::min(per_round, args.count - first),
                  piece,
                  esize,
                  options.wait_timeout()};
    run_round(r, stats);
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
