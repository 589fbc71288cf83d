// Scatter and scatterv: the root's block for rank r (counts[r] bytes at
// send + displs[r]) ends in rank r's receive buffer. The core works in
// bytes. As in MPI, counts and displacements are the root's alone; the
// algorithms carry them along (coll/rooted_tree.h), and every rank checks
// the block it is sent against its own receive size before it lands.
//
// Every algorithm has this signature; the registry and the rule behind
// "auto": scatter_select.cc; the door every front end calls: scatter.cc.
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

struct ScattervArgs {
  const std::byte* send = nullptr;       // the root's; ignored elsewhere
  const std::int64_t* counts = nullptr;  // the root's: bytes per rank
  const std::int64_t* displs = nullptr;  // the root's: bytes per rank
  std::byte* recv = nullptr;             // nullptr: in place (the root's block stays in send)
  std::int64_t recv_bytes = 0;           // my block
  int root = 0;
  bool regular = false;  // scatter: one block size everywhere, in rank order (MPI_Scatter)
};

using ScattervFn = void (*)(Comm&, const ScattervArgs&, const Options&, Stats&);

void scatterv_shan(Comm&, const ScattervArgs&, const Options&, Stats&);
void scatterv_binomial(Comm&, const ScattervArgs&, const Options&, Stats&);
void scatterv_mpi(Comm&, const ScattervArgs&, const Options&, Stats&);

void scatterv_shan_channels(Comm& comm, NodeContext& ctx, const ScattervArgs& args,
                            const Options& opt, Stats& stats);

// ArgumentError naming recvbuf unless the root sent this rank what its
// receive buffer expects; called once the call's communication is over
// (the block was not written then), so the communicator stays usable.
void check_received(std::int64_t sent, std::int64_t expected);

class TreeScatter;  // coll/rooted_tree.h
struct TreeMembers;

// The root's part of the tree scatter (scatter_binomial.cc, shan's between
// nodes): every rank's count into the header, its children's blocks packed
// in member order into the Comm's scratch and sent (nonblocking).
void scatter_tree_root(Comm& comm, TreeScatter& tree, const TreeMembers& m,
                       const ScattervArgs& args);
// Any other representative: receives its subtree into the Comm's scratch
// and sends its children theirs (nonblocking); its member's blocks come
// first in the returned buffer.
const std::byte* scatter_tree_receive(Comm& comm, TreeScatter& tree);

// ---------------------------------------------------------------------------
// The registry (scatter_select.cc)

struct ScattervAlgorithm {
  const char* name;
  ScattervFn fn;
  const char* summary;
};

const Registry<ScattervAlgorithm>& scatterv_registry();

// "auto": the active rule table (rules.h; scatter rows by the block's
// bytes, scatterv rows by 0), else the built-in rule: shan on one node of
// one host, the MPI library's everywhere else. The same on every rank.
std::string choose_scatterv(bool regular, std::int64_t block_bytes, int ranks, int nodes,
                            int hosts);

// ---------------------------------------------------------------------------
// The door: scatter and scatterv from every front end. Resolves the options
// and the algorithm (SHANCOLL_SCATTER(V)_ALGORITHM), checks everything it can
// before any communication, runs, and records what ran in the Comm.

struct TypedRooted;  // coll/request/requests.h

struct ScattervCall {
  MPI_Comm comm = MPI_COMM_NULL;         // an intra-communicator
  ScattervArgs args;                     // bytes; regular: scatter
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
  // The C API's request forms under `mpi`: the caller's own buffers and
  // datatypes, which the request passes to MPI as they are (args: unused).
  const TypedRooted* typed = nullptr;
};

Comm& scatterv(const ScattervCall& call);

// A repeated scatter: its buffers, block and root, without the layout's
// arrays (the plan keeps them).
struct ScatterRepeat {
  const std::byte* send = nullptr;  // the root's
  std::byte* recv = nullptr;        // nullptr: in place (the root)
  std::int64_t block = 0;           // bytes per rank
  int root = 0;
};

// The scatter door's repeat path alone (door.h, RepeatPlan; as
// bcast_repeat, coll/rooted.h): true when `call` repeats the door's last
// plannable scatter on `comm` (it ran), false when not.
bool scatter_repeat(Comm& comm, const ScatterRepeat& call);

}  // namespace shancoll
