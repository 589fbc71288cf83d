// The nonblocking collectives (MPI_I<coll> and _c) of the PMPI library, on
// MPICH and its derivatives: one mechanism for all, each routed call made by
// the C API's request form (shancoll_i<coll>_c; `auto` chooses, as there).
//
// The program gets an MPI request and completes it with any MPI function
// (MPI_Wait, MPI_Test, MPI_Waitall, MPI_Waitany, ..., from C, Fortran or
// mpi4py), none of which shancoll sees. So the request is one of MPICH's
// extended generalized requests (MPIX_Grequest_start): MPICH calls its poll
// function from inside every test and wait on it, the poll function advances
// shancoll's request (shancoll_test) and, once that is done, completes the
// generalized request. Progress happens only inside those calls, exactly as
// for the C API's requests, so no progress thread and no hook on
// MPI_Wait/MPI_Test is needed.
//
// Without MPIX_Grequest_start (other MPI libraries) a standard generalized
// request would need the program to complete it: the nonblocking
// collectives are then not interposed at all (every call reaches the MPI
// library).
//
// Deadline: MPI_Wait only polls, so the poll keeps the rule of every wait of
// shancoll (SHANCOLL_TIMEOUT, the call's timeout): when polls see no round
// of the schedule complete for that long, a peer is missing or late, and the
// request completes with an error (MPI_Wait/MPI_Test return it) instead of
// spinning forever. Rounds that keep completing, however slowly, reset it.
// The `mpi` algorithm's request is MPI's own: no deadline, as for a blocking
// call to MPI.
//
// Routed only where shancoll has an engine of its own that `auto` may choose
// (today: allreduce, coll/request/requests.cc). For the others auto's choice
// is the MPI library's own nonblocking call, and wrapping that request in a
// generalized one would only cost time (an allocation, a request of
// shancoll's and MPICH's grequest per call, polls through shancoll): they go
// straight to the library, and the verbose log says so.
//
// Not routed, besides the blocking collectives' cases (pmpi_common.h):
// MPI_Request_free or MPI_Cancel on an active request is erroneous for a
// collective in MPI; here it would stop progress, as no poll would come.
#include "pmpi_common.h"

#if defined(MPICH_VERSION)

#include <new>
#include <string_view>

namespace shancoll::pmpi {
namespace {

// One routed call, the generalized request's extra state.
struct Pending {
  shancoll_request request = SHANCOLL_REQUEST_NULL;
  MPI_Request self = MPI_REQUEST_NULL;
  int error = MPI_SUCCESS;
  std::int64_t bytes = 0;
  double start = 0;
  char algorithm[48] = "";  // copied: shancoll_last_algorithm() changes with the next call
  const char* collective = "";
  std::size_t rounds = 0;  // of the schedule, at the last poll that saw one complete
  double idle_since = 0;   // when polls began to see none
};

int query(void* state, MPI_Status* status) {
  PMPI_Status_set_elements(status, MPI_BYTE, 0);
  PMPI_Status_set_cancelled(status, 0);
  status->MPI_SOURCE = MPI_UNDEFINED;
  status->MPI_TAG = MPI_UNDEFINED;
  return static_cast<Pending*>(state)->error;  // MPI_Wait/Test return it
}

int free_state(void* state) {
  delete static_cast<Pending*>(state);
  return MPI_SUCCESS;
}

// MPI: a collective's request cannot be cancelled; nothing to undo.
int cancel(void*, int) { return MPI_SUCCESS; }

// True when the schedule has completed no round for longer than the call's
// timeout; then frees the request (its receives cancelled) and says so.
bool stalled(Pending* p) {
  std::size_t rounds = 0;
  double timeout = 0;
  if (!capi::request_progress(p->request, rounds, timeout)) return false;
  const double now = PMPI_Wtime();
  if (rounds != p->rounds || p->idle_since == 0) {
    p->rounds = rounds;
    p->idle_since = now;
    return false;
  }
  if (now - p->idle_since <= timeout) return false;
  std::fprintf(stderr,
               "shancoll_pmpi: %s: no round completed for more than %g s (a peer rank is missing "
               "from the collective or late; see SHANCOLL_TIMEOUT)\n",
               p->collective, timeout);
  capi::free_request(&p->request);
  return true;
}

// Advances the allreduce; completes the generalized request when it is done
// or failed (the error then comes out of MPI_Wait/MPI_Test through query).
int poll(void* state, MPI_Status*) {
  auto* p = static_cast<Pending*>(state);
  if (p->request == SHANCOLL_REQUEST_NULL) return MPI_SUCCESS;  // completed already
  int flag = 0;
  const int rc = shancoll_test(&p->request, &flag);
  if (rc != MPI_SUCCESS) {
    std::fprintf(stderr, "shancoll_pmpi: %s failed: %s\n", p->collective, shancoll_last_error());
    p->error = rc;
    p->request = SHANCOLL_REQUEST_NULL;  // freed by shancoll_test
  } else if (!flag && stalled(p)) {
    p->error = MPI_ERR_OTHER;
  }
  if (p->request != SHANCOLL_REQUEST_NULL) return MPI_SUCCESS;
  if (summary() && rc == MPI_SUCCESS)
    record(p->collective, p->algorithm, p->bytes, PMPI_Wtime() - p->start);
  return PMPI_Grequest_complete(p->self);
}

// MPICH calls this (timeout 0, repeatedly) instead of poll from MPI_Waitall
// and MPI_Waitany on several requests of this kind: poll each.
int poll_all(int count, void** states, double, MPI_Status* status) {
  for (int i = 0; i < count; ++i) poll(states[i], status);
  return MPI_SUCCESS;
}

// Starts the collective (make: the C API's request form) and its
// generalized request; refusals come back before any communication, as for
// the blocking calls.
template <class Make>
int start(const char* collective, std::int64_t bytes, MPI_Request* request, Make&& make) {
  if (!request) return MPI_ERR_REQUEST;  // refused: the MPI library reports it
  auto* p = new (std::nothrow) Pending;
  if (!p) return MPI_ERR_NO_MEM;
  p->collective = collective;
  p->start = summary() ? PMPI_Wtime() : 0;
  p->bytes = bytes;
  const int rc = make(&p->request);
  if (rc != MPI_SUCCESS) {
    delete p;
    return rc;
  }
  std::snprintf(p->algorithm, sizeof p->algorithm, "%s", shancoll_last_algorithm());
  const int started = PMPIX_Grequest_start(query, free_state, cancel, poll, poll_all, p, request);
  if (started != MPI_SUCCESS) {  // communication has begun: no fallback possible
    shancoll_wait(&p->request);
    delete p;
    return MPI_ERR_OTHER;
  }
  p->self = *request;
  return MPI_SUCCESS;
}

// Whether shancoll has an engine of its own for a nonblocking collective
// (the header): known when the library is compiled.
constexpr bool own_engine(std::string_view mpi_name) {
  return mpi_name.substr(0, 14) == "MPI_Iallreduce";
}

// The library's own call, said and counted as such.
template <class Bytes, class Library>
int to_library(const char* collective, MPI_Comm comm, Bytes&& bytes, const char* why,
               Library&& library_call) {
  report(collective, comm, "to the MPI library: ", why);
  const double t0 = summary() ? PMPI_Wtime() : 0;
  const int lib = library_call();
  if (summary()) record(collective, kLibrary, bytes(), PMPI_Wtime() - t0);
  return lib;
}

// Routes one call (pmpi_common.h's interpose, with the summary recorded at
// completion for routed calls). bytes(): for the summary, evaluated only
// when it is on (the blocking calls' measure: a gather's own block, an
// allgather's or alltoall's result, a reduce-scatter's block).
template <class Bytes, class Make, class Library>
int route(const char* collective, MPI_Comm comm, Bytes&& bytes, MPI_Request* request, Make&& make,
          Library&& library_call) {
  if (capi::inside()) return library_call();
  const char* why = global_fallback();
  const int rc = why ? MPI_ERR_OTHER : start(collective, summary() ? bytes() : 0, request, make);
  if (rc == MPI_SUCCESS) {
    report(collective, comm, "routed to shancoll ", shancoll_last_algorithm());
    return rc;
  }
  if (why || capi::refused(rc)) {
    if (why)
      report(collective, comm, "fallback: ", why);
    else
      report_refusal(collective, comm, shancoll_last_error());
    const double t0 = summary() ? PMPI_Wtime() : 0;
    const int lib = library_call();
    if (summary()) record(collective, kLibrary, bytes(), PMPI_Wtime() - t0);
    return lib;
  }
  return failed(collective, comm, rc);
}

}  // namespace
}  // namespace shancoll::pmpi

extern "C" {

// One line per interposed call: the MPI signature (the C API's without
// algorithm and options), the C API's request form, the library's own call.
#define SHANCOLL_UNPAREN(...) __VA_ARGS__
#define SHANCOLL_PMPI_REQUEST(mpi, capi, bytes, params, args)                 \
  int MPI_##mpi(SHANCOLL_UNPAREN params, MPI_Request* request) {              \
    if constexpr (!shancoll::pmpi::own_engine("MPI_" #mpi))                   \
      return shancoll::pmpi::to_library(                                      \
          "MPI_" #mpi, comm, [&] { return std::int64_t{bytes}; },             \
          "auto's choice (shancoll has no faster engine for it)",             \
          [&] { return PMPI_##mpi(SHANCOLL_UNPAREN args, request); });        \
    return shancoll::pmpi::route(                                             \
        "MPI_" #mpi, comm, [&] { return std::int64_t{bytes}; }, request,      \
        [&](shancoll_request* r) {                                            \
          return shancoll_##capi(SHANCOLL_UNPAREN args, nullptr, nullptr, r); \
        },                                                                    \
        [&] { return PMPI_##mpi(SHANCOLL_UNPAREN args, request); });          \
  }
SHANCOLL_PMPI_REQUEST(Ibarrier, ibarrier, 0, (MPI_Comm comm), (comm))
SHANCOLL_PMPI_REQUEST(Ibcast, ibcast, shancoll::pmpi::bytes_of(count, datatype),
                      (void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm),
                      (buffer, count, datatype, root, comm))
SHANCOLL_PMPI_REQUEST(Ibcast_c, ibcast_c, shancoll::pmpi::bytes_of(count, datatype),
                      (void* buffer, MPI_Count count, MPI_Datatype datatype, int root,
                       MPI_Comm comm),
                      (buffer, count, datatype, root, comm))
SHANCOLL_PMPI_REQUEST(Ireduce, ireduce, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, int root, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, root, comm))
SHANCOLL_PMPI_REQUEST(Ireduce_c, ireduce_c, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op, int root, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, root, comm))
SHANCOLL_PMPI_REQUEST(Iallreduce, iallreduce, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Iallreduce_c, iallreduce_c, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Igather, igather,
                      (shancoll::pmpi::own_bytes(sendbuf, sendcount, sendtype, recvcount,
                                                 recvtype)),
                      (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(
    Igather_c, igather_c,
    (shancoll::pmpi::own_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype)),
    (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
     MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(
    Igatherv, igatherv,
    (shancoll::pmpi::own_bytes(
        sendbuf, sendcount, sendtype,
        sendbuf == MPI_IN_PLACE ? shancoll::pmpi::count_at_root(recvcounts, comm) : 0, recvtype)),
    (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root, MPI_Comm comm),
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(
    Igatherv_c, igatherv_c,
    (shancoll::pmpi::own_bytes(
        sendbuf, sendcount, sendtype,
        sendbuf == MPI_IN_PLACE ? shancoll::pmpi::count_at_root(recvcounts, comm) : 0, recvtype)),
    (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype, int root,
     MPI_Comm comm),
    (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(Iscatter, iscatter,
                      (shancoll::pmpi::own_bytes(recvbuf, recvcount, recvtype, sendcount,
                                                 sendtype)),
                      (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(
    Iscatter_c, iscatter_c,
    (shancoll::pmpi::own_bytes(recvbuf, recvcount, recvtype, sendcount, sendtype)),
    (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
     MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
    (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(
    Iscatterv, iscatterv,
    (shancoll::pmpi::own_bytes(
        recvbuf, recvcount, recvtype,
        recvbuf == MPI_IN_PLACE ? shancoll::pmpi::count_at_root(sendcounts, comm) : 0, sendtype)),
    (const void* sendbuf, const int sendcounts[], const int displs[], MPI_Datatype sendtype,
     void* recvbuf, int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm),
    (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(
    Iscatterv_c, iscatterv_c,
    (shancoll::pmpi::own_bytes(
        recvbuf, recvcount, recvtype,
        recvbuf == MPI_IN_PLACE ? shancoll::pmpi::count_at_root(sendcounts, comm) : 0, sendtype)),
    (const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
     MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
     MPI_Comm comm),
    (sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype, root, comm))
SHANCOLL_PMPI_REQUEST(Iallgather, iallgather,
                      (shancoll::pmpi::gathered_bytes(recvcount, recvtype, comm)),
                      (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_REQUEST(Iallgather_c, iallgather_c,
                      (shancoll::pmpi::gathered_bytes(recvcount, recvtype, comm)),
                      (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_REQUEST(Iallgatherv, iallgatherv,
                      (shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm)),
                      (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                       MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm))
SHANCOLL_PMPI_REQUEST(Iallgatherv_c, iallgatherv_c,
                      (shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm)),
                      (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm))
SHANCOLL_PMPI_REQUEST(Ialltoall, ialltoall,
                      (shancoll::pmpi::gathered_bytes(recvcount, recvtype, comm)),
                      (const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_REQUEST(Ialltoall_c, ialltoall_c,
                      (shancoll::pmpi::gathered_bytes(recvcount, recvtype, comm)),
                      (const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm))
SHANCOLL_PMPI_REQUEST(Ialltoallv, ialltoallv,
                      (shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm)),
                      (const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm))
SHANCOLL_PMPI_REQUEST(Ialltoallv_c, ialltoallv_c,
                      (shancoll::pmpi::gathered_bytes(recvcounts, recvtype, comm)),
                      (const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                       const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm),
                      (sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                       recvtype, comm))
SHANCOLL_PMPI_REQUEST(Ireduce_scatter, ireduce_scatter,
                      (shancoll::pmpi::my_block_bytes(recvcounts, datatype, comm)),
                      (const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, recvcounts, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Ireduce_scatter_c, ireduce_scatter_c,
                      (shancoll::pmpi::my_block_bytes(recvcounts, datatype, comm)),
                      (const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, recvcounts, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Ireduce_scatter_block, ireduce_scatter_block,
                      (shancoll::pmpi::bytes_of(recvcount, datatype)),
                      (const void* sendbuf, void* recvbuf, int recvcount, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, recvcount, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Ireduce_scatter_block_c, ireduce_scatter_block_c,
                      (shancoll::pmpi::bytes_of(recvcount, datatype)),
                      (const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, recvcount, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Iscan, iscan, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Iscan_c, iscan_c, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Iexscan, iexscan, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, comm))
SHANCOLL_PMPI_REQUEST(Iexscan_c, iexscan_c, shancoll::pmpi::bytes_of(count, datatype),
                      (const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm),
                      (sendbuf, recvbuf, count, datatype, op, comm))
#undef SHANCOLL_PMPI_REQUEST
#undef SHANCOLL_UNPAREN

}  // extern "C"

#endif  // MPICH_VERSION
