// Gather and gatherv: every rank's block (send_bytes of it) ends at the
// root, rank r's at recv + displs[r]. The core works in bytes, as
// allgatherv does: the datatype does not matter for a pure data movement.
// As in MPI, counts and displacements are the root's alone: the other ranks
// know only their own block, and the algorithms carry the counts along
// (coll/rooted_tree.h) so that the root checks every block before it lands.
//
// Every algorithm has this signature; the registry and the rule behind
// "auto": gather_select.cc; the door every front end calls: gather.cc.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/options.h"

namespace shancoll {

struct GathervArgs {
  const std::byte* send = nullptr;       // nullptr: in place (the root's block is in recv)
  std::int64_t send_bytes = 0;           // my block
  std::byte* recv = nullptr;             // the root's; ignored elsewhere
  const std::int64_t* counts = nullptr;  // the root's: bytes per rank
  const std::int64_t* displs = nullptr;  // the root's: bytes per rank
  int root = 0;
  bool regular = false;  // gather: one block size everywhere, in rank order (MPI_Gather)
};

using GathervFn = void (*)(Comm&, const GathervArgs&, const Options&, Stats&);

void gatherv_shan(Comm&, const GathervArgs&, const Options&, Stats&);
void gatherv_binomial(Comm&, const GathervArgs&, const Options&, Stats&);
void gatherv_mpi(Comm&, const GathervArgs&, const Options&, Stats&);

void gatherv_shan_channels(Comm& comm, NodeContext& ctx, const GathervArgs& args,
                           const Options& opt, Stats& stats);

// The root's check of a block that arrived: ArgumentError naming
// recvcounts unless rank `rank` sent what recvcounts[rank] expects. Kept
// until the call's communication is over (then thrown), so that a mismatch
// leaves no message behind and the communicator usable.
struct BlockCheck {
  int rank = -1;  // the first mismatch, -1: none
  std::int64_t sent = 0, expected = 0;
  bool fits(int r, std::int64_t sent_bytes, std::int64_t expected_bytes);
  void throw_if_failed() const;
};

class TreeGather;  // coll/rooted_tree.h
struct TreeMembers;

// The root's part of the tree gather (gather_binomial.cc, shan's between
// nodes): waits for its children's subtrees and copies every block that
// passes `check` to its displacement.
void gather_tree_root(Comm& comm, TreeGather& tree, const TreeMembers& m, const GathervArgs& args,
                      BlockCheck& check);

// ---------------------------------------------------------------------------
// The registry (gather_select.cc)

struct GathervAlgorithm {
  const char* name;
  GathervFn fn;
  const char* summary;
};

const Registry<GathervAlgorithm>& gatherv_registry();

// "auto": the active rule table (rules.h; gather rows by the block's bytes,
// gatherv rows by 0: no rank knows every block), else the built-in rule:
// shan on one node of one host (its shared-memory path, one copy per block
// from 32 KiB), the MPI library's everywhere else. The same on every rank.
std::string choose_gatherv(bool regular, std::int64_t block_bytes, int ranks, int nodes, int hosts);

// ---------------------------------------------------------------------------
// The door: gather and gatherv from every front end (Python, the C API, the
// PMPI library, the bench). Resolves the options and the algorithm
// (SHANCOLL_GATHER(V)_ALGORITHM), checks everything it can before any
// communication, runs, and records what ran in the Comm.

struct TypedRooted;  // coll/request/requests.h

struct GathervCall {
  MPI_Comm comm = MPI_COMM_NULL;         // an intra-communicator
  GathervArgs args;                      // bytes; regular: gather
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
  // The C API's request forms under `mpi`: the caller's own buffers and
  // datatypes, which the request passes to MPI as they are (args: unused).
  const TypedRooted* typed = nullptr;
};

Comm& gatherv(const GathervCall& call);

// A repeated gather: its buffers, block and root, without the layout's
// arrays (the plan keeps them).
struct GatherRepeat {
  const std::byte* send = nullptr;  // nullptr: in place (the root)
  std::byte* recv = nullptr;        // the root's
  std::int64_t block = 0;           // bytes per rank
  int root = 0;
};

// The gather door's repeat path alone (door.h, RepeatPlan; as
// bcast_repeat, coll/rooted.h): true when `call` repeats the door's last
// plannable gather on `comm` (it ran), false when not.
bool gather_repeat(Comm& comm, const GatherRepeat& call);

}  // namespace shancoll
