#include "shancoll/shm/pair_channels.h"

#include <algorithm>
#include <string>

#include "shancoll/cost.h"
#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

// S slots of up to kSlotBytes per pair, chunks a quarter of the block within
// [kMinChunk, kSlotBytes]: the chunk ring's sizes (allgatherv_shan_chunk_ring.cc,
// measured there on the AMD EPYC VM); a pair's slots (256 KiB) stay in the
// writer's L2 call after call.
constexpr std::int64_t kSlotBytes = 64 << 10;
constexpr std::uint64_t kChannelSlots = 4;
constexpr std::int64_t kDepth = 4;
constexpr std::int64_t kMinChunk = 16 << 10;

// A slot's ready line: the flag (the chunk's number in the pair's sequence,
// from 1, written last) and the block's header, written with every chunk.
struct ReadyLine {
  std::uint64_t flag;
  std::int64_t bytes;
  std::int64_t chunk;
};
static_assert(sizeof(ReadyLine) <= kCacheLine);

std::int64_t chunks_of(std::int64_t bytes, std::int64_t chunk) {
  return std::max<std::int64_t>((bytes + chunk - 1) / chunk, 1);
}

// Per pair: S ready lines and the reader's acknowledgement line.
constexpr std::size_t kLinesPerPair = kChannelSlots + 1;

std::size_t pair_index(int n, int writer, int reader) {
  return static_cast<std::size_t>(writer) * static_cast<std::size_t>(n) +
         static_cast<std::size_t>(reader);
}

std::size_t lines_bytes(int n) {
  return kCacheLine * kLinesPerPair * static_cast<std::size_t>(n) * static_cast<std::size_t>(n);
}

}  // namespace

// The segment and the sequence numbers, which run across calls.
struct PairChannelsState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::vector<std::uint64_t> written;  // per reader: chunks I sent it, ever
  std::vector<std::uint64_t> seen;     // per reader: it took my chunks up to here
  std::vector<std::uint64_t> taken;    // per writer: its chunks I took, ever
  std::vector<ChannelWriter> writers;
  std::vector<ChannelReader> readers;
  std::vector<const std::byte*> pointers;
};

bool pair_channels_fit(const NodeContext& ctx) {
  return ctx.topo.node_count == 1 && ctx.topo.local_size() > 1;
}

PairChannels::PairChannels(NodeContext& ctx, double timeout, const char* who)
    : s_(ctx.state<PairChannelsState>()),
      n_(ctx.topo.local_size()),
      me_(ctx.topo.local_rank),
      timeout_(timeout),
      who_(who) {
  if (!s_.segment) {
    const MPI_Comm node = ctx.topo.node_comm;
    s_.segment = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
    const std::size_t pairs = static_cast<std::size_t>(n_) * static_cast<std::size_t>(n_);
    s_.segment->reserve(lines_bytes(n_) + pairs * kChannelSlots * kSlotBytes);
    s_.written.assign(static_cast<std::size_t>(n_), 0);
    s_.seen.assign(static_cast<std::size_t>(n_), 0);
    s_.taken.assign(static_cast<std::size_t>(n_), 0);
    s_.writers.resize(static_cast<std::size_t>(n_));
    s_.readers.resize(static_cast<std::size_t>(n_));
    s_.pointers.resize(static_cast<std::size_t>(n_));
  }
  base_ = s_.segment->base();
}

std::vector<ChannelWriter>& PairChannels::writers() { return s_.writers; }
std::vector<ChannelReader>& PairChannels::readers() { return s_.readers; }
std::vector<const std::byte*>& PairChannels::chunk_pointers() { return s_.pointers; }

std::byte* PairChannels::ready(int writer, int reader, std::uint64_t g) const {
  return base_ + kCacheLine * (kLinesPerPair * pair_index(n_, writer, reader) + g % kChannelSlots);
}

std::byte* PairChannels::done(int writer, int reader) const {
  return base_ + kCacheLine * (kLinesPerPair * pair_index(n_, writer, reader) + kChannelSlots);
}

std::byte* PairChannels::slot(int writer, int reader, std::uint64_t g) const {
  return base_ + lines_bytes(n_) +
         static_cast<std::size_t>(kSlotBytes) *
             (kChannelSlots * pair_index(n_, writer, reader) + g % kChannelSlots);
}

ChannelWriter::ChannelWriter(PairChannels& ch, int to, const std::byte* src, std::int64_t bytes)
    : ch_(&ch), to_(to), src_(src), bytes_(bytes) {
  const std::int64_t even = static_cast<std::int64_t>(
      line_align(static_cast<std::size_t>((bytes + kDepth - 1) / kDepth)));
  chunk_ = std::clamp(even, kMinChunk, kSlotBytes);
  chunks_ = chunks_of(bytes, chunk_);
  std::uint64_t& written = ch.s_.written[static_cast<std::size_t>(to)];
  first_ = written + 1;
  written += static_cast<std::uint64_t>(chunks_);
}

void ChannelWriter::write(std::int64_t k) {
  PairChannels& ch = *ch_;
  const std::uint64_t g = first_ + static_cast<std::uint64_t>(k);
  std::uint64_t& seen = ch.s_.seen[static_cast<std::size_t>(to_)];
  if (g > kChannelSlots && seen < g - kChannelSlots) {  // the slot's previous chunk, taken?
    const std::byte* done = ch.done(ch.me_, to_);
    wait_until([&] { return acquire_load(done) >= g - kChannelSlots; },
               [&] {
                 return std::string(ch.who_) + ": local rank " + std::to_string(to_) +
                        " taking a chunk of my block (pair channel)";
               },
               ch.timeout_);
    seen = acquire_load(done);
  }
  const std::int64_t n = std::clamp<std::int64_t>(bytes_ - k * chunk_, 0, chunk_);
  if (n > 0) local_copy(ch.slot(ch.me_, to_, g), src_ + k * chunk_, static_cast<std::size_t>(n));
  auto* line = reinterpret_cast<ReadyLine*>(ch.ready(ch.me_, to_, g));
  line->bytes = bytes_;
  line->chunk = chunk_;
  release_store(&line->flag, g);
}

ChannelReader::ChannelReader(PairChannels& ch, int from, std::byte* dst, std::int64_t expected)
    : ch_(&ch), from_(from), dst_(dst), expected_(expected) {
  first_ = ch.s_.taken[static_cast<std::size_t>(from)] + 1;
}

const std::byte* ChannelReader::peek_next(std::int64_t* bytes) {
  PairChannels& ch = *ch_;
  const std::uint64_t g = first_ + static_cast<std::uint64_t>(next_);
  const auto& line = *reinterpret_cast<const ReadyLine*>(ch.ready(from_, ch.me_, g));
  wait_until([&] { return acquire_load(&line.flag) >= g; },
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
  return ch.slot(from_, ch.me_, g);
}

void ChannelReader::release_next() {
  release_store(ch_->done(from_, ch_->me_), first_ + static_cast<std::uint64_t>(next_));
  ++next_;
}

void ChannelReader::read_next() {
  std::int64_t n = 0;
  const std::byte* chunk = peek_next(&n);
  if (matched() && n > 0) local_copy(dst_ + next_ * chunk_, chunk, static_cast<std::size_t>(n));
  release_next();
}

}  // namespace shancoll
