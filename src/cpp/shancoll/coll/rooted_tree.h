// The binomial tree of the rooted gathers and scatters (gather, gatherv,
// scatter, scatterv): its members are the ranks (binomial) or the nodes
// (shan), numbered relative to the root's member, and a subtree's blocks
// travel as one message in member order (pattern/binomial.h).
//
// Only the root knows every rank's count (MPI's recvcounts / sendcounts), so
// every edge carries two messages: the subtree's counts (a header of one
// int64 per rank), then its blocks. The root checks each count against its
// own before it copies a block (a rank whose call differs is an error at the
// root, never a write past a block); a scatter's receiver checks its own.
// Cost per edge: two messages, 8 bytes per rank of the subtree plus its
// blocks; every wait has the call's timeout.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "shancoll/comm.h"
#include "shancoll/cost.h"

namespace shancoll {

// The members of the tree for one root, kept per node layout (a loop of
// calls with one root builds them once: a repeated call allocates nothing).
struct TreeMembers {
  int root = -1;
  int count = 0;                      // members
  int me = 0;                         // my member (relative to the root's, 0)
  std::vector<int> ranks;             // every rank, member by member (in local order within a node)
  std::vector<int> first;             // member u's ranks: ranks[first[u] .. first[u + 1])
  std::vector<int> rep;               // the rank that sends and receives for member u
  std::vector<int> children;          // mine, increasing
  std::vector<std::int64_t> header;   // my subtree's counts, rank by rank (per call)
  std::vector<MPI_Request> requests;  // two per child (per call)

  int own_ranks() const { return first[me + 1] - first[me]; }
  int subtree_end(int v) const;  // the member after v's subtree
  // Header entries of a member's ranks from the start of my subtree.
  int index_of(int member) const { return first[member] - first[me]; }
};

// The members for `root`: every rank its own member (binomial) or every
// node one member, its representative the root on the root's node and the
// leader elsewhere (shan). Rebuilt only when the root changes.
TreeMembers& rank_members(NodeContext& ctx, int root);
TreeMembers& node_members(NodeContext& ctx, int root);

// One representative's part of a tree gather, in the order of the calls.
class TreeGather {
 public:
  TreeGather(Comm& comm, TreeMembers& m, const Topology& topo, double timeout, Stats& stats);
  // Posts the receives of my children's headers (before my member's own
  // step, which they overlap).
  void post_headers();
  // Waits for them; the bytes of my children's subtrees.
  std::int64_t wait_headers();
  // My member's counts, header()[0 .. own_ranks()), which the caller fills.
  std::int64_t* header() { return m_.header.data(); }
  bool has_children() const { return !m_.children.empty(); }
  // Receives my children's blocks into `into`, in member order.
  void receive(std::byte* into);
  // Sends my subtree (the header and `bytes` at `data`) to my parent.
  void send_up(const std::byte* data, std::int64_t bytes);

 private:
  Comm& comm_;
  TreeMembers& m_;
  const Topology& topo_;
  double timeout_;
  Stats& stats_;
};

// A representative other than the root: sends its member's blocks (`own`,
// `own_bytes`, contiguous) and its children's subtrees to its parent as one
// message: straight from `own` without children, else assembled in the
// Comm's scratch (`own` copied once). `copied()` runs once `own` is no
// longer read.
template <class Copied>
void gather_tree_send(Comm& comm, TreeGather& tree, const std::byte* own, std::int64_t own_bytes,
                      Copied&& copied) {
  const std::int64_t below = tree.wait_headers();
  if (!tree.has_children()) {
    tree.send_up(own, own_bytes);
    copied();
    return;
  }
  std::byte* buf = comm.scratch(static_cast<std::size_t>(own_bytes + below));
  if (own_bytes > 0) local_copy(buf, own, static_cast<std::size_t>(own_bytes));
  copied();
  tree.receive(buf + own_bytes);
  tree.send_up(buf, own_bytes + below);
}

// One representative's part of a tree scatter.
class TreeScatter {
 public:
  TreeScatter(Comm& comm, TreeMembers& m, const Topology& topo, double timeout, Stats& stats);
  // The root fills header()[k] for every rank of the tree (rank m.ranks[k]).
  std::int64_t* header() { return m_.header.data(); }
  // Not the root: receives my subtree's header from my parent; its bytes.
  std::int64_t receive_header();
  // Not the root: receives my subtree's `bytes` of blocks into `into`.
  void receive(std::byte* into, std::int64_t bytes);
  // Bytes of my member's own blocks (the start of my subtree's data).
  std::int64_t own_bytes() const;
  bool has_children() const { return !m_.children.empty(); }
  // Sends each child its header and blocks, which follow my member's own
  // in `children_data`; nonblocking until wait_sends().
  void send_down(const std::byte* children_data);
  void wait_sends();

 private:
  Comm& comm_;
  TreeMembers& m_;
  const Topology& topo_;
  double timeout_;
  Stats& stats_;
  int posted_ = 0;
};

// How the refusal of a block whose size its receiver does not expect ends:
// raised once the call's communication is over (every rank's part done), as
// an ArgumentError that the C API tells apart from a refusal before any
// communication (the PMPI library must not run the call again).
constexpr const char* kBlockNotWritten = " (the block was not written)";

// Tags on comm.mpi() (a private dup): headers and blocks, up and down.
constexpr int kGatherHeaderTag = 0x5c30;
constexpr int kGatherDataTag = 0x5c31;
constexpr int kScatterHeaderTag = 0x5c32;
constexpr int kScatterDataTag = 0x5c33;

}  // namespace shancoll
