// shan as a persistent gather or gatherv on one node, blocks of at most 16
// KiB: every other rank deposits its block, the root copies each deposit to
// its place in recvbuf (its displacement). At _init the
// request gets its own node segment (shm/deposit_areas.h), two areas per
// local rank used in turn. A non-root's start copies its block into its
// area of the run (run mod 2), chunk by chunk, each chunk's flag after it;
// the root's start copies its own block to its place (not in place), and
// its test copies each peer's chunks out as their flags come (a deposit
// whose bytes differ from the root's count for it is an ArgumentError:
// counts that differ between ranks), then stores the run in its counter
// line.
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
// chunk behind each writer. Segment: 2 n b (b the largest block). No MPI
// call, no allocation.
#include <algorithm>
#include <cstring>
#include <memory>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/cost.h"
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
  DepositGatherEngine(const Topology& topo, const GathervArgs& args, std::size_t largest,
                      const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[args.root]),
        size_(topo.local_size()),
        send_(args.send),
        recv_(args.recv),
        own_(static_cast<std::size_t>(args.send_bytes)),
        counts_name_(args.regular ? "recvcount" : "recvcounts"),
        areas_(topo, kGatherDepositSlots, largest, timeout) {
    if (me_ != root_) return;
    for (int j = 0; j < size_; ++j) {  // the root's layout, by local rank (one node: all ranks)
      const int r = topo.ranks[0][static_cast<std::size_t>(j)];
      counts_.push_back(static_cast<std::size_t>(args.counts[r]));
      displs_.push_back(static_cast<std::size_t>(args.displs[r]));
    }
  }

  void start() override {
    ++run_;
    if (me_ != root_) {
      areas_.write(me_, run_, send_, own_);
      return;
    }
    if (send_ && counts_[me_] > 0)  // else in place
      local_copy(recv_ + displs_[me_], send_, counts_[me_]);
    arrived_ = 1;
    chunk_ = 0;
  }

  bool test() override {
    if (me_ != root_) return areas_.completed_by(root_) + kGatherDepositSlots >= run_ + 1;
    for (; arrived_ < size_; ++arrived_, chunk_ = 0) {  // the next rank's first: no hot spot
      const int peer = (me_ + arrived_) % size_;
      const std::size_t block = counts_[peer];
      for (; chunk_ < deposit_chunks(block); ++chunk_) {
        const std::byte* data = areas_.chunk(peer, run_, chunk_, block, counts_name_);
        if (!data) return false;
        const std::size_t from = chunk_ * kDepositChunk;
        local_copy(recv_ + displs_[peer] + from, data, std::min(kDepositChunk, block - from));
      }
    }
    areas_.completed(me_, run_);  // after the copies: the others may write these areas again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // the deposits, to the root
    std::size_t bytes = own_;
    if (me_ == root_) {
      bytes = 0;
      for (int j = 0; j < size_; ++j)
        if (j != root_) bytes += counts_[j];
    }
    stats.intra_bytes = static_cast<std::int64_t>(bytes);
  }

 private:
  const int me_, root_, size_;
  const std::byte* const send_;               // nullptr: in place (the root)
  std::byte* const recv_;                     // the root's
  const std::size_t own_;                     // a non-root's block
  const char* const counts_name_;             // what a deposit of other bytes names
  std::vector<std::size_t> counts_, displs_;  // the root's: bytes, by local rank
  DepositAreas areas_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;        // the root: peers' blocks of this run copied, its own counted
  std::size_t chunk_ = 0;  // the next chunk of the current peer's deposit
};

}  // namespace

std::unique_ptr<Engine> deposit_gather(const Topology& topo, const GathervCall& call,
                                       const double& timeout) {
  const GathervArgs& a = call.args;
  if (call.typed || topo.node_count != 1 || topo.local_size() < 2) return nullptr;
  std::int64_t largest = a.send_bytes;
  if (topo.rank == a.root) largest = *std::max_element(a.counts, a.counts + topo.size);
  const std::size_t block =
      node_largest(topo, static_cast<std::size_t>(std::max<std::int64_t>(largest, 0)));
  if (block > kLargestBlock) return nullptr;  // every rank alike
  return std::make_unique<DepositGatherEngine>(topo, a, block, timeout);
}

}  // namespace shancoll
