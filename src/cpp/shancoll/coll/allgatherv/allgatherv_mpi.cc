// mpi: the MPI library's own MPI_Allgatherv, the baseline every comparison
// is made against. Cost: whatever the library chose.
#include <climits>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/error.h"

namespace shancoll {

const std::byte* allgatherv_mpi(Comm& comm, const AllgathervArgs& args, const Options&,
                                Stats& stats) {
  const int p = comm.size();
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  const int r = comm.rank();
  stats.rounds = 1;
#if MPI_VERSION >= 4
  std::vector<MPI_Count> counts(args.counts.begin(), args.counts.end());
  std::vector<MPI_Aint> displs(args.displs.begin(), args.displs.end());
  check_mpi(PMPI_Allgatherv_c(send, args.send ? counts[r] : 0, MPI_BYTE, args.recv, counts.data(),
                              displs.data(), MPI_BYTE, comm.mpi()),
            "MPI_Allgatherv_c");
#else
  std::vector<int> counts(p), displs(p);
  for (int i = 0; i < p; ++i) {
    if (args.counts[i] > INT_MAX || args.displs[i] > INT_MAX) {
      throw ArgumentError("recvbuf: more than 2^31-1 bytes need an MPI-4 library for 'mpi'");
    }
    counts[i] = static_cast<int>(args.counts[i]);
    displs[i] = static_cast<int>(args.displs[i]);
  }
  check_mpi(PMPI_Allgatherv(send, args.send ? counts[r] : 0, MPI_BYTE, args.recv, counts.data(),
                            displs.data(), MPI_BYTE, comm.mpi()),
            "MPI_Allgatherv");
#endif
  (void)p;
  return args.recv;
}

}  // namespace shancoll
