// Allgatherv: every rank contributes counts[rank] bytes, every rank ends with
// all contributions at their displacements. The core works in bytes: the
// datatype does not matter for a pure data movement, so one implementation
// serves every dtype (the bindings convert counts and displacements).
//
// Every algorithm has this signature and returns where the result is: the
// receive buffer, or (shan with recv == nullptr) the node-shared segment.
// The registry and the rule behind "auto": allgatherv_select.cc; the door
// every front end calls: allgatherv.cc.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/options.h"

namespace shancoll {

struct AllgathervArgs {
  const std::byte* send = nullptr;   // nullptr: in place, already at recv + displs[rank]
  std::byte* recv = nullptr;         // nullptr: result stays in the node segment (shan)
  std::vector<std::int64_t> counts;  // bytes, one per rank
  std::vector<std::int64_t> displs;  // bytes, one per rank

  std::int64_t extent() const;  // bytes the result spans: max(displs + counts)
  std::int64_t total() const;   // sum of counts
};

using AllgathervFn = const std::byte* (*)(Comm&, const AllgathervArgs&, const Options&, Stats&);

const std::byte* allgatherv_shan(Comm&, const AllgathervArgs&, const Options&, Stats&);
const std::byte* allgatherv_ring(Comm&, const AllgathervArgs&, const Options&, Stats&);
const std::byte* allgatherv_bruck(Comm&, const AllgathervArgs&, const Options&, Stats&);
const std::byte* allgatherv_recursive_doubling(Comm&, const AllgathervArgs&, const Options&,
                                               Stats&);
const std::byte* allgatherv_mpi(Comm&, const AllgathervArgs&, const Options&, Stats&);

// shan on one node of two ranks, single copy (allgatherv_shan_single_copy.cc):
// whether it runs (alike on both ranks), and the call.
bool shan_single_copy_fits(NodeContext& ctx, const AllgathervArgs& args, int single_copy);
const std::byte* shan_single_copy(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                                  double timeout, Stats& stats);

// shan on one node, blocks of at most 56 bytes inlined beside their flags
// (allgatherv_shan_inline.cc): whether it runs (alike on every rank), and the call.
bool shan_inline_fits(NodeContext& ctx, const AllgathervArgs& args);
const std::byte* shan_inline(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                             double timeout, Stats& stats);

// shan on one node with a private recvbuf, blocks in chunks through a ring
// of `ring_window` bytes per rank (0: the default; allgatherv_shan_chunk_ring.cc):
// whether it runs (alike on every rank), and the call.
bool shan_chunk_ring_fits(NodeContext& ctx, const AllgathervArgs& args);
const std::byte* shan_chunk_ring(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                                 std::int64_t ring_window, double timeout, Stats& stats);

// Copies this rank's own contribution into the receive buffer (not in place).
void copy_own_block(const Comm& comm, const AllgathervArgs& args);

// ---------------------------------------------------------------------------
// The registry (allgatherv_select.cc)

struct AllgathervAlgorithm {
  const char* name;
  AllgathervFn fn;
  const char* summary;
};

const Registry<AllgathervAlgorithm>& allgatherv_registry();

// "auto": the active rule table (rules.h), else the built-in rule (measured:
// docs/performance.md). total: bytes of the result; private_recv: false for a
// node-shared result (only shan can give one). Pure: no communication.
// Across hosts (physical nodes) the built-in rule leaves the call to the MPI
// library (measured on two hosts: every shancoll algorithm was slower).
std::string choose_allgatherv(std::int64_t total, bool private_recv, int ranks, int nodes,
                              int hosts = 1);

// The algorithm for a name ("auto" or a registry name) on this layout.
const AllgathervAlgorithm& select_allgatherv(std::string_view name, const AllgathervArgs& args,
                                             const Topology& topo);

// ---------------------------------------------------------------------------
// The door: allgather and allgatherv from every front end (Python, the C
// API, the PMPI library, the bench). Resolves the options and the algorithm
// (SHANCOLL_ALLGATHER(V)_ALGORITHM), checks everything before any
// communication, runs, and records what ran in the Comm (last_stats,
// last_algorithm).

struct AllgathervCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an intra-communicator
  AllgathervArgs args;            // bytes; recv nullptr: the node-shared result (shan)
  std::int64_t send_bytes = -1;   // bytes at args.send, checked against counts[rank]; -1: not known
  bool allgather = false;         // for SHANCOLL_ALLGATHER_ALGORITHM and messages
  std::string_view algorithm;     // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

struct AllgathervResult {
  Comm& comm;
  const std::byte* data;  // the receive buffer, or the node-shared result
};

AllgathervResult allgatherv(const AllgathervCall& call);

// A repeated allgather into a receive buffer: its buffers and its block,
// without the layout's arrays (the plan keeps them).
struct AllgatherRepeat {
  const std::byte* send = nullptr;  // nullptr: in place
  std::byte* recv = nullptr;        // not null
  std::int64_t block = 0;           // bytes per rank
};

// The allgather door's repeat path alone (door.h, RepeatPlan; as
// bcast_repeat, coll/rooted.h): true when `call` repeats the door's last
// plannable allgather into a buffer on `comm` (it ran), false when not.
bool allgather_repeat(Comm& comm, const AllgatherRepeat& call);

// The allgatherv the intergroup collectives run within a group (`comm` set
// up), in place in `buf`: the same selection, no record.
void allgatherv_within(Comm& comm, const AllgathervArgs& args, std::string_view algorithm,
                       const Options& options, Stats& stats);

}  // namespace shancoll
