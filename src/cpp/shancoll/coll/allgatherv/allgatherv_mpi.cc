// mpi: the MPI library's own MPI_Allgatherv, the baseline every comparison
// is made against; its MPI_Allgather when the layout is regular (every
// block of one size, in rank order, no gaps): libraries tune the two apart,
// and an allgather that a rule table sends here must get the library's
// allgather (Intel MPI 2021.18's is 1.3-1.5x its allgatherv at 32-128 KiB on
// the AMD EPYC VM). Cost: whatever the library chose.
#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/mpi_layout.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

bool regular(const AllgathervArgs& args) {
  for (std::size_t r = 0; r < args.counts.size(); ++r)
    if (args.counts[r] != args.counts[0] ||
        args.displs[r] != static_cast<std::int64_t>(r) * args.counts[0])
      return false;
  return true;
}

}  // namespace

const std::byte* allgatherv_mpi(Comm& comm, const AllgathervArgs& args, const Options&,
                                Stats& stats) {
  const int p = comm.size();
  const void* send = args.send ? static_cast<const void*>(args.send) : MPI_IN_PLACE;
  const int r = comm.rank();
  stats.rounds = 1;
#if MPI_VERSION >= 4
  if (regular(args)) {
    const MPI_Count block = args.counts[0];
    check_mpi(PMPI_Allgather_c(send, args.send ? block : 0, MPI_BYTE, args.recv, block, MPI_BYTE,
                               comm.mpi()),
              "MPI_Allgather_c");
    return args.recv;
  }
#endif
  MpiLayout& l = mpi_layouts().recv;
  l.assign(args.counts.data(), args.displs.data(), static_cast<std::size_t>(p), "recvbuf");
#if MPI_VERSION >= 4
  check_mpi(PMPI_Allgatherv_c(send, args.send ? l.counts[r] : 0, MPI_BYTE, args.recv,
                              l.counts.data(), l.displs.data(), MPI_BYTE, comm.mpi()),
            "MPI_Allgatherv_c");
#else
  check_mpi(PMPI_Allgatherv(send, args.send ? l.counts[r] : 0, MPI_BYTE, args.recv, l.counts.data(),
                            l.displs.data(), MPI_BYTE, comm.mpi()),
            "MPI_Allgatherv");
#endif
  return args.recv;
}

}  // namespace shancoll
