// A reduction on a node of exactly two ranks by single copy, shared by shan
// allreduce (shan_node_single_copy.cc) and release_gather's reduce and
// allreduce (release_gather_single_copy.cc): see pair_reduce.cc.
#pragma once

#include <cstdint>

#include "shancoll/comm.h"
#include "shancoll/ops.h"

namespace shancoll {

// Collective over the node's two ranks. Local rank 0 computes elements
// [0, split), local rank 1 [split, count), each of x_0 o x_1 (local rank
// order). `input` is this rank's x; `result` its recvbuf, or null when
// this rank keeps no result (a reduce's non-root): a rank whose part the
// other keeps writes it into the other's recvbuf. result == input: in place.
void pair_reduce(NodeContext& ctx, const std::byte* input, std::byte* result, std::int64_t count,
                 std::int64_t split, const Reducer& reducer, double timeout, Stats& stats);

}  // namespace shancoll
