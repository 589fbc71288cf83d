// shan allgatherv on one node with a private recvbuf: each rank's block goes
// through a ring of a few cache-sized slots of its own instead of a segment
// the size of the result. The owner copies chunk k of its block into slot
// k mod S and raises the slot's flag; every other local rank copies the
// chunk out into its recvbuf and acknowledges it; the owner reuses the slot
// for chunk k + S once every reader acknowledged chunk k. The slots stay in
// the caches call after call (S * C bytes per rank), so each byte is written
// once into shared memory by its owner and read once by each reader from
// the owner's cache, both cores copying at once; a result-sized segment
// instead is written cold, line by line from memory (measured: the segment
// path lost to Open MPI's copy-in/copy-out point-to-point from 2 MiB, and
// to Intel MPI's from 32 KiB; docs/performance.md).
//
// No node barrier: a writer starts a call with a wait for every reader's
// "done with my previous call" acknowledgement, which also protects the
// header it then writes. The header carries the writer's byte count and a
// hash of its recvcounts: a reader whose recvcounts differ still takes
// every chunk the writer sends (acknowledging, not copying), so the ranks
// stay in step, and refuses the call after it like every other rank.
//
// Cost (n local ranks, blocks of b bytes, chunks of c bytes): per rank b
// bytes into its slots, (n - 1) b out of the others' slots, b copied to its
// own recvbuf (not in place); b / c chunk flags written and (n - 1) b / c
// acknowledgements; (n - 1) header lines read. A reader's copy of chunk k
// overlaps the owner's copy of chunk k + 1.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/hash.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"
#include "shancoll/stream_copy.h"

namespace shancoll {
namespace {

// Chunks: a quarter of the largest block, within [kMinChunk, kSlotBytes];
// kSlots slots of kSlotBytes per rank (256 KiB: a quarter of this machine's
// L2). Measured on the AMD EPYC VM, 2 ranks (docs/performance.md, "Allgather
// through a ring of chunks"): chunks of at least 16 KiB beat 4 KiB ones up to
// 32 KiB per rank (8 KiB 0.47 against 0.60 us, 32 KiB 1.50 against 1.55);
// from 64 KiB chunks of 16-64 KiB, 4 or 8 slots, were alike within the spread.
constexpr std::int64_t kSlotBytes = 64 << 10;
constexpr int kSlots = 4;
constexpr std::int64_t kDepth = 4;
constexpr std::int64_t kMinChunk = 16 << 10;
// Readers take chunk k - kLead while the writers put in chunk k, so the
// flag they wait for is usually up already.
constexpr std::int64_t kLead = 1;
static_assert(kSlots > kLead);
// From this many bytes of result, the copies into recvbuf go around the
// cache (stream_copy.h): the result (with this rank's own block read twice)
// no longer fits beside the slots in half the 32 MiB L3. Measured, 8 MiB per
// rank: 802 against 1145 us; 4 MiB per rank (8 MiB of result) lost, 370
// against 331.
constexpr std::int64_t kStreamFrom = 16 << 20;

// Flag values: the call from bit 24, the chunk (counting from 1) below; a
// reader done with a whole call acknowledges its last possible chunk.
constexpr int kCallShift = 24;
constexpr std::uint64_t kWholeCall = (std::uint64_t{1} << kCallShift) - 1;
constexpr std::uint64_t flag_of(std::uint64_t call, std::uint64_t chunk_plus_one) {
  return call << kCallShift | chunk_plus_one;
}

// Where things are in the ring segment of n local ranks: per writer a header
// line (flag, bytes, counts hash), S slot flags and n acknowledgement lines,
// each on a line of its own, then the slots.
struct RingLayout {
  std::byte* base;
  int n;
  std::byte* header(int w) const { return base + kCacheLine * line_index(w, 0); }
  std::byte* ready(int w, int s) const { return base + kCacheLine * line_index(w, 1 + s); }
  std::byte* done(int w, int reader) const {
    return base + kCacheLine * line_index(w, 1 + kSlots + reader);
  }
  std::byte* slot(int w, int s) const {
    const std::size_t lines = kCacheLine * line_index(n, 0);
    return base + lines + static_cast<std::size_t>(kSlotBytes) * (w * kSlots + s);
  }
  std::size_t bytes() const { return slot(n, 0) - base; }
  std::size_t line_index(int w, int k) const {
    return static_cast<std::size_t>(w) * (1 + kSlots + n) + k;
  }
};

struct Header {  // word 0 is the flag, written last
  std::uint64_t flag;
  std::int64_t bytes;
  std::int64_t chunk;
  std::uint64_t counts_hash;
};

// What a reader learns from a writer's header.
struct Writer {
  std::int64_t bytes = 0;
  std::int64_t chunk = 1;
  bool matches = true;  // its recvcounts hash like mine: copy its chunks
};

// Per node layout: the slots, the calls that used them (every local rank
// takes this path on the same calls: the choice depends on counts alone).
struct ChunkRingState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t calls = 0;
  std::vector<Writer> writers;  // scratch: a repeated call allocates nothing
};

std::int64_t chunk_size(const AllgathervArgs& args) {
  const std::int64_t largest = *std::max_element(args.counts.begin(), args.counts.end());
  const std::int64_t even = line_align(static_cast<std::size_t>((largest + kDepth - 1) / kDepth));
  return std::clamp(even, kMinChunk, kSlotBytes);
}

std::int64_t chunks_of(std::int64_t bytes, std::int64_t chunk) {
  return (bytes + chunk - 1) / chunk;
}

// The writer's side of one call: wait until every reader is done with the
// previous call, then publish the header.
void open_call(const RingLayout& l, const Topology& t, std::uint64_t call, std::int64_t bytes,
               std::int64_t chunk, std::uint64_t counts_hash, double timeout) {
  const int me = t.local_rank;
  if (call > 1)
    for (int r = 0; r < t.local_size(); ++r)
      if (r != me)
        wait_flag_reaches(l.done(me, r), flag_of(call - 1, kWholeCall),
                          "another local rank done with the previous call (shan allgatherv)",
                          timeout);
  auto* h = reinterpret_cast<Header*>(l.header(me));
  h->bytes = bytes;
  h->chunk = chunk;
  h->counts_hash = counts_hash;
  release_store(&h->flag, flag_of(call, 0));
}

// Chunk k of the own block into slot k mod S, once every reader took chunk k - S.
void write_chunk(const RingLayout& l, const Topology& t, std::uint64_t call, std::int64_t k,
                 const std::byte* src, std::int64_t n, double timeout) {
  const int me = t.local_rank;
  const int s = static_cast<int>(k % kSlots);
  if (k >= kSlots)
    for (int r = 0; r < t.local_size(); ++r)
      if (r != me)
        wait_flag_reaches(l.done(me, r), flag_of(call, static_cast<std::uint64_t>(k - kSlots + 1)),
                          "another local rank reading a chunk (shan allgatherv)", timeout);
  local_copy(l.slot(me, s), src, static_cast<std::size_t>(n));
  release_store(l.ready(me, s), flag_of(call, static_cast<std::uint64_t>(k + 1)));
}

// Writer w's chunk k out of its slot (dst nullptr: acknowledged, not copied).
void read_chunk(const RingLayout& l, const Topology& t, std::uint64_t call, int w, std::int64_t k,
                std::byte* dst, std::int64_t n, void (*copy)(void*, const void*, std::size_t),
                double timeout) {
  const int s = static_cast<int>(k % kSlots);
  wait_flag_reaches(l.ready(w, s), flag_of(call, static_cast<std::uint64_t>(k + 1)),
                    "a chunk of another local rank (shan allgatherv)", timeout);
  if (dst) copy(dst, l.slot(w, s), static_cast<std::size_t>(n));
  release_store(l.done(w, t.local_rank), flag_of(call, static_cast<std::uint64_t>(k + 1)));
}

Writer read_header(const RingLayout& l, int w, std::uint64_t call, std::uint64_t counts_hash,
                   double timeout) {
  const auto* h = reinterpret_cast<const Header*>(l.header(w));
  wait_flag_reaches(&h->flag, flag_of(call, 0), "another local rank's block (shan allgatherv)",
                    timeout);
  return {h->bytes, h->chunk, h->counts_hash == counts_hash};
}

}  // namespace

bool shan_chunk_ring_fits(NodeContext& ctx, const AllgathervArgs& args) {
  return ctx.topo.node_count == 1 && ctx.topo.local_size() > 1 && args.recv;
}

const std::byte* shan_chunk_ring(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                                 double timeout, Stats& stats) {
  const Topology& t = ctx.topo;
  const int n = t.local_size();
  ChunkRingState& st = ctx.state<ChunkRingState>();
  if (!st.segment) {  // collective over the node: every local rank is here
    st.segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
    st.segment->reserve(RingLayout{nullptr, n}.bytes());
  }
  const RingLayout l{st.segment->base(), n};
  const std::uint64_t call = ++st.calls;
  const int me = comm.rank();
  const std::uint64_t counts_hash = fnv1a(args.counts);
  const std::int64_t chunk = chunk_size(args);
  const std::byte* src = args.send ? args.send : args.recv + args.displs[me];
  const std::int64_t mine = args.counts[me];
  open_call(l, t, call, mine, chunk, counts_hash, timeout);

  const std::size_t own_at = static_cast<std::size_t>(args.displs[me]);
  const bool stream = args.total() >= kStreamFrom;
  const auto copy_to_recv = stream ? stream_copy : local_copy;

  // Round k: my chunk k in, then chunk k - kLead of every other writer out
  // (the next rank first: no hot spot); reading a round behind, its flag is
  // up before the reader looks. The first read also reads every header.
  std::vector<Writer>& writers = st.writers;
  writers.assign(static_cast<std::size_t>(n), Writer{});
  const std::int64_t my_chunks = chunks_of(mine, chunk);
  std::int64_t rounds = std::max<std::int64_t>(my_chunks, 1);
  bool differ = false;
  for (std::int64_t k = 0; k < rounds + kLead; ++k) {
    if (k < my_chunks) {
      const std::int64_t bytes = std::min(chunk, mine - k * chunk);
      write_chunk(l, t, call, k, src + k * chunk, bytes, timeout);
      if (args.send) copy_to_recv(args.recv + own_at + k * chunk, src + k * chunk, bytes);
    }
    const std::int64_t j = k - kLead;
    if (j < 0) continue;
    for (int i = 1; i < n; ++i) {
      const int w = (t.local_rank + i) % n;
      Writer& wr = writers[static_cast<std::size_t>(w)];
      if (j == 0) {
        wr = read_header(l, w, call, counts_hash, timeout);
        differ |= !wr.matches;
        rounds = std::max(rounds, chunks_of(wr.bytes, wr.chunk));
      }
      const std::int64_t bytes = std::min(wr.chunk, wr.bytes - j * wr.chunk);
      if (bytes <= 0) continue;
      const int r = t.ranks[t.node][w];
      std::byte* dst = wr.matches ? args.recv + args.displs[r] + j * wr.chunk : nullptr;
      read_chunk(l, t, call, w, j, dst, bytes, copy_to_recv, timeout);
    }
  }
  if (stream) stream_fence();
  for (int w = 0; w < n; ++w)  // done with this call: the writers may open the next
    if (w != t.local_rank) release_store(l.done(w, t.local_rank), flag_of(call, kWholeCall));
  if (differ)  // after every chunk: the calls stay in step
    throw ArgumentError("recvcounts: differ between the ranks (rank " + std::to_string(me) +
                        "'s: " + std::to_string(args.counts.size()) + " counts, " +
                        std::to_string(args.total()) + " bytes in all)");
  stats.intra_messages += (mine > 0) * (1 + (args.send != nullptr)) + (n - 1);
  stats.intra_bytes += mine * (1 + (args.send != nullptr)) + (args.total() - mine);
  stats.node_count = 1;
  return args.recv;
}

}  // namespace shancoll
