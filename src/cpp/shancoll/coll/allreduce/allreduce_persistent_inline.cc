// shan as a persistent allreduce on one node, small vectors (at most 56
// bytes): the request gets, at _init, its own lines in a node segment of its
// own, two per local rank used in turn. A start writes the rank's input
// beside a flag holding the run's number in its line of the run (run mod 2);
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

#include "shancoll/shm/flags.h"

namespace shancoll {
namespace {

constexpr int kLines = 2;  // per rank: runs n and n + 1 in flight

}  // namespace

bool persistent_inline_fits(const Topology& topo, const AllreduceArgs& args) {
  return topo.node_count == 1 && topo.local_size() > 1 &&
         args.bytes() <= static_cast<std::int64_t>(kInlineBytes);
}

InlineAllreduceEngine::InlineAllreduceEngine(const Topology& topo, const AllreduceArgs& args,
                                             const double& timeout)
    : topo_(topo),
      reducer_(*args.reducer),
      args_(args),
      bytes_(static_cast<std::size_t>(args.bytes())),
      segment_(topo.node_comm, topo.node_comm, timeout) {
  args_.reducer = &reducer_;
  segment_.reserve(kCacheLine * kLines * static_cast<std::size_t>(topo.local_size()));
}

std::byte* InlineAllreduceEngine::line(int local_rank, std::uint64_t run) const {
  return segment_.base() +
         kCacheLine * (kLines * static_cast<std::size_t>(local_rank) + run % kLines);
}

void InlineAllreduceEngine::start() {
  ++run_;
  std::byte* mine = line(topo_.local_rank, run_);
  const std::byte* input = args_.send ? args_.send : args_.recv;
  if (bytes_ > 0) std::memcpy(mine + kFlagBytes, input, bytes_);
  release_store(mine, run_);  // data before flag: a reader that sees the run sees its data
  arrived_ = 1;
}

bool InlineAllreduceEngine::test() {
  const int n = topo_.local_size();
  while (arrived_ < n) {  // the lines of the next rank on first: no hot spot
    const int peer = (topo_.local_rank + arrived_) % n;
    if (acquire_load(line(peer, run_)) < run_) return false;
    ++arrived_;
  }
  combine();
  return true;
}

// x_0 o x_1 o ... in rank order (local ranks are the ranks on one node).
void InlineAllreduceEngine::combine() {
  std::byte spare[kInlineBytes];
  std::memcpy(args_.recv, line(0, run_) + kFlagBytes, bytes_);
  for (int r = 1; r < topo_.local_size(); ++r)
    reducer_.combine(args_.recv, args_.recv, line(r, run_) + kFlagBytes, args_.count, spare);
}

void InlineAllreduceEngine::count(Stats& stats) const {
  stats.rounds = 1;
  stats.node_count = 1;
  stats.intra_messages = topo_.local_size();  // a line out, the others' in
  stats.intra_bytes = static_cast<std::int64_t>(bytes_) * topo_.local_size();
}

}  // namespace shancoll
