// shan as a persistent allreduce on one node, vectors of more than 56
// bytes: every rank deposits its input and every rank combines all of them.
// At _init the request gets its own node segment (shm/deposit_areas.h), two
// areas per local rank used in turn. A start copies the rank's input into
// its area of the run (run mod 2), chunk by chunk, each chunk's flag after
// it; test() takes the chunks in order and, once every rank's chunk c is
// there, combines them in rank order into recvbuf (the same expression on
// every rank: bitwise identical results, non-commutative ops allowed). The
// own input is read from sendbuf (in place: from the own area, since
// recvbuf is overwritten).
//
// Why two areas suffice: the inline allreduce's argument
// (allreduce_persistent_inline.cc): when a rank starts run n + 2 every peer
// has completed run n + 1, which needed this rank's deposit of run n + 1,
// made only after this rank completed run n; and every peer completed run
// n, its reads included, before it deposited run n + 1. A run needs no
// progress of any other rank after its start.
//
// Cost per run (n local ranks, m bytes): a copy of m into the segment at the
// start, then n - 1 combines of m (reading n * m, writing m), each rank the
// whole vector: at 2 ranks about what the halves of the blocking
// release_gather move (copy in, combine half, copy the other half out),
// without its handshakes. Segment: 2 * n * m. No MPI call, no allocation.
#include <algorithm>
#include <cstring>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kAllreduceDepositSlots = 2;  // per rank: runs n and n + 1 in flight

class DepositAllreduceEngine final : public Engine {
 public:
  DepositAllreduceEngine(const Topology& topo, const AllreduceArgs& args, const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        reducer_(*args.reducer),
        args_(args),
        bytes_(static_cast<std::size_t>(args.bytes())),
        areas_(topo, kAllreduceDepositSlots, bytes_, timeout),
        spare_(kDepositChunk),
        inputs_(static_cast<std::size_t>(size_)) {
    args_.reducer = &reducer_;
  }

  void start() override {
    ++run_;
    areas_.write(me_, run_, args_.send ? args_.send : args_.recv, bytes_);
    own_ = args_.send ? args_.send : areas_.area(me_, run_);
    chunk_ = 0;
  }

  bool test() override {
    for (; chunk_ < deposit_chunks(bytes_); ++chunk_)
      if (!combine(chunk_)) return false;
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = size_;  // a deposit out, the others' in
    stats.intra_bytes = static_cast<std::int64_t>(bytes_) * size_;
  }

 private:
  // Chunk c of the result once every rank's chunk c is there; false before.
  bool combine(std::size_t c) {
    return combine_deposited_chunk(areas_, reducer_, me_, size_, run_, c, bytes_, own_, args_.recv,
                                   inputs_, spare_.data());
  }

  const int me_, size_;
  Reducer reducer_;
  AllreduceArgs args_;
  const std::size_t bytes_;
  DepositAreas areas_;
  std::vector<std::byte> spare_;          // a non-commutative MPI op's (Reducer::combine)
  std::vector<const std::byte*> inputs_;  // per rank, of the chunk being combined
  const std::byte* own_ = nullptr;        // this rank's input of the run
  std::uint64_t run_ = 0;
  std::size_t chunk_ = 0;  // chunks of this run combined
};

}  // namespace

std::unique_ptr<Engine> deposit_allreduce(const Topology& topo, const AllreduceArgs& args,
                                          const double& timeout) {
  // A chunk holds whole elements (every typed element's size divides it).
  if (!deposit_fits(topo, args.bytes()) || kDepositChunk % args.reducer->elem_size() != 0)
    return nullptr;
  return std::make_unique<DepositAllreduceEngine>(topo, args, timeout);
}

}  // namespace shancoll
