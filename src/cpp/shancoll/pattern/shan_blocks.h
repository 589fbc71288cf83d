// Block arithmetic of the shan allgatherv (seed: gaspi-shared-notification-
// collectives, Sec. II.A): pure functions, no MPI, unit-testable.
//
// Every rank's contribution is cut into blocks of at most `block_size` bytes
// (Eq. 3), so no block mixes data of two ranks (their receive positions need
// not be adjacent). Block ids are global and continuous across nodes: node by
// node, local rank by local rank, block by block; they double as
// notification ids. A node's blocks are shared out evenly among its local
// ranks for sending (Eq. 4, Listing 3).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace shancoll::shan {

// Eq. (3): blocks of a contribution of `bytes`.
inline std::int64_t blocks_of(std::int64_t bytes, std::int64_t block_size) {
  return (bytes + block_size - 1) / block_size;
}

// Eq. (4): how many of the node's blocks local rank `l` of `n` sends.
inline std::int64_t working_blocks(std::int64_t node_blocks, int n, int l) {
  return (node_blocks + n - l - 1) / n;
}

// Listing 3: index of local rank l's first working block within the node.
inline std::int64_t working_offset(std::int64_t node_blocks, int n, int l) {
  std::int64_t offset = 0;
  for (int i = 0; i < l; ++i) offset += working_blocks(node_blocks, n, i);
  return offset;
}

// The local rank of `n` whose working share holds block `index` of the
// node's `node_blocks` (index < node_blocks): the inverse of Listing 3.
inline int working_rank(std::int64_t node_blocks, int n, std::int64_t index) {
  int l = 0;
  for (std::int64_t end = working_blocks(node_blocks, n, 0); index >= end;
       end += working_blocks(node_blocks, n, ++l)) {
  }
  return l;
}

// The block size when the caller asks for none and the input is not
// broadcast-shaped.
constexpr std::int64_t kDefaultBlockSize = 256 * 1024;

// alpha / beta of the networks of the papers: the bytes a link moves in the
// time one message's latency costs (Aries ~1.3 us x 10 GB/s ~ 13 KB,
// InfiniBand FDR ~0.7 us x 6.8 GB/s ~ 5 KB), rounded to 8 KiB. A block
// smaller than this costs more in latency than in transfer.
constexpr std::int64_t kLatencyBytes = 8 * 1024;

// Block size for broadcast-shaped inputs (seed Sec. II.B: "the data chunk
// size determines the ramp up speed of the pipeline, the fine-grain shifting
// of data chunks through the ring is a key requisite"): 0 (no preference)
// unless one node holds at least half of all bytes on a ring of 3 or more
// nodes.
//
// Cost model. Node j's D_j bytes travel N-1 hops round the node ring, cut
// into B = D_j / b blocks. When every node holds about the same share
// (regular; linearly decreasing from 4 nodes on: on 3 its first node holds
// 56%), all N links carry data from the start and the time is the links'
// load, ~(m - m/N) beta, whatever b is: the default stays, so large
// contributions keep few, large messages. When one node
// holds most of m (broadcast: m_0 = m), the other links idle until its
// blocks reach them, and the time is that of a pipelined chain of N-1 hops
// (N-2 forwarding nodes):
//     T(b) = (B + N - 2) (alpha + b beta),
// least at b* = sqrt(D alpha / ((N - 2) beta)), where T ~ D beta + (N-2) alpha
// + 2 sqrt((N-2) D alpha beta). A 1 MiB broadcast over 32 nodes (alpha
// 1.3 us, beta 0.1 ns/B): 4 blocks of the default 256 KiB give T ~ 34 x
// 27.5 us = 0.94 ms; b* = 21 KB ~0.27 ms, and the 16.5 KiB this rule picks
// (alpha/beta rounded to 8 KiB) ~0.28 ms. (The blocks must also leave the
// node one after another, not all at once: they do, as they are copied in,
// see allgatherv_shan.cc.) b* is clamped to
// [kLatencyBytes, kDefaultBlockSize]. "At least half" is a heuristic
// boundary: with 3 or more nodes a node holding half of m holds more than
// any balanced share, and no other node's traffic can hide its pipeline's
// fill of (N-2)(alpha + b beta).
inline std::int64_t pipeline_block_size(std::int64_t largest_node_bytes, std::int64_t total_bytes,
                                        int nodes) {
  if (nodes < 3 || largest_node_bytes <= 0 || 2 * largest_node_bytes < total_bytes) return 0;
  const double best = std::sqrt(static_cast<double>(largest_node_bytes) *
                                static_cast<double>(kLatencyBytes) / (nodes - 2));
  return std::clamp(static_cast<std::int64_t>(best), kLatencyBytes, kDefaultBlockSize);
}

// The block size actually used: the requested one, or when 0 the preferred
// one (pipeline_block_size), or when that is 0 too kDefaultBlockSize; raised
// if needed so that the whole call needs at most `max_blocks` blocks (the
// notification ids available), and capped so one block fits an int count.
inline std::int64_t choose_block_size(std::int64_t requested,
                                      const std::vector<std::int64_t>& counts,
                                      std::int64_t max_blocks, std::int64_t preferred = 0) {
  constexpr std::int64_t kMax = std::int64_t{1} << 30;
  std::int64_t size = requested > 0 ? requested : preferred > 0 ? preferred : kDefaultBlockSize;
  std::int64_t total = 0;
  for (std::int64_t c : counts) total += c;
  const std::int64_t ranks = static_cast<std::int64_t>(counts.size());
  // sum ceil(c / s) <= total / s + ranks, so this s keeps the count in range.
  if (max_blocks > ranks)
    size = std::max(size, (total + max_blocks - ranks - 1) / (max_blocks - ranks));
  return std::min(std::max<std::int64_t>(size, 1), kMax);
}

// LoadBalance part 1 for column `c` (the processes with local rank c): for
// every node, the blocks of column c on all lower nodes. `lower` is the
// node-shared array [node * columns + c].
inline void part1_lower_blocks(const std::vector<std::vector<int>>& node_ranks,
                               const std::vector<std::int64_t>& counts, std::int64_t block_size,
                               int c, int columns, std::int64_t* lower) {
  std::int64_t sum = 0;
  for (std::size_t n = 0; n < node_ranks.size(); ++n) {
    lower[n * columns + c] = sum;
    if (c < static_cast<int>(node_ranks[n].size()))
      sum += blocks_of(counts[node_ranks[n][c]], block_size);
  }
}

// LoadBalance part 2 for column `c`: the first block id of every process of
// column c, from the lower-node sums of all columns (part 1) plus the blocks
// of the lower local ranks on the same node. `first` is indexed by rank.
inline void part2_first_blocks(const std::vector<std::vector<int>>& node_ranks,
                               const std::vector<std::int64_t>& counts, std::int64_t block_size,
                               int c, int columns, const std::int64_t* lower, std::int64_t* first) {
  for (std::size_t n = 0; n < node_ranks.size(); ++n) {
    const auto& ranks = node_ranks[n];
    if (c >= static_cast<int>(ranks.size())) continue;
    std::int64_t id = 0;
    for (int col = 0; col < columns; ++col) id += lower[n * columns + col];
    for (int l = 0; l < c; ++l) id += blocks_of(counts[ranks[l]], block_size);
    first[ranks[c]] = id;
  }
}

// A block: whose data, which of its blocks, where, how long.
struct Block {
  int rank;
  std::int64_t offset;  // byte offset of the block within the result
  std::int64_t bytes;
};

// Maps a global block id to its block, given every rank's first block id
// (`first`, indexed by rank) and the ranks in block-id order.
inline Block locate(std::int64_t id, const std::vector<int>& order, const std::int64_t* first,
                    const std::vector<std::int64_t>& counts,
                    const std::vector<std::int64_t>& displs, std::int64_t block_size) {
  // Last rank in block order whose first id is <= id (ranks with no blocks
  // share their successor's first id and are skipped by taking the last).
  std::size_t lo = 0, hi = order.size();
  while (hi - lo > 1) {
    const std::size_t mid = (lo + hi) / 2;
    if (first[order[mid]] <= id)
      lo = mid;
    else
      hi = mid;
  }
  const int rank = order[lo];
  const std::int64_t start = (id - first[rank]) * block_size;
  return Block{rank, displs[rank] + start, std::min(block_size, counts[rank] - start)};
}

}  // namespace shancoll::shan
