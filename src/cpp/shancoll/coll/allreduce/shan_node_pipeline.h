// shan's node-local step on a single node, pipelined: see
// shan_node_pipeline.cc.
#pragma once

#include <cstdint>
#include <memory>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/shm/segment.h"

namespace shancoll {

// Kept in the NodeContext across calls: its own segment (flags that count
// chunks must survive other algorithms' calls) and the chunks done so far,
// identical on every local rank.
// Kept per node layout (NodeContext::state).
struct ShanPipelineState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t chunks = 0;
};

// The whole allreduce when every rank of `comm` is on one node.
void shan_node_pipeline(NodeContext& ctx, const AllreduceArgs& args, double timeout, Stats& stats);

}  // namespace shancoll
