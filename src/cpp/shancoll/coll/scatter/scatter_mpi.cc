// mpi: the MPI library's own MPI_Scatterv, the baseline every comparison is
// made against; its MPI_Scatter for a scatter (libraries tune the two
// apart). Cost: whatever the library chose (counted as one round). Like
// every mpi algorithm it blocks inside the library: no timeout.
#include <climits>

#include "shancoll/coll/mpi_layout.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/error.h"

namespace shancoll {
void scatterv_mpi(Comm& comm, const ScattervArgs& args, const Options&, Stats& stats) {
  const bool root = comm.rank() == args.root;
  void* recv = args.recv ? static_cast<void*>(args.recv) : MPI_IN_PLACE;
  stats.rounds = 1;
  if (args.regular) {
    const std::int64_t block = args.recv_bytes;
#if MPI_VERSION >= 4
    check_mpi(PMPI_Scatter_c(root ? args.send : nullptr, block, MPI_BYTE, recv, block, MPI_BYTE,
                             args.root, comm.mpi()),
              "MPI_Scatter_c");
#else
    if (block > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 bytes need MPI-4");
    check_mpi(PMPI_Scatter(root ? args.send : nullptr, static_cast<int>(block), MPI_BYTE, recv,
                           static_cast<int>(block), MPI_BYTE, args.root, comm.mpi()),
              "MPI_Scatter");
#endif
    return;
  }
  MpiLayout& l = mpi_layouts().send;
  const auto p = static_cast<std::size_t>(comm.size());
  if (root) l.assign(args.counts, args.displs, p, "sendbuf");
#if MPI_VERSION >= 4
  check_mpi(PMPI_Scatterv_c(args.send, root ? l.counts.data() : nullptr,
                            root ? l.displs.data() : nullptr, MPI_BYTE, recv,
                            args.recv ? args.recv_bytes : 0, MPI_BYTE, args.root, comm.mpi()),
            "MPI_Scatterv_c");
#else
  if (args.recv_bytes > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 bytes need MPI-4");
  check_mpi(
      PMPI_Scatterv(args.send, root ? l.counts.data() : nullptr, root ? l.displs.data() : nullptr,
                    MPI_BYTE, recv, args.recv ? static_cast<int>(args.recv_bytes) : 0, MPI_BYTE,
                    args.root, comm.mpi()),
      "MPI_Scatterv");
#endif
}

}  // namespace shancoll
