// shan as a persistent scatter on one node, blocks of at most 2 KiB: the
// root deposits its send buffer, every other rank copies its own block out.
// At _init the request gets its own node segment (shm/deposit_areas.h), two
// areas per local rank (only the root's are used), each of the root's whole
// send buffer (n blocks of b bytes). The root's start copies the buffer
// into its area of the run (run mod 2), chunk by chunk, each chunk's flag
// after it, and its own block to recvbuf (not in place); a reader's test
// checks the deposit's bytes in chunk 0 (n * recvcount's, else an
// ArgumentError: counts that differ between ranks), copies its block out of
// the chunks holding it as their flags come, then stores the run in its
// counter line.
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

#include "shancoll/coll/persistent_deposit.h"
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
  DepositScatterEngine(const Topology& topo, const ScattervArgs& args, std::size_t block,
                       const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[args.root]),
        size_(topo.local_size()),
        send_(args.send),
        recv_(args.recv),
        block_(block),
        deposit_(block * static_cast<std::size_t>(size_)),
        areas_(topo, kScatterDepositSlots, deposit_, timeout) {}

  void start() override {
    ++run_;
    waited_ = 0;
    header_ = false;
    if (me_ != root_) return;
    areas_.write(root_, run_, send_, deposit_);
    if (recv_ && block_ > 0) std::memcpy(recv_, send_ + at(me_), block_);  // else in place
  }

  bool test() override {
    if (me_ == root_)
      return areas_.all_completed(waited_, size_, root_, run_ + 1 - kScatterDepositSlots);
    const std::size_t lo = at(me_), hi = lo + block_;  // my block in the deposit
    if (!header_) {                                    // chunk 0 first: it says the deposit's bytes
      if (!areas_.chunk(root_, run_, 0, deposit_, "recvcount")) return false;
      header_ = true;
      chunk_ = lo / kDepositChunk;
    }
    for (; block_ > 0 && chunk_ <= (hi - 1) / kDepositChunk; ++chunk_) {
      const std::byte* data = areas_.chunk(root_, run_, chunk_, deposit_, "recvcount");
      if (!data) return false;
      const std::size_t begins = chunk_ * kDepositChunk;
      const std::size_t from = std::max(lo, begins), to = std::min(hi, begins + kDepositChunk);
      std::memcpy(recv_ + (from - lo), data + (from - begins), to - from);
    }
    areas_.completed(me_, run_);  // after the copies: the root may write this area again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // a block of the root's deposit, each
    stats.intra_bytes = static_cast<std::int64_t>(block_) * stats.intra_messages;
  }

 private:
  std::size_t at(int rank) const { return block_ * static_cast<std::size_t>(rank); }

  const int me_, root_, size_;
  const std::byte* const send_;  // the root's
  std::byte* const recv_;        // nullptr: in place (the root)
  const std::size_t block_, deposit_;
  DepositAreas areas_;
  std::uint64_t run_ = 0;
  bool header_ = false;    // a reader: the deposit's chunk 0 seen
  std::size_t chunk_ = 0;  // a reader: the next chunk holding its block
  int waited_ = 0;         // the root: readers seen done with the run its next start needs
};

}  // namespace

std::unique_ptr<Engine> deposit_scatter(const Topology& topo, const ScattervCall& call,
                                        const double& timeout) {
  const ScattervArgs& a = call.args;
  if (call.typed || !a.regular || topo.node_count != 1 || topo.local_size() < 2) return nullptr;
  const auto block =
      static_cast<std::size_t>(topo.rank == a.root ? a.counts[a.root] : a.recv_bytes);
  if (node_largest(topo, block) > kLargestBlock) return nullptr;  // every rank alike
  return std::make_unique<DepositScatterEngine>(topo, a, block, timeout);
}

}  // namespace shancoll
