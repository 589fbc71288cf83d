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

// The block size actually used: the requested one (default when 0), raised
// if needed so that the whole call needs at most `max_blocks` blocks (the
// notification ids available), and capped so one block fits an int count.
inline std::int64_t choose_block_size(std::int64_t requested,
                                      const std::vector<std::int64_t>& counts,
                                      std::int64_t max_blocks) {
  constexpr std::int64_t kDefault = 256 * 1024;
  constexpr std::int64_t kMax = std::int64_t{1} << 30;
  std::int64_t size = requested > 0 ? requested : kDefault;
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
