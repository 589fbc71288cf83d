// release_gather as a persistent reduce on one node, at most 56 bytes, a
// predefined op on a typed kernel: the mirror of the persistent inline bcast
// (bcast/bcast_persistent_inline.cc). At _init the request gets its own
// lines in a node segment of its own (shm/inline_lines.h), kReduceInlineSlots data lines
// per local rank used in turn and a counter line. Every rank's start writes
// its input beside a flag holding the run's number in its line of the run
// (run mod kReduceInlineSlots; the root's own too, so that its input survives an
// in-place result); the root's test polls the others' lines, combines all
// of them in rank order into its recvbuf (the same expression as every
// shancoll reduce of the node: x_0 o x_1 o ...) and stores the run in its
// counter line ("completed").
//
// When may a non-root write a slot again? Its run needs nothing from the
// root, so without a rule it could start run k + kReduceInlineSlots before the root read
// its line of run k. The rule: a non-root's completion of run k waits until
// the root has completed run k + 1 - kReduceInlineSlots (slot_free_after), the run whose
// slot its next start writes; the root completes a run only after reading
// every line of it (release store of its counter after the combine, read
// with an acquire load). Sound under MPI's rules: a correct program assumes
// nothing about whether a collective synchronizes, so a non-root's
// completion of run k may wait for the root's start of run k, made only
// after the root completed run k - 1 >= k + 1 - kReduceInlineSlots; and the root
// completes a run from the lines alone, with no progress of any other rank
// after its start (what the PMPI library's routing asks). A slot of run k
// holds run k - kReduceInlineSlots or run k, never a later run.
//
// Amortised: each non-root keeps the root's counter as last read and reads
// it only when that is older than the run needed (PeerCompletions): with a
// root that keeps up, one line transfer every kReduceInlineSlots - 1 = 7 runs.
//
// Cost per run (n local ranks): a non-root one line store (and a counter
// line in every 7 runs); the root n - 1 line transfers in, all at once,
// n - 1 combines of at most 56 bytes and a store to its counter line. No
// MPI call, no allocation.
#include <cstring>
#include <utility>
#include <vector>

#include "shancoll/coll/persistent_inline.h"
#include "shancoll/shm/inline_lines.h"

namespace shancoll {
namespace {

constexpr int kReduceInlineSlots = 8;  // per rank: a non-root up to 7 runs ahead of the root

std::vector<int> root_of(const Topology& topo, int root) {
  if (topo.local_rank == root) return {};  // the root waits for lines, not counters
  return {root};
}

class InlineReduceEngine final : public Engine {
 public:
  InlineReduceEngine(const Topology& topo, const ReduceCall& call, Reducer reducer,
                     const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[call.root]),
        size_(topo.local_size()),
        send_(static_cast<const std::byte*>(call.send)),
        recv_(static_cast<std::byte*>(call.recv)),
        count_(call.count),
        reducer_(std::move(reducer)),
        bytes_(static_cast<std::size_t>(call.count) * reducer_.elem_size()),
        lines_(topo, kReduceInlineSlots, timeout),
        root_done_(root_of(topo, root_)) {}

  void start() override {
    ++run_;
    lines_.write(me_, run_, send_ ? send_ : recv_, bytes_);  // null send: the root's in place
    arrived_ = 1;
  }

  bool test() override {
    if (me_ != root_) return root_done_.reached(lines_, slot_free_after(run_, kReduceInlineSlots));
    while (arrived_ < size_) {  // the lines of the next rank on first: no hot spot
      if (!lines_.read((me_ + arrived_) % size_, run_, bytes_, "count")) return false;
      ++arrived_;
    }
    combine();
    lines_.completed(me_, run_);  // after the reads: the others may write these slots again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // each non-root's line, to the root
    stats.intra_bytes = static_cast<std::int64_t>(bytes_) * stats.intra_messages;
  }

 private:
  // x_0 o x_1 o ... in rank order (local ranks are the ranks on one node).
  void combine() {
    if (bytes_ == 0) return;
    std::byte spare[kInlineBytes];
    std::memcpy(recv_, lines_.read(0, run_, bytes_, "count"), bytes_);
    for (int r = 1; r < size_; ++r)
      reducer_.combine(recv_, recv_, lines_.read(r, run_, bytes_, "count"), count_, spare);
  }

  const int me_, root_, size_;
  const std::byte* send_;
  std::byte* recv_;
  const std::int64_t count_;
  const Reducer reducer_;
  const std::size_t bytes_;
  InlineLines lines_;
  PeerCompletions root_done_;  // a non-root's view of the root's counter
  std::uint64_t run_ = 0;
  int arrived_ = 0;  // the root's: lines of this run seen, its own included
};

}  // namespace

std::unique_ptr<Engine> inline_reduce(const Topology& topo, const ReduceCall& call,
                                      const double& timeout) {
  Reducer reducer(call.op, call.type, call.datatype);
  const std::int64_t bytes = call.count * static_cast<std::int64_t>(reducer.elem_size());
  if (!reducer.typed() || !inline_lines_fit(topo, bytes)) return nullptr;
  return std::make_unique<InlineReduceEngine>(topo, call, std::move(reducer), timeout);
}

}  // namespace shancoll
