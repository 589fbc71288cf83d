// shan as a persistent alltoall or alltoallv on one node, blocks of at most
// 4 KiB: every rank deposits its send buffer, every rank copies its own
// block of every peer's deposit out. At _init the request gets its own node
// segment (shm/deposit_areas.h), two areas per local rank, each of the span
// of the rank's send blocks (its own block included: one copy of the
// buffer, not P - 1 of pieces), and the ranks tell each other, once, where
// each one's block lies in their deposits (one alltoall on the node). A
// start copies the rank's span into its area of the run (run mod 2), chunk
// by chunk, each chunk's flag after it (in place: the receive buffer's
// span, before anything is written there), and, not in place, its own block
// to its place in recvbuf; test() copies this rank's block out of each
// peer's deposit as the chunks holding it come. A peer that sends other
// bytes than recvcounts expects is an ArgumentError naming recvcounts.
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
#include <string>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kAlltoallvDepositSlots = 2;  // per rank: runs n and n + 1 in flight

// The largest block it takes. Zen 4 VM, 2 ranks, start + wait against the
// library's own persistent alltoall (benchmarks/c/persistent_calls.c,
// docs/performance.md): under Intel MPI 4 KiB 0.76 against 1.36 us, 8 KiB
// 1.32 against 1.22-1.97, 16 KiB 3.40 against 1.82; under MPICH 32 KiB 6.4
// against 13.8, 64 KiB 12.8 against 10.9. Past it the library's own keeps
// the call: the deposit copies every block in (the own one too) and the
// areas come back from the other core's cache at every run.
constexpr std::size_t kLargestBlock = std::size_t{4} << 10;

// Where the rank's send blocks lie: in place, the receive buffer's layout.
struct SendSide {
  const std::byte* buf;
  const std::vector<std::int64_t>& counts;
  const std::vector<std::int64_t>& displs;
};

SendSide send_side(const AlltoallvArgs& a) {
  if (a.send) return {a.send, a.send_counts, a.send_displs};
  return {a.recv, a.recv_counts, a.recv_displs};
}

class DepositAlltoallvEngine final : public Engine {
 public:
  DepositAlltoallvEngine(const Topology& topo, const AlltoallvCall& call, BlockSpan span,
                         const double& timeout)
      : me_(topo.local_rank),
        size_(topo.local_size()),
        counts_name_(call.alltoall ? "recvcount" : "recvcounts"),
        send_(call.args.send),
        recv_(call.args.recv),
        source_(send_side(call.args).buf + span.lo),
        deposit_(span.bytes),
        areas_(topo, kAlltoallvDepositSlots, deposit_, timeout),
        from_(static_cast<std::size_t>(size_)),
        recv_at_(static_cast<std::size_t>(size_)),
        expected_(static_cast<std::size_t>(size_)) {
    const AlltoallvArgs& a = call.args;
    const SendSide s = send_side(a);
    std::vector<DepositPiece> mine(static_cast<std::size_t>(size_));
    for (int j = 0; j < size_; ++j) {  // by local rank (one node: every rank)
      const auto r = static_cast<std::size_t>(topo.ranks[0][static_cast<std::size_t>(j)]);
      const auto bytes = static_cast<std::uint64_t>(s.counts[r]);
      mine[j] = {bytes ? static_cast<std::uint64_t>(s.displs[r]) - span.lo : 0, bytes, deposit_};
      recv_at_[j] = static_cast<std::size_t>(a.recv_displs[r]);
      expected_[j] = static_cast<std::size_t>(a.recv_counts[r]);
      if (j == me_) own_from_ = static_cast<std::size_t>(s.displs[r]);
    }
    check_mpi(
        PMPI_Alltoall(mine.data(), 3, MPI_UINT64_T, from_.data(), 3, MPI_UINT64_T, topo.node_comm),
        "MPI_Alltoall (the blocks' places in the deposits)");
  }

  void start() override {
    ++run_;
    areas_.write(me_, run_, source_, deposit_);  // in place: before recvbuf is written
    if (send_ && expected_[me_] > 0)
      local_copy(recv_ + recv_at_[me_], send_ + own_from_, expected_[me_]);
    arrived_ = 1;
    header_ = false;
  }

  bool test() override {
    while (arrived_ < size_) {  // the next rank's deposit first: no hot spot
      const int peer = (me_ + arrived_) % size_;
      const DepositPiece& p = from_[peer];
      if (!header_) {  // chunk 0 first: it says the deposit's bytes
        if (!areas_.chunk(peer, run_, 0, p.deposit, counts_name_)) return false;
        if (p.bytes != expected_[peer]) throw_differs(peer);
        header_ = true;
        chunk_ = p.offset / kDepositChunk;
      }
      const std::size_t lo = p.offset, hi = lo + p.bytes;  // my block in the deposit
      for (; hi > lo && chunk_ <= (hi - 1) / kDepositChunk; ++chunk_) {
        const std::byte* data = areas_.chunk(peer, run_, chunk_, p.deposit, counts_name_);
        if (!data) return false;
        const std::size_t begins = chunk_ * kDepositChunk;
        const std::size_t from = std::max(lo, begins), to = std::min(hi, begins + kDepositChunk);
        local_copy(recv_ + recv_at_[peer] + (from - lo), data + (from - begins), to - from);
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
    std::size_t in = 0;
    for (int j = 0; j < size_; ++j)
      if (j != me_) in += expected_[j];
    stats.intra_bytes = static_cast<std::int64_t>(deposit_ + in);
  }

 private:
  [[noreturn]] void throw_differs(int peer) const {
    throw ArgumentError(std::string(counts_name_) + ": local rank " + std::to_string(peer) +
                        " sends " + std::to_string(from_[peer].bytes) +
                        " bytes to this rank (local rank " + std::to_string(me_) +
                        "), which expects " + std::to_string(expected_[peer]) +
                        " (counts must match on every rank)");
  }

  const int me_, size_;
  const char* const counts_name_;  // what a block of other bytes names
  const std::byte* const send_;    // nullptr: in place
  std::byte* const recv_;
  const std::byte* const source_;  // the span this rank deposits
  const std::size_t deposit_;
  DepositAreas areas_;
  std::vector<DepositPiece> from_;               // per peer: where my block lies in its deposit
  std::vector<std::size_t> recv_at_, expected_;  // per peer: where its block goes, its bytes
  std::size_t own_from_ = 0;                     // the own block in the send buffer
  std::uint64_t run_ = 0;
  int arrived_ = 0;        // peers' blocks of this run copied, the own one counted
  bool header_ = false;    // the current peer's chunk 0 seen
  std::size_t chunk_ = 0;  // the next chunk of the current peer's deposit
};

}  // namespace

std::unique_ptr<Engine> deposit_alltoallv(const Topology& topo, const AlltoallvCall& call,
                                          const double& timeout) {
  const AlltoallvArgs& a = call.args;
  // Only what every rank decides alike (a rank receiving nothing may pass a
  // null recvbuf; refusing there alone would leave the others in the
  // segment's collective set-up).
  if (a.recv_counts.empty() || topo.node_count != 1 || topo.local_size() < 2) return nullptr;
  const SendSide s = send_side(a);
  const BlockSpan span = span_of_blocks(s.counts.data(), s.displs.data(), s.counts.size());
  // Decided on the node's largest, so that every rank makes the engine or
  // none does: the blocks, and the span's share per rank (gaps count).
  std::int64_t largest = 0;
  for (std::size_t r = 0; r < a.recv_counts.size(); ++r)
    largest = std::max({largest, s.counts[r], a.recv_counts[r]});
  const std::size_t share = (span.bytes + a.recv_counts.size() - 1) / a.recv_counts.size();
  if (node_largest(topo, std::max(static_cast<std::size_t>(largest), share)) > kLargestBlock)
    return nullptr;
  return std::make_unique<DepositAlltoallvEngine>(topo, call, span, timeout);
}

}  // namespace shancoll
