// release_gather as a persistent bcast on one node, more than 56 bytes: the
// root deposits the buffer, every reader copies it out. At _init the request
// gets its own node segment (shm/deposit_areas.h), two areas per local rank
// (only the root's are used). A start at the root copies the buffer into its
// area of the run (run mod 2), chunk by chunk, each chunk's flag after it; a
// reader copies each chunk out as its flag comes (it follows the root's
// copy one chunk behind: the blocking release_gather's pipeline, without
// its slot ring), then stores the run in its counter line.
//
// Why two areas suffice: the root's run needs nothing from the readers, so
// its *completion* of run k waits until every reader has *completed* run k
// - 1, whose area the next start writes (the inline bcast's rule with two
// slots, bcast_persistent_inline.cc: sound because a correct program
// assumes nothing about whether a collective synchronizes, and a reader
// completes from the root's area alone).
//
// Cost per run (n local ranks, m bytes): the root copies m into the segment
// (in MPI_Start: local, it waits for nobody) and reads n - 1 counter lines
// at its completion; each reader copies m out, one chunk behind the root.
// Segment: 2 * n * m (the readers' areas unused). No MPI call, no
// allocation.
#include <algorithm>
#include <cstring>
#include <vector>

#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/cost.h"
#include "shancoll/shm/deposit_areas.h"

namespace shancoll {
namespace {

constexpr int kBcastDepositSlots = 2;  // the root's runs k and k + 1 in flight

class DepositBcastEngine final : public Engine {
 public:
  DepositBcastEngine(const Topology& topo, const BcastCall& call, const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[call.root]),
        size_(topo.local_size()),
        buf_(static_cast<std::byte*>(call.buf)),
        bytes_(static_cast<std::size_t>(call.bytes)),
        areas_(topo, kBcastDepositSlots, bytes_, timeout) {}

  void start() override {
    ++run_;
    waited_ = 0;
    chunk_ = 0;
    if (me_ == root_) areas_.write(root_, run_, buf_, bytes_);
  }

  bool test() override {
    if (me_ == root_)
      return areas_.all_completed(waited_, size_, root_, run_ + 1 - kBcastDepositSlots);
    for (; chunk_ < deposit_chunks(bytes_); ++chunk_) {
      const std::byte* data = areas_.chunk(root_, run_, chunk_, bytes_, "count");
      if (!data) return false;
      const std::size_t at = chunk_ * kDepositChunk;
      local_copy(buf_ + at, data, std::min(kDepositChunk, bytes_ - at));
    }
    areas_.completed(me_, run_);  // after the copies: the root may write this area again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // the root's area, to each reader
    stats.intra_bytes = static_cast<std::int64_t>(bytes_) * stats.intra_messages;
  }

 private:
  const int me_, root_, size_;
  std::byte* buf_;
  const std::size_t bytes_;
  DepositAreas areas_;
  std::uint64_t run_ = 0;
  std::size_t chunk_ = 0;  // chunks of this run copied out (a reader)
  int waited_ = 0;         // readers seen done with the run the root's next start needs
};

}  // namespace

std::unique_ptr<Engine> deposit_bcast(const Topology& topo, const BcastCall& call,
                                      const double& timeout) {
  if (!deposit_fits(topo, call.bytes)) return nullptr;
  return std::make_unique<DepositBcastEngine>(topo, call, timeout);
}

}  // namespace shancoll
