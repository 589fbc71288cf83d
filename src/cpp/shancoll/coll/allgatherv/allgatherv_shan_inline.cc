// shan allgatherv on one node, small blocks inlined: every rank writes its
// block (at most kLinesPerBlock * 56 = 336 bytes) beside flags in cache lines of a
// node segment of their own, 56 bytes per line, and reads every other rank's
// lines once their flags name this call. The seed's node-local gather, at one
// line transfer per 56 bytes, all of a block's lines in flight at once.
//
// No node barrier: a rank's slot c mod 2 (its lines of call c) is written
// again at call c + 2, and by then every reader is done with it. A rank
// starts call c + 2 only after every line of call c + 1 arrived, and each
// writer published those lines only once it had finished call c, its reads
// included. Every rank therefore waits for every block, empty ones too (their
// first line's flag still says "this call").
// Each flag holds the call's number, a hash of the writer's recvcounts and
// the bytes of its line, so that ranks whose recvcounts differ all see it
// (each reads every other's first line) and refuse the call alike, after
// every block arrived: the calls stay in step and the communicator usable. A
// reader whose recvcounts hash like the writer's expects the writer's lines.
//
// Cost (n local ranks, blocks of b bytes): ceil(b / 56) line stores and
// (n - 1) ceil(b / 56) line transfers in, a block's lines in flight together
// (against a node barrier, a flag and the data for the segment path); a copy
// of the own block when not in place. Each line more adds about 0.035 us (AMD
// EPYC VM, 2 ranks, shancoll_bench in one job, the slow mode of that VM:
// 56 B 0.84 us, 112 B 0.85-0.88, 224 B 0.93-0.99, 448 B 1.07-1.13, while the
// segment path took 1.04-1.11 at 449-512 B), so blocks go inline up to 6
// lines (336 bytes), where they still win.
#include <algorithm>
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

constexpr int kShanInlineSlots = 2;  // per rank: calls c and c + 1 in flight
constexpr int kLinesPerBlock = 6;    // so blocks of at most 336 bytes
constexpr std::int64_t kMaxBlock = kLinesPerBlock * static_cast<std::int64_t>(kInlineBytes);
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

// Line k of local rank `local`'s block of `call`.
std::byte* line_of(const NodeSegment& s, int local, std::uint64_t call, int k) {
  const std::size_t slot =
      kShanInlineSlots * static_cast<std::size_t>(local) + call % kShanInlineSlots;
  return s.base() + kCacheLine * (slot * kLinesPerBlock + static_cast<std::size_t>(k));
}

int lines_of(std::int64_t bytes) {  // at least one: an empty block still signals
  return std::max<int>(1, static_cast<int>((bytes + kInlineBytes - 1) / kInlineBytes));
}

std::int64_t bytes_in_line(std::int64_t block, int k) {
  return std::clamp<std::int64_t>(block - k * static_cast<std::int64_t>(kInlineBytes), 0,
                                  static_cast<std::int64_t>(kInlineBytes));
}

void write_block(const NodeSegment& s, int local, std::uint64_t call, std::uint64_t counts_hash,
                 const std::byte* src, std::int64_t bytes) {
  for (int k = 0; k < lines_of(bytes); ++k) {
    std::byte* line = line_of(s, local, call, k);
    const std::int64_t n = bytes_in_line(bytes, k);
    if (n > 0) std::memcpy(line + kFlagBytes, src + k * kInlineBytes, static_cast<std::size_t>(n));
    release_store(line, flag_of(call, counts_hash, n));
  }
}

// Waits for local rank `local`'s block and copies it to dst; false (nothing
// copied) if its first line shows recvcounts unlike mine.
bool read_block(const NodeSegment& s, int local, std::uint64_t call, std::uint64_t counts_hash,
                std::byte* dst, std::int64_t bytes, double timeout) {
  for (int k = 0; k < lines_of(bytes); ++k) {
    const std::byte* line = line_of(s, local, call, k);
    wait_flag_reaches(line, call << kCallShift, "a block of another local rank (shan allgatherv)",
                      timeout);
    const std::int64_t n = bytes_in_line(bytes, k);
    if (acquire_load(line) != flag_of(call, counts_hash, n)) return false;
    if (n > 0) std::memcpy(dst + k * kInlineBytes, line + kFlagBytes, static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

bool shan_inline_fits(NodeContext& ctx, const AllgathervArgs& args) {
  if (ctx.topo.node_count != 1 || ctx.topo.local_size() == 1 || !args.recv) return false;
  for (std::int64_t n : args.counts)
    if (n > kMaxBlock) return false;
  return true;
}

const std::byte* shan_inline(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                             double timeout, Stats& stats) {
  const Topology& t = ctx.topo;
  ShanInlineState& st = ctx.state<ShanInlineState>();
  if (!st.segment) {  // collective over the node: every local rank is here
    st.segment = std::make_unique<NodeSegment>(t.node_comm, t.node_comm, ctx.call_timeout);
    st.segment->reserve(kCacheLine * kShanInlineSlots * kLinesPerBlock *
                        static_cast<std::size_t>(t.local_size()));
  }
  const std::uint64_t call = ++st.calls;
  const int me = comm.rank();
  const std::int64_t my_count = args.counts[me];
  const std::byte* src = args.send ? args.send : args.recv + args.displs[me];
  const std::uint64_t counts_hash = fnv1a(args.counts);
  write_block(*st.segment, t.local_rank, call, counts_hash, src, my_count);
  copy_own_block(comm, args);
  bool differ = false;
  for (int i = 1; i < t.local_size(); ++i) {  // the next rank first: no hot spot
    const int lr = (t.local_rank + i) % t.local_size();
    const int r = t.ranks[t.node][lr];
    differ |= !read_block(*st.segment, lr, call, counts_hash, args.recv + args.displs[r],
                          args.counts[r], timeout);
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
