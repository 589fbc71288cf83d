// Release/gather: the building blocks of the intra-node bcast, reduce and
// allreduce of the seed intranode-release-gather-shm-collectives (Sec. II-III).
//
// Every local rank owns two cache-line flags in a node shared segment, a
// release flag and a gather flag, and two private counters, release_state and
// gather_state, that every rank advances identically (one release step per
// bcast chunk, one gather step per chunk of any collective), so counters
// never need resetting: a flag holds the counter of the last step its writer
// completed, and a wait is for "flag >= my counter".
//   release step (Fig. 2), parent -> children: "chunk r is in the buffer";
//   gather step (Fig. 3), children -> parent: "my subtree is done with chunk
//   g" (bcast: copied it out; reduce: its partial result is in my buffer, and
//   I consumed my children's buffers).
// Segment layout (one segment per node, its own NodeSegment, L local ranks,
// B = buffer_size): L release lines | L gather lines | L post lines | 8 inline
// slots of 5 lines for bcast | as many per rank for reduce | bcast buffer (B) |
// L reduce buffers (B each). A buffer is split into `buffers` slots of one
// chunk each (pipelining). A chunk of at most 56 bytes travels inside a
// cache line beside its flag instead (inlining, on by default), one of up to
// 312 bytes in the 4 lines after it too, which the reader loads while it
// polls the flag: 8 such slots, so a reader's wait and read are one line
// transfer's wait, and a writer looks at its consumers' gather flags once
// per 8 chunks.
//
// Single copy (an addition to the paper; release_gather_single_copy.cc): a
// bcast moves each chunk straight from the parent's buffer into the child's
// (shm/peer_memory.h), no slots, the parent writing a share of it while the
// child reads the rest; a reduce on a node of two ranks splits the message
// between them. A third set of lines, one per rank, carries the buffer
// addresses a call's peers need (post lines).
//
// Buffer reuse: each slot remembers the gather count of its last use. A bcast
// root may refill a slot once its children's gather flags reached that count
// (the tree gather says their subtrees read it); a reduce writer once its
// parent's gather flag did (the parent consumed it): with free slots nobody
// waits (the paper's skipped gather/release). When a buffer region's
// configuration (root, tree, socket map, slots, flag mode, inlining) changes, its first
// chunk first waits until every local rank finished every earlier step (a
// drain): slots of the old layout, and children or parents of the old tree,
// tell nothing about the new ones.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "shancoll/comm.h"
#include "shancoll/cost.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"
#include "shancoll/pattern/socket_tree.h"
#include "shancoll/shm/ring_stores.h"

namespace shancoll {

struct Express;  // coll/door.h

// One phase's tree: bcast's (its release steps) or reduce's (its gather
// steps), chosen apart (Sec. III-A4). Allreduce runs both phases.
struct RgTreeOptions {
  bool tree_auto = true;                                    // the paper's kind and K
  pattern::TreeShape shape{pattern::TreeKind::knomial, 0};  // when !tree_auto; k <= 0: K by size
  int skew = -1;                                            // -1: auto; 0 left; 1 right
  int topology = -1;  // -1: auto; else a pattern::TreeTopology
};

// A phase's tree, resolved for a message size.
struct RgTree {
  pattern::TreeShape shape;
  pattern::TreeTopology topology = pattern::TreeTopology::none;
};

// A buffer's bytes and its slots (each one chunk).
struct RgBuffer {
  std::size_t bytes;
  int slots;
};

// The optimisations of Sec. III, each switchable (Python keywords of the same name).
struct ReleaseGatherOptions {
  RgTreeOptions bcast_tree, reduce_tree;
  SocketSpec sockets;            // synthetic socket map; automatic: the topology's (hwloc)
  std::int64_t buffer_size = 0;  // bytes of one buffer (bcast's, each reduce's); 0: by size
  int buffers = 0;               // slots per buffer (chunks in flight); 0: by size
  bool inline_data = true;       // messages of <= 312 bytes beside the flag (its line and 4 more)
  bool read_from_parent = true;  // children read their parent's release flag
  bool data_copy = true;         // reduce straight into the root's recvbuf
  int single_copy = -1;  // bcast: children read their parent's buffer (-1: by size; 0 off; 1 on)
  std::string inter_algorithm = "auto";  // allreduce among node leaders (several nodes)

  // The tree for `bytes` of a bcast (reduce = false) or reduce.
  RgTree tree_for(bool reduce, std::int64_t bytes) const;
  // The buffer for a bcast (reduce = false) or reduce of `bytes`: the
  // options', else by size.
  RgBuffer buffer_for(bool reduce, std::int64_t bytes) const;
  void validate() const;  // throws ArgumentError naming the option
};

// The socket map a call's trees use on this node: the options' synthetic
// one (kept in `storage`), else the topology's. ArgumentError naming
// `sockets` when a synthetic map does not fit the layout.
const std::vector<int>& rg_socket_map(const Topology& t, const ReleaseGatherOptions& o,
                                      std::vector<int>& storage);
// That check alone, alike on every rank: the collectives call it before
// communicating, so a bad map is refused everywhere with nothing sent.
void rg_check_sockets(const Topology& t, const ReleaseGatherOptions& o);

struct RgConfig {  // what a buffer region was laid out for
  int root = -1;
  pattern::TreeShape tree;
  pattern::TreeTopology topology = pattern::TreeTopology::none;  // none when one socket
  std::vector<int> sockets;                                      // the map, when topology-aware
  int slots = 0;
  std::size_t slot_bytes = 0;
  std::size_t buffer_bytes = 0;
  bool inline_data = false;
  bool read_from_parent = false;
  bool single_copy = false;
  bool operator==(const RgConfig& o) const;
};

// This rank's node of a phase's tree, for the root, shape, topology and
// socket map it was built for: a loop of calls builds it once.
struct RgTreeMemo {
  bool valid = false;
  int root = -1;
  pattern::TreeShape shape;
  pattern::TreeTopology topology = pattern::TreeTopology::none;
  std::vector<int> sockets;
  pattern::TreeNode node;
};

// The last call's plan on a region, when it ran with the default options
// and not by single copy: a call of the same root, bytes and element size
// (a loop of small calls) reuses its configuration, tree node and chunk
// instead of working them out again and comparing configurations.
struct RgPlan {
  bool valid = false;
  int root = -1;
  std::int64_t bytes = -1;
  std::size_t elem = 0;
  std::int64_t chunk = 0;
  TreeUsed used;
};

// A buffer region's slot bookkeeping, identical on every local rank.
struct RgRegion {
  RgConfig config;
  RgTreeMemo tree;
  RgPlan plan;                          // valid only while `config` is the one it was made with
  std::vector<std::uint64_t> last_use;  // gather count of each slot's last chunk
  RingStores stores;                    // how the root stores bcast chunks, a leaf reduce ones
  std::uint64_t next = 0;               // chunks since the configuration began
  std::uint64_t consumed = 0;           // consumers known done up to this count
};

// Per node layout, kept in the NodeContext across calls (NodeContext::state):
// release_gather's flags, counters and buffers, in a segment of its own (its
// flags hold counters that must survive other algorithms' calls).
struct ReleaseGatherState : LayoutState {
  std::unique_ptr<NodeSegment> segment;
  std::uint64_t generation = 0;  // the segment's, when the counters were reset
  std::uint64_t release_state = 0;
  std::uint64_t gather_state = 0;
  std::uint64_t all_done = 0;  // every local rank's gather flag reached this
  RgRegion bcast, reduce;
  std::uint64_t single_copy_calls = 0;  // single-copy bcasts so far (post lines)
  bool leaders_made = false;
  // Local rank 0 of every node (several nodes); null on the other ranks.
  std::unique_ptr<Comm> leaders;
  // The barrier's gather tree (RgBarrier), made on its first call.
  pattern::TreeNode barrier_tree;
  pattern::TreeShape barrier_shape;
  bool barrier_tree_made = false;
};

// One rank's view of one phase (a bcast or a reduce) on its node.
class RgPhase {
 public:
  RgPhase(NodeContext& ctx, const ReleaseGatherOptions& o, bool reduce, int local_root,
          std::int64_t bytes, std::size_t elem, double timeout, Stats& stats);
  RgPhase(const RgPhase&) = delete;  // config_ may point into itself
  RgPhase& operator=(const RgPhase&) = delete;

  bool root() const { return node_->parent < 0; }
  const pattern::TreeNode& node() const { return *node_; }
  bool inlined() const { return config_->inline_data; }
  bool single_copy() const { return config_->single_copy; }
  // Inlined chunks carry their writer's size (flags.h): whether a reader saw
  // one unlike its own (or a writer that refused), so the ranks' calls
  // differ. The step is still done, so the calls stay in step.
  bool sizes_differ() const { return sizes_differ_; }
  void refuse() { sizes_differ_ = true; }  // my inlined chunks tell my readers
  std::int64_t chunk_bytes() const { return chunk_; }

  // Bcast chunk: the root fills the next slot (waiting for it to be free),
  // then the release step; non-roots then read it. Returns the data.
  const std::byte* bcast_release(const std::byte* root_data, std::size_t bytes);
  // Single-copy bcast chunk [off, off + bytes) of `buf`, every rank's own
  // buffer: a non-root gets it from its parent (reading part, the parent
  // writing the rest), then everyone releases it to its children and writes
  // them their part.
  void bcast_single_copy(std::byte* buf, std::size_t off, std::size_t bytes);
  // Bcast gather step: children first (non-roots; a single-copy root on its
  // last chunk, as its buffer must outlive its children's reads), then my flag.
  void bcast_gather(bool last);
  // Reduce chunk, the gather step begins: my slot for this chunk (waits until
  // its last use was consumed); the root with the data-copy optimisation
  // reduces into its recvbuf instead and gets nullptr.
  std::byte* reduce_slot(bool data_copy);
  // Reduce gather step: waits for child c's chunk, returns it.
  const std::byte* reduce_child(int c);
  // Reduce gather step done: my flag (my slot holds my subtree's result).
  void reduce_publish();
  // How this rank stores chunks into its slots (shm/ring_stores.h).
  RingStores& stores() { return region_.stores; }

 private:
  const pattern::TreeNode& tree_node() const;
  bool reuse_plan(const ReleaseGatherOptions& o, int root, std::int64_t bytes, std::size_t elem);
  void remember_plan(const ReleaseGatherOptions& o, int root, std::int64_t bytes, std::size_t elem);
  std::byte* release_line(int r) const;
  std::byte* gather_line(int r) const;
  std::byte* slot_of(int r, int slot) const;      // r < 0: the bcast buffer
  std::byte* inline_line(int r, int slot) const;  // r < 0: bcast's lines
  const std::byte* bcast_inline(const std::byte* root_data, std::size_t bytes, std::uint64_t r,
                                std::uint64_t chunk, int slot);
  void wait_flag(const std::byte* flag, std::uint64_t value, const char* what) const;
  void enter_region();
  int next_slot();
  void wait_consumed(std::uint64_t count);
  void signal_children(std::uint64_t r);
  std::byte* post_line(int r) const;
  std::byte* child_buffer(std::size_t i);  // single copy: child i's posted buffer
  std::size_t pushed_share(std::size_t bytes, std::uint64_t children) const;

  ReleaseGatherState& st_;
  RgRegion& region_;
  RgConfig planned_;  // a configuration worked out for this call (no plan to reuse)
  const RgConfig* config_ = &planned_;       // the region's once entered (or reused)
  const pattern::TreeNode* node_ = nullptr;  // in region_.tree
  bool reduce_;
  int me_;
  int local_size_;
  std::int64_t chunk_ = 0;
  std::int64_t total_ = 0;  // the call's bytes on this rank
  bool sizes_differ_ = false;
  int slot_ = 0;                       // this chunk's slot
  std::vector<int> synthetic_map_;     // the sockets option's map, when given
  const PeerMemory* peers_ = nullptr;  // when single_copy
  std::uint64_t call_ = 0;             // single copy: this call's post number
  std::vector<std::byte*> child_buffers_;
  double timeout_;
  Stats& stats_;
};

// A barrier's steps on one node: a gather step without data up the reduce
// phase's tree for no bytes (the paper's K-nomial tree, K = 4), then one
// release step from local rank 0, whose release line every other rank reads
// (a flat release tree with read-from-parent). The same flags and counters
// as the bcast and reduce steps, so it interleaves with them on one layout;
// it writes no release line but local rank 0's, which every earlier step's
// writer of that line finished before its gather (see the barrier's file).
// Between gather() and release() local rank 0 knows that every local rank
// has arrived: several nodes join there (barrier_release_gather.cc).
class RgBarrier {
 public:
  RgBarrier(NodeContext& ctx, double timeout, Stats& stats);
  // On a node whose barrier ran before (its segment and tree made): what
  // the barrier's express replays (rg_barrier_express).
  RgBarrier(ReleaseGatherState& st, const Topology& t, double timeout);
  bool root() const { return me_ == 0; }
  void gather();   // my children's gather flags, then mine
  void release();  // local rank 0 stores its release line; the others wait for it

 private:
  ReleaseGatherState& st_;
  int me_;
  double timeout_;
  std::byte* base_;
  int local_size_;
};

// The collectives on one node (collective over the node's ranks); the
// multi-node compositions are in bcast/, reduce/ and allreduce/.
// Both return whether this rank saw that the local ranks' sizes differ
// (inlined messages, RgPhase::sizes_differ): the step is complete, and the
// caller refuses the call (throw_sizes_differ) once its other steps are.
// Bcast of `bytes` from local rank `local_root`, in chunks; a root that
// `refuses` tells every reader so (an allreduce whose reduce saw a size
// differ).
[[nodiscard]] bool rg_bcast_on_node(NodeContext& ctx, std::byte* buf, std::int64_t bytes,
                                    int local_root, const ReleaseGatherOptions& o, double timeout,
                                    Stats& stats, bool refuses = false);
// Reduce of `count` elements of `send` into the local root's `result`
// (send == result: in place). `result` is ignored elsewhere.
[[nodiscard]] bool rg_reduce_on_node(NodeContext& ctx, const std::byte* send, std::byte* result,
                                     std::int64_t count, const Reducer& reducer, int local_root,
                                     const ReleaseGatherOptions& o, double timeout, Stats& stats);
[[noreturn]] void throw_sizes_differ(const NodeContext& ctx, std::int64_t bytes);
// The largest bcast chunk inlined beside its flag on a node of `local_size`
// ranks: 56 bytes in the flag's line, 312 with the lines after it on nodes
// of up to 8 ranks (release_gather.cc, kSpillLines).
std::int64_t rg_bcast_inline_bytes(int local_size);
// The largest reduce chunk inlined beside its flag: 312 bytes, the flag's
// line and the lines after it (each has one reader, its writer's parent).
std::int64_t rg_reduce_inline_bytes();
// A bcast that repeats the region's plan of `bytes` from `local_root` in
// one chunk (rg_bcast_repeat's steps, counting nothing, whatever the
// options): false, having done nothing, when it is no such repeat;
// ArgumentError when the local ranks' sizes differ. What the expresses run.
bool rg_bcast_replay(NodeContext& ctx, std::byte* buf, std::int64_t bytes, int local_root,
                     double timeout);
// The same for a reduce of `count` elements of `send` into the local root's
// `result` (rg_reduce_repeat's steps).
bool rg_reduce_replay(NodeContext& ctx, const std::byte* send, std::byte* result,
                      std::int64_t count, const Reducer& reducer, int local_root, double timeout);
// The express of a barrier on one node whose barrier ran before (door.h,
// Express): gather and release on the flags, without looking the segment up
// again (barrier_release_gather_express).
Express rg_barrier_express(NodeContext& ctx, double timeout);
// The express of a bcast (door.h, Express) that repeats the region's plan
// of `bytes` from `local_root` in one chunk (rg_bcast_repeat's steps
// without their options and counting): none (run null) when the region's
// plan is another. Made for one node and default options
// (bcast_release_gather_express).
Express rg_bcast_express(NodeContext& ctx, std::int64_t bytes, int local_root, double timeout);
// The same for a reduce of `count` elements of `reducer`'s type to
// `local_root` (reduce_release_gather_express).
Express rg_reduce_express(NodeContext& ctx, std::int64_t count, const Reducer& reducer,
                          int local_root, double timeout);
// A bcast that repeats the region's last plan in one chunk (a loop of the
// same small call, default options), inlined or through a slot: straight
// from the plan to the root's line or slot, no RgPhase built. False, having done nothing, when the
// call is no such repeat (rg_bcast_on_node then takes the general path); else `differ` is what
// rg_bcast_on_node returns.
bool rg_bcast_repeat(NodeContext& ctx, std::byte* buf, std::int64_t bytes, int local_root,
                     const ReleaseGatherOptions& o, double timeout, Stats& stats, bool& differ);

// One chunk of a reduce: my input combined with my children's partial
// results (`child_data(c)`: child c's chunk, once it is there) into `dst`
// (my slot, or the root's recvbuf); a leaf copies its input, by `stores`'
// way when given (its parent reads the slot from another core), else
// plainly. Counted by count_reduce_chunk.
template <class ChildData>
void rg_reduce_chunk(const std::vector<int>& children, ChildData&& child_data,
                     const std::byte* input, std::byte* dst, std::int64_t count,
                     const Reducer& reducer, RingStores* stores) {
  const std::byte* left = input;  // the first combine reads my input, later ones dst
  for (int c : children) {
    reducer.combine(dst, left, child_data(c), count, nullptr);
    left = dst;
  }
  const std::int64_t bytes = count * static_cast<std::int64_t>(reducer.elem_size());
  if (left == dst || bytes == 0) return;
  if (stores)  // a leaf: a copy
    stores->copy(dst, input, static_cast<std::size_t>(bytes));
  else
    local_copy(dst, input, static_cast<std::size_t>(bytes));
}

// What rg_reduce_chunk moved: a message per child combined, or the leaf's copy.
inline void count_reduce_chunk(std::size_t children, std::int64_t bytes, Stats& stats) {
  const std::int64_t messages = children ? static_cast<std::int64_t>(children) : bytes > 0;
  stats.intra_messages += messages;
  stats.intra_bytes += messages * bytes;
}

// The same for a reduce (rg_reduce_on_node).
bool rg_reduce_repeat(NodeContext& ctx, const std::byte* send, std::byte* result,
                      std::int64_t count, const Reducer& reducer, int local_root,
                      const ReleaseGatherOptions& o, double timeout, Stats& stats, bool& differ);

// Reduce by single copy on a node of exactly two ranks, from a size on
// (release_gather_single_copy.cc); `result` as for rg_reduce_on_node, or,
// `everywhere`, on both ranks (allreduce: no bcast phase needed).
bool rg_reduce_pair_fits(NodeContext& ctx, const ReleaseGatherOptions& o, std::int64_t bytes);
void rg_reduce_pair(NodeContext& ctx, const std::byte* send, std::byte* result, std::int64_t count,
                    const Reducer& reducer, int local_root, bool everywhere, double timeout,
                    Stats& stats);

// Several nodes: one rank per node stands for it between nodes (the root on
// the root's node, the leader elsewhere); trees over nodes are binomial.
int node_representative(const Topology& t, int node, int root);
// The tree over nodes rooted at the root's node: my representative's parent
// and children representatives (ranks of the communicator). Built once per
// root and layout, kept in the layout's state.
const pattern::TreeNode& node_tree(NodeContext& ctx, int root);

// The node's state, its segment holding buffers of `buffer_bytes` (collective over the node).
ReleaseGatherState& release_gather_state(NodeContext& ctx, std::size_t buffer_bytes);

// The options of a call (the defaults when the caller gave none).
const ReleaseGatherOptions& release_gather_options(const Options& opt);
const ReleaseGatherOptions& release_gather_defaults();

}  // namespace shancoll
