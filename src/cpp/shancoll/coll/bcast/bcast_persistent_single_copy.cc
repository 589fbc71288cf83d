// release_gather as a persistent bcast on one node, from 128 KiB (from any
// size where asked for), where cross-memory attach works: the root's buffer
// crosses straight into every reader's (coll/persistent_single_copy.h), one
// copy where the deposit (bcast_persistent_deposit.cc) makes two, chunk by
// chunk, the reader reading from the front, the root writing from the back.
//
// Cost per run (n local ranks, m bytes): (n - 1) m crossing in chunks of at
// most kClaimedChunk (a system call each), shared between the root and each
// reader.
#include <memory>

#include "shancoll/coll/persistent_single_copy.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

// Where it takes over from the deposit unless asked for (single_copy=1:
// from any size past the inline lines). Zen 4 VM, 2 ranks, start + wait
// under the MPICH preload (benchmarks/c/persistent_calls.c,
// docs/performance.md, "Persistent single copy"), three jobs each: 32 KiB
// 4.1-6.7 against the deposit's 1.2-3.7 us, 64 KiB 7.0-8.4 against 7.5-7.8;
// 128 KiB 13.1 against 20.2 (other jobs); 4 MiB 205 (its first, taker-only
// version) against 291. The Xeon VM, with the chunks claimed from both ends
// (2026-11-30): 32 KiB 2.6-3.0 against 3.3-3.5, 64 KiB 3.6-4.1 against
// 7.6-8.9 (its table asks for it).
constexpr std::size_t kFromBytes = std::size_t{128} << 10;

}  // namespace

std::unique_ptr<Engine> single_copy_bcast(NodeContext& ctx, const BcastCall& call,
                                          int single_copy) {
  const Topology& t = ctx.topo;
  const std::size_t from = single_copy > 0 ? 0 : kFromBytes;
  const bool large = t.node_count == 1 && t.local_size() > 1 &&
                     node_largest(t, static_cast<std::size_t>(call.bytes)) >= from;
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
