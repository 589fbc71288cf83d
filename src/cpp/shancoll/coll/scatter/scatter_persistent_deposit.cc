// shan as a persistent scatter or scatterv on one node, blocks of at most 2
// KiB: the root deposits its send buffer, every other rank copies its own
// block out. At _init the request gets its own node segment
// (shm/deposit_areas.h), two areas per local rank (only the root's are
// used), each of the span of the root's send blocks, and the root tells
// each rank, once, where its block lies in the deposit (one scatter on the
// node). The root's start copies the span into its area of the run (run
// mod 2), chunk by chunk, each chunk's flag after it, and its own block to
// recvbuf (not in place); a reader's test copies its block out of the
// chunks holding it as their flags come (a block of other bytes than
// recvcount's is an ArgumentError: counts that differ between ranks), then
// stores the run in its counter line.
//
// Why two areas suffice: the persistent bcast's argument
// (bcast_persistent_deposit.cc): the root's run needs nothing from the
// readers, so its *completion* of run k waits until every reader has
// *completed* run k - 1, whose area the next start writes.
//
// Cost per run (n local ranks, blocks of b bytes): the root copies n b into
// the segment at its start (b more to recvbuf, not in place) and reads
// n - 1 counter lines at its completion; each reader reads chunk 0's flag
// line and copies b out. Segment: 2 n * n b (the readers' areas unused).
// No MPI call, no allocation.
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

constexpr int kScatterDepositSlots = 2;  // the root's runs k and k + 1 in flight

// The largest block it takes. Zen 4 VM, 2 ranks, start + wait against the
// library's own persistent scatter (benchmarks/c/persistent_calls.c,
// docs/performance.md): 2 KiB 0.29 against Intel MPI's 0.42 us; 4 KiB 0.56
// against 0.37 (and against MPICH's 1.77); at 16 KiB 2.68 against Intel
// MPI's 0.48, which reads the root's buffer straight from the readers. Past
// it the library's own keeps the call.
constexpr std::size_t kLargestBlock = std::size_t{2} << 10;

class DepositScatterEngine final : public Engine {
 public:
  DepositScatterEngine(const Topology& topo, const ScattervArgs& args, BlockSpan span,
                       const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[args.root]),
        size_(topo.local_size()),
        send_(args.send ? args.send + span.lo : nullptr),
        recv_(args.recv),
        expected_(static_cast<std::size_t>(args.recv_bytes)),
        areas_(topo, kScatterDepositSlots, span.bytes, timeout) {
    std::vector<DepositPiece> pieces;  // the root's, by local rank (one node: every rank)
    if (me_ == root_) {
      for (int j = 0; j < size_; ++j) {
        const int r = topo.ranks[0][static_cast<std::size_t>(j)];
        const auto bytes = static_cast<std::uint64_t>(args.counts[r]);
        pieces.push_back(
            {bytes ? static_cast<std::uint64_t>(args.displs[r]) - span.lo : 0, bytes, span.bytes});
      }
      expected_ = static_cast<std::size_t>(pieces[static_cast<std::size_t>(me_)].bytes);
    }
    check_mpi(PMPI_Scatter(pieces.data(), 3, MPI_UINT64_T, &mine_, 3, MPI_UINT64_T, root_,
                           topo.node_comm),
              "MPI_Scatter (the blocks' places in the deposit)");
  }

  void start() override {
    ++run_;
    waited_ = 0;
    header_ = false;
    if (me_ != root_) return;
    areas_.write(root_, run_, send_, mine_.deposit);
    if (recv_ && expected_ > 0)  // else in place
      local_copy(recv_, send_ + mine_.offset, expected_);
  }

  bool test() override {
    if (me_ == root_)
      return areas_.all_completed(waited_, size_, root_, run_ + 1 - kScatterDepositSlots);
    const std::size_t lo = mine_.offset, hi = lo + mine_.bytes;  // my block in the deposit
    if (!header_) {  // chunk 0 first: it says the deposit's bytes
      if (!areas_.chunk(root_, run_, 0, mine_.deposit, "recvcount")) return false;
      if (mine_.bytes != expected_) throw_differs();
      header_ = true;
      chunk_ = lo / kDepositChunk;
    }
    for (; hi > lo && chunk_ <= (hi - 1) / kDepositChunk; ++chunk_) {
      const std::byte* data = areas_.chunk(root_, run_, chunk_, mine_.deposit, "recvcount");
      if (!data) return false;
      const std::size_t begins = chunk_ * kDepositChunk;
      const std::size_t from = std::max(lo, begins), to = std::min(hi, begins + kDepositChunk);
      local_copy(recv_ + (from - lo), data + (from - begins), to - from);
    }
    areas_.completed(me_, run_);  // after the copies: the root may write this area again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // a block of the root's deposit, each
    stats.intra_bytes =
        static_cast<std::int64_t>(me_ == root_ ? mine_.deposit - expected_ : expected_);
  }

 private:
  [[noreturn]] void throw_differs() const {
    throw ArgumentError("recvcount: the root sends " + std::to_string(mine_.bytes) +
                        " bytes to this rank (local rank " + std::to_string(me_) +
                        "), which expects " + std::to_string(expected_) +
                        " (counts must match on every rank)");
  }

  const int me_, root_, size_;
  const std::byte* const send_;  // the root's: its span's start
  std::byte* const recv_;        // nullptr: in place (the root)
  std::size_t expected_;         // this rank's block
  DepositAreas areas_;
  DepositPiece mine_;  // where this rank's block lies in the root's deposit
  std::uint64_t run_ = 0;
  bool header_ = false;    // a reader: the deposit's chunk 0 seen
  std::size_t chunk_ = 0;  // a reader: the next chunk holding its block
  int waited_ = 0;         // the root: readers seen done with the run its next start needs
};

}  // namespace

std::unique_ptr<Engine> deposit_scatter(const Topology& topo, const ScattervCall& call,
                                        const double& timeout) {
  const ScattervArgs& a = call.args;
  if (call.typed || topo.node_count != 1 || topo.local_size() < 2) return nullptr;
  // Decided on the node's largest, so that every rank makes the engine or
  // none does: the blocks, and the root's span's share per rank (gaps count).
  BlockSpan span;
  std::size_t largest = static_cast<std::size_t>(std::max<std::int64_t>(a.recv_bytes, 0));
  if (topo.rank == a.root) {
    const auto n = static_cast<std::size_t>(topo.size);
    span = span_of_blocks(a.counts, a.displs, n);
    largest = std::max(static_cast<std::size_t>(*std::max_element(a.counts, a.counts + n)),
                       (span.bytes + n - 1) / n);
  }
  if (node_largest(topo, largest) > kLargestBlock) return nullptr;
  return std::make_unique<DepositScatterEngine>(topo, a, span, timeout);
}

}  // namespace shancoll
