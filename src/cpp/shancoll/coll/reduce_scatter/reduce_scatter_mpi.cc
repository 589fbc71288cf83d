// mpi: the MPI library's own MPI_Reduce_scatter_block / MPI_Reduce_scatter,
// the baselines every comparison is made against (called by their PMPI
// names: under the PMPI library they must reach MPI, not shancoll again).
// Cost: whatever the library chose (one round as shancoll counts it). It
// blocks inside MPI, without the call's timeout. The counts go to MPI in its
// own integer type, from the communicator's scratch (no allocation per call).
#include <climits>

#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

#if MPI_VERSION >= 4
using MpiCount = MPI_Count;
#else
using MpiCount = int;
#endif

}  // namespace

void reduce_scatter_mpi(Comm& comm, const ReduceScatterArgs& args, const Options&, Stats& stats) {
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  const MPI_Datatype type = args.reducer->mpi_type();
  const MPI_Op op = args.reducer->op();
  const int p = comm.size();
#if MPI_VERSION < 4
  if (args.total > INT_MAX) throw ArgumentError("sendbuf: over 2^31-1 elements need MPI-4");
#endif
  stats.rounds = 1;
  if (args.block) {
#if MPI_VERSION >= 4
    check_mpi(PMPI_Reduce_scatter_block_c(send, args.recv, args.counts[0], type, op, comm.mpi()),
              "MPI_Reduce_scatter_block_c");
#else
    check_mpi(PMPI_Reduce_scatter_block(send, args.recv, static_cast<int>(args.counts[0]), type, op,
                                        comm.mpi()),
              "MPI_Reduce_scatter_block");
#endif
    return;
  }
  auto* counts = reinterpret_cast<MpiCount*>(comm.scratch(sizeof(MpiCount) * p));
  for (int q = 0; q < p; ++q) counts[q] = static_cast<MpiCount>(args.counts[q]);
#if MPI_VERSION >= 4
  check_mpi(PMPI_Reduce_scatter_c(send, args.recv, counts, type, op, comm.mpi()),
            "MPI_Reduce_scatter_c");
#else
  check_mpi(PMPI_Reduce_scatter(send, args.recv, counts, type, op, comm.mpi()),
            "MPI_Reduce_scatter");
#endif
}

}  // namespace shancoll
