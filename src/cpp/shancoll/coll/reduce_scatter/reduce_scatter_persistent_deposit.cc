// shan as a persistent reduce_scatter_block or reduce_scatter on one node,
// blocks of at most 8 KiB, predefined ops on the typed kernels: every rank
// deposits its input, every rank combines its own block of every deposit. At _init the
// request gets its own node segment (shm/deposit_areas.h), two areas per
// local rank, each of the rank's whole input (n blocks, in rank order). A start
// copies the input (in place: recvbuf's) into the rank's area of the run
// (run mod 2), chunk by chunk, each chunk's flag after it; test() checks
// each peer's deposit's bytes in its chunk 0 (else an ArgumentError: counts
// that differ between ranks) and, once every rank's chunk holding a piece
// of the own block is there, combines the piece in rank order into recvbuf
// (the own input read back from the own area: in place, recvbuf is
// overwritten).
//
// Why two areas suffice: the persistent alltoall's argument
// (alltoallv_persistent_deposit.cc): every rank reads every peer's deposit,
// so when a rank starts run n + 2 every peer has completed run n + 1, which
// needed this rank's deposit of run n + 1, made after this rank completed
// run n; and every peer completed run n, its reads included, before it
// deposited run n + 1. A run needs no progress of any other rank after its
// start.
//
// Cost per run (n local ranks, blocks of b bytes): n b copied into the
// segment at the start; n - 1 combines of b (reading n b, writing b); flag
// lines: the deposit's chunks written, and per peer its chunk 0 and the
// chunks the own block spans read. Segment: 2 n * n b. No MPI call, no
// allocation.
#include <algorithm>
#include <memory>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kReduceScatterDepositSlots = 2;  // per rank: runs n and n + 1 in flight

// The largest block it takes. Zen 4 VM, 2 ranks, start + wait against the
// library's own persistent reduce_scatter_block (benchmarks/c/persistent_calls.c,
// docs/performance.md): 8 KiB 1.48 against MPICH's 7.35 us and 1.94 against
// Intel MPI's 2.21; 16 KiB 2.94 against 9.36 and 3.03 against 2.50. Past it
// the library's own keeps the call.
constexpr std::size_t kLargestBlock = std::size_t{8} << 10;

// Where the own block lies in every rank's input, and the input's bytes.
struct OwnBlock {
  std::size_t lo = 0, hi = 0, input = 0;
};

class DepositReduceScatterEngine final : public Engine {
 public:
  DepositReduceScatterEngine(const Topology& topo, const ReduceScatterCall& call, OwnBlock own,
                             const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        reducer_(call.op, call.type, call.datatype),
        send_(static_cast<const std::byte*>(call.send)),
        recv_(static_cast<std::byte*>(call.recv)),
        counts_name_(call.counts ? "recvcounts" : "recvcount"),
        lo_(own.lo),
        hi_(own.hi),
        deposit_(own.input),
        areas_(topo, kReduceScatterDepositSlots, deposit_, timeout),
        inputs_(static_cast<std::size_t>(size_)) {}

  void start() override {
    ++run_;
    areas_.write(me_, run_, send_ ? send_ : recv_, deposit_);  // in place: recvbuf holds it
    headers_ = 1;
    chunk_ = lo_ / kDepositChunk;
  }

  bool test() override {
    for (; headers_ < size_; ++headers_)  // chunk 0 first: it says the deposit's bytes
      if (!areas_.chunk((me_ + headers_) % size_, run_, 0, deposit_, counts_name_)) return false;
    const std::byte* own = areas_.area(me_, run_);
    for (; hi_ > lo_ && chunk_ <= (hi_ - 1) / kDepositChunk; ++chunk_) {
      const std::size_t begins = chunk_ * kDepositChunk;
      const std::size_t from = std::max(lo_, begins), to = std::min(hi_, begins + kDepositChunk);
      if (!combine_deposited(areas_, reducer_, me_, size_, size_, run_, chunk_, from, to, deposit_,
                             own, recv_ + (from - lo_), inputs_, nullptr))
        return false;
    }
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = size_;  // a deposit out, the peers' pieces of the own block in
    stats.intra_bytes = static_cast<std::int64_t>(deposit_ + (hi_ - lo_) * (size_ - 1));
  }

 private:
  const int me_, size_;
  const Reducer reducer_;        // typed: no tmp needed (Reducer::combine)
  const std::byte* const send_;  // nullptr: in place
  std::byte* const recv_;
  const char* const counts_name_;        // what a deposit of other bytes names
  const std::size_t lo_, hi_, deposit_;  // the own block in every input; the input
  DepositAreas areas_;
  std::vector<const std::byte*> inputs_;  // per rank, of the piece being combined
  std::uint64_t run_ = 0;
  int headers_ = 0;        // peers' chunk 0 seen, the own counted
  std::size_t chunk_ = 0;  // the next chunk holding a piece of the own block
};

}  // namespace

std::unique_ptr<Engine> deposit_reduce_scatter(const Topology& topo, const ReduceScatterCall& call,
                                               bool block, const double& timeout) {
  const Reducer reducer(call.op, call.type, call.datatype);
  if ((!block && !call.counts) || topo.node_count != 1 || topo.local_size() < 2 ||
      !reducer.typed() || kDepositChunk % reducer.elem_size() != 0)
    return nullptr;
  OwnBlock own;
  std::size_t largest = 0;
  for (int r = 0; r < topo.size; ++r) {  // the blocks in rank order
    const auto bytes =
        static_cast<std::size_t>(block ? call.count : call.counts[r]) * reducer.elem_size();
    if (r == topo.rank) own.lo = own.input, own.hi = own.input + bytes;
    own.input += bytes;
    largest = std::max(largest, bytes);
  }
  if (node_largest(topo, largest) > kLargestBlock) return nullptr;  // every rank alike
  return std::make_unique<DepositReduceScatterEngine>(topo, call, own, timeout);
}

}  // namespace shancoll
