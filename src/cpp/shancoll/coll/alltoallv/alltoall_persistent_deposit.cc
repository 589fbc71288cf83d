// shan as a persistent alltoall on one node, blocks of at most 4 KiB: every rank deposits its
// blocks, every rank copies its own block of every peer's deposit out. At _init the request gets
// its own node segment (shm/deposit_areas.h), two areas per local rank, each of the rank's whole
// send buffer (P blocks of b bytes, its own block included: one copy of the buffer, not P - 1 of
// pieces). A start copies the rank's blocks into its area of the run (run mod 2), chunk by chunk,
// each chunk's flag after it, and, not in place, its own block to recvbuf; test() copies block
// `rank` of each peer's deposit to the peer's place in recvbuf as the chunks holding it come (a
// deposit whose bytes differ from P * recvcount is an ArgumentError: counts that differ between
// ranks).
//
// Why two areas suffice: as the persistent allgather's
// (allgatherv_persistent_deposit.cc), every rank reads every peer's
// deposit: when a rank starts run n + 2 every peer has completed run n + 1,
// which needed this rank's deposit of run n + 1, made after this rank
// completed run n; and every peer completed run n, its reads included,
// before it deposited run n + 1. A run needs no progress of any other rank
// after its start: what the PMPI library's routing asks
// (capi/pmpi_persistent.cc).
//
// Cost per run (P local ranks, blocks of b bytes): P b bytes copied into the
// segment at the start (b more to recvbuf, not in place), (P - 1) b copied
// out, each peer's block as its chunks' flags come; flag lines: the
// deposit's chunks written, and per peer its chunk 0 (the header) and the
// chunks its block for this rank spans read. No MPI call, no allocation.
// Segment: 2 P * P b.
#include <algorithm>
#include <cstring>
#include <memory>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/error.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kAlltoallDepositSlots = 2;  // per rank: runs n and n + 1 in flight

// The largest block it takes. Zen 4 VM, 2 ranks, start + wait against the
// library's own persistent alltoall (benchmarks/c/persistent_calls.c,
// docs/performance.md): under Intel MPI 4 KiB 0.76 against 1.36 us, 8 KiB
// 1.32 against 1.22-1.97, 16 KiB 3.40 against 1.82; under MPICH 32 KiB 6.4
// against 13.8, 64 KiB 12.8 against 10.9. Past it the library's own keeps
// the call: the deposit copies every block in (the own one too) and the
// areas come back from the other core's cache at every run.
constexpr std::size_t kLargestBlock = std::size_t{4} << 10;

class DepositAlltoallEngine final : public Engine {
 public:
  DepositAlltoallEngine(const Topology& topo, const AlltoallvArgs& args, std::size_t block,
                        const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        send_(args.send),
        recv_(args.recv),
        block_(block),
        deposit_(block * static_cast<std::size_t>(size_)),
        areas_(topo, kAlltoallDepositSlots, deposit_, timeout) {}

  void start() override {
    ++run_;
    areas_.write(me_, run_, send_ ? send_ : recv_, deposit_);  // in place: recvbuf holds them
    if (send_ && block_ > 0) std::memcpy(recv_ + at(me_), send_ + at(me_), block_);
    arrived_ = 1;
    header_ = false;
  }

  bool test() override {
    const std::size_t lo = at(me_), hi = lo + block_;  // my block in every deposit
    const std::size_t last = block_ > 0 ? (hi - 1) / kDepositChunk : lo / kDepositChunk;
    while (arrived_ < size_) {  // the next rank's deposit first: no hot spot
      const int peer = (me_ + arrived_) % size_;
      if (!header_) {  // chunk 0 first: it says the deposit's bytes
        if (!areas_.chunk(peer, run_, 0, deposit_, "recvcount")) return false;
        header_ = true;
        chunk_ = lo / kDepositChunk;
      }
      for (; chunk_ <= last; ++chunk_) {
        const std::byte* data = areas_.chunk(peer, run_, chunk_, deposit_, "recvcount");
        if (!data) return false;
        const std::size_t begins = chunk_ * kDepositChunk;
        const std::size_t from = std::max(lo, begins);
        const std::size_t to = std::min(hi, begins + kDepositChunk);
        if (to > from)
          std::memcpy(recv_ + at(peer) + (from - lo), data + (from - begins), to - from);
      }
      ++arrived_;
      header_ = false;
    }
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = size_;  // a deposit out, the peers' blocks in
    stats.intra_bytes = static_cast<std::int64_t>(deposit_ + block_ * (size_ - 1));
  }

 private:
  std::size_t at(int rank) const { return block_ * static_cast<std::size_t>(rank); }

  const int me_, size_;
  const std::byte* const send_;  // nullptr: in place
  std::byte* const recv_;
  const std::size_t block_, deposit_;
  DepositAreas areas_;
  std::uint64_t run_ = 0;
  int arrived_ = 0;        // peers' blocks of this run copied, the own one counted
  bool header_ = false;    // the current peer's chunk 0 seen
  std::size_t chunk_ = 0;  // the next chunk of the current peer's deposit
};

}  // namespace

std::unique_ptr<Engine> deposit_alltoall(const Topology& topo, const AlltoallvCall& call,
                                         const double& timeout) {
  const AlltoallvArgs& a = call.args;
  if (!call.alltoall || !a.regular || a.recv_counts.empty() || !a.recv || topo.node_count != 1 ||
      topo.local_size() < 2)
    return nullptr;
  const auto block = static_cast<std::size_t>(a.recv_counts[0]);
  if (node_largest(topo, block) > kLargestBlock) return nullptr;  // every rank alike
  return std::make_unique<DepositAlltoallEngine>(topo, a, block, timeout);
}

}  // namespace shancoll
