// mpi: the MPI library's own MPI_Allreduce, the baseline every comparison is
// made against. Cost: whatever the library chose (counted as one round).
// Non-commutative ops: MPI combines them in rank order.
#include <climits>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/error.h"

namespace shancoll {

void allreduce_mpi(Comm& comm, const AllreduceArgs& args, const Options&, Stats& stats) {
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  const MPI_Datatype type = args.reducer->mpi_type();
#if MPI_VERSION >= 4
  check_mpi(MPI_Allreduce_c(send, args.recv, args.count, type, args.reducer->op(), comm.mpi()),
            "MPI_Allreduce_c");
#else
  if (args.count > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 elements need MPI-4");
  check_mpi(MPI_Allreduce(send, args.recv, static_cast<int>(args.count), type, args.reducer->op(),
                          comm.mpi()),
            "MPI_Allreduce");
#endif
  stats.rounds = 1;
}

}  // namespace shancoll
