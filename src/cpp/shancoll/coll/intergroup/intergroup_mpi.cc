// mpi: the MPI library's own MPI_Allgather (allgather) or MPI_Allgatherv on
// the inter-communicator, the baseline every comparison is made against
// (MPICH and Open MPI: root gathering). Cost: whatever the library chose.
// Blocking, like the application's call it stands for: no timeout.
#include <climits>

#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/error.h"

namespace shancoll {

void intergroup_mpi(InterComm& ic, const InterAllgathervArgs& args, const Options&, Stats& stats) {
  stats.rounds = 1;
#if MPI_VERSION >= 4
  if (args.regular) {
    check_mpi(PMPI_Allgather_c(args.send, args.send_bytes, MPI_BYTE, args.recv + args.displs[0],
                               args.counts[0], MPI_BYTE, ic.mpi()),
              "MPI_Allgather_c");
    return;
  }
  std::vector<MPI_Count> counts(args.counts.begin(), args.counts.end());
  std::vector<MPI_Aint> displs(args.displs.begin(), args.displs.end());
  check_mpi(PMPI_Allgatherv_c(args.send, args.send_bytes, MPI_BYTE, args.recv, counts.data(),
                              displs.data(), MPI_BYTE, ic.mpi()),
            "MPI_Allgatherv_c");
#else
  auto small = [](std::int64_t v) {
    if (v > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 bytes needs an MPI-4 library");
    return static_cast<int>(v);
  };
  if (args.regular) {
    check_mpi(PMPI_Allgather(args.send, small(args.send_bytes), MPI_BYTE,
                             args.recv + args.displs[0], small(args.counts[0]), MPI_BYTE, ic.mpi()),
              "MPI_Allgather");
    return;
  }
  std::vector<int> counts, displs;
  for (std::int64_t c : args.counts) counts.push_back(small(c));
  for (std::int64_t d : args.displs) displs.push_back(small(d));
  check_mpi(PMPI_Allgatherv(args.send, small(args.send_bytes), MPI_BYTE, args.recv, counts.data(),
                            displs.data(), MPI_BYTE, ic.mpi()),
            "MPI_Allgatherv");
#endif
}

}  // namespace shancoll
