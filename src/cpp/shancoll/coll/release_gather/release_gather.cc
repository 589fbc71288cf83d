// The release and gather steps and their buffer bookkeeping (see the header).
//
// Memory ordering, everywhere (Sec. IV of the paper, C++ atomics):
//   - a writer fills a buffer (or the data bytes of its flag line), then
//     release-stores its flag; a reader acquire-loads the flag, then reads.
//     The release store keeps the data writes from moving after the flag, the
//     acquire load keeps the data reads from moving before it: a reader that
//     sees the value sees the data. A parent forwarding a release is an
//     acquire followed by a release, so the root's data reaches the leaves
//     transitively (happens-before is transitive).
//   - the other direction (write-after-read) is the same rule: a reader
//     release-stores its gather flag after its last read of a slot, and a
//     writer acquire-loads that flag before refilling the slot, so the refill
//     cannot overtake a reader still copying.
// Flags have a single writer at a time (a release line: its rank, or its
// parent without read-from-parent; a gather line: its rank), and writers
// only store counters they have reached, so values only grow.
#include "shancoll/coll/release_gather/release_gather.h"

#include <algorithm>
#include <cstring>

#include "shancoll/coll/door.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"

namespace shancoll {
namespace {

// Inlined chunks in flight: a writer refills a line once its readers are done
// with the chunk it held, which it checks once per this many calls.
constexpr int kInlineSlots = 8;

std::size_t round_up(std::size_t x) { return (x + kCacheLine - 1) / kCacheLine * kCacheLine; }

// An inlined chunk continues past its flag's line into the next
// kSpillLines lines, which its reader loads with the flag
// (wait_flag_and_lines): up to 56 + 256 bytes cross in one line transfer's
// wait instead of a slot's flag and then its data. Intel Xeon EMR VM, 2 ranks
// (docs/performance.md): bcast of 64-256 B 0.57-0.60 us through a slot, 0.38-0.41
// with 4 lines, Open MPI's coll/sm 0.35-0.40; but 512 B with 8 lines 0.87 against
// 0.61 through a slot: more lines polled while the root writes them bounce
// between the cores. A bcast spills only on nodes of up to kSpillReaders + 1
// ranks: every reader polls every line, and the root's writes invalidate them
// all; a reduce's lines have one reader each (the writer's parent).
constexpr std::size_t kSpillLines = 4;
constexpr int kSpillReaders = 7;
constexpr std::size_t kInlineStride = 1 + kSpillLines;  // lines per inlined slot

// L release lines | L gather lines | L post lines | kInlineSlots slots of
// kInlineStride lines for bcast, then as many per rank for reduce |
// bcast buffer | L reduce buffers.
std::size_t lines_bytes(int local_size) {
  const auto l = static_cast<std::size_t>(local_size);
  return kCacheLine * (3 * l + kInlineSlots * kInlineStride * (1 + l));
}

// Lines an inlined chunk of `bytes` takes after its flag's line.
int spill_lines(std::size_t bytes) {
  return bytes > kInlineBytes
             ? static_cast<int>((bytes - kInlineBytes + kCacheLine - 1) / kCacheLine)
             : 0;
}

// Local rank r's release line.
std::byte* release_line_at(std::byte* base, int r) {
  return base + kCacheLine * static_cast<std::size_t>(r);
}

// Local rank r's gather line.
std::byte* gather_line_at(std::byte* base, std::size_t local_size, int r) {
  return base + kCacheLine * (local_size + static_cast<std::size_t>(r));
}

// Rank r's inlined line of `slot` (r < 0: bcast's), the first of its
// kInlineStride: its flag, then the data. Lines apart from the buffers, so
// a flag never holds an old chunk's data.
std::byte* inline_line_at(std::byte* base, std::size_t local_size, int r, std::size_t slot) {
  const std::size_t owner = r < 0 ? 0 : 1 + static_cast<std::size_t>(r);
  return base + kCacheLine * (3 * local_size + kInlineStride * (kInlineSlots * owner + slot));
}

std::size_t segment_bytes(int local_size, std::size_t buffer) {
  return lines_bytes(local_size) + buffer * (1 + static_cast<std::size_t>(local_size));
}

// The largest buffer a segment of `size` bytes holds for each of its
// (local_size + 1) buffers (segment_bytes' inverse, in whole lines).
std::size_t buffer_stride(std::size_t size, int local_size) {
  return (size - lines_bytes(local_size)) / (1 + static_cast<std::size_t>(local_size)) /
         kCacheLine * kCacheLine;
}

// Rank r's `slot` of a region laid out by `config` (r < 0: the bcast
// buffer's), at the stride the segment holds (RgPhase::slot_of says why).
std::byte* slot_at(const NodeSegment& segment, const RgConfig& config, int local_size, int r,
                   std::size_t slot) {
  const std::size_t stride = buffer_stride(segment.size(), local_size);
  return segment.base() + lines_bytes(local_size) + stride * static_cast<std::size_t>(r + 1) +
         config.slot_bytes * slot;
}

// Where local rank r's reduce chunk of `slot` lies: beside its flag in its
// inlined line, else in its buffer's slot.
std::byte* reduce_chunk_at(const NodeSegment& segment, const RgConfig& config, int local_size,
                           int r, std::size_t slot) {
  return config.inline_data
             ? inline_line_at(segment.base(), static_cast<std::size_t>(local_size), r, slot) +
                   kFlagBytes
             : slot_at(segment, config, local_size, r, slot);
}

// Child c's reduce chunk of `slot` once its gather step g is done. Inlined,
// beside its flag (and in the lines after it): one line transfer's wait, and
// the flag's size sets `differ` when the child's bytes are not `bytes`;
// else behind its gather flag.
const std::byte* wait_reduce_child(const NodeSegment& segment, const RgConfig& config,
                                   int local_size, int c, std::size_t slot, std::uint64_t g,
                                   std::size_t bytes, double timeout, bool& differ) {
  const std::byte* data = reduce_chunk_at(segment, config, local_size, c, slot);
  if (config.inline_data) {
    const std::byte* line = data - kFlagBytes;
    wait_flag_and_lines(line, inline_flag(g, 0), spill_lines(bytes),
                        "release_gather: a child's gather", timeout);
    differ = differ || inline_size(acquire_load(line)) != bytes;
  } else {
    wait_flag_reaches(gather_line_at(segment.base(), static_cast<std::size_t>(local_size), c), g,
                      "release_gather: a child's gather", timeout);
  }
  return data;
}

// My reduce step g is done: inlined (not the root), my chunk's flag for my
// parent, with my bytes or kRefusedSize; then my gather flag, which tells my
// children their slots are free (and drains that I am done).
void publish_reduce(const NodeSegment& segment, const RgConfig& config, int local_size, int me,
                    bool root, std::size_t slot, std::uint64_t g, std::size_t bytes, bool differ) {
  const auto lines = static_cast<std::size_t>(local_size);
  if (config.inline_data && !root)
    release_store(inline_line_at(segment.base(), lines, me, slot),
                  inline_flag(g, differ ? kRefusedSize : bytes));
  release_store(gather_line_at(segment.base(), lines, me), g);
}

}  // namespace

bool RgConfig::operator==(const RgConfig& o) const {
  return root == o.root && tree == o.tree && topology == o.topology && sockets == o.sockets &&
         slots == o.slots && slot_bytes == o.slot_bytes && buffer_bytes == o.buffer_bytes &&
         inline_data == o.inline_data && read_from_parent == o.read_from_parent &&
         single_copy == o.single_copy;
}

// The paper's choices (Sec. VI): bcast on a flat tree; reduce on a K-nomial
// tree with K = 4 below 512 bytes; from 512 bytes on a topology-aware tree,
// socket-leader-last, of right-skewed K-ary trees with K = 3 below 8 KiB and
// K = 2 from 8 KiB (with one socket: the node's K-ary tree). An explicit
// kind without K gets the paper's K for it by size (K-nomial: Fig. 11).
RgTree ReleaseGatherOptions::tree_for(bool reduce, std::int64_t bytes) const {
  using pattern::TreeKind;
  using pattern::TreeTopology;
  const RgTreeOptions& o = reduce ? reduce_tree : bcast_tree;
  const bool small = bytes < 512;
  RgTree t;
  t.shape = o.shape;
  if (o.tree_auto) {
    t.shape.kind = !reduce ? TreeKind::flat : small ? TreeKind::knomial : TreeKind::kary;
    t.shape.k = 0;
  }
  if (t.shape.k <= 0) {
    if (t.shape.kind == TreeKind::knomial) t.shape.k = bytes <= (16 << 10) ? 4 : 2;
    if (t.shape.kind == TreeKind::kary) t.shape.k = bytes < (8 << 10) ? 3 : 2;
    if (t.shape.kind == TreeKind::flat) t.shape.k = 1;
  }
  t.shape.right_skew = o.skew < 0 ? reduce : o.skew == 1;
  t.topology = o.topology >= 0    ? static_cast<TreeTopology>(o.topology)
               : reduce && !small ? TreeTopology::socket_leader_last
                                  : TreeTopology::none;
  return t;
}

// The paper's buffer (Sec. VI: 32 KiB in 4 chunks of 8 KiB) below 64 KiB;
// from 64 KiB on 256 KiB in 8 chunks of 32 KiB: measured at 2 ranks
// (docs/performance.md), an 8 KiB chunk costs about as much in flag
// hand-offs and waits as in copying, so a large bcast ran at half of MPICH's
// speed; a 32 KiB chunk still stays in L2 with all 8 slots in flight.
constexpr std::int64_t kLargeMessage = 64 << 10;
constexpr RgBuffer kSmallBuffer{32 << 10, 4};
constexpr RgBuffer kLargeBuffer{256 << 10, 8};
// A bcast from 2 MiB: 1 MiB in 8 chunks of 128 KiB. The pipeline's time is
// the slower core's copy (in on the root, out on the reader) plus a chunk's
// start-up; per chunk each side also pays a flag hand-off, and the reader
// pulls the slot's lines out of the root's cache. Measured on the AMD EPYC VM
// (1 MiB L2; docs/performance.md, "Bcast from 1 MiB to 16 MiB"), which runs
// each job in a fast or a slow mode: in the slow mode 128 KiB chunks took
// 2-4 MiB 1.4-1.6x faster than 32 KiB ones, in the fast mode the same time
// (2-16 MiB) or 5-15% slower (1 MiB, hence the threshold); the C floor
// (benchmarks/c/pair_floor.c seg-bcast) agrees: 4 MiB in 87-90 us with
// 128 KiB chunks against 94 with 32 KiB (fast mode), 170-176 against 189-211
// (slow). Eight slots of 128 KiB still fit the reader's L2. The segment then
// holds L + 1 such buffers (every buffer of the layout has one size): 9 MiB
// at 8 local ranks. Reduce keeps 32 KiB chunks: larger ones were not faster.
constexpr std::int64_t kHugeBcast = 2 << 20;
constexpr RgBuffer kHugeBcastBuffer{1 << 20, 8};
// Single copy (bcast): from this size on by default (2 ranks, slots against
// single copy: 16 KiB 2.6 us against 3.0 us, 32 KiB 4.4 us against 3.3 us),
// in chunks of 256 KiB (1 MiB: 26 us, against 36-43 us in chunks of 128 KiB
// and 28-32 us in one chunk).
constexpr std::int64_t kSingleCopyMinBytes = 32 << 10;
constexpr std::int64_t kSingleCopyChunk = 256 << 10;

RgBuffer ReleaseGatherOptions::buffer_for(bool reduce, std::int64_t bytes) const {
  const RgBuffer by_size = bytes < kLargeMessage          ? kSmallBuffer
                           : reduce || bytes < kHugeBcast ? kLargeBuffer
                                                          : kHugeBcastBuffer;
  return {round_up(buffer_size > 0 ? static_cast<std::size_t>(buffer_size) : by_size.bytes),
          buffers > 0 ? buffers : by_size.slots};
}

void ReleaseGatherOptions::validate() const {
  if (buffers < 0)
    throw ArgumentError("buffers: must be >= 1 (0: by message size), got " +
                        std::to_string(buffers));
  const int most_slots =
      buffers > 0 ? buffers
                  : std::max({kSmallBuffer.slots, kLargeBuffer.slots, kHugeBcastBuffer.slots});
  if (buffer_size != 0 &&
      (buffer_size < static_cast<std::int64_t>(kCacheLine) * most_slots || buffer_size > (1 << 30)))
    throw ArgumentError("buffer_size: must hold at least 64 bytes per slot (" +
                        std::to_string(most_slots) + " slots) and at most 1 GiB, got " +
                        std::to_string(buffer_size));
  for (const RgTreeOptions* o : {&bcast_tree, &reduce_tree}) {
    const std::string phase = o == &bcast_tree ? "bcast" : "reduce";
    const pattern::TreeShape& s = o->shape;
    if (!o->tree_auto && s.kind != pattern::TreeKind::flat && s.k > 0 &&
        s.k < pattern::tree_min_k(s.kind))
      throw ArgumentError("k: a " + std::string(pattern::tree_kind_name(s.kind)) + " tree (" +
                          phase + ") needs k >= " + std::to_string(pattern::tree_min_k(s.kind)) +
                          ", got " + std::to_string(s.k));
    if (o->skew < -1 || o->skew > 1) throw ArgumentError("skew: must be left, right or auto");
    if (o->topology < -1 || o->topology > 2)
      throw ArgumentError(
          "topology: must be auto, none, socket_leader_first or socket_leader_last");
  }
  if (sockets.groups < 0) throw ArgumentError("sockets: a socket count must be >= 1");
}

const std::vector<int>& rg_socket_map(const Topology& t, const ReleaseGatherOptions& o,
                                      std::vector<int>& storage) {
  if (o.sockets.automatic()) return t.socket_of;
  storage = synthetic_socket_map(o.sockets, t.local_size(), t.max_local_size(), "sockets");
  return storage;
}

void rg_check_sockets(const Topology& t, const ReleaseGatherOptions& o) {
  if (o.sockets.automatic()) return;  // the topology's own map fits it
  std::vector<int> storage;
  rg_socket_map(t, o, storage);
}

namespace {
const ReleaseGatherOptions kDefaults;  // at namespace scope: no guard on every call
}  // namespace

const ReleaseGatherOptions& release_gather_defaults() { return kDefaults; }

const ReleaseGatherOptions& release_gather_options(const Options& opt) {
  return opt.release_gather ? *opt.release_gather : release_gather_defaults();
}

// Collective over the node: the segment exists and is large enough. A new
// segment is zero-filled and reached by every local rank in the same call
// (the allocation is collective), after all earlier calls finished: the
// counters restart at zero everywhere.
ReleaseGatherState& release_gather_state(NodeContext& ctx, std::size_t buffer) {
  ReleaseGatherState& st = ctx.state<ReleaseGatherState>();
  if (!st.segment)
    st.segment =
        std::make_unique<NodeSegment>(ctx.topo.node_comm, ctx.topo.node_comm, ctx.call_timeout);
  st.segment->reserve(segment_bytes(ctx.topo.local_size(), buffer));
  if (st.generation != st.segment->generation()) {
    st.generation = st.segment->generation();
    st.release_state = st.gather_state = st.all_done = st.single_copy_calls = 0;
    st.bcast = RgRegion{};
    st.reduce = RgRegion{};
  }
  return st;
}

RgPhase::RgPhase(NodeContext& ctx, const ReleaseGatherOptions& o, bool reduce, int local_root,
                 std::int64_t bytes, std::size_t elem, double timeout, Stats& stats)
    : st_(ctx.state<ReleaseGatherState>()),
      region_(reduce ? st_.reduce : st_.bcast),
      reduce_(reduce),
      me_(ctx.topo.local_rank),
      local_size_(ctx.topo.local_size()),
      total_(bytes),
      timeout_(timeout),
      stats_(stats) {
  // A valid plan was made in a call of these bytes, which reserved the
  // segment for them (a segment that grows resets the regions' plans).
  if (reuse_plan(o, local_root, bytes, elem)) return;
  release_gather_state(ctx, o.buffer_for(reduce, bytes).bytes);
  planned_.root = local_root;
  const RgTree tree = o.tree_for(reduce, bytes);
  planned_.tree = tree.shape;
  TreeUsed& used = reduce ? stats.reduce_tree : stats.bcast_tree;
  used = TreeUsed{true, tree.shape, tree.topology, 1, ""};
  if (tree.topology != pattern::TreeTopology::none) {
    const std::vector<int>& map = rg_socket_map(ctx.topo, o, synthetic_map_);
    used.sockets = o.sockets.automatic() ? ctx.topo.socket_count : pattern::socket_count(map);
    used.socket_source = o.sockets.automatic() ? ctx.topo.socket_source : "sockets option";
    if (used.sockets > 1) {  // one socket: the plain tree below, no per-call cost
      planned_.topology = tree.topology;
      planned_.sockets = map;
    }
  }
  node_ = &tree_node();
  const RgBuffer buffer = o.buffer_for(reduce, bytes);
  planned_.buffer_bytes = buffer.bytes;
  const auto inline_bytes = static_cast<std::size_t>(reduce ? rg_reduce_inline_bytes()
                                                            : rg_bcast_inline_bytes(local_size_));
  planned_.inline_data =
      o.inline_data && bytes <= static_cast<std::int64_t>(inline_bytes) && elem <= inline_bytes;
  planned_.slots = planned_.inline_data ? kInlineSlots : buffer.slots;
  planned_.slot_bytes = planned_.inline_data
                            ? inline_bytes
                            : planned_.buffer_bytes / buffer.slots / kCacheLine * kCacheLine;
  planned_.read_from_parent = !reduce && o.read_from_parent;  // reduce has no release flags
  chunk_ = static_cast<std::int64_t>(planned_.slot_bytes / elem * elem);
  if (!reduce && !planned_.inline_data && o.single_copy != 0 &&
      bytes >= (o.single_copy > 0 ? 1 : kSingleCopyMinBytes) && ctx.peer_memory->available()) {
    planned_.single_copy = true;
    peers_ = ctx.peer_memory.get();
    chunk_ = kSingleCopyChunk;
    call_ = ++st_.single_copy_calls;
  }
  if (bytes > 0) enter_region();
  remember_plan(o, local_root, bytes, elem);
}

bool RgPhase::reuse_plan(const ReleaseGatherOptions& o, int root, std::int64_t bytes,
                         std::size_t elem) {
  const RgPlan& p = region_.plan;
  if (!p.valid || &o != &release_gather_defaults() || p.root != root || p.bytes != bytes ||
      p.elem != elem)
    return false;
  config_ = &region_.config;
  node_ = &region_.tree.node;
  chunk_ = p.chunk;
  (reduce_ ? stats_.reduce_tree : stats_.bcast_tree) = p.used;
  return true;
}

void RgPhase::remember_plan(const ReleaseGatherOptions& o, int root, std::int64_t bytes,
                            std::size_t elem) {
  RgPlan& p = region_.plan;
  p.valid = &o == &release_gather_defaults() && bytes > 0 && !config_->single_copy;
  p.root = root;
  p.bytes = bytes;
  p.elem = elem;
  p.chunk = chunk_;
  p.used = reduce_ ? stats_.reduce_tree : stats_.bcast_tree;
}

// This rank's node of the planned tree, built when the root, shape, topology
// or socket map differ from the last call's.
const pattern::TreeNode& RgPhase::tree_node() const {
  RgTreeMemo& m = region_.tree;
  const pattern::TreeShape& shape = config_->tree;
  if (m.valid && m.root == config_->root && m.shape == shape && m.topology == config_->topology &&
      m.sockets == config_->sockets)
    return m.node;
  m.node = config_->topology == pattern::TreeTopology::none
               ? pattern::tree_node(local_size_, me_, config_->root, shape)
               : pattern::socket_tree_node(config_->sockets, me_, config_->root, shape,
                                           config_->topology);
  m.root = config_->root;
  m.shape = shape;
  m.topology = config_->topology;
  m.sockets = config_->sockets;
  m.valid = true;
  return m.node;
}

std::byte* RgPhase::release_line(int r) const { return release_line_at(st_.segment->base(), r); }

std::byte* RgPhase::gather_line(int r) const {
  return gather_line_at(st_.segment->base(), static_cast<std::size_t>(local_size_), r);
}

std::byte* RgPhase::post_line(int r) const {
  return st_.segment->base() + kCacheLine * (2 * local_size_ + r);
}

// Every region lays its buffers out at the stride the segment holds, not at
// its own configuration's buffer size: a bcast's 1 MiB buffer (kHugeBcast)
// and the reduces' 256 KiB ones laid out by their own sizes overlapped, so
// a rank that left a 2 MiB bcast could write its next reduce's chunks into
// the bcast slots a slower rank was still reading (only a change of the
// same region's configuration waits for the other ranks: enter_region). Seen
// as an intermittent wrong bcast result on one rank at 2 MiB (Intel MPI, 3
// ranks on one node: test_bcast_and_reduce_across_the_2_mib_chunk_threshold).
// The segment holds (local ranks + 1) buffers of every size a call
// reserved, so the stride is at least each configuration's buffer.
std::byte* RgPhase::slot_of(int r, int slot) const {
  return slot_at(*st_.segment, *config_, local_size_, r, static_cast<std::size_t>(slot));
}

std::byte* RgPhase::inline_line(int r, int slot) const {
  return inline_line_at(st_.segment->base(), static_cast<std::size_t>(local_size_), r,
                        static_cast<std::size_t>(slot));
}

void RgPhase::wait_flag(const std::byte* flag, std::uint64_t value, const char* what) const {
  wait_flag_reaches(flag, value, what, timeout_);
}

// A new configuration of this buffer region: first every local rank finishes
// every earlier step (its gather flag reaches our gather count), so no slot
// of the old layout is still being read or written.
void RgPhase::enter_region() {
  if (region_.config == planned_) {
    config_ = &region_.config;
    return;
  }
  const std::uint64_t target = st_.gather_state;
  if (st_.all_done < target) {
    for (int r = 0; r < local_size_; ++r)
      wait_flag(gather_line(r), target, "release_gather: the other ranks' earlier calls");
    st_.all_done = target;
  }
  region_.config = planned_;
  config_ = &region_.config;
  region_.plan.valid = false;
  region_.last_use.assign(static_cast<std::size_t>(config_->slots), 0);
  region_.next = 0;
  region_.consumed = 0;
}

// The slot of the next chunk. Every rank advances the bookkeeping, writer or
// not, so it stays identical everywhere.
int RgPhase::next_slot() {
  slot_ = static_cast<int>(region_.next++ % static_cast<std::uint64_t>(config_->slots));
  return slot_;
}

// The consumers of the slot's chunk `count` are done with it: for a bcast
// root its children (whose gather covers their subtrees), for a reduce
// writer its parent. Remembers the smallest count seen, so that the next
// slots usually need no wait (the paper's skipped gather / release).
void RgPhase::wait_consumed(std::uint64_t count) {
  if (count <= region_.consumed) return;
  std::uint64_t seen = ~std::uint64_t{0};
  auto wait_for = [&](int r) {
    wait_flag(gather_line(r), count, "release_gather: a free buffer");
    seen = std::min(seen, acquire_load(gather_line(r)));
  };
  if (reduce_) {
    if (!root()) wait_for(node_->parent);
  } else {
    for (int c : node_->children) wait_for(c);
  }
  region_.consumed = seen == ~std::uint64_t{0} ? count : seen;
}

void RgPhase::signal_children(std::uint64_t r) {
  if (node_->children.empty()) return;
  if (config_->read_from_parent) {
    release_store(release_line(me_), r);  // one store; every child reads it
  } else {
    for (int c : node_->children) release_store(release_line(c), r);
  }
}

const std::byte* RgPhase::bcast_release(const std::byte* root_data, std::size_t bytes) {
  const std::uint64_t r = ++st_.release_state;
  const std::uint64_t chunk = st_.gather_state + 1;  // this chunk's gather count
  const int slot = next_slot();
  if (config_->inline_data) return bcast_inline(root_data, bytes, r, chunk, slot);
  std::byte* data = slot_of(-1, slot);
  if (root()) {
    wait_consumed(region_.last_use[slot]);
    region_.stores.copy(data, root_data, bytes);  // before the release store below
  } else {
    wait_flag(config_->read_from_parent ? release_line(node_->parent) : release_line(me_), r,
              "release_gather: the parent's release");
  }
  region_.last_use[slot] = chunk;
  signal_children(r);  // before copying out: the subtree starts at once
  return data;
}

// Inlined: the root writes the chunk and its release count into the slot's
// line (and the lines it spills into), and every other rank reads them
// (whatever the tree: the data needs no forwarding); one line transfer's
// wait per reader. The tree still carries the gather steps that free the line.
const std::byte* RgPhase::bcast_inline(const std::byte* root_data, std::size_t bytes,
                                       std::uint64_t r, std::uint64_t chunk, int slot) {
  std::byte* line = inline_line(-1, slot);
  if (root()) {
    wait_consumed(region_.last_use[slot]);
    std::memcpy(line + kFlagBytes, root_data, bytes);
    release_store(line, inline_flag(r, sizes_differ_ ? kRefusedSize : bytes));
  } else {
    wait_flag_and_lines(line, inline_flag(r, 0), spill_lines(bytes),
                        "release_gather: the root's release", timeout_);
    if (inline_size(acquire_load(line)) != bytes) sizes_differ_ = true;
  }
  region_.last_use[slot] = chunk;
  return line + kFlagBytes;
}

std::int64_t rg_bcast_inline_bytes(int local_size) {
  const std::size_t spill = local_size <= kSpillReaders + 1 ? kSpillLines * kCacheLine : 0;
  return static_cast<std::int64_t>(kInlineBytes + spill);
}

std::int64_t rg_reduce_inline_bytes() {
  return static_cast<std::int64_t>(kInlineBytes + kSpillLines * kCacheLine);
}

namespace {

// The slot of a replay's chunk: the next of the plan's, if its call is one
// chunk of the plan (bytes and element size; root and tree alike) and the
// slot is free without waiting (`writer`: whether this rank writes it and
// would wait for its readers: once per `slots` calls, RgPhase's
// wait_consumed does it); else -1, nothing changed.
int replay_slot(const RgRegion& region, int local_root, std::int64_t bytes, std::size_t elem,
                bool writer) {
  const RgPlan& plan = region.plan;
  if (!plan.valid || plan.root != local_root || plan.bytes != bytes || plan.elem != elem ||
      bytes > plan.chunk)
    return -1;
  const auto slot = static_cast<int>(region.next % static_cast<std::uint64_t>(region.config.slots));
  return writer && region.last_use[static_cast<std::size_t>(slot)] > region.consumed ? -1 : slot;
}

// The repeat of a bcast of one chunk, inlined or through a slot:
// bcast_release, bcast_inline and bcast_gather's steps on the region's plan,
// in the same order and on the same counters, so that the next call may
// take either path. Not taken (and nothing changed) when the root would
// have to wait for a free slot or a non-root has children (a tree not
// flat: its gather waits for them), or the children do not read their
// parent's release line. Counts nothing (an express records the stats of
// the call it was made after).
bool bcast_replay(NodeContext& ctx, std::byte* buf, std::int64_t bytes, int local_root,
                  double timeout, bool& differ) {
  ReleaseGatherState& st = ctx.state<ReleaseGatherState>();
  RgRegion& region = st.bcast;
  const int me = ctx.topo.local_rank;
  const bool root = me == local_root;
  const pattern::TreeNode& node = region.tree.node;
  const int slot = replay_slot(region, local_root, bytes, 1, root);
  if (slot < 0 || (!root && !node.children.empty()) ||
      !(region.config.inline_data || region.config.read_from_parent))
    return false;
  ++region.next;
  const std::uint64_t r = ++st.release_state;
  region.last_use[static_cast<std::size_t>(slot)] = st.gather_state + 1;
  const int local_size = ctx.topo.local_size();
  std::byte* base = st.segment->base();
  const auto n = static_cast<std::size_t>(bytes);
  differ = false;
  if (region.config.inline_data) {
    std::byte* line = inline_line_at(base, static_cast<std::size_t>(local_size), -1,
                                     static_cast<std::size_t>(slot));
    if (root) {
      std::memcpy(line + kFlagBytes, buf, n);
      release_store(line, inline_flag(r, n));
    } else {
      wait_flag_and_lines(line, inline_flag(r, 0), spill_lines(n),
                          "release_gather: the root's release", timeout);
      differ = inline_size(acquire_load(line)) != n;
      if (!differ) std::memcpy(buf, line + kFlagBytes, n);
    }
  } else {
    std::byte* data =
        slot_at(*st.segment, region.config, local_size, -1, static_cast<std::size_t>(slot));
    if (root) {
      local_copy(data, buf, n);
      if (!node.children.empty()) release_store(release_line_at(base, me), r);
    } else {
      wait_flag_reaches(release_line_at(base, node.parent), r,
                        "release_gather: the parent's release", timeout);
      local_copy(buf, data, n);
    }
  }
  release_store(gather_line_at(base, static_cast<std::size_t>(local_size), me), ++st.gather_state);
  return true;
}

bool bcast_express(const Express& e, const std::byte*, std::byte* buf) {
  return rg_bcast_replay(*static_cast<NodeContext*>(e.state), buf, e.count, e.root, e.timeout);
}

}  // namespace

bool rg_bcast_replay(NodeContext& ctx, std::byte* buf, std::int64_t bytes, int local_root,
                     double timeout) {
  bool differ = false;
  if (!bcast_replay(ctx, buf, bytes, local_root, timeout, differ)) return false;
  if (differ) throw_sizes_differ(ctx, bytes);
  return true;
}

bool rg_bcast_repeat(NodeContext& ctx, std::byte* buf, std::int64_t bytes, int local_root,
                     const ReleaseGatherOptions& o, double timeout, Stats& stats, bool& differ) {
  if (&o != &release_gather_defaults()) return false;
  if (!bcast_replay(ctx, buf, bytes, local_root, timeout, differ)) return false;
  stats.bcast_tree = ctx.state<ReleaseGatherState>().bcast.plan.used;
  stats.intra_messages += 1;
  stats.intra_bytes += bytes;
  stats.rounds += 2;
  stats.block_count += 1;
  return true;
}

Express rg_bcast_express(NodeContext& ctx, std::int64_t bytes, int local_root, double timeout) {
  const RgPlan& plan = ctx.state<ReleaseGatherState>().bcast.plan;
  if (!plan.valid || plan.root != local_root || plan.bytes != bytes || bytes > plan.chunk)
    return {};
  Express e;
  e.run = bcast_express;
  e.state = &ctx;
  e.count = bytes;
  e.root = local_root;
  e.timeout = timeout;
  return e;
}

namespace {

// The repeat of a reduce of one chunk, inlined or through a slot:
// reduce_slot, reduce_chunk and reduce_publish on the region's plan, in the
// same order and on the same counters, so that the next call may take
// either path. Not taken (and nothing changed) when a writer would have to
// wait for its parent to free the slot (replay_slot). The root combines
// straight into `result` (data_copy, the default). Counts nothing.
bool reduce_replay(NodeContext& ctx, const std::byte* send, std::byte* result, std::int64_t count,
                   const Reducer& reducer, int local_root, double timeout, bool& differ) {
  ReleaseGatherState& st = ctx.state<ReleaseGatherState>();
  RgRegion& region = st.reduce;
  const std::size_t elem = reducer.elem_size();
  const auto n = static_cast<std::size_t>(count) * elem;
  const int me = ctx.topo.local_rank;
  const bool root = me == local_root;
  const int slot = replay_slot(region, local_root, static_cast<std::int64_t>(n), elem, !root);
  if (slot < 0) return false;
  ++region.next;
  const std::uint64_t g = ++st.gather_state;
  region.last_use[static_cast<std::size_t>(slot)] = g;
  const int local_size = ctx.topo.local_size();
  const NodeSegment& segment = *st.segment;
  const auto at = static_cast<std::size_t>(slot);
  differ = false;
  rg_reduce_chunk(
      region.tree.node.children,
      [&](int c) {
        return wait_reduce_child(segment, region.config, local_size, c, at, g, n, timeout, differ);
      },
      send, root ? result : reduce_chunk_at(segment, region.config, local_size, me, at), count,
      reducer, &region.stores);
  publish_reduce(segment, region.config, local_size, me, root, at, g, n, differ);
  return true;
}

bool reduce_express(const Express& e, const std::byte* send, std::byte* recv) {
  return rg_reduce_replay(*static_cast<NodeContext*>(e.state), send ? send : recv, recv, e.count,
                          *e.reducer, e.root, e.timeout);
}

}  // namespace

bool rg_reduce_replay(NodeContext& ctx, const std::byte* send, std::byte* result,
                      std::int64_t count, const Reducer& reducer, int local_root, double timeout) {
  bool differ = false;
  if (!reduce_replay(ctx, send, result, count, reducer, local_root, timeout, differ)) return false;
  if (differ) throw_sizes_differ(ctx, count * static_cast<std::int64_t>(reducer.elem_size()));
  return true;
}

bool rg_reduce_repeat(NodeContext& ctx, const std::byte* send, std::byte* result,
                      std::int64_t count, const Reducer& reducer, int local_root,
                      const ReleaseGatherOptions& o, double timeout, Stats& stats, bool& differ) {
  if (&o != &release_gather_defaults() || !o.data_copy) return false;
  if (!reduce_replay(ctx, send, result, count, reducer, local_root, timeout, differ)) return false;
  const RgRegion& region = ctx.state<ReleaseGatherState>().reduce;
  count_reduce_chunk(region.tree.node.children.size(),
                     count * static_cast<std::int64_t>(reducer.elem_size()), stats);
  stats.reduce_tree = region.plan.used;
  stats.rounds += 1;
  stats.block_count += 1;
  return true;
}

Express rg_reduce_express(NodeContext& ctx, std::int64_t count, const Reducer& reducer,
                          int local_root, double timeout) {
  const RgRegion& region = ctx.state<ReleaseGatherState>().reduce;
  const std::int64_t bytes = count * static_cast<std::int64_t>(reducer.elem_size());
  if (!region.plan.valid || region.plan.root != local_root || region.plan.bytes != bytes ||
      region.plan.elem != reducer.elem_size() || bytes > region.plan.chunk)
    return {};
  Express e;
  e.run = reduce_express;
  e.state = &ctx;
  e.count = count;
  e.root = local_root;
  e.reducer = &reducer;
  e.timeout = timeout;
  return e;
}

void RgPhase::bcast_gather(bool last) {
  const std::uint64_t g = ++st_.gather_state;
  // A root with slots skips the wait: wait_consumed() catches up when it
  // needs a slot. A single-copy root's children read its own buffer, which
  // the caller may change once the call returns.
  if (!root() || (config_->single_copy && last))
    for (int c : node_->children) wait_flag(gather_line(c), g, "release_gather: a child's gather");
  release_store(gather_line(me_), g);  // after my reads of the slot
}

std::byte* RgPhase::reduce_slot(bool data_copy) {
  ++st_.gather_state;
  const int slot = next_slot();
  const std::uint64_t previous = region_.last_use[slot];
  region_.last_use[slot] = st_.gather_state;
  if (root() && data_copy) return nullptr;
  if (!root()) wait_consumed(previous);
  return reduce_chunk_at(*st_.segment, *config_, local_size_, me_, static_cast<std::size_t>(slot));
}

const std::byte* RgPhase::reduce_child(int c) {
  return wait_reduce_child(*st_.segment, *config_, local_size_, c, static_cast<std::size_t>(slot_),
                           st_.gather_state, static_cast<std::size_t>(total_), timeout_,
                           sizes_differ_);
}

void RgPhase::reduce_publish() {
  publish_reduce(*st_.segment, *config_, local_size_, me_, root(), static_cast<std::size_t>(slot_),
                 st_.gather_state, static_cast<std::size_t>(total_), sizes_differ_);
}

namespace {
std::size_t small_buffer_bytes() {
  static const std::size_t bytes = ReleaseGatherOptions{}.buffer_for(false, 0).bytes;
  return bytes;
}
}  // namespace

// The tree is the layout's, made once; the segment is reserved at the size
// small bcasts and reduces reserve, so a barrier never makes it grow
// between them (growing resets the counters, collectively).
RgBarrier::RgBarrier(NodeContext& ctx, double timeout, Stats& stats)
    : st_(release_gather_state(ctx, small_buffer_bytes())),
      me_(ctx.topo.local_rank),
      timeout_(timeout),
      base_(st_.segment->base()),
      local_size_(ctx.topo.local_size()) {
  if (!st_.barrier_tree_made) {
    st_.barrier_shape = ReleaseGatherOptions{}.tree_for(true, 0).shape;
    st_.barrier_tree = pattern::tree_node(local_size_, me_, 0, st_.barrier_shape);
    st_.barrier_tree_made = true;
  }
  stats.reduce_tree = TreeUsed{true, st_.barrier_shape, pattern::TreeTopology::none, 1, ""};
  stats.bcast_tree =
      TreeUsed{true, {pattern::TreeKind::flat, 1, false}, pattern::TreeTopology::none, 1, ""};
}

RgBarrier::RgBarrier(ReleaseGatherState& st, const Topology& t, double timeout)
    : st_(st),
      me_(t.local_rank),
      timeout_(timeout),
      base_(st.segment->base()),
      local_size_(t.local_size()) {}

namespace {

bool barrier_express(const Express& e, const std::byte*, std::byte*) {
  NodeContext& ctx = *static_cast<NodeContext*>(e.state);
  RgBarrier node(ctx.state<ReleaseGatherState>(), ctx.topo, e.timeout);
  node.gather();
  node.release();
  return true;
}

}  // namespace

Express rg_barrier_express(NodeContext& ctx, double timeout) {
  const ReleaseGatherState& st = ctx.state<ReleaseGatherState>();
  if (!st.segment || !st.barrier_tree_made) return {};
  Express e;
  e.run = barrier_express;
  e.state = &ctx;
  e.timeout = timeout;
  return e;
}

void RgBarrier::gather() {
  const std::uint64_t g = ++st_.gather_state;
  for (int c : st_.barrier_tree.children)
    wait_flag_reaches(gather_line_at(base_, static_cast<std::size_t>(local_size_), c), g,
                      "release_gather: a child's gather", timeout_);
  release_store(gather_line_at(base_, static_cast<std::size_t>(local_size_), me_), g);
}

void RgBarrier::release() {
  const std::uint64_t r = ++st_.release_state;
  if (root())
    release_store(base_, r);  // local rank 0's release line
  else
    wait_flag_reaches(base_, r, "release_gather: the release of local rank 0", timeout_);
  st_.all_done = st_.gather_state;  // everyone's gather reached it: no drain needed
}

}  // namespace shancoll
