// release_gather as a persistent bcast on one node, at most 56 bytes (the
// seed's data inlining, made persistent): the request gets, at _init, its
// own lines in a node segment of its own (shm/inline_lines.h), kBcastInlineSlots data
// lines per local rank used in turn and a counter line. The root's start
// writes its data beside a flag holding the run's number in its line of the
// run (run mod kBcastInlineSlots); a reader's test polls that line, copies the data out
// and stores the run in its counter line ("completed").
//
// When may the root write a slot again? Unlike allreduce, the root's run
// needs nothing from the readers, so without a rule it could start run
// k + kBcastInlineSlots and overwrite run k's line before a slow reader read it. The
// rule: the root's completion of run k waits until every reader has
// completed run k + 1 - kBcastInlineSlots (slot_free_after), the run whose slot the
// root's next start, k + 1, writes. A reader completes run j only after
// reading it (its counter is a release store after the copy, read with an
// acquire load), so no line is overwritten before every reader read it.
// Sound under MPI's rules: a correct program assumes nothing about whether
// a collective synchronizes, so the root's completion of run k may wait for
// each reader's start of run k, which a reader makes only after completing
// run k - 1 >= k + 1 - kBcastInlineSlots; and a reader completes a run from the root's
// line alone, with no progress of the root after its start (what the PMPI
// library's routing asks: the root may sit in an MPI call shancoll does not
// see). The reader's slot of run k holds run k - kBcastInlineSlots or run k, never a
// later run, so "the flag reached run k" means "run k's data".
//
// Amortised: the root keeps the readers' counters as last read and reads a
// reader's counter line only when its cached value is older than the run
// needed (PeerCompletions); with readers that keep up, one line transfer
// per reader every kBcastInlineSlots - 1 = 7 runs, as the blocking release_gather's
// inline bcast reads its gather flags once per 8 calls.
//
// Cost per run (n local ranks): the root one line store (and, every 7 runs,
// n - 1 counter lines in); a reader one line transfer in and a store to its
// own counter line. No MPI call, no allocation.
#include <cstring>
#include <vector>

#include "shancoll/coll/persistent_inline.h"
#include "shancoll/shm/inline_lines.h"

namespace shancoll {
namespace {

constexpr int kBcastInlineSlots = 8;  // per rank: the root up to 7 runs ahead of its slowest reader

std::vector<int> readers_of(const Topology& topo, int root) {
  std::vector<int> readers;
  if (topo.local_rank != root) return readers;  // only the root waits for them
  for (int r = 0; r < topo.local_size(); ++r)
    if (r != root) readers.push_back(r);
  return readers;
}

class InlineBcastEngine final : public Engine {
 public:
  InlineBcastEngine(const Topology& topo, const BcastCall& call, const double& timeout)
      : me_(topo.local_rank),
        root_(topo.local_rank_of[call.root]),
        size_(topo.local_size()),
        buf_(static_cast<std::byte*>(call.buf)),
        bytes_(static_cast<std::size_t>(call.bytes)),
        lines_(topo, kBcastInlineSlots, timeout),
        readers_(readers_of(topo, root_)) {}

  void start() override {
    ++run_;
    if (me_ == root_) lines_.write(root_, run_, buf_, bytes_);
  }

  bool test() override {
    if (me_ == root_) return readers_.reached(lines_, slot_free_after(run_, kBcastInlineSlots));
    const std::byte* data = lines_.read(root_, run_, bytes_, "count");
    if (!data) return false;
    if (bytes_ > 0) std::memcpy(buf_, data, bytes_);
    lines_.completed(me_, run_);  // after the copy: the root may write this slot again
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = me_ == root_ ? size_ - 1 : 1;  // the root's line, to each reader
    stats.intra_bytes = static_cast<std::int64_t>(bytes_) * stats.intra_messages;
  }

 private:
  const int me_, root_, size_;
  std::byte* buf_;
  const std::size_t bytes_;
  InlineLines lines_;
  PeerCompletions readers_;  // the root's view of the readers' counters
  std::uint64_t run_ = 0;
};

}  // namespace

std::unique_ptr<Engine> inline_bcast(const Topology& topo, const BcastCall& call,
                                     const double& timeout) {
  if (!inline_lines_fit(topo, call.bytes)) return nullptr;
  return std::make_unique<InlineBcastEngine>(topo, call, timeout);
}

}  // namespace shancoll
