// shan as a persistent allreduce on one node, small vectors (at most 56
// bytes): the request gets, at _init, its own lines in a node segment of its
// own (shm/inline_lines.h), two per local rank used in turn. A start writes the rank's input
// beside a flag holding the run's number (and its bytes) in its line of the run (run mod 2);
// test() polls the other ranks' lines and, once every one holds this run,
// combines them in rank order (the same expression on every rank: bitwise
// identical results, non-commutative ops allowed).
//
// Why two lines suffice: a persistent request completes before it is
// started again, so when a rank starts run n + 2 (rewriting run n's line)
// every peer has completed run n + 1, which needed this rank's line of run
// n + 1, written only after this rank completed run n; and every peer
// completed run n, reads of run n's lines included, before it wrote its own
// line of run n + 1. No barrier, no reset: the run number is the flag.
//
// Cost per run (n local ranks): one line store, n - 1 line transfers in, all
// at once, and n - 1 combines of at most 56 bytes; no MPI call, no
// allocation. _init: one node segment (a collective handshake over the node).
#include "shancoll/coll/allreduce/allreduce_persistent_inline.h"

#include <cstring>

namespace shancoll {
namespace {

constexpr int kAllreduceInlineSlots = 2;  // per rank: runs n and n + 1 in flight

}  // namespace

bool persistent_inline_fits(const Topology& topo, const AllreduceArgs& args) {
  return inline_lines_fit(topo, args.bytes());
}

InlineAllreduceEngine::InlineAllreduceEngine(const Topology& topo, const AllreduceArgs& args,
                                             const double& timeout)
    : topo_(topo),
      reducer_(*args.reducer),
      args_(args),
      bytes_(static_cast<std::size_t>(args.bytes())),
      lines_(topo, kAllreduceInlineSlots, timeout) {
  args_.reducer = &reducer_;
}

void InlineAllreduceEngine::start() {
  ++run_;
  lines_.write(topo_.local_rank, run_, args_.send ? args_.send : args_.recv, bytes_);
  arrived_ = 1;
}

bool InlineAllreduceEngine::test() {
  const int n = topo_.local_size();
  while (arrived_ < n) {  // the lines of the next rank on first: no hot spot
    const int peer = (topo_.local_rank + arrived_) % n;
    if (!lines_.read(peer, run_, bytes_, "count")) return false;
    ++arrived_;
  }
  combine();
  return true;
}

// x_0 o x_1 o ... in rank order (local ranks are the ranks on one node).
void InlineAllreduceEngine::combine() {
  std::byte spare[kInlineBytes];
  std::memcpy(args_.recv, lines_.read(0, run_, bytes_, "count"), bytes_);
  for (int r = 1; r < topo_.local_size(); ++r)
    reducer_.combine(args_.recv, args_.recv, lines_.read(r, run_, bytes_, "count"), args_.count,
                     spare);
}

void InlineAllreduceEngine::count(Stats& stats) const {
  stats.rounds = 1;
  stats.node_count = 1;
  stats.intra_messages = topo_.local_size();  // a line out, the others' in
  stats.intra_bytes = static_cast<std::int64_t>(bytes_) * topo_.local_size();
}

}  // namespace shancoll
