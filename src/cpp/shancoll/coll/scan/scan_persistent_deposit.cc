// shan as a persistent scan or exscan on one node, vectors of at most 16 KiB,
// predefined ops on the typed kernels: every rank deposits its input, rank
// r combines the deposits of ranks 0 .. r (exscan: 0 .. r - 1) in rank
// order. At _init the request gets its own node segment
// (shm/deposit_areas.h), two areas per local rank used in turn. A start
// copies the input (in place: recvbuf's) into the rank's area of the run
// (run mod 2), chunk by chunk, each chunk's flag after it; test() takes the
// chunks in order and, once the chunk c of every rank it reads is there,
// combines them into recvbuf (its own input read back from its area: in
// place, recvbuf is overwritten), then stores the run in its counter line.
// Exscan's rank 0 reads nothing: its recvbuf is undefined in MPI, and left
// as it is.
//
// Why two areas suffice: rank r's area is read only by the ranks after it,
// so rank r completes run k once each of them has completed run k - 1,
// whose area rank r's next start writes (the persistent reduce's rule,
// reduce_persistent_deposit.cc, with the ranks after r as its root). No
// cycle: a completion of run k waits only for deposits of run k and
// completions of run k - 1. Sound because a correct program assumes nothing
// about whether a collective synchronizes.
//
// Cost per run (n local ranks, m bytes, rank r): a copy of m into the
// segment at the start; r combines of m (exscan r - 1, rank 1 a copy);
// n - 1 - r counter lines read at the completion. Segment: 2 n m. No MPI
// call, no allocation.
#include <algorithm>
#include <memory>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kScanDepositSlots = 2;  // per rank: runs k and k + 1 in flight

// The largest vector it takes. Zen 4 VM, 2 ranks, start + wait against the
// library's own persistent scan (benchmarks/c/persistent_calls.c,
// docs/performance.md): 16 KiB 2.29 against MPICH's 10.7 us and 2.09
// against Intel MPI's 2.44 (exscan 7.46 against 17.5, 1.81 against 2.08);
// 32 KiB 4.66 against Intel MPI's 4.60 (exscan 3.85 against 3.96); 64 KiB
// 8.79 against 8.51. Past it the library's own keeps the call.
constexpr std::size_t kLargestBytes = std::size_t{16} << 10;

class DepositScanEngine final : public Engine {
 public:
  DepositScanEngine(const Topology& topo, const ScanCall& call, std::size_t bytes, bool exclusive,
                    const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        ranks_(exclusive ? me_ : me_ + 1),
        reducer_(call.op, call.type, call.datatype),
        send_(static_cast<const std::byte*>(call.send)),
        recv_(static_cast<std::byte*>(call.recv)),
        bytes_(bytes),
        areas_(topo, kScanDepositSlots, bytes, timeout),
        inputs_(static_cast<std::size_t>(size_)) {}

  void start() override {
    ++run_;
    areas_.write(me_, run_, send_ ? send_ : recv_, bytes_);  // in place: recvbuf holds it
    chunk_ = 0;
    waited_ = me_ + 1;
  }

  bool test() override {
    const std::byte* own = areas_.area(me_, run_);
    for (; chunk_ < deposit_chunks(bytes_); ++chunk_) {
      const std::size_t from = chunk_ * kDepositChunk, to = std::min(bytes_, from + kDepositChunk);
      if (!combine_deposited(areas_, reducer_, me_, ranks_, size_, run_, chunk_, from, to, bytes_,
                             own, recv_ + from, inputs_, nullptr))
        return false;
    }
    areas_.completed(me_, run_);  // after the reads: the others may write these areas again
    return areas_.all_completed(waited_, size_, -1,
                                run_ + 1 - kScanDepositSlots);  // the later ranks
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = ranks_ - (ranks_ > me_ ? 1 : 0);  // the earlier ranks' deposits
    stats.intra_bytes = static_cast<std::int64_t>(bytes_) * stats.intra_messages;
  }

 private:
  const int me_, size_;
  const int ranks_;        // the ranks whose inputs this rank's result combines: 0 .. ranks_ - 1
  const Reducer reducer_;  // typed: no tmp needed (Reducer::combine)
  const std::byte* const send_;  // nullptr: in place
  std::byte* const recv_;
  const std::size_t bytes_;
  DepositAreas areas_;
  std::vector<const std::byte*> inputs_;  // per rank, of the chunk being combined
  std::uint64_t run_ = 0;
  std::size_t chunk_ = 0;  // chunks of this run combined
  int waited_ = 0;         // the ranks after this one seen done with run - 1
};

}  // namespace

std::unique_ptr<Engine> deposit_scan(const Topology& topo, const ScanCall& call, bool exclusive,
                                     const double& timeout) {
  const Reducer reducer(call.op, call.type, call.datatype);
  if (topo.node_count != 1 || topo.local_size() < 2 || !reducer.typed() ||
      kDepositChunk % reducer.elem_size() != 0)
    return nullptr;
  const auto bytes = static_cast<std::size_t>(call.count) * reducer.elem_size();
  if (node_largest(topo, bytes) > kLargestBytes) return nullptr;  // every rank alike
  return std::make_unique<DepositScanEngine>(topo, call, bytes, exclusive, timeout);
}

}  // namespace shancoll
