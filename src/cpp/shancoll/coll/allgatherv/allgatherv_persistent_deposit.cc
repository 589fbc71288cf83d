// shan as a persistent allgather(v) on one node, some block past 56 bytes:
// every rank deposits its block, every rank copies the others' out. At
// _init the request gets its own node segment (shm/deposit_areas.h), two
// areas per local rank (each of the largest block) used in turn. A start
// copies the rank's block into its area of the run (run mod 2), chunk by
// chunk, each chunk's flag after it, and, not in place, to its place in
// recvbuf; test() copies each peer's chunks to its displacement as their
// flags come (a block whose bytes differ from recvcounts[peer] is an
// ArgumentError: counts that differ between ranks).
//
// Why two areas suffice: the inline allgather(v)'s argument
// (allgatherv_persistent_inline.cc): every rank reads every deposit, so
// when a rank starts run n + 2 every peer has completed run n + 1, which
// needed this rank's deposit of run n + 1, made after this rank completed
// run n; and every peer completed run n, its reads included, before it
// deposited run n + 1. A run needs no progress of any other rank after its
// start.
//
// Cost per run (n local ranks, blocks b_r): a copy of the own block into the
// segment (and one to recvbuf, not in place), then n - 1 blocks copied out,
// each one chunk behind its writer: the blocking chunk ring's two copies per
// block, without its acknowledgements. Segment: 2 * n * max b_r. No MPI
// call, no allocation (counts and displacements copied at _init).
#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kAllgathervDepositSlots = 2;  // per rank: runs n and n + 1 in flight

// The largest block it takes: at 4 MiB per rank (a 16 MiB segment beside
// the buffers, past what the 32 MiB L3 of the Zen 3 VM holds for two ranks)
// it took 1.7x MPICH 5.0.2's own persistent allgather, at 1 MiB it tied
// (docs/performance.md, "Persistent collectives, 64 KiB to 4 MiB").
constexpr std::size_t kLargestBlock = std::size_t{1} << 20;

std::size_t largest_block(const AllgathervArgs& a) {
  return static_cast<std::size_t>(*std::max_element(a.counts.begin(), a.counts.end()));
}

class DepositAllgathervEngine final : public Engine {
 public:
  DepositAllgathervEngine(const Topology& topo, const AllgathervArgs& args, const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        args_(args),
        areas_(topo, kAllgathervDepositSlots, largest_block(args), timeout) {}

  void start() override {
    ++run_;
    std::byte* place = args_.recv + args_.displs[me_];
    areas_.write(me_, run_, args_.send ? args_.send : place, block(me_));
    if (args_.send && block(me_) > 0) local_copy(place, args_.send, block(me_));
    arrived_ = 1;
    chunk_ = 0;
  }

  bool test() override {
    while (arrived_ < size_) {  // the next rank's block first: no hot spot
      const int peer = (me_ + arrived_) % size_;
      for (; chunk_ < deposit_chunks(block(peer)); ++chunk_) {
        const std::byte* data = areas_.chunk(peer, run_, chunk_, block(peer), "recvcounts");
        if (!data) return false;
        const std::size_t at = chunk_ * kDepositChunk;
        const std::size_t n = std::min(kDepositChunk, block(peer) - std::min(block(peer), at));
        if (n > 0) local_copy(args_.recv + args_.displs[peer] + at, data, n);
      }
      ++arrived_;
      chunk_ = 0;
    }
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = size_;  // a deposit out, the others' in
    stats.intra_bytes = args_.total();
  }

 private:
  std::size_t block(int rank) const { return static_cast<std::size_t>(args_.counts[rank]); }

  const int me_, size_;
  const AllgathervArgs args_;  // counts and displacements copied
  DepositAreas areas_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;        // blocks of this run copied, the own one included
  std::size_t chunk_ = 0;  // chunks of the block being copied
};

}  // namespace

std::unique_ptr<Engine> deposit_allgatherv(const Topology& topo, const AllgathervCall& call,
                                           const double& timeout) {
  const AllgathervArgs& a = call.args;
  if (!a.recv || a.counts.empty() ||
      !deposit_fits(topo, static_cast<std::int64_t>(largest_block(a))) ||
      largest_block(a) > kLargestBlock)
    return nullptr;
  const std::int64_t mine = a.counts[topo.rank];
  if (a.send && call.send_bytes >= 0 && call.send_bytes != mine)
    throw ArgumentError("sendbuf: " + std::to_string(call.send_bytes) + " bytes, but recvcounts[" +
                        std::to_string(topo.rank) + "] expects " + std::to_string(mine));
  return std::make_unique<DepositAllgathervEngine>(topo, a, timeout);
}

}  // namespace shancoll
