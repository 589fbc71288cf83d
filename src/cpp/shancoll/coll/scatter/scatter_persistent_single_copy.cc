// shan as a persistent scatter or scatterv on one node, past the deposit's
// bound (scatter_persistent_deposit.cc), where cross-memory attach works:
// every rank copies its block straight from the root's send buffer
// (coll/persistent_single_copy.h), the root its own at its start.
//
// Cost per run (n local ranks, blocks of b bytes): the root writes its line
// and copies its own block at the start, then shares each other block with
// its reader: where both are there the root writes the last b / 2n
// (root_share) and the reader reads the rest from the front, each in one
// claim (a system call) up to kClaimedChunk.
#include <memory>

#include "shancoll/coll/persistent_single_copy.h"

namespace shancoll {

std::unique_ptr<Engine> single_copy_scatter(NodeContext& ctx, const ScattervCall& call,
                                            int single_copy) {
  const Topology& t = ctx.topo;
  const ScattervArgs& a = call.args;
  if (!single_copy_agreed(ctx, single_copy, !call.typed)) return nullptr;
  SingleCopyPlan plan(t.local_size());
  plan.counts_name = "recvcount";
  plan.taker_share = 1 - root_share(t.local_size());
  const int root = t.local_rank_of[a.root];
  if (t.local_rank != root) {
    plan.take[root] = a.recv, plan.take_bytes[root] = static_cast<std::size_t>(a.recv_bytes);
    return single_copy_engine(ctx, plan);
  }
  for (int j = 0; j < t.local_size(); ++j) {
    const int r = t.ranks[0][static_cast<std::size_t>(j)];
    const std::byte* block = a.send + a.displs[r];
    const auto bytes = static_cast<std::size_t>(a.counts[r]);
    if (j != root) plan.give[j] = block, plan.give_bytes[j] = bytes;
    if (j == root && a.recv) plan.own_from = block, plan.own_to = a.recv, plan.own_bytes = bytes;
  }
  if (a.recv)  // checked against my count with the others
    plan.give_bytes[root] = plan.own_bytes,
    plan.take_bytes[root] = static_cast<std::size_t>(a.recv_bytes);
  return single_copy_engine(ctx, plan);
}

}  // namespace shancoll
