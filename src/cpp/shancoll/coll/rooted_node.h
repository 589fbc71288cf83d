// The node step shared by the rooted block collectives' shan algorithms
// (coll/gather/gather_shan.cc, coll/scatter/scatter_shan.cc): a control
// segment of cache lines through which the local ranks and their node's
// representative (the root on its node, the leader elsewhere) agree on a
// call's blocks, and a data segment that carries the blocks that do not go
// straight between buffers.
//
// Control lines, L local ranks: per local rank j a post line (j's block
// size, its buffer's address or 0, the call), a layout line (the
// representative's answer: an offset, the segment's bytes, ...) and a done
// line; then one line of the representative's (gather: it has read every
// block; scatter: every block is in place). Every flag holds the node's
// call number (shm/flags.h), so nothing is reset between calls. Each
// collective keeps its own segments (a state type of its own), so a gather
// and a scatter never count each other's calls.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "shancoll/comm.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/segment.h"

namespace shancoll {

// From this many bytes a block on the root's node goes by cross-memory
// attach (one system call) instead of through the segment (two copies).
constexpr std::int64_t kRootedSingleCopyMin = 32 << 10;

// A block copied straight between buffers on the root's node is split
// between the root and its owner so that both cores copy at once and end
// together. The root also copies its own block (`own` bytes; 0 in place),
// which costs it `own_weight` of what as many bytes cost across processes;
// so each owner copies `share` bytes of its block (the last ones) and the
// root the rest, with share = (own * own_weight + posted bytes) / (posted
// blocks + 1): the root's part, own * own_weight + sum(block - share),
// then equals one share for equal blocks. Two ranks, not in place, weight
// 1: the owner copies its whole block while the root copies its own.
// Measured on Zen 4 (docs/performance.md, "Gather and scatter: both cores
// at once"): the root used to copy its own block and then half of the
// other's, 16 MiB scatter 1788-1863 us, now 940-1103.
inline std::int64_t owner_share(std::int64_t own, double own_weight, std::int64_t posted_bytes,
                                int posted_blocks) {
  const double root = static_cast<double>(own) * own_weight;
  return static_cast<std::int64_t>((root + static_cast<double>(posted_bytes)) /
                                   (posted_blocks + 1));
}

// The root's part of a posted block: its first bytes, in whole cache lines.
inline std::size_t root_part(std::int64_t bytes, std::int64_t share) {
  const std::int64_t part = bytes > share ? bytes - share : 0;
  return static_cast<std::size_t>(part / kCacheLine * kCacheLine);
}

// The node's segments, kept per node layout (NodeContext::state).
struct RootedNodeState : LayoutState {
  std::unique_ptr<NodeSegment> control, data;
  std::uint64_t calls = 0;
};

// One call's view of the node's segments; makes them on the node's first
// call (collective over the node).
class RootedNodeLines {
 public:
  RootedNodeLines(NodeContext& ctx, RootedNodeState& s, double timeout)
      : t_(ctx.topo), l_(ctx.topo.local_size()), timeout_(timeout) {
    if (!s.control) {
      const MPI_Comm node = ctx.topo.node_comm;
      s.control = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
      s.control->reserve((3 * static_cast<std::size_t>(l_) + 1) * kCacheLine);
      s.data = std::make_unique<NodeSegment>(node, node, ctx.call_timeout);
    }
    base_ = s.control->base();
    data_ = s.data.get();
    epoch_ = ++s.calls;
  }

  std::uint64_t* post(int j) const { return words(line(j)); }
  std::uint64_t* layout(int j) const { return words(line(l_ + j)); }
  std::byte* done(int j) const { return line(2 * l_ + j); }
  std::byte* data() const { return data_->base(); }
  std::uint64_t epoch() const { return epoch_; }
  int size() const { return l_; }

  void wait(const std::byte* flag, std::uint64_t value, const char* what) const {
    wait_flag_reaches(flag, value, what, timeout_);
  }

 protected:
  std::byte* line(int i) const { return base_ + static_cast<std::size_t>(i) * kCacheLine; }
  std::byte* representative_line() const { return line(3 * l_); }
  static std::uint64_t* words(std::byte* line) { return reinterpret_cast<std::uint64_t*>(line); }

  const Topology& t_;
  int l_;
  double timeout_;
  std::byte* base_ = nullptr;
  NodeSegment* data_ = nullptr;
  std::uint64_t epoch_ = 0;
};

}  // namespace shancoll
