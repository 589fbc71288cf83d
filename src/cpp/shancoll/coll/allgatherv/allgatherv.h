// Allgatherv: every rank contributes counts[rank] bytes, every rank ends with
// all contributions at their displacements. The core works in bytes: the
// datatype does not matter for a pure data movement, so one implementation
// serves every dtype (the bindings convert counts and displacements).
//
// Every algorithm has this signature and returns where the result is: the
// receive buffer, or (shan with recv == nullptr) the node-shared segment.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

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
bool shan_single_copy_fits(NodeContext& ctx, const AllgathervArgs& args);
const std::byte* shan_single_copy(Comm& comm, NodeContext& ctx, const AllgathervArgs& args,
                                  double timeout, Stats& stats);

// Copies this rank's own contribution into the receive buffer (not in place).
void copy_own_block(const Comm& comm, const AllgathervArgs& args);

}  // namespace shancoll
