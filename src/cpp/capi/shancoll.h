/* shancoll's C API: its collectives on plain MPI communicators and datatypes.
 *
 * Link with -lshancoll (installed in <site-packages>/shancoll/lib, this header
 * in <site-packages>/shancoll/include) and the MPI library shancoll was built
 * with. Every function is collective on `comm` and takes the arguments of the
 * MPI function of the same name, plus
 *   `algorithm`: a shancoll algorithm name ("ring", "release_gather", ...;
 *     shancoll_algorithms lists them), or NULL / "" / "auto" for the
 *     environment variable SHANCOLL_<COLL>_ALGORITHM, else shancoll's choice
 *     (allgather: SHANCOLL_ALLGATHER_ALGORITHM, else
 *     SHANCOLL_ALLGATHERV_ALGORITHM);
 *   `options`: "key=value,key=value" (NULL or "": none), over the
 *     environment variable SHANCOLL_<COLL>_OPTIONS in the same form (a key
 *     given in the call wins), over the defaults. The same keys, checked by
 *     the same table and refused in the same words, as the Python keywords
 *     of the same name:
 *       all collectives: timeout=<seconds per wait> (default SHANCOLL_TIMEOUT
 *         or 120), ranks_per_node=<n> (virtual nodes of n consecutive ranks;
 *         0: the physical nodes; default SHANCOLL_RANKS_PER_NODE), check=1|0
 *         (checked mode, default SHANCOLL_CHECK: before running, the ranks
 *         verify that they agree on the collective, algorithm, root, op,
 *         datatype and counts; on disagreement every rank returns
 *         MPI_ERR_ARG with a message starting "check:", and the PMPI library
 *         calls the communicator's error handler instead of falling back);
 *       allgather, allgatherv: block_size=<bytes> (shan; 0 chooses),
 *         transport=auto|rma|two_sided;
 *       allreduce, iallreduce: ports=<n> (dissemination family; 0 chooses),
 *         consistent=1|0 (0 lets "auto" pick algorithms whose floating-point
 *         results may differ in the last bits between ranks);
 *       bcast, reduce, and allreduce's release_gather: tree=auto|flat|kary|
 *         knomial, k=<n>, skew=auto|left|right, topology=auto|none|
 *         socket_leader_first|socket_leader_last (each also as bcast_<key>
 *         or reduce_<key> for one phase's tree, which wins over the plain
 *         key), sockets=auto|<count>|<socket per local rank, e.g. 0,1,0,1>,
 *         buffer_size=<bytes>, buffers=<n>, inline=1|0, read_from_parent=1|0,
 *         data_copy=1|0, single_copy=1|0 (none of them with
 *         another algorithm named in `algorithm`);
 *       allreduce only: inter_algorithm=<allreduce algorithm among node leaders>,
 *         block_size=<bytes> (pieces: bytes per piece; 0 chooses);
 *     An unknown key or a bad value is refused with MPI_ERR_ARG, before any
 *     communication, on every rank.
 *
 * From Fortran: bind the functions with ISO_C_BINDING (strings end with
 * c_null_char, NULL is c_null_ptr). With MPICH and its derivatives the
 * Fortran INTEGER handles are the C handles (pass them by value as
 * integer(c_int)); elsewhere a C shim applies MPI_Comm_f2c, MPI_Type_f2c and
 * MPI_Op_f2c (tests/fortran/f2c_shim.c). tests/fortran/capi_example.f90 is a
 * complete program using both.
 *
 * What runs:
 *   - intra-communicators only;
 *   - predefined (named) datatypes whose extent equals their size (no
 *     derived types, no MPI_DOUBLE_INT-style pair types);
 *   - reductions: the C integer, floating-point, complex and bool types (and
 *     Fortran's MPI_INTEGER, MPI_REAL, MPI_DOUBLE_PRECISION, MPI_COMPLEX,
 *     MPI_DOUBLE_COMPLEX), with
 *     the predefined arithmetic, logical and bitwise ops, or any user op
 *     (non-commutative ones only with algorithms that combine in rank order);
 *   - MPI_IN_PLACE where MPI allows it.
 *
 * Errors: the functions never throw, and abort only as SHANCOLL_ON_ERROR=abort
 * asks (below). They return MPI_SUCCESS or an MPI error class, and
 * shancoll_last_error() describes the last error of the calling thread:
 *   MPI_ERR_COMM, MPI_ERR_TYPE, MPI_ERR_OP, MPI_ERR_ARG, MPI_ERR_COUNT,
 *   MPI_ERR_ROOT, MPI_ERR_BUFFER, MPI_ERR_REQUEST: refused before any communication (the same
 *     arguments on every rank are refused on every rank);
 *   MPI_ERR_OTHER: failed during the collective (timeout, MPI error); the
 *     communicator's shancoll state is then undefined and later shancoll
 *     calls on it are refused: use a new communicator. With the environment
 *     variable SHANCOLL_ON_ERROR=abort such a failure (in shancoll_test and
 *     shancoll_wait too, a wait's timeout included) instead prints one line
 *     to stderr and calls MPI_Abort(MPI_COMM_WORLD, 1): the call does not
 *     return. An invalid SHANCOLL_ON_ERROR or SHANCOLL_RING_STORES is refused
 *     with MPI_ERR_ARG.
 *
 * Threads: at MPI_THREAD_MULTIPLE, threads may call shancoll at once on
 * different communicators (MPI's own rule for collectives: never two at once
 * on one communicator). Per-communicator state is not locked under that
 * rule; process-wide state (the communicator registry, caches, the rule
 * table) is safe for concurrent calls on different communicators, and
 * communicators may be created and freed by other threads meanwhile. A
 * request from shancoll_iallreduce may be tested or waited on by any thread,
 * one at a time. The PMPI library routes every thread level alike.
 */
#ifndef SHANCOLL_H
#define SHANCOLL_H

#include <mpi.h>

#ifdef __cplusplus
extern "C" {
#endif

/* MPI_Allgather: recvcount elements of recvtype from every rank. */
int shancoll_allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                       const char* options);

/* MPI_Allgatherv: rank r's recvcounts[r] elements land at recvbuf + displs[r] elements. */
int shancoll_allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                        MPI_Comm comm, const char* algorithm, const char* options);

/* MPI_Allreduce; sendbuf == MPI_IN_PLACE takes the input from recvbuf. */
int shancoll_allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options);

/* MPI_Alltoall: block j (sendcount elements of sendtype) to rank j, block i
 * of recvbuf (recvcount elements of recvtype) from rank i; sendbuf ==
 * MPI_IN_PLACE takes the blocks from recvbuf. algorithm: NULL/""
 * (SHANCOLL_ALLTOALL_ALGORITHM, else SHANCOLL_ALLTOALLV_ALGORITHM, else
 * "auto"), "auto", "shan", "pairwise", "bruck" or "mpi"; options: timeout,
 * check, ranks_per_node. */
int shancoll_alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                      const char* options);

/* MPI_Alltoallv: sendcounts[j] elements at sendbuf + sdispls[j] to rank j,
 * recvcounts[i] elements at recvbuf + rdispls[i] from rank i (in elements of
 * the send and receive types); sendbuf == MPI_IN_PLACE takes the blocks from
 * recvbuf, laid out by recvcounts and rdispls. */
int shancoll_alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                       MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                       const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                       const char* algorithm, const char* options);

/* MPI_Barrier: returns once every rank of comm has called it. algorithm:
 * NULL/"" (SHANCOLL_BARRIER_ALGORITHM, else "auto"), "auto", "release_gather",
 * "dissemination" or "mpi"; options: timeout, check, ranks_per_node. */
int shancoll_barrier(MPI_Comm comm, const char* algorithm, const char* options);

/* MPI_Gather: sendcount elements of sendtype from every rank, in rank order
 * at root's recvbuf (recvcount elements of recvtype each; recvbuf, recvcount
 * and recvtype are read at the root only). MPI_IN_PLACE as sendbuf at the
 * root: its block is already in recvbuf. Only the root knows every count:
 * a block whose size differs from the root's count is refused at the root
 * with MPI_ERR_TRUNCATE once the call's messages are over (the block is not
 * written; the other ranks return MPI_SUCCESS; the communicator stays
 * usable). algorithm: NULL/"" (SHANCOLL_GATHER_ALGORITHM, else
 * SHANCOLL_GATHERV_ALGORITHM, else "auto"), "auto", "shan", "binomial" or
 * "mpi"; options: timeout, check, ranks_per_node. */
int shancoll_gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                    int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                    const char* algorithm, const char* options);

/* MPI_Gatherv: rank r's block lands at root's recvbuf + displs[r] elements
 * (recvcounts and displs read at the root only); as shancoll_gather. */
int shancoll_gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                     MPI_Comm comm, const char* algorithm, const char* options);

/* MPI_Scatter: block r of root's sendbuf (sendcount elements of sendtype
 * each, read at the root only) to rank r's recvbuf. MPI_IN_PLACE as recvbuf
 * at the root: its block stays in sendbuf. A rank whose recvcount differs
 * from what the root sends it returns MPI_ERR_TRUNCATE once the call's
 * messages are over (its buffer not written); the others MPI_SUCCESS.
 * algorithm: SHANCOLL_SCATTER_ALGORITHM, else SHANCOLL_SCATTERV_ALGORITHM,
 * as shancoll_gather. */
int shancoll_scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                     const char* algorithm, const char* options);

/* MPI_Scatterv: rank r receives sendcounts[r] elements at root's sendbuf +
 * displs[r] (both read at the root only); as shancoll_scatter. */
int shancoll_scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                      MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                      int root, MPI_Comm comm, const char* algorithm, const char* options);

/* MPI_Bcast of count elements from root. */
int shancoll_bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                   const char* algorithm, const char* options);

/* MPI_Reduce into root's recvbuf; MPI_IN_PLACE is valid at the root only. */
int shancoll_reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    int root, MPI_Comm comm, const char* algorithm, const char* options);

/* Requests: the nonblocking (shancoll_i<coll>) and persistent
 * (shancoll_<coll>_init, MPI-4's MPI_<Coll>_init) form of every collective
 * below, with the blocking function's arguments and checks plus the request
 * (coll/request/requests.h). Progress happens only inside shancoll's test,
 * wait and other waits (no thread). algorithm: NULL/"" or "auto" (allreduce:
 * its built-in rule among its schedules and "mpi"; the others: "mpi"),
 * "mpi" (the MPI library's own nonblocking or persistent collective), or
 * the collective's shancoll schedule: barrier "dissemination", bcast
 * "binomial", allgather(v) "ring", alltoall(v) "pairwise", allreduce
 * "dissemination", "nway_dissemination", "bruck", "pairwise_exchange",
 * "binomial". The buffers must stay untouched while the request is active.
 * Every rank starts its requests on a communicator in the same order; the
 * communicator must not be freed while one exists. Datatypes: as the
 * blocking calls, except that gather(v)/scatter(v) refuse derived types
 * (MPI_ERR_TYPE) rather than stage them. A persistent request is made
 * inactive: shancoll_start (or shancoll_startall) runs it on the buffers'
 * current contents; MPI_ERR_ARG if it is still active. */
typedef struct shancoll_request_s* shancoll_request;
#define SHANCOLL_REQUEST_NULL ((shancoll_request)0)

int shancoll_ibarrier(MPI_Comm comm, const char* algorithm, const char* options,
                      shancoll_request* request);
int shancoll_barrier_init(MPI_Comm comm, const char* algorithm, const char* options,
                          shancoll_request* request);
int shancoll_ibcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                    const char* algorithm, const char* options, shancoll_request* request);
int shancoll_bcast_init(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                        const char* algorithm, const char* options, shancoll_request* request);
int shancoll_ibcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                      const char* algorithm, const char* options, shancoll_request* request);
int shancoll_bcast_init_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root,
                          MPI_Comm comm, const char* algorithm, const char* options,
                          shancoll_request* request);
int shancoll_ireduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, int root, MPI_Comm comm, const char* algorithm, const char* options,
                     shancoll_request* request);
int shancoll_reduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, int root, MPI_Comm comm, const char* algorithm,
                         const char* options, shancoll_request* request);
int shancoll_ireduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op, int root, MPI_Comm comm, const char* algorithm,
                       const char* options, shancoll_request* request);
int shancoll_reduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, int root, MPI_Comm comm,
                           const char* algorithm, const char* options, shancoll_request* request);
int shancoll_iallreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                        MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                        shancoll_request* request);
int shancoll_allreduce_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                            MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                            shancoll_request* request);
int shancoll_iallreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                          const char* options, shancoll_request* request);
int shancoll_allreduce_init_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              const char* algorithm, const char* options,
                              shancoll_request* request);
int shancoll_igather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                     int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                     const char* algorithm, const char* options, shancoll_request* request);
int shancoll_gather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                         const char* algorithm, const char* options, shancoll_request* request);
int shancoll_igather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, const char* algorithm, const char* options,
                       shancoll_request* request);
int shancoll_gather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                           MPI_Comm comm, const char* algorithm, const char* options,
                           shancoll_request* request);
int shancoll_igatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                      MPI_Comm comm, const char* algorithm, const char* options,
                      shancoll_request* request);
int shancoll_gatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                          int root, MPI_Comm comm, const char* algorithm, const char* options,
                          shancoll_request* request);
int shancoll_igatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                        MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                        const char* options, shancoll_request* request);
int shancoll_gatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                            MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                            const char* options, shancoll_request* request);
int shancoll_iscatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                      int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                      const char* algorithm, const char* options, shancoll_request* request);
int shancoll_scatter_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                          int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                          const char* algorithm, const char* options, shancoll_request* request);
int shancoll_iscatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                        MPI_Comm comm, const char* algorithm, const char* options,
                        shancoll_request* request);
int shancoll_scatter_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                            MPI_Comm comm, const char* algorithm, const char* options,
                            shancoll_request* request);
int shancoll_iscatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                       MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                       int root, MPI_Comm comm, const char* algorithm, const char* options,
                       shancoll_request* request);
int shancoll_scatterv_init(const void* sendbuf, const int sendcounts[], const int displs[],
                           MPI_Datatype sendtype, void* recvbuf, int recvcount,
                           MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                           const char* options, shancoll_request* request);
int shancoll_iscatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                         MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                         MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                         const char* options, shancoll_request* request);
int shancoll_scatterv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                             const MPI_Aint displs[], MPI_Datatype sendtype, void* recvbuf,
                             MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm,
                             const char* algorithm, const char* options, shancoll_request* request);
int shancoll_iallgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                        int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                        const char* options, shancoll_request* request);
int shancoll_allgather_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                            void* recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                            const char* algorithm, const char* options, shancoll_request* request);
int shancoll_iallgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                          const char* algorithm, const char* options, shancoll_request* request);
int shancoll_allgather_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm, const char* algorithm, const char* options,
                              shancoll_request* request);
int shancoll_iallgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                         const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                         MPI_Comm comm, const char* algorithm, const char* options,
                         shancoll_request* request);
int shancoll_allgatherv_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype,
                             void* recvbuf, const int recvcounts[], const int displs[],
                             MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                             const char* options, shancoll_request* request);
int shancoll_iallgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                           void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                           MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                           const char* options, shancoll_request* request);
int shancoll_allgatherv_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                               const char* options, shancoll_request* request);
int shancoll_ialltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                       const char* options, shancoll_request* request);
int shancoll_alltoall_init(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                           int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                           const char* algorithm, const char* options, shancoll_request* request);
int shancoll_ialltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         const char* algorithm, const char* options, shancoll_request* request);
int shancoll_alltoall_init_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                             void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                             MPI_Comm comm, const char* algorithm, const char* options,
                             shancoll_request* request);
int shancoll_ialltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                        MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                        const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options, shancoll_request* request);
int shancoll_alltoallv_init(const void* sendbuf, const int sendcounts[], const int sdispls[],
                            MPI_Datatype sendtype, void* recvbuf, const int recvcounts[],
                            const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                            const char* algorithm, const char* options, shancoll_request* request);
int shancoll_ialltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                          const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                          const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                          MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                          const char* options, shancoll_request* request);
int shancoll_alltoallv_init_c(const void* sendbuf, const MPI_Count sendcounts[],
                              const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                              const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                              MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                              const char* options, shancoll_request* request);
int shancoll_ireduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                             const char* options, shancoll_request* request);
int shancoll_reduce_scatter_init(const void* sendbuf, void* recvbuf, const int recvcounts[],
                                 MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                 const char* algorithm, const char* options,
                                 shancoll_request* request);
int shancoll_ireduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                               const char* algorithm, const char* options,
                               shancoll_request* request);
int shancoll_reduce_scatter_init_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   const char* algorithm, const char* options,
                                   shancoll_request* request);
int shancoll_ireduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   const char* algorithm, const char* options,
                                   shancoll_request* request);
int shancoll_reduce_scatter_block_init(const void* sendbuf, void* recvbuf, int recvcount,
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       const char* algorithm, const char* options,
                                       shancoll_request* request);
int shancoll_ireduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                     const char* algorithm, const char* options,
                                     shancoll_request* request);
int shancoll_reduce_scatter_block_init_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                         const char* algorithm, const char* options,
                                         shancoll_request* request);
int shancoll_iscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                   MPI_Comm comm, const char* algorithm, const char* options,
                   shancoll_request* request);
int shancoll_scan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                       shancoll_request* request);
int shancoll_iscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                     shancoll_request* request);
int shancoll_scan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                         shancoll_request* request);
int shancoll_iexscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                     MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                     shancoll_request* request);
int shancoll_exscan_init(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                         shancoll_request* request);
int shancoll_iexscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options,
                       shancoll_request* request);
int shancoll_exscan_init_c(const void* sendbuf, void* recvbuf, MPI_Count count,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                           const char* options, shancoll_request* request);

/* Starts a persistent request (MPI_Start), or several in order (MPI_Startall). */
int shancoll_start(shancoll_request* request);
int shancoll_startall(int count, shancoll_request requests[]);

/* Frees an inactive request (MPI_Request_free): a persistent one before its
 * first start or after a completed run; MPI_ERR_REQUEST while active. */
int shancoll_request_free(shancoll_request* request);

/* Advances the request without blocking; *flag = 1 when it completed, and
 * then a nonblocking request is freed and set to SHANCOLL_REQUEST_NULL (as
 * MPI_Test); a persistent one becomes inactive and stays. A null request
 * completes at once. */
int shancoll_test(shancoll_request* request, int* flag);

/* Blocks until the request completes (MPI_ERR_OTHER after the `timeout`
 * option's seconds without progress: the request then stays valid and may be
 * waited for again), then frees a nonblocking one and sets it to
 * SHANCOLL_REQUEST_NULL; a persistent one becomes inactive and stays. */
int shancoll_wait(shancoll_request* request);

/* Large counts (MPI-4 style): the same functions with MPI_Count counts and
 * MPI_Aint displacements (in elements of recvtype). */
int shancoll_allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                         void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                         const char* algorithm, const char* options);
int shancoll_allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                          void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                          MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                          const char* options);
int shancoll_allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                         MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options);
int shancoll_bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm,
                     const char* algorithm, const char* options);
int shancoll_reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, int root, MPI_Comm comm, const char* algorithm,
                      const char* options);
int shancoll_alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                        void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                        const char* algorithm, const char* options);
int shancoll_alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[],
                         const MPI_Aint sdispls[], MPI_Datatype sendtype, void* recvbuf,
                         const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                         MPI_Datatype recvtype, MPI_Comm comm, const char* algorithm,
                         const char* options);

/* MPI_Scan and MPI_Exscan (sendbuf == MPI_IN_PLACE takes the input from
 * recvbuf; exscan leaves rank 0's recvbuf as it was). algorithm: NULL/""
 * (SHANCOLL_SCAN_ALGORITHM / SHANCOLL_EXSCAN_ALGORITHM, else "auto"), "auto",
 * "shan", "recursive_doubling" or "mpi"; options: timeout, check,
 * ranks_per_node. Every algorithm keeps rank order (non-commutative ops);
 * shancoll_algorithms("scan") and ("exscan") list them. */
int shancoll_scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm, const char* algorithm, const char* options);
int shancoll_exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                    MPI_Comm comm, const char* algorithm, const char* options);
int shancoll_scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options);
int shancoll_exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                      MPI_Op op, MPI_Comm comm, const char* algorithm, const char* options);

/* MPI_Reduce_scatter_block and MPI_Reduce_scatter (sendbuf == MPI_IN_PLACE
 * takes the whole input from recvbuf and leaves the result at its start).
 * algorithm: NULL/"" (SHANCOLL_REDUCE_SCATTER_BLOCK_ALGORITHM /
 * SHANCOLL_REDUCE_SCATTER_ALGORITHM, else "auto"), "auto", "shan", "ring"
 * (commutative ops), "pairwise" or "mpi"; options: timeout, check,
 * ranks_per_node. */
int shancoll_reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                  const char* algorithm, const char* options);
int shancoll_reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, const char* algorithm,
                            const char* options);
int shancoll_reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    const char* algorithm, const char* options);
int shancoll_reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                              MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                              const char* algorithm, const char* options);
int shancoll_gather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                      void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                      MPI_Comm comm, const char* algorithm, const char* options);
int shancoll_gatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, const MPI_Count recvcounts[], const MPI_Aint displs[],
                       MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                       const char* options);
int shancoll_scatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                       void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype, int root,
                       MPI_Comm comm, const char* algorithm, const char* options);
int shancoll_scatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                        MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount,
                        MPI_Datatype recvtype, int root, MPI_Comm comm, const char* algorithm,
                        const char* options);

/* The message of the calling thread's last error ("" if none yet); valid
 * until the thread's next shancoll call. */
const char* shancoll_last_error(void);

/* The algorithm the calling thread's last successful call ran ("" if none). */
const char* shancoll_last_algorithm(void);

/* The algorithms of `collective` ("allgather", "allgatherv", "allreduce",
 * "iallreduce", "bcast", "reduce", "barrier", "scan", "exscan", "reduce_scatter",
 * "reduce_scatter_block", "alltoall", "alltoallv", "gather", "gatherv", "scatter",
 * "scatterv"), comma-separated, in the order Python's shancoll.algorithms()
 * lists them ("auto" not listed); NULL for an unknown
 * collective (shancoll_last_error says why). Valid until the calling
 * thread's next call of this function. Local: no communication. */
const char* shancoll_algorithms(const char* collective);

/* Which rule table algorithm "auto" uses in this process and why: "path: why
 * (machine: cpu=..., mpi=...)". The tables: SHANCOLL_RULES, else the first
 * measured on this machine among the user's (~/.cache/shancoll/rules) and
 * the package's (<package>/rules, beside this library), else the package's
 * conservative table. Valid until the thread's next call of this function;
 * MPI must be initialised. */
const char* shancoll_rules_info(void);

#ifdef __cplusplus
}
#endif

#endif /* SHANCOLL_H */
