// shan as a persistent allgather or allgatherv on one node, past the
// deposit's bound (allgatherv_persistent_deposit.cc), where cross-memory
// attach works: every rank copies every other rank's block straight from
// its owner's buffer (its send buffer, or in place its block of the receive
// buffer) to its displacement (coll/persistent_single_copy.h), its own
// block at its start.
//
// Cost per run (n local ranks, blocks of b bytes): every rank writes its
// line and copies its own block at the start, copies (n - 1) b from the
// others (a system call each; rank i starts with rank i + 1's, so that no
// block is read by all at once), and reads n - 1 completion lines.
#include <memory>

#include "shancoll/coll/persistent_single_copy.h"

namespace shancoll {

std::unique_ptr<Engine> single_copy_allgatherv(NodeContext& ctx, const AllgathervCall& call,
                                               int single_copy) {
  const Topology& t = ctx.topo;
  const AllgathervArgs& a = call.args;
  if (!single_copy_agreed(ctx, single_copy, a.recv && !a.counts.empty())) return nullptr;
  SingleCopyPlan plan(t.local_size());
  plan.counts_name = call.allgather ? "recvcount" : "recvcounts";
  plan.taker_share = kSymmetricTakerShare;
  const std::int64_t mine = a.counts[t.rank];
  const std::byte* block = a.send ? a.send : a.recv + a.displs[t.rank];
  // A send buffer of other bytes than my count: the readers see it differ.
  const std::int64_t given = a.send && call.send_bytes >= 0 ? call.send_bytes : mine;
  for (int j = 0; j < t.local_size(); ++j) {
    const int r = t.ranks[0][static_cast<std::size_t>(j)];
    plan.give_bytes[j] = static_cast<std::size_t>(given);  // mine too: checked with the others'
    plan.take_bytes[j] = static_cast<std::size_t>(a.counts[r]);
    if (j == t.local_rank) continue;
    plan.give[j] = block, plan.take[j] = a.recv + a.displs[r];
  }
  if (a.send) plan.own_from = a.send, plan.own_bytes = static_cast<std::size_t>(mine);
  plan.own_to = a.recv + a.displs[t.rank];
  return single_copy_engine(ctx, plan);
}

}  // namespace shancoll
