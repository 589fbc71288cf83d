// release_gather as a persistent bcast on one node, from 32 KiB, where
// cross-memory attach works: the root's buffer crosses straight into every
// reader's (coll/persistent_single_copy.h), one copy where the deposit
// (bcast_persistent_deposit.cc) makes two, chunk by chunk, each read by the
// reader or written by the root, whichever claims it first.
//
// Cost per run (n local ranks, m bytes): (n - 1) m crossing in chunks of
// kClaimedChunk (a system call each), shared between the root and each
// reader.
#include <memory>

#include "shancoll/coll/persistent_single_copy.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

// Where it takes over from the deposit. Zen 4 VM, 2 ranks, start + wait
// (benchmarks/c/persistent_calls.c under the MPICH preload,
// docs/performance.md): 8 KiB 3.0 against the deposit's 0.81 us, 32 KiB 3.0
// against 3.8, 128 KiB 8.1 against 20.2, 4 MiB 205 against 291; from 512
// KiB to 2 MiB the two within each other's spread.
constexpr std::size_t kFromBytes = std::size_t{32} << 10;

}  // namespace

std::unique_ptr<Engine> single_copy_bcast(NodeContext& ctx, const BcastCall& call,
                                          int single_copy) {
  const Topology& t = ctx.topo;
  const bool large = t.node_count == 1 && t.local_size() > 1 &&
                     node_largest(t, static_cast<std::size_t>(call.bytes)) >= kFromBytes;
  if (!single_copy_agreed(ctx, single_copy, large)) return nullptr;
  SingleCopyPlan plan(t.local_size());
  const int root = t.local_rank_of[call.root];
  const auto bytes = static_cast<std::size_t>(call.bytes);
  auto* buf = static_cast<std::byte*>(call.buf);
  for (int j = 0; j < t.local_size(); ++j) {
    if (t.local_rank == root && j != root) plan.give[j] = buf, plan.give_bytes[j] = bytes;
    if (t.local_rank != root && j == root) plan.take[j] = buf, plan.take_bytes[j] = bytes;
  }
  return single_copy_engine(ctx, plan);
}

}  // namespace shancoll
