// mpi: the MPI library's own MPI_Bcast and MPI_Reduce, the baselines every
// comparison is made against. Cost: whatever the library chose (one round).
#include <climits>

#include "shancoll/coll/rooted.h"
#include "shancoll/error.h"

namespace shancoll {

void bcast_mpi(Comm& comm, const BcastArgs& args, const Options&, Stats& stats) {
#if MPI_VERSION >= 4
  check_mpi(PMPI_Bcast_c(args.buf, args.bytes, MPI_BYTE, args.root, comm.mpi()), "MPI_Bcast_c");
#else
  if (args.bytes > INT_MAX) throw ArgumentError("buf: over 2^31-1 bytes need MPI-4");
  check_mpi(PMPI_Bcast(args.buf, static_cast<int>(args.bytes), MPI_BYTE, args.root, comm.mpi()),
            "MPI_Bcast");
#endif
  stats.rounds = 1;
}

void reduce_mpi(Comm& comm, const ReduceArgs& args, const Options&, Stats& stats) {
  const bool root = comm.rank() == args.root;
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  const MPI_Datatype type = args.reducer->mpi_type();
#if MPI_VERSION >= 4
  check_mpi(PMPI_Reduce_c(send, root ? args.recv : nullptr, args.count, type, args.reducer->op(),
                          args.root, comm.mpi()),
            "MPI_Reduce_c");
#else
  if (args.count > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 elements need MPI-4");
  check_mpi(PMPI_Reduce(send, root ? args.recv : nullptr, static_cast<int>(args.count), type,
                        args.reducer->op(), args.root, comm.mpi()),
            "MPI_Reduce");
#endif
  stats.rounds = 1;
}

}  // namespace shancoll
