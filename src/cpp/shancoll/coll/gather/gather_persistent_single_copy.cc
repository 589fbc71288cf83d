// shan as a persistent gather or gatherv on one node, past the deposit's
// bound (gather_persistent_deposit.cc), where cross-memory attach works:
// every block crosses straight from its owner's send buffer to its
// displacement (coll/persistent_single_copy.h), chunk by chunk, each read
// by the root or written by its owner, whichever claims it first; the root
// copies its own block at its start.
//
// Cost per run (n local ranks, blocks of b bytes): (n - 1) b crossing
// between the root and the owners, the root's own block copied beside:
// where both are there the root reads the first b / 2n of each block
// (root_share) and the owner writes the rest, each in one claim (a system
// call) up to kClaimedChunk.
#include <memory>

#include "shancoll/coll/persistent_single_copy.h"

namespace shancoll {

std::unique_ptr<Engine> single_copy_gather(NodeContext& ctx, const GathervCall& call,
                                           int single_copy) {
  const Topology& t = ctx.topo;
  const GathervArgs& a = call.args;
  if (!single_copy_agreed(ctx, single_copy, !call.typed)) return nullptr;
  SingleCopyPlan plan(t.local_size());
  plan.counts_name = a.regular ? "recvcount" : "recvcounts";
  plan.taker_share = root_share(t.local_size());
  const int root = t.local_rank_of[a.root];
  if (t.local_rank != root) {
    plan.give[root] = a.send, plan.give_bytes[root] = static_cast<std::size_t>(a.send_bytes);
    return single_copy_engine(ctx, plan);
  }
  for (int j = 0; j < t.local_size(); ++j) {
    const int r = t.ranks[0][static_cast<std::size_t>(j)];
    std::byte* place = a.recv + a.displs[r];
    const auto bytes = static_cast<std::size_t>(a.counts[r]);
    if (j != root) plan.take[j] = place, plan.take_bytes[j] = bytes;
    if (j == root && a.send) plan.own_from = a.send, plan.own_to = place, plan.own_bytes = bytes;
  }
  if (a.send)  // checked against my count with the others
    plan.give_bytes[root] = static_cast<std::size_t>(a.send_bytes),
    plan.take_bytes[root] = plan.own_bytes;
  return single_copy_engine(ctx, plan);
}

}  // namespace shancoll
