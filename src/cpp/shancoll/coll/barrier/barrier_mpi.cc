// mpi: the MPI library's own MPI_Barrier, the baseline every comparison is
// made against. Cost: whatever the library chose (counted as one round).
// Like every mpi algorithm it blocks inside the library: no timeout.
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/error.h"

namespace shancoll {

void barrier_mpi(Comm& comm, const Options&, Stats& stats) {
  check_mpi(PMPI_Barrier(comm.mpi()), "MPI_Barrier");
  stats.rounds = 1;
}

}  // namespace shancoll
