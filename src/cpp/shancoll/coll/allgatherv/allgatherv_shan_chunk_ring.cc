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
// No node barrier and no per-call handshake: the chunks are numbered per
// writer across calls, and a writer reuses a slot once every reader
// acknowledged the chunk it held, whichever call that was. The writer's
// byte count, chunk size and a hash of its recvcounts ride in each chunk's
// ready line beside the flag, so a reader's first wait of a call also
// brings the header: a reader whose recvcounts differ still takes every
// chunk the writer sends (acknowledging, not copying), so the ranks stay in
// step, and refuses the call after it like every other rank.
//
// Cost (n local ranks, blocks of b bytes, chunks of c bytes, k = max(1,
// b / c) chunks): per rank b bytes into its slots, (n - 1) b out of the
// others' slots, b copied to its own recvbuf (not in place). Cache-line
// transfers per rank and call: k ready lines written, (n - 1) k read (the
// header in the first), (n - 1) k acknowledgements written; the writer
// reads the acknowledgement lines only when its slot ring wraps past what
// it last saw of them (about once per S chunks; at 2 ranks and 2 chunks a
// call, every other call). The previous version added a header line, a
// wait for every reader's end-of-call acknowledgement at the start, and
// that acknowledgement at the end: three more transfers per reader and
// call, two of them on the path from one call's start to the first copy.
// A reader's copy of chunk k overlaps the owner's copy of chunk k + 1.
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
// kChunkRingSlots slots of kSlotBytes per rank (256 KiB: a quarter of this machine's
// L2). Measured on the AMD EPYC VM, 2 ranks (docs/performance.md, "Allgather
// through a ring of chunks"): chunks of at least 16 KiB beat 4 KiB ones up to
// 32 KiB per rank (8 KiB 0.47 against 0.60 us, 32 KiB 1.50 against 1.55);
// from 64 KiB chunks of 16-64 KiB, 4 or 8 slots, were alike within the spread.
constexpr std::int64_t kSlotBytes = 64 << 10;
constexpr int kChunkRingSlots = 4;
constexpr std::int64_t kDepth = 4;
constexpr std::int64_t kMinChunk = 16 << 10;
// Readers take chunk k - kLead while the writers put in chunk k, so the
// flag they wait for is usually up already.
constexpr std::int64_t kLead = 1;
static_assert(kChunkRingSlots > kLead);
// From this many bytes of result, the copies into recvbuf go around the
// cache (stream_copy.h): the result (with this rank's own block read twice)
// no longer fits beside the slots in half the 32 MiB L3. Measured, 8 MiB per
// rank: 802 against 1145 us; 4 MiB per rank (8 MiB of result) lost, 370
// against 331.
constexpr std::int64_t kStreamFrom = 16 << 20;

// Where things are in the ring segment of n local ranks: per writer S ready
// lines (the slot's flag and the writer's call header beside it) and n
// acknowledgement lines, each on a line of its own, then the slots.
struct RingLayout {
  std::byte* base;
  int n;
  std::byte* ready(int w, int s) const { return base + kCacheLine * line_index(w, s); }
  std::byte* done(int w, int reader) const {
    return base + kCacheLine * line_index(w, kChunkRingSlots + reader);
  }
  std::byte* slot(int w, int s) const {
    const std::size_t lines = kCacheLine * line_index(n, 0);
    return base + lines + static_cast<std::size_t>(kSlotBytes) * (w * kChunkRingSlots + s);
  }
  std::size_t bytes() const { return slot(n, 0) - base; }
  std::size_t line_index(int w, int k) const {
    return static_cast<std::size_t>(w) * (kChunkRingSlots + n) + k;
  }
};

// A slot's ready line: the flag (the chunk's number in the writer's
// sequence, counted from 1 across calls, written last) and the writer's
// call header, written with every chunk into the line that carries the
// flag anyway; a reader takes it from the call's first chunk.
struct ReadyLine {
  std::uint64_t flag;
  std::int64_t bytes;
  std::int64_t chunk;
  std::uint64_t counts_hash;
};
static_assert(sizeof(ReadyLine) <= kCacheLine);

// What a reader learns from a writer's first chunk of a call.
struct Writer {
  std::uint64_t first = 0;  // the call's first chunk in the writer's sequence
  std::int64_t bytes = 0;
  std::int64_t chunk = 1;
  bool matches = true;  // its recvcounts hash like mine: copy its chunks
};

// Per node layout: the slots and the sequence numbers, which run across
// calls (every local rank takes this path on the same calls: the choice
// depends on counts alone), so no flag is ever reset and no call needs a
// start or an end handshake.
struct ChunkRingState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t written = 0;         // chunks this rank put in its slots, ever
  std::uint64_t known_taken = 0;     // every reader took my chunks up to here
  std::vector<std::uint64_t> taken;  // per writer: its chunks this rank took, ever
  std::vector<Writer> writers;       // scratch: a repeated call allocates nothing
};

std::int64_t chunk_size(const AllgathervArgs& args) {
  const std::int64_t largest = *std::max_element(args.counts.begin(), args.counts.end());
  const std::int64_t even = line_align(static_cast<std::size_t>((largest + kDepth - 1) / kDepth));
  return std::clamp(even, kMinChunk, kSlotBytes);
}

// Chunks of a block: at least one, which carries the header of an empty block.
std::int64_t chunks_of(std::int64_t bytes, std::int64_t chunk) {
  return std::max<std::int64_t>((bytes + chunk - 1) / chunk, 1);
}

// Before my chunk g goes into slot g mod S: every reader took chunk g - S.
// The acknowledgement lines are read only when what was last read of them
// does not show it already (about once per S chunks on a repeated call).
void wait_slot_free(const RingLayout& l, const Topology& t, ChunkRingState& st, std::uint64_t g,
                    double timeout) {
  if (g <= kChunkRingSlots || st.known_taken >= g - kChunkRingSlots) return;
  const int me = t.local_rank;
  std::uint64_t least = ~std::uint64_t{0};
  for (int r = 0; r < t.local_size(); ++r) {
    if (r == me) continue;
    wait_flag_reaches(l.done(me, r), g - kChunkRingSlots,
                      "another local rank reading a chunk (shan allgatherv)", timeout);
    least = std::min(least, acquire_load(l.done(me, r)));
  }
  st.known_taken = least;
}

// Chunk k of the own block (n bytes) into its slot, the call header beside the flag.
void write_chunk(const RingLayout& l, const Topology& t, ChunkRingState& st, std::int64_t k,
                 const std::byte* src, std::int64_t n, const ReadyLine& header, double timeout) {
  const std::uint64_t g = st.written + 1 + static_cast<std::uint64_t>(k);
  wait_slot_free(l, t, st, g, timeout);
  const int s = static_cast<int>(g % kChunkRingSlots);
  local_copy(l.slot(t.local_rank, s), src, static_cast<std::size_t>(n));
  auto* line = reinterpret_cast<ReadyLine*>(l.ready(t.local_rank, s));
  line->bytes = header.bytes;
  line->chunk = header.chunk;
  line->counts_hash = header.counts_hash;
  release_store(&line->flag, g);
}

// Writer w's chunk g (its header with it); `dst` nullptr: acknowledged, not copied.
const ReadyLine& read_chunk(const RingLayout& l, const Topology& t, int w, std::uint64_t g,
                            std::byte* dst, std::int64_t n,
                            void (*copy)(void*, const void*, std::size_t), double timeout) {
  const int s = static_cast<int>(g % kChunkRingSlots);
  const auto& line = *reinterpret_cast<const ReadyLine*>(l.ready(w, s));
  wait_flag_reaches(&line.flag, g, "a chunk of another local rank (shan allgatherv)", timeout);
  if (dst && n > 0) copy(dst, l.slot(w, s), static_cast<std::size_t>(n));
  release_store(l.done(w, t.local_rank), g);
  return line;
}

// Writer w's first chunk of this call: its header, then the chunk (reading
// the header before copying: the copy's length depends on it).
Writer read_first_chunk(const RingLayout& l, const Topology& t, int w, std::uint64_t g,
                        std::uint64_t counts_hash, std::byte* dst,
                        void (*copy)(void*, const void*, std::size_t), double timeout) {
  const int s = static_cast<int>(g % kChunkRingSlots);
  const auto& line = *reinterpret_cast<const ReadyLine*>(l.ready(w, s));
  wait_flag_reaches(&line.flag, g, "another local rank's block (shan allgatherv)", timeout);
  const Writer wr{g, line.bytes, line.chunk, line.counts_hash == counts_hash};
  read_chunk(l, t, w, g, wr.matches ? dst : nullptr, std::min(wr.chunk, wr.bytes), copy, timeout);
  return wr;
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
    st.taken.assign(static_cast<std::size_t>(n), 0);
    st.writers.assign(static_cast<std::size_t>(n), Writer{});
  }
  const RingLayout l{st.segment->base(), n};
  const int me = comm.rank();
  const std::int64_t chunk = chunk_size(args);
  const ReadyLine header{0, args.counts[me], chunk, fnv1a(args.counts)};
  const std::byte* src = args.send ? args.send : args.recv + args.displs[me];
  const std::int64_t mine = args.counts[me];

  const std::size_t own_at = static_cast<std::size_t>(args.displs[me]);
  const bool stream = args.total() >= kStreamFrom;
  const auto copy_to_recv = stream ? stream_copy : local_copy;

  // Round k: my chunk k in, then chunk k - kLead of every other writer out
  // (the next rank first: no hot spot); reading a round behind, its flag is
  // up before the reader looks. The first read also reads every header.
  const std::int64_t my_chunks = chunks_of(mine, chunk);
  std::int64_t rounds = my_chunks;
  bool differ = false;
  for (std::int64_t k = 0; k < rounds + kLead; ++k) {
    if (k < my_chunks) {
      const std::int64_t bytes = std::clamp<std::int64_t>(mine - k * chunk, 0, chunk);
      write_chunk(l, t, st, k, src + k * chunk, bytes, header, timeout);
      if (args.send && bytes > 0)
        copy_to_recv(args.recv + own_at + k * chunk, src + k * chunk, bytes);
    }
    const std::int64_t j = k - kLead;
    if (j < 0) continue;
    for (int i = 1; i < n; ++i) {
      const int w = (t.local_rank + i) % n;
      const auto wi = static_cast<std::size_t>(w);
      Writer& wr = st.writers[wi];
      std::byte* block = args.recv + args.displs[t.ranks[t.node][w]];
      if (j == 0) {
        wr = read_first_chunk(l, t, w, st.taken[wi] + 1, header.counts_hash, block, copy_to_recv,
                              timeout);
        differ |= !wr.matches;
        rounds = std::max(rounds, chunks_of(wr.bytes, wr.chunk));
        continue;
      }
      if (j >= chunks_of(wr.bytes, wr.chunk)) continue;
      const std::int64_t bytes = std::min(wr.chunk, wr.bytes - j * wr.chunk);
      std::byte* dst = wr.matches ? block + j * wr.chunk : nullptr;
      read_chunk(l, t, w, wr.first + static_cast<std::uint64_t>(j), dst, bytes, copy_to_recv,
                 timeout);
    }
  }
  st.written += static_cast<std::uint64_t>(my_chunks);
  for (int w = 0; w < n; ++w)
    if (w != t.local_rank) {
      const Writer& wr = st.writers[static_cast<std::size_t>(w)];
      st.taken[static_cast<std::size_t>(w)] +=
          static_cast<std::uint64_t>(chunks_of(wr.bytes, wr.chunk));
    }
  if (stream) stream_fence();
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
