#include "shancoll/coll/rooted.h"
#include "shancoll/progress.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
void send_bytes_waiting(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                        double timeout) {
  MPI_Request req;
  isend_bytes(buf, bytes, peer, tag, comm, &req);
  wait_request(req, "a send to a peer of the tree", timeout);
}

void recv_bytes_waiting(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                        double timeout) {
  MPI_Request req;
  irecv_bytes(buf, bytes, peer, tag, comm, &req);
  wait_request(req, "a message from a peer of the tree", timeout);
}

}  // namespace shancoll
