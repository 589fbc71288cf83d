// shan's node-local step on a node of two ranks, single copy: see
// shan_node_single_copy.cc.
#pragma once

#include "shancoll/coll/allreduce/allreduce.h"

namespace shancoll {

// Whether shan_node_single_copy() runs this call (the same answer on every
// local rank).
bool shan_single_copy_fits(NodeContext& ctx, const AllreduceArgs& args);

// The whole allreduce when both ranks of `comm` are on one node.
void shan_node_single_copy(NodeContext& ctx, const AllreduceArgs& args, double timeout,
                           Stats& stats);

}  // namespace shancoll
