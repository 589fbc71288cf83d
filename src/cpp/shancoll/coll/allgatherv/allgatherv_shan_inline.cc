// shan allgatherv on one node, small blocks inlined: every rank writes its
// block (at most 56 bytes) beside a flag in one of its two cache lines of a
// node segment of their own, and reads every other rank's line once that
// flag names this call. The seed's node-local gather, at one line per block.
//
// No node barrier: line c mod 2 is written again at call c + 2, and by then
// every reader is done with it. A rank starts call c + 2 only after every
// line of call c + 1 arrived, and each writer published that line only once
// it had finished call c, its reads included. Every rank therefore waits for
// every line, empty blocks too (their flag still says "this call").
// The flag holds the call's number, a hash of the writer's recvcounts and
// its block size, so that ranks whose recvcounts differ all see it (each
// reads every other's flag) and refuse the call alike, after every line
// arrived: the calls stay in step and the communicator usable.
//
// Cost (n local ranks): one line store and n - 1 line transfers in, all at
// once (against a node barrier, a flag and the data for the segment path);
// a copy of the own block when not in place.
#include <cstring>
#include <memory>
#include <string>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/error.h"
#include "shancoll/hash.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"

namespace shancoll {
namespace {

constexpr int kLines = 2;  // per rank: calls c and c + 1 in flight
// Flag bits: the call from bit 22, a 16-bit hash of recvcounts, the size.
constexpr int kCallShift = 22, kHashShift = 6;

std::uint64_t flag_of(std::uint64_t call, std::uint64_t counts_hash, std::int64_t bytes) {
  return call << kCallShift | (counts_hash & 0xffff) << kHashShift |
         static_cast<std::uint64_t>(bytes);
}

// Per node layout: the lines, and the calls that used them (the same on
// every local rank: they all take this path on the same calls).
struct ShanInlineState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t calls = 0;
};

std::byte* line_of(const NodeSegment& s, int local, std::uint64_t call) {
  return s.base() + kCacheLine * (kLines * static_cast<std::size_t>(local) + call % kLines);
}

}  // namespace

bool shan_inline_fits(NodeContext& ctx, const AllgathervArgs& args) {
  if (ctx.topo.node_count != 1 || ctx.topo.local_size() == 1 || !args.recv) return false;
  for (std::int64_t n : args.counts)
    if (n > static_cast<std::int64_t>(kInlineBytes)) return false;
  return true;
}

const std::byte* shan_inline(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                             double timeout, Stats& stats) {
  const Topology& t = ctx.topo;
  ShanInlineState& st = ctx.state<ShanInlineState>();
  if (!st.segment) {  // collective over the node: every local rank is here
    st.segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
    st.segment->reserve(kCacheLine * kLines * static_cast<std::size_t>(t.local_size()));
  }
  const std::uint64_t call = ++st.calls;
  const int me = comm.rank();
  std::byte* mine = line_of(*st.segment, t.local_rank, call);
  const std::int64_t my_count = args.counts[me];
  const std::byte* src = args.send ? args.send : args.recv + args.displs[me];
  if (my_count > 0) std::memcpy(mine + kFlagBytes, src, static_cast<std::size_t>(my_count));
  const std::uint64_t counts_hash = fnv1a(args.counts);
  release_store(mine, flag_of(call, counts_hash, my_count));
  copy_own_block(comm, args);
  bool differ = false;
  for (int i = 1; i < t.local_size(); ++i) {  // the next rank first: no hot spot
    const int lr = (t.local_rank + i) % t.local_size();
    const int r = t.ranks[t.node][lr];
    const std::byte* line = line_of(*st.segment, lr, call);
    wait_flag_reaches(line, call << kCallShift, "a block of another local rank (shan allgatherv)",
                      timeout);
    if (acquire_load(line) != flag_of(call, counts_hash, args.counts[r])) {
      differ = true;
      continue;
    }
    if (args.counts[r] > 0)
      std::memcpy(args.recv + args.displs[r], line + kFlagBytes,
                  static_cast<std::size_t>(args.counts[r]));
  }
  if (differ)  // after every line: the calls stay in step
    throw ArgumentError("recvcounts: differ between the ranks (rank " + std::to_string(me) +
                        "'s: " + std::to_string(args.counts.size()) + " counts, " +
                        std::to_string(args.total()) + " bytes in all)");
  stats.intra_messages += 1 + (t.local_size() - 1);
  stats.intra_bytes += my_count + (args.total() - my_count);
  stats.node_count = 1;
  return args.recv;
}

}  // namespace shancoll
