// shan on one node, pipelined: the GASPI paper's node-local step (the message
// split across the local ranks, fraction l reduced by local rank l in the
// shared segment, the result visible node-wide) cut into chunks, so that each
// chunk's three passes run while it is still in cache, and with flags per
// chunk instead of whole-message node barriers.
//
// Small messages are not split (run_whole: one flag crossing; run_inline up
// to 56 bytes: the data in the flag's line, one line transfer).
// Per chunk g (the same sequence on every local rank) of E elements, split
// into n fractions, local rank l:
//   1. copies the fractions j != l of its input into its slot g mod S of the
//      segment (its own fraction it reads from private memory), then
//      publishes ready[l] = g + 1;
//   2. once every ready[j] >= g + 1: reduces fraction l over the n inputs in
//      local rank order, into the hole its own fraction left in its slot,
//      copies that into recvbuf and publishes reduced[l] = g + 1;
//   3. copies each fraction j != l out of rank j's slot once reduced[j] >= g + 1.
// A slot is free again two chunks later, with no flag of its own: a rank
// starts chunk g only after every ready[j] >= g (step 2 of chunk g - 1, or
// the whole path's wait), and rank j publishes that only once it finished
// chunk g - 2, its last reads of the slots included; S >= 2 slots suffice.
// The counters only grow across calls, so no call ever resets or waits for
// the whole node.
//
// Cost model (n local ranks, m bytes, chunks of C bytes, memcpy at bandwidth
// B, gamma per byte combined, f one flag crossing between cores):
//   per rank  (n-1)/n m copied in, m/n reduced over n inputs and written
//             twice (segment and recvbuf), (n-1)/n m copied out: about
//             2 m/B + gamma m (n-1)/n, against 3 m/B + gamma m (n-1)/n for
//             the unpipelined step (whole copy in, whole copy out);
//   latency   3 flag waits per chunk, ceil(m/C) chunks: 3 f ceil(m/C);
//   memory    n * S * C bytes of segment, whatever m is; the slots stay in
//             cache, so from memory each rank reads its input (m) and writes
//             its result (m, streamed around the cache when m exceeds L2,
//             else 2m with the read for ownership).
// Results: fraction l is combined by rank l alone, in rank order (one node
// holds ranks 0..n-1 in order), so every rank copies out the same bytes;
// non-commutative ops keep rank order.
#include "shancoll/coll/allreduce/shan_node_pipeline.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/comm.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

constexpr std::size_t kPipelineChunkBytes = 64 << 10;  // fits L2 with its three passes
constexpr std::uint64_t kPipelineSlots = 4;            // chunks in flight per rank
// From this size on the result is written around the cache (cost.h, stream_copy):
// it exceeds a core's L2 (2 MiB here), so it would not stay there anyway.
constexpr std::int64_t kStreamMinBytes = 2 << 20;
// Up to this many bytes combined per rank (the message times the local
// ranks) the message is not split (run_whole): at 32 ranks only messages up
// to 128 B (SMPI, 32 ranks, 2 KiB: 65 µs whole, the reduction of 32 inputs
// at one core's memory bandwidth).
constexpr std::int64_t kWholeMaxCombined = 4 << 10;
// On a node of two ranks the whole path reads as much of the other's input
// as the split one (all of it, against half for the reduction and half of
// the result) and saves the split path's second flag crossing for half a
// message more combined: up to 8 KiB it wins (Xeon VM, MPICH preload, four
// alternating jobs, us: 4 KiB 1.36-1.46 against 1.59-1.64, 8 KiB 2.15-2.21
// against 2.69-2.73, Intel MPI's own 1.27-1.31 and 2.15-2.19; at 16 KiB
// level, 2.30-2.65 against 2.31-2.50).
constexpr std::int64_t kPairWholeMaxBytes = 8 << 10;
// Such a message goes to one of kWholePlaces places of its slot in turn, so a
// place is written again only 4 x 8 calls after the peer last read it. With
// the same place every 4 calls, 2 KiB took 1.85-1.93 us (Intel MPI's own
// 1.96-2.44) against 1.68-1.87 us spread (Intel MPI 2.23-2.52), three runs
// each: the writer then seldom takes back lines the peer holds.
constexpr std::size_t kWholeSpacing = kPairWholeMaxBytes;  // the largest whole message
constexpr std::size_t kWholePlaces = kPipelineChunkBytes / kWholeSpacing;

// Whether a message of `bytes` on n local ranks goes whole (run_whole).
constexpr bool goes_whole(std::int64_t bytes, int n) {
  return n == 2 ? bytes <= kPairWholeMaxBytes : bytes * n <= kWholeMaxCombined;
}

enum Flag { kReady, kReduced, kFlags };
// A message of at most kInlineBytes travels beside its ready flag, in one of
// two lines per rank (chunk g in line g mod 2, free again at g + 2 as the
// slots are): a reader's wait and its read are one line transfer.
constexpr int kInlineLines = 2;

struct Pipeline {
  const AllreduceArgs& args;
  int n, me;           // local size and rank
  std::byte* base;     // the segment
  std::int64_t chunk;  // elements per chunk
  std::size_t esize;
  double timeout;
  void (*copy_out)(void*, const void*, std::size_t);  // into recvbuf

  void* flag(Flag f, int local) const { return base + (f * n + local) * kCacheLine; }
  std::byte* inline_line(int local, std::uint64_t g) const {
    return base + (kFlags * n + local * kInlineLines + g % kInlineLines) * kCacheLine;
  }
  std::byte* slot(int local, std::uint64_t g) const {
    const std::size_t index = static_cast<std::size_t>(local) * kPipelineSlots + g % kPipelineSlots;
    return base + lines_bytes(n) + index * kPipelineChunkBytes;
  }
  static std::size_t lines_bytes(int n) { return (kFlags + kInlineLines) * n * kCacheLine; }
  void wait_all(Flag f, std::uint64_t value, const char* what) const {
    for (int j = 0; j < n; ++j)
      if (j != me) wait_flag_reaches(flag(f, j), value, what, timeout);
  }
};

// Fraction j of a chunk of e elements: [lo(j), lo(j + 1)).
std::int64_t lo(std::int64_t e, int j, int n) { return e * j / n; }

// reduced = x_0 o (x_1 o (... o x_{n-1})) over fraction `me` of the chunk at
// element `first`: rank order, folded from the right (the in-place form).
void reduce_fraction(const Pipeline& p, std::uint64_t g, std::int64_t first, std::int64_t e,
                     std::byte* out) {
  const std::int64_t a = lo(e, p.me, p.n), len = lo(e, p.me + 1, p.n) - a;
  const std::byte* mine = (p.args.send ? p.args.send : p.args.recv) + (first + a) * p.esize;
  auto input = [&](int j) { return j == p.me ? mine : p.slot(j, g) + a * p.esize; };
  const Reducer& r = *p.args.reducer;
  const int last = p.n - 1;
  r.combine(out, input(last - 1), input(last), len, nullptr);
  for (int j = last - 2; j >= 0; --j) r.combine(out, input(j), out, len, nullptr);
}

void run_chunk(const Pipeline& p, std::uint64_t g, std::int64_t first, std::int64_t e,
               Stats& stats) {
  const std::byte* in = (p.args.send ? p.args.send : p.args.recv) + first * p.esize;
  std::byte* out = p.args.recv + first * p.esize;
  std::byte* my_slot = p.slot(p.me, g);
  for (int j = 0; j < p.n; ++j) {  // 1. inputs in
    if (j == p.me) continue;
    const std::int64_t a = lo(e, j, p.n), b = lo(e, j + 1, p.n);
    local_copy(my_slot + a * p.esize, in + a * p.esize, (b - a) * p.esize);
  }
  release_store(p.flag(kReady, p.me), g + 1);  // after the data (flags.h)

  p.wait_all(kReady, g + 1, "shan allreduce: inputs");  // 2. my fraction
  const std::int64_t a = lo(e, p.me, p.n), b = lo(e, p.me + 1, p.n);
  reduce_fraction(p, g, first, e, my_slot + a * p.esize);
  p.copy_out(out + a * p.esize, my_slot + a * p.esize, (b - a) * p.esize);
  release_store(p.flag(kReduced, p.me), g + 1);

  for (int j = 0; j < p.n; ++j) {  // 3. the other fractions out
    if (j == p.me) continue;
    wait_flag_reaches(p.flag(kReduced, j), g + 1, "shan allreduce: results", p.timeout);
    const std::int64_t ja = lo(e, j, p.n), jb = lo(e, j + 1, p.n);
    p.copy_out(out + ja * p.esize, p.slot(j, g) + ja * p.esize, (jb - ja) * p.esize);
  }
  const std::int64_t moved = (e - (b - a)) * static_cast<std::int64_t>(p.esize);
  stats.intra_messages += 2;
  stats.intra_bytes += 2 * moved;
}

// A small message (goes_whole), not split: every rank copies all of
// its input into its slot (at one of kWholePlaces places), and once every
// ready[j] >= g + 1 reduces all n inputs itself, from the slots, in rank
// order, straight into recvbuf. One flag crossing instead of two; the same
// bytes on every rank (the same computation on the same inputs); n times the
// combine work, a few KiB.
void run_whole(const Pipeline& p, std::uint64_t g, std::int64_t e, Stats& stats) {
  const std::size_t bytes = static_cast<std::size_t>(e) * p.esize;
  auto at = [&](int j) { return p.slot(j, g) + g / kPipelineSlots % kWholePlaces * kWholeSpacing; };
  local_copy(at(p.me), p.args.send ? p.args.send : p.args.recv, bytes);
  release_store(p.flag(kReady, p.me), g + 1);  // after the data (flags.h)
  p.wait_all(kReady, g + 1, "shan allreduce: inputs");
  const Reducer& r = *p.args.reducer;
  const int last = p.n - 1;  // the slots, not my private input: recvbuf may be it
  r.combine(p.args.recv, at(last - 1), at(last), e, nullptr);
  for (int j = last - 2; j >= 0; --j) r.combine(p.args.recv, at(j), p.args.recv, e, nullptr);
  stats.intra_messages += 1;
  stats.intra_bytes += static_cast<std::int64_t>(bytes);
}

// The whole path for a message of at most kInlineBytes: my input and ready
// flag (with my size, flags.h) in my inline line, every rank's line read
// once its flag says g + 1.
// Per rank: one store of its line, n - 1 line transfers in, all at once.
// Ranks whose counts differ all refuse the call once they have read every
// line, so the chunk counters stay in step and the communicator usable.
void run_inline(const Pipeline& p, std::uint64_t g, std::int64_t e, Stats& stats) {
  const std::size_t bytes = static_cast<std::size_t>(e) * p.esize;
  std::byte* mine = p.inline_line(p.me, g);
  std::memcpy(mine + kFlagBytes, p.args.send ? p.args.send : p.args.recv, bytes);
  release_store(mine, inline_flag(g + 1, bytes));  // after the data (flags.h)
  int differs = -1;
  for (int j = 0; j < p.n; ++j) {
    if (j == p.me) continue;
    const std::byte* line = p.inline_line(j, g);
    wait_flag_reaches(line, inline_flag(g + 1, 0), "shan allreduce: inputs", p.timeout);
    if (acquire_load(line) != inline_flag(g + 1, bytes)) differs = j;
  }
  if (differs >= 0)
    throw ArgumentError("count: the local ranks' calls differ (local rank " +
                        std::to_string(differs) + " and this one, " + std::to_string(p.me) +
                        "): MPI requires the same on every rank");
  const auto at = [&](int j) { return p.inline_line(j, g) + kFlagBytes; };
  const Reducer& r = *p.args.reducer;
  const int last = p.n - 1;  // the lines, not my private input: recvbuf may be it
  r.combine(p.args.recv, at(last - 1), at(last), e, nullptr);
  for (int j = last - 2; j >= 0; --j) r.combine(p.args.recv, at(j), p.args.recv, e, nullptr);
  stats.intra_messages += 1;
  stats.intra_bytes += static_cast<std::int64_t>(bytes);
}

}  // namespace

void shan_node_pipeline(NodeContext& ctx, const AllreduceArgs& args, double timeout, Stats& stats) {
  const Topology& t = ctx.topo;
  const std::size_t esize = args.reducer->elem_size();
  if (t.local_size() == 1) {
    if (args.send) local_copy(args.recv, args.send, static_cast<std::size_t>(args.bytes()));
    return;
  }
  ShanPipelineState& s = ctx.state<ShanPipelineState>();
  if (!s.segment) {  // collective over the node, on its first use only
    s.segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
    s.segment->reserve(Pipeline::lines_bytes(t.local_size()) +
                       t.local_size() * kPipelineSlots * kPipelineChunkBytes);
  }
  const bool large = args.bytes() >= kStreamMinBytes;
  const Pipeline p{args,
                   t.local_size(),
                   t.local_rank,
                   s.segment->base(),
                   std::max<std::int64_t>(1, kPipelineChunkBytes / esize),
                   esize,
                   timeout,
                   large ? stream_copy : local_copy};
  if (args.bytes() <= static_cast<std::int64_t>(kInlineBytes))
    return run_inline(p, s.chunks++, args.count, stats);
  if (goes_whole(args.bytes(), t.local_size())) return run_whole(p, s.chunks++, args.count, stats);
  for (std::int64_t first = 0; first < args.count; first += p.chunk) {
    run_chunk(p, s.chunks++, first, std::min(p.chunk, args.count - first), stats);
  }
}

}  // namespace shancoll
