// Internal to the C API and the PMPI library (both link capi/shancoll_capi.cc).
#pragma once

#include <cstddef>
#include <string>

#include "shancoll.h"

namespace shancoll::capi {

// True while this thread runs inside a shancoll C API call. The PMPI library
// checks it first: shancoll's own MPI calls (the `mpi` algorithms, topology
// discovery) must reach the MPI library, not shancoll again.
bool inside();

// Error classes meaning "refused before any communication": the caller may
// run the MPI library's collective instead (MPI_ERR_OTHER means it failed
// during the collective; a checked-mode disagreement, that the ranks' calls
// do not match, is no refusal either).
bool refused(int code);

// The trees this thread's last successful call ran (release_gather), as
// "reduce tree: ...; bcast tree: ..."; "" for the other algorithms. For the
// PMPI library's verbose lines (formatted only when asked).
std::string last_trees();

// A split-phase request's progress, for a deadline kept by its caller: the
// rounds of shancoll's schedule done so far, and the call's timeout; false
// when the request is MPI's own (the `mpi` algorithm) or null.
bool request_progress(shancoll_request request, std::size_t& rounds, double& timeout);
// Abandons a request (its posted receives cancelled) and nulls the handle.
void free_request(shancoll_request* request);

}  // namespace shancoll::capi
