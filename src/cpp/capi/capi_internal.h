// Internal to the C API and the PMPI library (both link capi/shancoll_capi.cc).
#pragma once

#include <cstddef>
#include <string>

#include "shancoll.h"

namespace shancoll {
class Comm;
}

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

// A repeated call the PMPI library routes to shancoll (pmpi_route.h): the
// door's repeat path (coll/door.h, RepeatPlan) on `comm`, the Comm of `user`,
// without the C API function's checks and conversions, which a call of the
// same arguments passed before. False when the door has no plan for the
// call (nothing was done: take the C API function); else true, and `rc` is
// what the C API function would have returned.
bool repeat_bcast(Comm& comm, MPI_Comm user, void* buffer, MPI_Count count, MPI_Datatype datatype,
                  int root, int& rc);
bool repeat_reduce(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf, MPI_Count count,
                   MPI_Datatype datatype, MPI_Op op, int root, int& rc);
bool repeat_allreduce(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf,
                      MPI_Count count, MPI_Datatype datatype, MPI_Op op, int& rc);
bool repeat_barrier(Comm& comm, MPI_Comm user, int& rc);
bool repeat_allgather(Comm& comm, const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                      MPI_Datatype recvtype, int& rc);
bool repeat_alltoall(Comm& comm, const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                     MPI_Datatype recvtype, int& rc);
bool repeat_reduce_scatter_block(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf,
                                 MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op, int& rc);
bool repeat_scan(Comm& comm, MPI_Comm user, const void* sendbuf, void* recvbuf, MPI_Count count,
                 MPI_Datatype datatype, MPI_Op op, bool exclusive, int& rc);
bool repeat_gather(Comm& comm, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                   void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, int& rc);
bool repeat_scatter(Comm& comm, const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                    void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root, int& rc);

// A split-phase request's progress, for a deadline kept by its caller: the
// rounds of shancoll's schedule done so far, and the call's timeout; false
// when the request is MPI's own (the `mpi` algorithm) or null.
bool request_progress(shancoll_request request, std::size_t& rounds, double& timeout);
// Abandons a request (its posted receives cancelled) and nulls the handle.
void free_request(shancoll_request* request);

}  // namespace shancoll::capi
