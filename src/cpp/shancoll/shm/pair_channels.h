// Pair channels: on one node, a one-way pipe of numbered chunks from every
// local rank to every other, through a ring of its own per pair
// (shm/chunk_ring.h; ring_window bytes, 256 KiB by default). The chunk ring
// of shan allgatherv (coll/allgatherv/allgatherv_shan_chunk_ring.cc) for
// blocks that go to one reader each: gather (every rank to the root),
// scatter (the root to every rank), alltoall (every rank to every rank) and
// reduce_scatter.
//
// The writer copies chunk g of its stream to a reader into their pair's
// ring, after chunk g - 1, and raises the chunk's ready line (g, and where
// the chunk lies); the reader waits for it, copies the chunk out and
// acknowledges g; the writer writes over a chunk once the reader
// acknowledged it. Chunks are numbered per pair across calls (and across
// the collectives that share the channels), so no flag is ever reset and a
// call needs no handshake: a block costs its chunks' flags, one copy in by
// the writer and one copy out by the reader, the two overlapping chunk by
// chunk. The block's bytes and chunk size ride in every ready line beside
// the flag: a reader learns them from its first chunk, takes every chunk
// the writer sends even when its own count differs (acknowledged, not
// copied), so both stay in step, and reports the mismatch once the call is
// over. Small blocks skip the ring: up to 32 bytes ride in the ready line,
// and on nodes of up to 8 ranks blocks of up to 1 KiB go to the 16 lines
// after it, which the reader polls with it (pair_channels.cc).
//
// Cost per block of b bytes (chunks of c bytes, k = max(1, ceil(b / c))):
// the writer copies b bytes into the ring and writes k ready lines; the
// reader reads k ready lines, copies b bytes out and writes k
// acknowledgements; the writer reads the acknowledgement line about once
// per lap of its ring. The writer's copy of chunk i + 1
// overlaps the reader's copy of chunk i, so a block of several chunks costs
// about one copy plus one chunk's, where a segment the block's size costs
// two (in, then out) and is written cold.
//
// Deadlock-free in any order of rounds where every rank, in round i, writes
// its streams' chunk i and then reads chunk i - 1 of the streams it reads:
// a writer needs the chunks of its ring's previous lap taken (a lap holds at
// least kChunkDepth = 4 chunks: chunks are at most a quarter of the ring), which
// its reader took in an earlier round.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "shancoll/comm.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"

namespace shancoll {

struct PairChannelsState;
class ChannelWriter;
class ChannelReader;

// The node's channels; made on the node's first use (collective over the
// node: every local rank takes a channel path on the same calls).
// Whether the channels serve this layout: one node of several ranks.
bool pair_channels_fit(const NodeContext& ctx);

class PairChannels {
 public:
  // `who` names the collective in a timeout's message ("gather shan");
  // `ring_window`: each pair's ring in bytes (the call's option; 0: the
  // default, 256 KiB).
  PairChannels(NodeContext& ctx, double timeout, const char* who, std::int64_t ring_window);
  int local_size() const { return n_; }
  int local_rank() const { return me_; }
  // Scratch of one per local rank, kept across calls (a repeated call
  // allocates nothing).
  std::vector<ChannelWriter>& writers();
  std::vector<ChannelReader>& readers();
  std::vector<const std::byte*>& chunk_pointers();

 private:
  friend class ChannelWriter;
  friend class ChannelReader;
  std::byte* ready(int writer, int reader, std::uint64_t g) const;
  std::byte* done(int writer, int reader) const;
  // A chunk's room in its ready line's spill lines.
  std::int64_t spill_bytes() const { return static_cast<std::int64_t>(kCacheLine * spill_lines_); }
  std::byte* ring(int writer, int reader) const;
  void use_window(std::int64_t window);
  void wait_taken(int to, std::uint64_t g);

  PairChannelsState& s_;
  std::byte* base_ = nullptr;
  std::size_t stride_ = 0;  // bytes between two pairs' rings
  int n_, me_;
  double timeout_;
  const char* who_;
  std::size_t spill_lines_;  // after each ready line
  std::size_t pair_lines_;   // per pair: ready lines, spill lines, the acknowledgement line
};

// One block (`bytes` at `src`) to local rank `to`, chunk by chunk.
class ChannelWriter {
 public:
  ChannelWriter() = default;
  ChannelWriter(PairChannels& ch, int to, const std::byte* src, std::int64_t bytes);
  // Chunks of the block: at least one, which carries an empty block's header.
  std::int64_t chunks() const { return chunks_; }
  // Writes chunk k (k = 0, 1, ... in order; none past chunks()).
  void write(std::int64_t k);

 private:
  PairChannels* ch_ = nullptr;
  int to_ = 0;
  const std::byte* src_ = nullptr;
  std::int64_t bytes_ = 0, chunk_ = 1, chunks_ = 0;
  std::uint64_t first_ = 0;  // chunk 0's number in the pair's sequence
};

// One block from local rank `from` into `dst`, which expects `expected`
// bytes: copied only if the writer sends exactly that many; around the cache
// when `stream` (cost.h, streams_result: the rank's whole result is large).
class ChannelReader {
 public:
  ChannelReader() = default;
  ChannelReader(PairChannels& ch, int from, std::byte* dst, std::int64_t expected,
                bool stream = false);
  // Chunks still to read (before the first: at least one).
  bool more() const { return next_ < chunks_; }
  // Reads the next chunk (the first brings the block's header).
  void read_next();
  // The same in two steps, for a reader that combines a chunk where it lies
  // instead of copying it: waits for the next chunk and returns it (its
  // bytes in `bytes`), then release_next() hands its slot back.
  const std::byte* peek_next(std::int64_t* bytes);
  void release_next();
  // Where the chunk peek_next() returned lies in the block.
  std::int64_t next_offset() const { return next_ * chunk_; }
  // Once every chunk is read: the bytes the writer sent, and whether they
  // were the expected ones (and so copied).
  std::int64_t sent() const { return bytes_; }
  bool matched() const { return bytes_ == expected_; }

 private:
  PairChannels* ch_ = nullptr;
  int from_ = 0;
  std::byte* dst_ = nullptr;
  std::int64_t expected_ = 0, bytes_ = 0, chunk_ = 1, chunks_ = 1, next_ = 0;
  std::uint64_t first_ = 0;
  bool stream_ = false;
};

}  // namespace shancoll
