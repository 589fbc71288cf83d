// release_gather as a persistent barrier on one node: every rank's flag
// line, read by all, as the persistent inline allgather(v)
// (allgatherv/allgatherv_persistent_inline.cc) with no data. At _init the
// request gets its own lines in a node segment of its own
// (shm/inline_lines.h), two per local rank used in turn. A start stores the
// run's number as the flag of the rank's line of the run (run mod 2); test
// polls the other ranks' lines until each names this run.
//
// Why two lines suffice (the allreduce's argument): a persistent request
// completes before it is started again, so when a rank starts run n + 2
// (rewriting run n's line) every peer has completed run n + 1, which needed
// this rank's line of run n + 1, written only after this rank completed run
// n; and every peer completed run n, its reads of run n's lines included,
// before it wrote its line of run n + 1. A run needs no progress of any
// other rank after its start (what the PMPI library's routing asks).
//
// Cost per run (n local ranks): one line store, n - 1 line transfers in,
// all at once. No MPI call, no allocation.
#include "shancoll/coll/persistent_inline.h"
#include "shancoll/shm/inline_lines.h"

namespace shancoll {
namespace {

constexpr int kBarrierInlineSlots = 2;  // per rank: runs n and n + 1 in flight

class InlineBarrierEngine final : public Engine {
 public:
  InlineBarrierEngine(const Topology& topo, const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        lines_(topo, kBarrierInlineSlots, timeout) {}

  void start() override {
    ++run_;
    lines_.write(me_, run_, nullptr, 0);
    arrived_ = 1;
  }

  bool test() override {
    while (arrived_ < size_) {  // the lines of the next rank on first: no hot spot
      if (!lines_.read((me_ + arrived_) % size_, run_, 0, "barrier")) return false;
      ++arrived_;
    }
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = size_;  // a line out, the others' in
  }

 private:
  const int me_, size_;
  InlineLines lines_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;  // lines of this run seen, the own one included
};

}  // namespace

std::unique_ptr<Engine> inline_barrier(const Topology& topo, const double& timeout) {
  if (!inline_lines_fit(topo, 0)) return nullptr;
  return std::make_unique<InlineBarrierEngine>(topo, timeout);
}

}  // namespace shancoll
