// The persistent inline engines of barrier, bcast, reduce and allgather(v)
// (allreduce's: coll/allreduce/allreduce_persistent_inline.h): at most 56
// bytes per rank on one node of several ranks, beside flags in lines of the
// request's own node segment (shm/inline_lines.h). A run makes no MPI call,
// allocates nothing and needs no progress from its owner after its start
// (what the PMPI library's routing asks, capi/pmpi_persistent.cc).
//
// Each function makes its engine where it fits (the same decision on every
// rank given the same arguments), else returns null. Making one is
// collective over the node (the segment's handshake, `timeout`). Why each
// engine's number of lines per rank suffices: its .cc's header.
#pragma once

#include <memory>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/topology.h"

namespace shancoll {

// barrier_persistent_inline.cc: no data, every rank's flag line.
std::unique_ptr<Engine> inline_barrier(const Topology& topo, const double& timeout);
// bcast_persistent_inline.cc
std::unique_ptr<Engine> inline_bcast(const Topology& topo, const BcastCall& call,
                                     const double& timeout);
// reduce_persistent_inline.cc: predefined ops on the typed kernels only.
std::unique_ptr<Engine> inline_reduce(const Topology& topo, const ReduceCall& call,
                                      const double& timeout);
// allgatherv_persistent_inline.cc: allgather and allgatherv, every count at most 56 bytes.
std::unique_ptr<Engine> inline_allgatherv(const Topology& topo, const AllgathervCall& call,
                                          const double& timeout);

}  // namespace shancoll
