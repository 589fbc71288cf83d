// mpi: the MPI library's own MPI_Scan / MPI_Exscan, the baseline every
// comparison is made against (called by its PMPI name: under the PMPI
// library it must reach MPI, not shancoll again). Cost: whatever the
// library chose (one round as shancoll counts it). It blocks inside MPI,
// without the call's timeout.
#include <climits>

#include "shancoll/coll/scan/scan.h"
#include "shancoll/error.h"

namespace shancoll {

void scan_mpi(Comm& comm, const ScanArgs& args, const Options&, Stats& stats) {
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  const MPI_Datatype type = args.reducer->mpi_type();
  const MPI_Op op = args.reducer->op();
#if MPI_VERSION >= 4
  if (args.exclusive)
    check_mpi(PMPI_Exscan_c(send, args.recv, args.count, type, op, comm.mpi()), "MPI_Exscan_c");
  else
    check_mpi(PMPI_Scan_c(send, args.recv, args.count, type, op, comm.mpi()), "MPI_Scan_c");
#else
  if (args.count > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 elements need MPI-4");
  const int count = static_cast<int>(args.count);
  if (args.exclusive)
    check_mpi(PMPI_Exscan(send, args.recv, count, type, op, comm.mpi()), "MPI_Exscan");
  else
    check_mpi(PMPI_Scan(send, args.recv, count, type, op, comm.mpi()), "MPI_Scan");
#endif
  stats.rounds = 1;
}

}  // namespace shancoll
