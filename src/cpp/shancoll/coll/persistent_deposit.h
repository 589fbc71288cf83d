// The persistent deposit engines: allreduce, bcast, reduce and allgather(v)
// of more than 56 bytes (per rank) on one node of several ranks, the
// inline engines' (coll/persistent_inline.h) large-message counterparts,
// under the same names (allreduce and allgather(v) `shan`, bcast and reduce
// `release_gather`), and alltoall `shan` of blocks of at most 4 KiB. At _init the request gets a node segment of
// its own sized for the call (shm/deposit_areas.h); a start copies the rank's input into its area
// of the run, so that no peer needs its owner after the start (what the PMPI library's routing
// asks, capi/pmpi_persistent.cc); the peers take it chunk by chunk. No MPI call, no allocation per
// run.
//
// Each function makes its engine where it fits (one node of several ranks,
// more than 56 bytes), else returns null. Making one is collective over the
// node. Why each engine's number of areas per rank suffices: its .cc's
// header.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/ops.h"
#include "shancoll/shm/deposit_areas.h"
#include "shancoll/shm/flags.h"
#include "shancoll/topology.h"

namespace shancoll {

// Where the deposit engines serve: one node of several ranks, `bytes` past
// the inline lines' 56.
inline bool deposit_fits(const Topology& topo, std::int64_t bytes) {
  return topo.node_count == 1 && topo.local_size() > 1 &&
         bytes > static_cast<std::int64_t>(kInlineBytes);
}

// Chunk `c` of run `run`'s result, every rank's chunk c combined in rank
// order into `out` (the result's start; this rank's input read from `own`,
// the input's start), once every peer's chunk c is in its area; false
// before. `inputs`: one pointer per rank (scratch); `tmp`: a non-commutative
// MPI op's (Reducer::combine), or null. The allreduce and reduce engines'.
bool combine_deposited_chunk(const DepositAreas& areas, const Reducer& reducer, int me, int size,
                             std::uint64_t run, std::size_t c, std::size_t bytes,
                             const std::byte* own, std::byte* out,
                             std::vector<const std::byte*>& inputs, std::byte* tmp);

// allreduce_persistent_deposit.cc
std::unique_ptr<Engine> deposit_allreduce(const Topology& topo, const AllreduceArgs& args,
                                          const double& timeout);
// bcast_persistent_deposit.cc
std::unique_ptr<Engine> deposit_bcast(const Topology& topo, const BcastCall& call,
                                      const double& timeout);
// reduce_persistent_deposit.cc: predefined ops on the typed kernels only.
std::unique_ptr<Engine> deposit_reduce(const Topology& topo, const ReduceCall& call,
                                       const double& timeout);
// allgatherv_persistent_deposit.cc: allgather and allgatherv, the largest block past 56 bytes.
std::unique_ptr<Engine> deposit_allgatherv(const Topology& topo, const AllgathervCall& call,
                                           const double& timeout);
// alltoall_persistent_deposit.cc: alltoall (not alltoallv), blocks of at most 4 KiB.
std::unique_ptr<Engine> deposit_alltoall(const Topology& topo, const AlltoallvCall& call,
                                         const double& timeout);

}  // namespace shancoll
