// The `mpi` engine of a request: the MPI library's own nonblocking
// collective (MPI_Ibcast_c, ...), posted at every start, for a persistent
// request too. Not MPI-4's persistent collectives (MPI_Bcast_init_c, ...):
// Intel MPI 2021.18's MPI_Gather_init_c gave a wrong result at its root
// (8 bytes per rank, 3 ranks) where MPI_Igather_c is right, Open MPI 5.0 and
// SimGrid declare MPI 3.1, and the persistent request would save the library
// little of what shancoll's own engines save. The engine owns the counts and
// displacements the MPI call reads (until the request completes).
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
  // post(request): starts the MPI request (returns an MPI error code).
  using Post = std::function<int(MPI_Request* request)>;
  MpiEngine(Post post, const char* what);
  ~MpiEngine() override;
  MpiEngine(const MpiEngine&) = delete;
  MpiEngine& operator=(const MpiEngine&) = delete;

  void start() override;
  bool test() override;

 private:
  Post post_;
  const char* what_;  // the MPI call, for errors
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool active_ = false;
};

// The MPI engines of the collectives, on comm (shancoll's dup of the user's).
// Buffers in bytes as the core's calls give them (MPI_BYTE), reductions in
// the call's datatype.
std::unique_ptr<Engine> mpi_barrier(MPI_Comm comm);
std::unique_ptr<Engine> mpi_bcast(MPI_Comm comm, const BcastCall& call);
std::unique_ptr<Engine> mpi_reduce(MPI_Comm comm, const ReduceCall& call);
std::unique_ptr<Engine> mpi_allreduce(MPI_Comm comm, const AllreduceCall& call);
std::unique_ptr<Engine> mpi_gatherv(MPI_Comm comm, const GathervCall& call, int rank, int size);
std::unique_ptr<Engine> mpi_scatterv(MPI_Comm comm, const ScattervCall& call, int rank, int size);
std::unique_ptr<Engine> mpi_allgatherv(MPI_Comm comm, const AllgathervCall& call, int rank);
std::unique_ptr<Engine> mpi_alltoallv(MPI_Comm comm, const AlltoallvCall& call);
std::unique_ptr<Engine> mpi_reduce_scatter(MPI_Comm comm, const ReduceScatterCall& call, int size,
                                           bool block);
std::unique_ptr<Engine> mpi_scan(MPI_Comm comm, const ScanCall& call, bool exclusive);

}  // namespace shancoll
