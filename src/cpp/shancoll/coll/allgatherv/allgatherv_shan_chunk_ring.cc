// shan allgatherv on one node with a private recvbuf: each rank's block goes
// in chunks through a ring of its own in shared memory (shm/chunk_ring.h)
// instead of a segment the size of the result. The owner copies chunk k of
// its block into the ring, after the chunk before it, and raises the
// chunk's ready line (its number and where it lies); every other local rank
// copies the chunk out into its recvbuf and acknowledges it; the owner
// writes over a chunk once every reader acknowledged it. Each byte is
// written once into shared memory by its owner and read once by each
// reader, both cores copying at once. The ring's size (ring_window) decides
// where the reader finds the lines: in the owner's cache when the ring is
// smaller than the caches, in the shared L3 when it is larger than both L2s
// (faster on the Zen 4 VM, slower on none measured so far; the default stays
// the size measured on the others). A result-sized segment instead is
// written cold, line by line from memory (measured: the segment path lost to
// Open MPI's copy-in/copy-out point-to-point from 2 MiB, and to Intel MPI's
// from 32 KiB; docs/performance.md).
//
// No node barrier and no per-call handshake: the chunks are numbered per
// writer across calls, and a writer overwrites a chunk once every reader
// acknowledged it, whichever call that was. The writer's byte count, chunk
// size and a hash of its recvcounts ride in each chunk's ready line beside
// the flag, so a reader's first wait of a call also brings the header: a
// reader whose recvcounts differ still takes every chunk the writer sends
// (acknowledging, not copying), so the ranks stay in step, and refuses the
// call after it like every other rank.
//
// Cost (n local ranks, blocks of b bytes, chunks of c bytes, k = max(1,
// b / c) chunks): per rank b bytes into its ring, (n - 1) b out of the
// others' rings, b copied to its own recvbuf (not in place). Cache-line
// transfers per rank and call: k ready lines written, (n - 1) k read (the
// header in the first), (n - 1) k acknowledgements written; the writer
// reads the acknowledgement lines only when its ring wraps past what it
// last saw of them (about once per lap). A reader's copy of chunk k overlaps
// the owner's copy of chunk k + 1.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/hash.h"
#include "shancoll/shm/chunk_ring.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/ring_stores.h"
#include "shancoll/shm/segment.h"

namespace shancoll {
namespace {

// Each writer's ring (shm/chunk_ring.h) holds ring_window bytes (256 KiB
// by default) of chunks of a quarter of the largest block (chunk_bytes).
// Measured on the AMD EPYC VM, Zen 3, 2 ranks, with 4 slots of 64 KiB
// (docs/performance.md, "Allgather through a ring of chunks"): chunks of at
// least 16 KiB beat 4 KiB ones up to 32 KiB per rank (8 KiB 0.47 against
// 0.60 us, 32 KiB 1.50 against 1.55); from 64 KiB chunks of 16-64 KiB, 4 or 8
// slots, were alike within the spread. On the Zen 4 VM a ring the caches
// keep runs at half Intel MPI's pt2pt speed (16 KiB 2.8 us, 512 KiB 84), one
// of 2 MiB at its speed (1.75 and 41; docs/performance.md, "A ring larger
// than the caches"); its rule tables set ring_window.
// Chunks in flight per writer (a ready line each).
constexpr std::uint64_t kChunkRingLines = 256;
// Readers take chunk k - kLead while the writers put in chunk k, so the
// flag they wait for is usually up already.
constexpr std::int64_t kLead = 1;
// From this many bytes of result, the copies into recvbuf go around the
// cache (cost.h, stream_copy): the result (with this rank's own block read twice)
// no longer fits beside the slots in half the 32 MiB L3. Measured, 8 MiB per
// rank: 802 against 1145 us; 4 MiB per rank (8 MiB of result) lost, 370
// against 331.
constexpr std::int64_t kStreamFrom = 16 << 20;

// Where things are in the ring segment of n local ranks: per writer
// kChunkRingLines ready lines (a chunk's flag and where it lies, and the
// writer's call header beside them) and n acknowledgement lines, each on a
// line of its own, then a ring of `stride` bytes per writer, of which the
// writer uses its window (a reader goes by the offsets in the ready lines,
// so ranks that differ in window still read what was written).
struct RingLayout {
  std::byte* base;
  int n;
  std::size_t stride;
  RingLayout(std::byte* base, int n, std::size_t segment_bytes)
      : base(base), n(n), stride((segment_bytes - lines()) / n / kCacheLine * kCacheLine) {}
  std::byte* ready(int w, std::uint64_t g) const {
    return base + kCacheLine * line_index(w, g % kChunkRingLines);
  }
  std::byte* done(int w, int reader) const {
    return base + kCacheLine * line_index(w, kChunkRingLines + static_cast<std::size_t>(reader));
  }
  std::byte* ring(int w) const { return base + lines() + stride * static_cast<std::size_t>(w); }
  std::size_t lines() const { return kCacheLine * line_index(n, 0); }
  std::size_t line_index(int w, std::size_t k) const {
    return static_cast<std::size_t>(w) * (kChunkRingLines + n) + k;
  }
  // The segment's bytes for rings of `window` bytes.
  static std::size_t bytes(int n, std::int64_t window) {
    return kCacheLine * static_cast<std::size_t>(n) * (kChunkRingLines + n) +
           static_cast<std::size_t>(window) * static_cast<std::size_t>(n);
  }
};

// A chunk's ready line: the flag (the chunk's number in the writer's
// sequence, counted from 1 across calls, written last), where the chunk
// lies in the writer's ring, and the writer's call header, written with
// every chunk into the line that carries the flag anyway; a reader takes
// the header from the call's first chunk.
struct ReadyLine {
  std::uint64_t flag;
  std::int64_t offset;
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

// Per node layout: the rings and the sequence numbers, which run across
// calls (every local rank takes this path on the same calls: the choice
// depends on counts alone), so no flag is ever reset and no call needs a
// start or an end handshake.
struct ChunkRingState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  ChunkRing<kChunkRingLines> ring;   // where my chunks go
  RingStores stores;                 // how they are stored
  std::uint64_t written = 0;         // chunks this rank put in its ring, ever
  std::uint64_t known_taken = 0;     // every reader took my chunks up to here
  std::vector<std::uint64_t> taken;  // per writer: its chunks this rank took, ever
  std::vector<Writer> writers;       // scratch: a repeated call allocates nothing
};

// Chunks of a block: at least one, which carries the header of an empty block.
std::int64_t chunks_of(std::int64_t bytes, std::int64_t chunk) {
  return std::max<std::int64_t>((bytes + chunk - 1) / chunk, 1);
}

// Waits until every reader took my chunks up to `g`.
void wait_taken(const RingLayout& l, const Topology& t, ChunkRingState& st, std::uint64_t g,
                double timeout) {
  if (st.known_taken >= g) return;
  const int me = t.local_rank;
  std::uint64_t least = ~std::uint64_t{0};
  for (int r = 0; r < t.local_size(); ++r) {
    if (r == me) continue;
    wait_flag_reaches(l.done(me, r), g, "another local rank reading a chunk (shan allgatherv)",
                      timeout);
    least = std::min(least, acquire_load(l.done(me, r)));
  }
  st.known_taken = least;
}

// Where my chunk g of `bytes` goes in my ring, once every reader took the
// chunks it overlays. The acknowledgement lines are read only when what was
// last read of them does not show it.
std::int64_t place_chunk(const RingLayout& l, const Topology& t, ChunkRingState& st,
                         std::uint64_t g, std::int64_t bytes, double timeout) {
  const auto spot = st.ring.place(g, bytes, st.known_taken);
  wait_taken(l, t, st, spot.after, timeout);
  return spot.offset;
}

// Chunk k of the own block (n bytes) into my ring, the call header beside the flag.
void write_chunk(const RingLayout& l, const Topology& t, ChunkRingState& st, std::int64_t k,
                 const std::byte* src, std::int64_t n, const ReadyLine& header, double timeout) {
  const std::uint64_t g = st.written + 1 + static_cast<std::uint64_t>(k);
  const std::int64_t offset = place_chunk(l, t, st, g, n, timeout);
  st.stores.copy(l.ring(t.local_rank) + offset, src, static_cast<std::size_t>(n));
  auto* line = reinterpret_cast<ReadyLine*>(l.ready(t.local_rank, g));
  line->offset = offset;
  line->bytes = header.bytes;
  line->chunk = header.chunk;
  line->counts_hash = header.counts_hash;
  release_store(&line->flag, g);
}

// Writer w's chunk g (its header with it); `dst` nullptr: acknowledged, not copied.
const ReadyLine& read_chunk(const RingLayout& l, const Topology& t, int w, std::uint64_t g,
                            std::byte* dst, std::int64_t n,
                            void (*copy)(void*, const void*, std::size_t), double timeout) {
  const auto& line = *reinterpret_cast<const ReadyLine*>(l.ready(w, g));
  wait_flag_reaches(&line.flag, g, "a chunk of another local rank (shan allgatherv)", timeout);
  if (dst && n > 0) copy(dst, l.ring(w) + line.offset, static_cast<std::size_t>(n));
  release_store(l.done(w, t.local_rank), g);
  return line;
}

// Writer w's first chunk of this call: its header, then the chunk (reading
// the header before copying: the copy's length depends on it).
Writer read_first_chunk(const RingLayout& l, const Topology& t, int w, std::uint64_t g,
                        std::uint64_t counts_hash, std::byte* dst,
                        void (*copy)(void*, const void*, std::size_t), double timeout) {
  const auto& line = *reinterpret_cast<const ReadyLine*>(l.ready(w, g));
  wait_flag_reaches(&line.flag, g, "another local rank's block (shan allgatherv)", timeout);
  const Writer wr{g, line.bytes, line.chunk, line.counts_hash == counts_hash};
  read_chunk(l, t, w, g, wr.matches ? dst : nullptr, std::min(wr.chunk, wr.bytes), copy, timeout);
  return wr;
}

// The ring of `window` bytes per writer: on the first call, and when a call
// asks for another size (every local rank in the same call: the option
// comes from the same rule row). A segment too small grows collectively,
// fresh and zero-filled: every reader has taken every chunk of the calls
// before, so nothing in flight is lost, and the sequence numbers run on.
// Else the ring starts over once my chunks still in the old one are taken.
RingLayout ring_of(NodeContext& ctx, ChunkRingState& st, std::int64_t window, double timeout) {
  const Topology& t = ctx.topo;
  const int n = t.local_size();
  if (!st.segment) {  // collective over the node: every local rank is here
    st.segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
    st.taken.assign(static_cast<std::size_t>(n), 0);
    st.writers.assign(static_cast<std::size_t>(n), Writer{});
  }
  if (window != st.ring.window()) {
    if (st.segment->size() < RingLayout::bytes(n, window)) {
      st.segment->reserve(RingLayout::bytes(n, window));
      st.known_taken = st.written;
    } else {
      wait_taken(RingLayout{st.segment->base(), n, st.segment->size()}, t, st, st.written, timeout);
    }
    st.ring.reset(window);
  }
  return RingLayout{st.segment->base(), n, st.segment->size()};
}

}  // namespace

bool shan_chunk_ring_fits(NodeContext& ctx, const AllgathervArgs& args) {
  return ctx.topo.node_count == 1 && ctx.topo.local_size() > 1 && args.recv;
}

const std::byte* shan_chunk_ring(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                                 std::int64_t ring_window, double timeout, Stats& stats) {
  const Topology& t = ctx.topo;
  const int n = t.local_size();
  ChunkRingState& st = ctx.state<ChunkRingState>();
  const std::int64_t window = ring_bytes(ring_window);
  const RingLayout l = ring_of(ctx, st, window, timeout);
  const int me = comm.rank();
  const std::int64_t chunk =
      chunk_bytes(*std::max_element(args.counts.begin(), args.counts.end()), window);
  const ReadyLine header{0, 0, args.counts[me], chunk, fnv1a(args.counts)};
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
