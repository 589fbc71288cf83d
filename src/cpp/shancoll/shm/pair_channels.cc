#include "shancoll/shm/pair_channels.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/cost.h"
#include "shancoll/shm/chunk_ring.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/ring_stores.h"

namespace shancoll {
namespace {

// Per pair a ring (shm/chunk_ring.h: ring_window bytes, 256 KiB by default)
// and at most kPairLines chunks in flight.
constexpr std::uint64_t kPairLines = 16;

// A chunk's ready line: the flag (the chunk's number in the pair's
// sequence, from 1, written last), where the chunk lies in the pair's ring
// (or kInline: in the line itself; kSpilled: in the spill lines after it),
// and the block's header, written with every chunk. A chunk of at most
// kInLineChunk bytes rides in the line, so that the reader's wait and read
// are one line transfer, not two.
constexpr std::int64_t kInline = -1;
constexpr std::int64_t kSpilled = -2;
constexpr std::int64_t kInLineChunk = 32;
struct ReadyLine {
  std::uint64_t flag;
  std::int64_t offset;
  std::int64_t bytes;
  std::int64_t chunk;
  std::byte data[kInLineChunk];
};
static_assert(sizeof(ReadyLine) == kCacheLine);

std::int64_t chunks_of(std::int64_t bytes, std::int64_t chunk) {
  return std::max<std::int64_t>((bytes + chunk - 1) / chunk, 1);
}

// Spill lines: on a node of at most kSpillRanks ranks, each ready line is
// followed by kSpillLines lines where a chunk too large for the ready line
// but at most kSpillLines lines long (1 KiB) goes whole, in place of the
// ring: at a place the reader knows before the ready line names it, so the
// reader polls them with the ready line and the chunk's lines come over
// together (one line transfer's time, where the ring's place costs a second
// one after the ready line's). Zen 4 VM, MPICH preload, 2 ranks, fastest of
// 3-4 repeats against the ring: alltoall 64 B 0.21 against 0.25 us, 512 B
// 0.27 against 0.31; gather 1 KiB 0.33-0.36 against 0.40; scatter 512 B 0.21
// against 0.28. 17 KiB per pair, hence the node size bound.
constexpr int kSpillRanks = 8;
constexpr std::size_t kSpillLines = 16;
std::size_t spill_lines(int n) { return n <= kSpillRanks ? kSpillLines : 0; }

// Per pair: kPairLines ready lines, each with its spill lines, and the
// reader's acknowledgement line.
std::size_t lines_per_pair(int n) { return kPairLines * (1 + spill_lines(n)) + 1; }

std::size_t pair_index(int n, int writer, int reader) {
  return static_cast<std::size_t>(writer) * static_cast<std::size_t>(n) +
         static_cast<std::size_t>(reader);
}

std::size_t pairs(int n) { return static_cast<std::size_t>(n) * static_cast<std::size_t>(n); }

std::size_t lines_bytes(int n) { return kCacheLine * lines_per_pair(n) * pairs(n); }

// The segment's bytes for rings of `window` bytes.
std::size_t segment_bytes(int n, std::int64_t window) {
  return lines_bytes(n) + pairs(n) * static_cast<std::size_t>(window);
}

}  // namespace

// The segment and the sequence numbers, which run across calls.
struct PairChannelsState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::vector<ChunkRing<kPairLines>> rings;  // per reader: where my chunks to it go
  std::vector<RingStores> stores;            // per reader: how they are stored
  std::vector<std::uint64_t> written;        // per reader: chunks I sent it, ever
  std::vector<std::uint64_t> seen;           // per reader: it took my chunks up to here
  std::vector<std::uint64_t> taken;          // per writer: its chunks I took, ever
  std::vector<ChannelWriter> writers;
  std::vector<ChannelReader> readers;
  std::vector<const std::byte*> pointers;
};

bool pair_channels_fit(const NodeContext& ctx) {
  return ctx.topo.node_count == 1 && ctx.topo.local_size() > 1;
}

PairChannels::PairChannels(NodeContext& ctx, double timeout, const char* who,
                           std::int64_t ring_window)
    : s_(ctx.state<PairChannelsState>()),
      n_(ctx.topo.local_size()),
      me_(ctx.topo.local_rank),
      timeout_(timeout),
      who_(who),
      spill_lines_(spill_lines(n_)),
      pair_lines_(lines_per_pair(n_)) {
  if (!s_.segment) {  // collective over the node: every local rank is here
    const MPI_Comm node = ctx.topo.node_comm;
    s_.segment = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
    s_.rings.resize(static_cast<std::size_t>(n_));
    s_.stores.resize(static_cast<std::size_t>(n_));
    s_.written.assign(static_cast<std::size_t>(n_), 0);
    s_.seen.assign(static_cast<std::size_t>(n_), 0);
    s_.taken.assign(static_cast<std::size_t>(n_), 0);
    s_.writers.resize(static_cast<std::size_t>(n_));
    s_.readers.resize(static_cast<std::size_t>(n_));
    s_.pointers.resize(static_cast<std::size_t>(n_));
  }
  const std::int64_t window = ring_bytes(ring_window);
  if (window != s_.rings.front().window()) use_window(window);
  base_ = s_.segment->base();
  stride_ = (s_.segment->size() - lines_bytes(n_)) / pairs(n_) / kCacheLine * kCacheLine;
}

// Rings of `window` bytes from this call on (every local rank in the same
// call: the option comes from the same rule row). A segment too small grows
// collectively, fresh and zero-filled: every reader has taken every chunk
// of the calls before (it is in this call), and the sequence numbers run
// on. Else each ring starts over once its reader took my chunks in it.
void PairChannels::use_window(std::int64_t window) {
  if (s_.segment->size() < segment_bytes(n_, window)) {
    s_.segment->reserve(segment_bytes(n_, window));
    s_.seen = s_.written;
  } else {
    base_ = s_.segment->base();
    for (int to = 0; to < n_; ++to) wait_taken(to, s_.written[static_cast<std::size_t>(to)]);
  }
  for (auto& ring : s_.rings) ring.reset(window);
}

// Until local rank `to` took my chunks up to g.
void PairChannels::wait_taken(int to, std::uint64_t g) {
  std::uint64_t& seen = s_.seen[static_cast<std::size_t>(to)];
  if (seen >= g) return;
  const std::byte* line = done(me_, to);
  wait_until([&] { return acquire_load(line) >= g; },
             [&] {
               return std::string(who_) + ": local rank " + std::to_string(to) +
                      " taking a chunk of my block (pair channel)";
             },
             timeout_);
  seen = acquire_load(line);
}

std::vector<ChannelWriter>& PairChannels::writers() { return s_.writers; }
std::vector<ChannelReader>& PairChannels::readers() { return s_.readers; }
std::vector<const std::byte*>& PairChannels::chunk_pointers() { return s_.pointers; }

std::byte* PairChannels::ready(int writer, int reader, std::uint64_t g) const {
  return base_ + kCacheLine * (pair_lines_ * pair_index(n_, writer, reader) +
                               g % kPairLines * (1 + spill_lines_));
}

std::byte* PairChannels::done(int writer, int reader) const {
  return base_ + kCacheLine * (pair_lines_ * pair_index(n_, writer, reader) + pair_lines_ - 1);
}

std::byte* PairChannels::ring(int writer, int reader) const {
  return base_ + lines_bytes(n_) + stride_ * pair_index(n_, writer, reader);
}

ChannelWriter::ChannelWriter(PairChannels& ch, int to, const std::byte* src, std::int64_t bytes)
    : ch_(&ch), to_(to), src_(src), bytes_(bytes) {
  chunk_ = chunk_bytes(bytes, ch.s_.rings.front().window());
  chunks_ = chunks_of(bytes, chunk_);
  std::uint64_t& written = ch.s_.written[static_cast<std::size_t>(to)];
  first_ = written + 1;
  written += static_cast<std::uint64_t>(chunks_);
}

void ChannelWriter::write(std::int64_t k) {
  PairChannels& ch = *ch_;
  const std::uint64_t g = first_ + static_cast<std::uint64_t>(k);
  const std::int64_t n = std::clamp<std::int64_t>(bytes_ - k * chunk_, 0, chunk_);
  const bool in_line = n <= kInLineChunk, spilled = !in_line && n <= ch.spill_bytes();
  const bool in_ring = !in_line && !spilled;  // the others take no room in the ring
  const auto spot = ch.s_.rings[static_cast<std::size_t>(to_)].place(
      g, in_ring ? n : 0, ch.s_.seen[static_cast<std::size_t>(to_)]);
  ch.wait_taken(to_, spot.after);  // the chunks it overlays, and its ready line
  std::byte* ready = ch.ready(ch.me_, to_, g);
  auto* line = reinterpret_cast<ReadyLine*>(ready);
  const std::byte* chunk = src_ + k * chunk_;
  if (in_line && n > 0)
    std::memcpy(line->data, chunk, static_cast<std::size_t>(n));
  else if (spilled)
    std::memcpy(ready + kCacheLine, chunk, static_cast<std::size_t>(n));
  else if (n > 0)
    ch.s_.stores[static_cast<std::size_t>(to_)].copy(ch.ring(ch.me_, to_) + spot.offset, chunk,
                                                     static_cast<std::size_t>(n));
  line->offset = in_line ? kInline : spilled ? kSpilled : spot.offset;
  line->bytes = bytes_;
  line->chunk = chunk_;
  release_store(&line->flag, g);
}

ChannelReader::ChannelReader(PairChannels& ch, int from, std::byte* dst, std::int64_t expected,
                             bool stream)
    : ch_(&ch), from_(from), dst_(dst), expected_(expected), stream_(stream) {
  first_ = ch.s_.taken[static_cast<std::size_t>(from)] + 1;
}

const std::byte* ChannelReader::peek_next(std::int64_t* bytes) {
  PairChannels& ch = *ch_;
  const std::uint64_t g = first_ + static_cast<std::uint64_t>(next_);
  const std::byte* ready = ch.ready(from_, ch.me_, g);
  const auto& line = *reinterpret_cast<const ReadyLine*>(ready);
  // The spill lines the block fills if it is the expected one (a block
  // that spills is one chunk), polled beside the flag so that they come over
  // with it (a writer's own count may differ: the flag alone decides).
  const int polled = next_ == 0 && expected_ > kInLineChunk && expected_ <= ch.spill_bytes()
                         ? static_cast<int>((expected_ + kCacheLine - 1) / kCacheLine)
                         : 0;
  wait_flag_and_lines(
      ready, g, polled,
      [&] {
        return std::string(ch.who_) + ": a chunk of local rank " + std::to_string(from_) +
               "'s block (pair channel)";
      },
      ch.timeout_);
  if (next_ == 0) {  // the header, before the copy whose length it gives
    bytes_ = line.bytes, chunk_ = line.chunk;
    chunks_ = chunks_of(bytes_, chunk_);
    ch.s_.taken[static_cast<std::size_t>(from_)] += static_cast<std::uint64_t>(chunks_);
  }
  *bytes = std::clamp<std::int64_t>(bytes_ - next_ * chunk_, 0, chunk_);
  if (line.offset == kInline) return line.data;
  if (line.offset == kSpilled) return ready + kCacheLine;
  return ch.ring(from_, ch.me_) + line.offset;
}

void ChannelReader::release_next() {
  release_store(ch_->done(from_, ch_->me_), first_ + static_cast<std::uint64_t>(next_));
  ++next_;
}

void ChannelReader::read_next() {
  std::int64_t n = 0;
  const std::byte* chunk = peek_next(&n);
  if (matched() && n > 0)
    result_copy(dst_ + next_ * chunk_, chunk, static_cast<std::size_t>(n), stream_);
  release_next();
}

}  // namespace shancoll
