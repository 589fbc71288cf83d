// shan as a persistent allgather(v) on one node, blocks of at most 56 bytes:
// the seed's node-local gather with each block inlined beside its
// notification, as the persistent inline allreduce
// (allreduce/allreduce_persistent_inline.cc). At _init the request gets its
// own lines in a node segment of its own (shm/inline_lines.h), two per local
// rank used in turn. A start writes the rank's block beside a flag holding
// the run's number and the block's bytes in its line of the run (run mod 2)
// and, not in place, copies it to its place in recvbuf; test polls the
// other ranks' lines and copies each block to its displacement once its
// flag names this run (a flag whose bytes differ from recvcounts[peer] is
// an ArgumentError: counts that differ between ranks).
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
// all at once, n block copies of at most 56 bytes. No MPI call, no
// allocation (counts and displacements copied at _init).
#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/coll/persistent_inline.h"
#include "shancoll/error.h"
#include "shancoll/shm/inline_lines.h"

namespace shancoll {
namespace {

constexpr int kAllgathervInlineSlots = 2;  // per rank: runs n and n + 1 in flight

class InlineAllgathervEngine final : public Engine {
 public:
  InlineAllgathervEngine(const Topology& topo, const AllgathervArgs& args, const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        args_(args),
        lines_(topo, kAllgathervInlineSlots, timeout) {}

  void start() override {
    ++run_;
    std::byte* place = args_.recv + args_.displs[me_];
    const std::size_t bytes = block(me_);
    lines_.write(me_, run_, args_.send ? args_.send : place, bytes);
    if (args_.send && bytes > 0) std::memcpy(place, args_.send, bytes);
    arrived_ = 1;
  }

  bool test() override {
    while (arrived_ < size_) {  // the lines of the next rank on first: no hot spot
      const int peer = (me_ + arrived_) % size_;
      const std::byte* data = lines_.read(peer, run_, block(peer), "recvcounts");
      if (!data) return false;
      if (block(peer) > 0) std::memcpy(args_.recv + args_.displs[peer], data, block(peer));
      ++arrived_;
    }
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = size_;  // a line out, the others' in
    stats.intra_bytes = args_.total();
  }

 private:
  std::size_t block(int rank) const { return static_cast<std::size_t>(args_.counts[rank]); }

  const int me_, size_;
  const AllgathervArgs args_;  // counts and displacements copied
  InlineLines lines_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;  // lines of this run seen, the own one included
};

}  // namespace

std::unique_ptr<Engine> inline_allgatherv(const Topology& topo, const AllgathervCall& call,
                                          const double& timeout) {
  const AllgathervArgs& a = call.args;
  const std::int64_t largest =
      a.counts.empty() ? 0 : *std::max_element(a.counts.begin(), a.counts.end());
  if (!a.recv || !inline_lines_fit(topo, largest)) return nullptr;
  const std::int64_t mine = a.counts[topo.rank];
  if (a.send && call.send_bytes >= 0 && call.send_bytes != mine)
    throw ArgumentError("sendbuf: " + std::to_string(call.send_bytes) + " bytes, but recvcounts[" +
                        std::to_string(topo.rank) + "] expects " + std::to_string(mine));
  return std::make_unique<InlineAllgathervEngine>(topo, a, timeout);
}

}  // namespace shancoll
