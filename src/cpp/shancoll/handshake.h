// The deadline of shancoll's set-up.
//
// Setting up a communicator (its dup, a node layout, shared segments,
// windows, transports, sub-communicators) runs blocking MPI calls without a
// timeout: MPI_Comm_dup, MPI_Comm_split(_type), MPI_Win_allocate_shared,
// MPI_Win_create, the PMPI_ collectives of the topology. A rank missing from
// the collective would hang every other rank in them forever. So every
// set-up step starts with handshake(): nonblocking barriers, waited on
// through wait_until with the call's timeout, after which every rank of the
// communicator has reached the step and stays in it, so that the blocking
// calls complete. Only where set-up starts, never on the repeated-call path.
//
// Two rounds, because a barrier completes for a rank that arrives after the
// others gave up waiting (they entered it): alone in the blocking calls, that
// late rank would hang. Only ranks that completed the first round enter the
// second, so the late rank times out there instead. (What is left: a rank
// giving up on the second round at the very moment the last one enters it.)
#pragma once

#include <mpi.h>

#include <string>

namespace shancoll {

// Collective over `comm` (intra- or inter-communicator). `step` names the
// set-up step in the TimeoutError, e.g. "the node layout (ranks_per_node=2)".
void handshake(MPI_Comm comm, const std::string& step, double timeout);

}  // namespace shancoll
