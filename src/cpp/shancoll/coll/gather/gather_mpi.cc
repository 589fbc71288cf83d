// mpi: the MPI library's own MPI_Gatherv, the baseline every comparison is
// made against; its MPI_Gather for a gather (libraries tune the two apart).
// Cost: whatever the library chose (counted as one round). Like every mpi
// algorithm it blocks inside the library: no timeout.
#include <climits>

#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/mpi_layout.h"
#include "shancoll/error.h"

namespace shancoll {
void gatherv_mpi(Comm& comm, const GathervArgs& args, const Options&, Stats& stats) {
  const bool root = comm.rank() == args.root;
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  stats.rounds = 1;
  if (args.regular) {
    const std::int64_t block = args.send_bytes;
#if MPI_VERSION >= 4
    check_mpi(PMPI_Gather_c(send, block, MPI_BYTE, root ? args.recv : nullptr, block, MPI_BYTE,
                            args.root, comm.mpi()),
              "MPI_Gather_c");
#else
    if (block > INT_MAX) throw ArgumentError("sendbuf: over 2^31-1 bytes need MPI-4");
    check_mpi(PMPI_Gather(send, static_cast<int>(block), MPI_BYTE, root ? args.recv : nullptr,
                          static_cast<int>(block), MPI_BYTE, args.root, comm.mpi()),
              "MPI_Gather");
#endif
    return;
  }
  MpiLayout& l = mpi_layouts().recv;
  const auto p = static_cast<std::size_t>(comm.size());
  if (root) l.assign(args.counts, args.displs, p, "recvbuf");
#if MPI_VERSION >= 4
  check_mpi(PMPI_Gatherv_c(send, args.send ? args.send_bytes : 0, MPI_BYTE, args.recv,
                           root ? l.counts.data() : nullptr, root ? l.displs.data() : nullptr,
                           MPI_BYTE, args.root, comm.mpi()),
            "MPI_Gatherv_c");
#else
  if (args.send_bytes > INT_MAX) throw ArgumentError("sendbuf: over 2^31-1 bytes need MPI-4");
  check_mpi(PMPI_Gatherv(send, args.send ? static_cast<int>(args.send_bytes) : 0, MPI_BYTE,
                         args.recv, root ? l.counts.data() : nullptr,
                         root ? l.displs.data() : nullptr, MPI_BYTE, args.root, comm.mpi()),
            "MPI_Gatherv");
#endif
}

}  // namespace shancoll
