// mpi: the MPI library's own MPI_Alltoall (the regular case: libraries tune
// it apart from MPI_Alltoallv) or MPI_Alltoallv, in bytes, the baseline
// every comparison is made against. Cost: whatever the library chose
// (counted as one round). Like every mpi algorithm it blocks inside the
// library: no timeout.
#include <climits>

#include "shancoll/coll/alltoallv/alltoallv.h"
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
  const std::vector<MPI_Count> sc(args.send_counts.begin(), args.send_counts.end());
  const std::vector<MPI_Aint> sd(args.send_displs.begin(), args.send_displs.end());
  const std::vector<MPI_Count> rc(args.recv_counts.begin(), args.recv_counts.end());
  const std::vector<MPI_Aint> rd(args.recv_displs.begin(), args.recv_displs.end());
  check_mpi(PMPI_Alltoallv_c(args.send, sc.data(), sd.data(), MPI_BYTE, args.recv, rc.data(),
                             rd.data(), MPI_BYTE, comm.mpi()),
            "MPI_Alltoallv_c");
#else
  const auto ints = [](const std::vector<std::int64_t>& v) {
    std::vector<int> out;
    for (std::int64_t x : v) {
      if (x > INT_MAX)
        throw ArgumentError("recvbuf: more than 2^31-1 bytes need an MPI-4 library for 'mpi'");
      out.push_back(static_cast<int>(x));
    }
    return out;
  };
  check_mpi(PMPI_Alltoallv(args.send, ints(args.send_counts).data(), ints(args.send_displs).data(),
                           MPI_BYTE, args.recv, ints(args.recv_counts).data(),
                           ints(args.recv_displs).data(), MPI_BYTE, comm.mpi()),
            "MPI_Alltoallv");
#endif
}

}  // namespace shancoll
