// release_gather as a persistent reduce on one node, more than 56 bytes,
// predefined ops on the typed kernels: every non-root deposits its input,
// the root combines them. At _init the request gets its own node segment
// (shm/deposit_areas.h), two areas per local rank used in turn. A
// non-root's start copies its input into its area of the run (run mod 2),
// chunk by chunk, each chunk's flag after it (the root deposits only in
// place, where recvbuf is overwritten); the root takes the chunks in order
// and, once every rank's chunk c is there, combines them in rank order into
// recvbuf (its own input read from sendbuf), then stores the run in its
// counter line.
//
// Why two areas suffice: the mirror of the deposit bcast
// (bcast_persistent_deposit.cc): a non-root's run needs nothing from the
// others, so its *completion* of run k waits until the root has *completed*
// run k - 1, whose area the non-root's next start writes. Sound because a
// correct program assumes nothing about whether a collective synchronizes,
// and the root completes from the deposits alone.
//
// Cost per run (n local ranks, m bytes): every non-root copies m into the
// segment at its start; the root then combines n inputs of m (reading n *
// m, writing m); a non-root reads the root's counter line at its
// completion. Segment: 2 * n * m. No MPI call, no allocation.
#include <algorithm>
#include <cstring>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/ops.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kReduceDepositSlots = 2;  // a non-root's runs k and k + 1 in flight

class DepositReduceEngine final : public Engine {
 public:
  DepositReduceEngine(const Topology& topo, const ReduceCall& call, const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[call.root]),
        size_(topo.local_size()),
        reducer_(call.op, call.type, call.datatype),
        send_(static_cast<const std::byte*>(call.send)),
        recv_(static_cast<std::byte*>(call.recv)),
        bytes_(static_cast<std::size_t>(call.count) * reducer_.elem_size()),
        areas_(topo, kReduceDepositSlots, bytes_, timeout),
        inputs_(static_cast<std::size_t>(size_)) {}

  void start() override {
    ++run_;
    chunk_ = 0;
    if (me_ != root_) {
      areas_.write(me_, run_, send_, bytes_);
    } else if (send_) {
      own_ = send_;  // the root reads its input where it is
    } else {         // in place: recvbuf is overwritten chunk by chunk
      areas_.write(me_, run_, recv_, bytes_);
      own_ = areas_.area(me_, run_);
    }
  }

  bool test() override {
    if (me_ != root_) return areas_.completed_by(root_) + kReduceDepositSlots >= run_ + 1;
    for (; chunk_ < deposit_chunks(bytes_); ++chunk_)
      if (!combine(chunk_)) return false;
    areas_.completed(me_, run_);  // after the reads: the others may write these areas again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ : 1;  // the deposits, to the root
    stats.intra_bytes = static_cast<std::int64_t>(bytes_) * stats.intra_messages;
  }

 private:
  // Chunk c of the result once every rank's chunk c is there; false before.
  bool combine(std::size_t c) {
    return combine_deposited_chunk(areas_, reducer_, me_, size_, run_, c, bytes_, own_, recv_,
                                   inputs_, nullptr);
  }

  const int me_, root_, size_;
  const Reducer reducer_;  // typed: no tmp needed (Reducer::combine)
  const std::byte* send_;
  std::byte* recv_;
  const std::size_t bytes_;
  DepositAreas areas_;
  std::vector<const std::byte*> inputs_;  // per rank, of the chunk being combined
  const std::byte* own_ = nullptr;        // this rank's input of the run
  std::uint64_t run_ = 0;
  std::size_t chunk_ = 0;  // chunks of this run combined (the root)
};

}  // namespace

std::unique_ptr<Engine> deposit_reduce(const Topology& topo, const ReduceCall& call,
                                       const double& timeout) {
  const Reducer reducer(call.op, call.type, call.datatype);
  const auto bytes = call.count * static_cast<std::int64_t>(reducer.elem_size());
  if (!deposit_fits(topo, bytes) || !reducer.typed() || kDepositChunk % reducer.elem_size() != 0)
    return nullptr;
  return std::make_unique<DepositReduceEngine>(topo, call, timeout);
}

}  // namespace shancoll
