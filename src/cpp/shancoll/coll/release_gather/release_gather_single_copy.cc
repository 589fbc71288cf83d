// Single copy in release_gather (an addition to the paper): data move
// straight between the ranks' own buffers by cross-memory attach
// (shm/peer_memory.h) instead of through the node segment's slots.
//
// Bcast, any tree. Per chunk r, a rank with L children, once it holds the
// chunk (the root: always), publishes its buffer's address and L in its
// release line and releases r (the usual release step: counter, read from
// parent or written per child); then it writes the first share
// s = chunk/(L + 1) of the chunk into each child's buffer and publishes
// pushed = r. A child reads the other chunk - s bytes from its parent's
// buffer, then waits for pushed >= r. So each edge's bytes are copied once,
// by both of its ends at the same time: on a node of two ranks each core
// copies half (2 ranks: 256 KiB 7.1-9.7 us against 11.2-11.3 us for the
// child reading it all, 1 MiB 26 us; MPICH's single-copy MPI_Bcast 12-15
// and 60-70 us). A child posts its buffer's address in its post
// line when the call starts; a parent writes to it only after that post,
// since before the call the buffer is still the caller's. The gather step
// is the usual one, and the root waits for it on the last chunk: its
// buffer must outlive its children's reads. A leaf publishes its gather as
// soon as its read is over, before the parent's write has landed: at 64
// KiB, 2 ranks, seven alternating runs, 1.41-1.64x MPICH's MPI_Bcast
// (median 1.58x) against 1.33-1.52x (median 1.43x) with the gather after.
// Cost per chunk of c bytes (L children): parent L c/(L + 1) written,
// child c L/(L + 1) read; flags: d hops down, d up; two system calls.
//
// Reduce, node of two ranks (a tree of one edge): pair_reduce
// (coll/pair_reduce.cc) with 60% for the root (kPairRootSharePercent): the other
// rank computes the rest and writes it into the root's recvbuf, which is
// why its part is smaller. Both cores read and combine, against the slots'
// copy by the child and combine by the root (release_gather_node.cc).
// Allreduce ("everywhere", halves): both ranks keep the result, so each
// writes its half into the other's recvbuf and no bcast phase runs.
#include <algorithm>
#include <string>

#include "shancoll/coll/pair_reduce.h"
#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"

namespace shancoll {
namespace {

// Words of a line (8 bytes each). Release line: 0 the counter, 1 my
// buffer's address, 2 my child count, 3 my bytes in this call (all written
// before each release, so never stale). Post line, used by the single-copy
// bcast alone (an inlined bcast leaves arbitrary bytes in release lines): 0
// the call number, 1 my buffer's address, 2 my bytes in this call, 4 pushed
// (the last chunk I wrote to my children).
std::atomic<std::uint64_t>& word(std::byte* line, int i) { return flag_at(line + 8 * i); }

void post(std::byte* line, std::uint64_t call, const void* buffer, std::int64_t bytes) {
  word(line, 1).store(reinterpret_cast<std::uint64_t>(buffer), std::memory_order_relaxed);
  word(line, 2).store(static_cast<std::uint64_t>(bytes), std::memory_order_relaxed);
  release_store(line, call);  // after the address and size (flags.h)
}

// A parent and a child whose calls differ in size would read or write past
// the smaller buffer: each checks the other's posted size before its first
// copy, so both refuse at the same point, before any data moves.
void check_same_size(std::uint64_t theirs, std::int64_t mine, const char* whose) {
  if (theirs == static_cast<std::uint64_t>(mine)) return;
  throw ArgumentError("count: " + std::string(whose) + " bcast has " + std::to_string(theirs) +
                      " bytes, this rank's " + std::to_string(mine) +
                      ": MPI requires the same on every rank (check=True names the ranks)");
}

std::byte* address(std::byte* line, int i) {
  return reinterpret_cast<std::byte*>(word(line, i).load(std::memory_order_relaxed));
}

// From here the pair beats the slots (16 KiB even, 32 KiB 4.8 us against
// 6.7 us, 64 KiB 6.7 against 9.0).
constexpr std::int64_t kPairMinBytes = 32 << 10;

}  // namespace

std::size_t RgPhase::pushed_share(std::size_t bytes, std::uint64_t children) const {
  if (children == 0) return 0;
  return bytes / (children + 1) / kCacheLine * kCacheLine;
}

std::byte* RgPhase::child_buffer(std::size_t i) {
  if (child_buffers_.empty()) {
    for (int c : node_->children) {
      wait_flag(post_line(c), call_, "release_gather: a child's buffer");
      check_same_size(word(post_line(c), 2).load(std::memory_order_relaxed), total_, "a child's");
      child_buffers_.push_back(address(post_line(c), 1));
    }
  }
  return child_buffers_[i];
}

void RgPhase::bcast_single_copy(std::byte* buf, std::size_t off, std::size_t bytes) {
  const std::uint64_t r = ++st_.release_state;
  if (!root()) {
    if (off == 0) post(post_line(me_), call_, buf, total_);
    std::byte* parent = release_line(node_->parent);
    wait_flag(config_->read_from_parent ? parent : release_line(me_), r,
              "release_gather: the parent's release");
    if (off == 0)
      check_same_size(word(parent, 3).load(std::memory_order_relaxed), total_, "the parent's");
    const std::size_t s = pushed_share(bytes, word(parent, 2).load(std::memory_order_relaxed));
    peers_->read(node_->parent, buf + off + s, address(parent, 1) + off + s, bytes - s);
    // A leaf is done with its parent's buffer now: its gather (the value
    // bcast_gather() stores again) lets the parent go before the parent's
    // own write has reached this rank, one flag crossing earlier.
    if (node_->children.empty()) release_store(gather_line(me_), st_.gather_state + 1);
    if (s > 0) wait_flag(post_line(node_->parent) + 32, r, "release_gather: the parent's writes");
    stats_.intra_messages += 1;
    stats_.intra_bytes += static_cast<std::int64_t>(bytes - s);
  }
  std::byte* mine = release_line(me_);
  word(mine, 1).store(reinterpret_cast<std::uint64_t>(buf), std::memory_order_relaxed);
  word(mine, 2).store(node_->children.size(), std::memory_order_relaxed);
  word(mine, 3).store(static_cast<std::uint64_t>(total_), std::memory_order_relaxed);
  signal_children(r);  // its acquire by a child orders the stores above
  const std::size_t s = pushed_share(bytes, node_->children.size());
  if (s == 0) return;
  for (std::size_t i = 0; i < node_->children.size(); ++i) {
    peers_->write(node_->children[i], child_buffer(i) + off, buf + off, s);
    stats_.intra_messages += 1;
    stats_.intra_bytes += static_cast<std::int64_t>(s);
  }
  release_store(post_line(me_) + 32, r);
}

bool rg_reduce_pair_fits(NodeContext& ctx, const ReleaseGatherOptions& o, std::int64_t bytes) {
  return ctx.topo.local_size() == 2 && o.single_copy != 0 &&
         bytes >= (o.single_copy > 0 ? 1 : kPairMinBytes) && ctx.peer_memory->available();
}

void rg_reduce_pair(NodeContext& ctx, const std::byte* send, std::byte* result, std::int64_t count,
                    const Reducer& reducer, int local_root, bool everywhere, double timeout,
                    Stats& stats) {
  const bool keeps = everywhere || ctx.topo.local_rank == local_root;
  // percent of the message local rank 0 computes
  const std::int64_t first = everywhere ? 50 : pair_front_percent(local_root);
  pair_reduce(ctx, send, keeps ? result : nullptr, count, count * first / 100, reducer, timeout,
              stats);
  stats.rounds += 1;
}

}  // namespace shancoll
