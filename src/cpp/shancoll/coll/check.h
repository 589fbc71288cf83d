// Checked mode (the `check` option, SHANCOLL_CHECK=1): before a collective
// runs, its ranks verify that they agree on what the call is: the
// collective, the algorithm asked for, the root, the op, the element type and
// the counts each rank's arguments imply. MPI leaves a mismatch undefined;
// without this check shancoll may return wrong data quietly (a shorter count
// on one rank is a shorter message, not an error). On disagreement every rank
// raises the same ArgumentError naming the field and the ranks that differ,
// before any of the collective's own communication.
//
// Cost: one MPI_Allgather of kFields 64-bit integers per call on the
// communicator's dup (docs/performance.md has the measurement), so it is a
// debugging mode, off by default.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "shancoll/comm.h"
#include "shancoll/ops.h"

namespace shancoll {

// What a call is, as one rank sees it; -1 (or empty): not part of this collective.
struct CallShape {
  std::string_view collective;
  std::string_view algorithm;  // as asked for (the environment's resolved): "auto" included
  int root = -1;
  MPI_Op op = MPI_OP_NULL;
  int dtype = -1;                                     // DType, for reductions
  std::int64_t count = -1;                            // elements or bytes every rank must agree on
  const std::vector<std::int64_t>* counts = nullptr;  // allgatherv: bytes per rank
  std::int64_t send_bytes = -1;  // allgatherv: this rank's contribution (-1: in place)
  // Why this rank refuses its own arguments (an ArgumentError's message seen
  // by this rank alone: MPI_IN_PLACE off the root, the root's layout, ...);
  // empty: none. Every rank then raises it, naming the rank.
  std::string_view refusal;
};

// Collective over `comm`; ArgumentError "check: ..." on every rank when the
// ranks disagree, or "check: rank r refused <collective>: <its refusal>" on
// every rank when some rank refuses its own arguments (the lowest such
// rank's, sent to all); when every rank refuses, each its own refusal.
// Waits at most `timeout` (a missing rank: TimeoutError).
void check_agreement(Comm& comm, const CallShape& mine, double timeout);

// Set when this thread's collective door compares its call (checked mode):
// a front end that refuses a call itself, before reaching the door, asks it
// (cleared first) whether the ranks have compared this call already.
bool& door_compared();

}  // namespace shancoll
