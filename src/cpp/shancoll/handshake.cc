#include "shancoll/handshake.h"

#include "shancoll/error.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

// "all 3 ranks of its communicator (this one is its rank 1)"; both groups
// of an inter-communicator.
std::string who(MPI_Comm comm) {
  int rank = 0, size = 0, inter = 0, remote = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  MPI_Comm_test_inter(comm, &inter);
  if (inter) MPI_Comm_remote_size(comm, &remote);
  return "all " + std::to_string(size + remote) + " ranks of its " +
         (inter ? "inter-communicator" : "communicator") + " (this one is its rank " +
         std::to_string(rank) + (inter ? " in its group)" : ")");
}

// On a timeout the barrier stays posted (MPI cannot cancel a collective);
// the caller's Comm is then broken and refuses later calls (Comm::run).
void barrier(MPI_Comm comm, const std::string& what, double timeout) {
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(PMPI_Ibarrier(comm, &req), "MPI_Ibarrier (shancoll's set-up handshake)");
  wait_collective(req, what.c_str(), timeout);
}

}  // namespace

void handshake(MPI_Comm comm, const std::string& step, double timeout) {
  const std::string ranks = who(comm);
  barrier(comm, ranks + " to enter shancoll's set-up of " + step, timeout);
  barrier(comm,
          ranks + " to confirm shancoll's set-up of " + step +
              " (all entered it, but one gave up waiting before the last arrived)",
          timeout);
}

}  // namespace shancoll
