// ChunkRing: where a writer's numbered chunks go in a ring of `window` bytes
// of shared memory, back to back, so that every line of the ring comes round
// whatever the chunks' sizes (shan allgatherv's ring,
// coll/allgatherv/allgatherv_shan_chunk_ring.cc, and the pair channels,
// pair_channels.h).
//
// Why a ring at all, and why its size is an option: a chunk written into
// lines another core read a moment ago costs one line transfer to take
// them back and one for the reader to take them again, both from the other
// core's cache. A ring smaller than the caches keeps its lines there call
// after call; one larger than both L2s finds them in the shared L3 or in
// memory instead. Which is faster depends on the CPU: on the Zen 3 VM the
// cached ring ran at Intel MPI's speed, on the Zen 4 VM at half of it, a
// 2 MiB ring twice as fast (docs/performance.md).
//
// The writer numbers its chunks from 1 across calls. Chunk g's ready line is
// g % Lines, so at most Lines chunks are in flight. A chunk
// never wraps round the ring's end (it starts over at offset 0), and it
// overlays only chunks of the previous lap; place() names the newest of
// them, which every reader must have taken before the chunk is written.
// Not thread-safe: one writer, its own state.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>

#include "shancoll/shm/flags.h"

namespace shancoll {

// The ring's bytes when the call gives no ring_window (the 4 slots of
// 64 KiB the rings replaced), and a given one in whole lines.
constexpr std::int64_t kDefaultRingBytes = 256 << 10;
constexpr std::int64_t ring_bytes(std::int64_t ring_window) {
  return ring_window > 0 ? ring_window / kCacheLine * kCacheLine : kDefaultRingBytes;
}

// A block's chunks: a quarter of the block (of the largest one where a call
// moves several), within [16 KiB, window / 4], so a lap holds at least four
// chunks. Measured with the 256 KiB ring on the AMD EPYC VMs
// (allgatherv_shan_chunk_ring.cc).
constexpr std::int64_t kChunkDepth = 4;
constexpr std::int64_t kMinChunkBytes = 16 << 10;
constexpr std::int64_t chunk_bytes(std::int64_t block, std::int64_t window) {
  const auto quarter = static_cast<std::int64_t>(
      line_align(static_cast<std::size_t>((block + kChunkDepth - 1) / kChunkDepth)));
  return std::clamp(quarter, kMinChunkBytes, window / kChunkDepth);
}

template <std::uint64_t Lines>
class ChunkRing {
 public:
  struct Spot {
    std::int64_t offset;  // where the chunk goes in the ring
    std::uint64_t after;  // the chunk every reader must have taken first (0: none)
  };

  std::int64_t window() const { return window_; }

  // Starts over with a ring of `window` bytes; every chunk written before
  // must have been taken by every reader, and the `taken` of the next
  // place() must say so (its older chunks' starts are not looked at).
  void reset(std::int64_t window) {
    window_ = window;
    cursor_ = 0;
  }

  // Where chunk g (the chunk after the previous place(), `bytes` long, at
  // most the window) goes; `taken`: every reader took the chunks up to here.
  Spot place(std::uint64_t g, std::int64_t bytes, std::uint64_t taken) {
    const auto window = static_cast<std::uint64_t>(window_);
    const std::uint64_t size = line_align(static_cast<std::size_t>(bytes));
    std::uint64_t at = cursor_;
    if (at % window + size > window) at += window - at % window;  // never split a chunk
    // The ready line: chunk g - Lines had it.
    std::uint64_t after = g > Lines ? g - Lines : 0;
    // The chunks of the previous lap that began before this one's end: the
    // oldest not yet taken first, stopping at the first that lies beyond.
    for (std::uint64_t h = std::max(after, taken) + 1; h < g; ++h) {
      if (start_[h % Lines] + window >= at + size) break;
      after = h;
    }
    start_[g % Lines] = at;
    cursor_ = at + size;
    return {static_cast<std::int64_t>(at % window), after};
  }

 private:
  std::int64_t window_ = 0;
  std::uint64_t cursor_ = 0;  // where the next chunk may start, counted round the ring
  std::array<std::uint64_t, Lines> start_{};  // chunk h began at start_[h % lines]
};

}  // namespace shancoll
