// A reduction on a node of exactly two ranks by single copy, shared by shan
// allreduce (shan_node_single_copy.cc) and release_gather's reduce and
// allreduce (release_gather_single_copy.cc): see pair_reduce.cc.
#pragma once

#include <cstddef>
#include <cstdint>

#include "shancoll/comm.h"
#include "shancoll/ops.h"

namespace shancoll {

// Bytes per chunk of a two-rank single-copy reduction: one system call each
// way, and the chunk stays in L2 (2 MiB here) for its combine. Chunks of 32
// KiB or less were slower (more calls), 64 KiB and 1 MiB no faster
// (docs/performance.md).
constexpr std::size_t kPairChunkBytes = 256 << 10;

// A reduce's root computes this share of the message, the other rank the
// rest: the other rank also writes its part into the root's recvbuf, so with
// a write costing about a read, 2 r = 3 (1 - r) gives r = 0.6. Measured
// (reduce, 2 ranks, two runs each, microseconds): 64 KiB 9.0/7.0 at 55%,
// 9.2/6.6 at 58%, 5.9/8.1 at 62%; 4 MiB 368/456, 431/463, 392/385; 50%
// was the slowest at most sizes (64 KiB 10.0/9.2).
constexpr std::int64_t kPairRootSharePercent = 60;

// The percent of a reduce to local rank `local_root` that local rank 0
// computes (the front of the message; local rank 1 the back).
constexpr std::int64_t pair_front_percent(int local_root) {
  return local_root == 0 ? kPairRootSharePercent : 100 - kPairRootSharePercent;
}

// out[0, n) = x_0 o x_1, local rank order, from local rank `me`'s own part
// `mine` and the other's `theirs` (tmp: Reducer::combine's spare buffer).
inline void combine_in_rank_order(const Reducer& reducer, int me, std::byte* out,
                                  const std::byte* mine, const std::byte* theirs, std::int64_t n,
                                  std::byte* tmp) {
  if (me == 0) return reducer.combine(out, mine, theirs, n, tmp);
  reducer.combine(out, theirs, mine, n, tmp);
}

// What a rank of pair_reduce keeps.
enum class PairResult {
  whole,     // `result` is a whole message (or null: none kept), and each rank writes its
             // part into the other's when the other keeps one (allreduce, reduce)
  own_part,  // `result` holds this rank's part alone, from its start; nothing is written
             // into the other's buffers (reduce_scatter)
};

// Collective over the node's two ranks. Local rank 0 computes elements
// [0, split), local rank 1 [split, count), each of x_0 o x_1 (local rank
// order). `input` is this rank's x; `result` its recvbuf, or null when
// this rank keeps no result (a reduce's non-root): a rank whose part the
// other keeps writes it into the other's recvbuf. result == input: in place.
// With PairResult::own_part, `result` must not overlap the other's part of
// `input` (the other reads it meanwhile).
void pair_reduce(NodeContext& ctx, const std::byte* input, std::byte* result, std::int64_t count,
                 std::int64_t split, const Reducer& reducer, double timeout, Stats& stats,
                 PairResult keeps = PairResult::whole);

}  // namespace shancoll
