// The `mpi` engine of a request: the MPI library's own nonblocking
// collective (MPI_Ibcast_c, ...) or, for a persistent request, its own
// persistent collective (MPI_Bcast_init_c, ... : MPI-4), made once at _init
// and started with MPI_Start. The engine owns the counts and displacements
// the MPI call reads (MPI reads them until the request completes, or, for a
// persistent one, until it is freed).
//
// One post function per collective (request_mpi.cc) serves both forms:
// `mpi_post` picks the nonblocking or the persistent MPI call.
#pragma once

#include <mpi.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "shancoll/coll/request/request.h"

namespace shancoll {

struct AllgathervCall;
struct AlltoallvCall;
struct BcastCall;
struct GathervCall;
struct ReduceCall;
struct ReduceScatterCall;
struct ScanCall;
struct ScattervCall;
struct AllreduceCall;

class MpiEngine final : public Engine {
 public:
  // post(persistent, request): makes the MPI request (returns an MPI error code).
  using Post = std::function<int(bool persistent, MPI_Request* request)>;
  MpiEngine(Post post, bool persistent, const char* what);
  ~MpiEngine() override;
  MpiEngine(const MpiEngine&) = delete;
  MpiEngine& operator=(const MpiEngine&) = delete;

  void start() override;
  bool test() override;

 private:
  Post post_;
  bool persistent_;
  const char* what_;  // the MPI call, for errors
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool active_ = false;
};

// The MPI engines of the collectives, on comm (shancoll's dup of the user's).
// Buffers in bytes as the core's calls give them (MPI_BYTE), reductions in
// the call's datatype.
std::unique_ptr<Engine> mpi_barrier(MPI_Comm comm, bool persistent);
std::unique_ptr<Engine> mpi_bcast(MPI_Comm comm, const BcastCall& call, bool persistent);
std::unique_ptr<Engine> mpi_reduce(MPI_Comm comm, const ReduceCall& call, bool persistent);
std::unique_ptr<Engine> mpi_allreduce(MPI_Comm comm, const AllreduceCall& call, bool persistent);
std::unique_ptr<Engine> mpi_gatherv(MPI_Comm comm, const GathervCall& call, int rank, int size,
                                    bool persistent);
std::unique_ptr<Engine> mpi_scatterv(MPI_Comm comm, const ScattervCall& call, int rank, int size,
                                     bool persistent);
std::unique_ptr<Engine> mpi_allgatherv(MPI_Comm comm, const AllgathervCall& call, int rank,
                                       bool persistent);
std::unique_ptr<Engine> mpi_alltoallv(MPI_Comm comm, const AlltoallvCall& call, bool persistent);
std::unique_ptr<Engine> mpi_reduce_scatter(MPI_Comm comm, const ReduceScatterCall& call, int size,
                                           bool block, bool persistent);
std::unique_ptr<Engine> mpi_scan(MPI_Comm comm, const ScanCall& call, bool exclusive,
                                 bool persistent);

}  // namespace shancoll
