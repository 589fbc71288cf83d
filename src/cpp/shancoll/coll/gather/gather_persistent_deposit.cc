// shan as a persistent gather on one node, blocks of at most 16 KiB: every other rank deposits its
// block, the root copies each deposit to its place in recvbuf. At _init the
// request gets its own node segment (shm/deposit_areas.h), two areas per
// local rank used in turn. A non-root's start copies its block into its
// area of the run (run mod 2), chunk by chunk, each chunk's flag after it;
// the root's start copies its own block to its place (not in place), and
// its test copies each peer's chunks out as their flags come (a deposit
// whose bytes differ from recvcount's is an ArgumentError: counts that
// differ between ranks), then stores the run in its counter line.
//
// Why two areas suffice: the persistent reduce's argument
// (reduce_persistent_deposit.cc): a non-root's run needs nothing from the
// others, so its *completion* of run k waits until the root has
// *completed* run k - 1, whose area the non-root's next start writes.
// Sound because a correct program assumes nothing about whether a
// collective synchronizes, and the root completes from the deposits alone.
//
// Cost per run (n local ranks, blocks of b bytes): every non-root copies b
// into the segment at its start (local: it waits for nobody) and reads the
// root's counter line at its completion; the root copies (n - 1) b out, one
// chunk behind each writer. Segment: 2 n b. No MPI call, no allocation.
#include <algorithm>
#include <cstring>
#include <memory>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kGatherDepositSlots = 2;  // a non-root's runs k and k + 1 in flight

// The largest block it takes. Zen 4 VM, 2 ranks, start + wait against the
// library's own persistent gather (benchmarks/c/persistent_calls.c,
// docs/performance.md): 16 KiB 1.85 against MPICH's 5.34 us and 1.82
// against Intel MPI's 2.09; 32 KiB 16.5 against 7.15 and 3.82 against 3.67.
// Past it the library's own keeps the call: each run's deposit crosses to
// the root's core through areas the other core wrote last run.
constexpr std::size_t kLargestBlock = std::size_t{16} << 10;

class DepositGatherEngine final : public Engine {
 public:
  DepositGatherEngine(const Topology& topo, const GathervArgs& args, std::size_t block,
                      const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[args.root]),
        size_(topo.local_size()),
        send_(args.send),
        recv_(args.recv),
        block_(block),
        areas_(topo, kGatherDepositSlots, block, timeout) {}

  void start() override {
    ++run_;
    if (me_ != root_) {
      areas_.write(me_, run_, send_, block_);
      return;
    }
    if (send_ && block_ > 0) std::memcpy(recv_ + at(me_), send_, block_);  // else in place
    arrived_ = 1;
    chunk_ = 0;
  }

  bool test() override {
    if (me_ != root_) return areas_.completed_by(root_) + kGatherDepositSlots >= run_ + 1;
    for (; arrived_ < size_; ++arrived_, chunk_ = 0) {  // the next rank's first: no hot spot
      const int peer = (me_ + arrived_) % size_;
      for (; chunk_ < deposit_chunks(block_); ++chunk_) {
        const std::byte* data = areas_.chunk(peer, run_, chunk_, block_, "recvcount");
        if (!data) return false;
        const std::size_t from = chunk_ * kDepositChunk;
        std::memcpy(recv_ + at(peer) + from, data, std::min(kDepositChunk, block_ - from));
      }
    }
    areas_.completed(me_, run_);  // after the copies: the others may write these areas again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // the deposits, to the root
    stats.intra_bytes = static_cast<std::int64_t>(block_) * stats.intra_messages;
  }

 private:
  std::size_t at(int rank) const { return block_ * static_cast<std::size_t>(rank); }

  const int me_, root_, size_;
  const std::byte* const send_;  // nullptr: in place (the root)
  std::byte* const recv_;        // the root's
  const std::size_t block_;
  DepositAreas areas_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;        // the root: peers' blocks of this run copied, its own counted
  std::size_t chunk_ = 0;  // the next chunk of the current peer's deposit
};

}  // namespace

std::unique_ptr<Engine> deposit_gather(const Topology& topo, const GathervCall& call,
                                       const double& timeout) {
  const GathervArgs& a = call.args;
  if (call.typed || !a.regular || topo.node_count != 1 || topo.local_size() < 2) return nullptr;
  const auto block =
      static_cast<std::size_t>(topo.rank == a.root ? a.counts[a.root] : a.send_bytes);
  if (node_largest(topo, block) > kLargestBlock) return nullptr;  // every rank alike
  return std::make_unique<DepositGatherEngine>(topo, a, block, timeout);
}

}  // namespace shancoll
