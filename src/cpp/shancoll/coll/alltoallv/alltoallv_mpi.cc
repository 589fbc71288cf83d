// mpi: the MPI library's own MPI_Alltoall (the regular case: libraries tune
// it apart from MPI_Alltoallv) or MPI_Alltoallv, in bytes, the baseline
// every comparison is made against. Cost: whatever the library chose
// (counted as one round). Like every mpi algorithm it blocks inside the
// library: no timeout.
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/mpi_layout.h"
#include "shancoll/error.h"

namespace shancoll {

void alltoallv_mpi(Comm& comm, const AlltoallvArgs& args, const Options&, Stats& stats) {
  stats.rounds = 1;
#if MPI_VERSION >= 4
  if (args.regular) {
    const MPI_Count block = args.send_counts.empty() ? 0 : args.send_counts[0];
    check_mpi(PMPI_Alltoall_c(args.send, block, MPI_BYTE, args.recv, block, MPI_BYTE, comm.mpi()),
              "MPI_Alltoall_c");
    return;
  }
#endif
  MpiLayouts& l = mpi_layouts();
  const auto p = static_cast<std::size_t>(comm.size());
  l.send.assign(args.send_counts.data(), args.send_displs.data(), p, "sendbuf");
  l.recv.assign(args.recv_counts.data(), args.recv_displs.data(), p, "recvbuf");
#if MPI_VERSION >= 4
  check_mpi(
      PMPI_Alltoallv_c(args.send, l.send.counts.data(), l.send.displs.data(), MPI_BYTE, args.recv,
                       l.recv.counts.data(), l.recv.displs.data(), MPI_BYTE, comm.mpi()),
      "MPI_Alltoallv_c");
#else
  check_mpi(
      PMPI_Alltoallv(args.send, l.send.counts.data(), l.send.displs.data(), MPI_BYTE, args.recv,
                     l.recv.counts.data(), l.recv.displs.data(), MPI_BYTE, comm.mpi()),
      "MPI_Alltoallv");
#endif
}

}  // namespace shancoll
