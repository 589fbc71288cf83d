#include "shancoll/transport/p2p.h"

#include <algorithm>
#include <climits>

#include "shancoll/error.h"
#include "shancoll/progress.h"

namespace shancoll {

void sendrecv_bytes(const std::byte* sbuf, std::int64_t sbytes, int dest, std::byte* rbuf,
                    std::int64_t rbytes, int source, int tag, MPI_Comm comm) {
  if (sbytes == 0 && rbytes == 0) return;
#if MPI_VERSION >= 4
  check_mpi(
      MPI_Sendrecv_c(sbuf, sbytes, MPI_BYTE, sbytes > 0 ? dest : MPI_PROC_NULL, tag, rbuf, rbytes,
                     MPI_BYTE, rbytes > 0 ? source : MPI_PROC_NULL, tag, comm, MPI_STATUS_IGNORE),
      "MPI_Sendrecv_c");
#else
  while (sbytes > 0 || rbytes > 0) {
    const int s = static_cast<int>(std::min<std::int64_t>(sbytes, INT_MAX));
    const int r = static_cast<int>(std::min<std::int64_t>(rbytes, INT_MAX));
    check_mpi(MPI_Sendrecv(sbuf, s, MPI_BYTE, s > 0 ? dest : MPI_PROC_NULL, tag, rbuf, r, MPI_BYTE,
                           r > 0 ? source : MPI_PROC_NULL, tag, comm, MPI_STATUS_IGNORE),
              "MPI_Sendrecv");
    sbuf += s, sbytes -= s, rbuf += r, rbytes -= r;
  }
#endif
}

void isend_bytes(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req) {
#if MPI_VERSION >= 4
  check_mpi(MPI_Isend_c(buf, bytes, MPI_BYTE, peer, tag, comm, req), "MPI_Isend_c");
#else
  if (bytes > INT_MAX) throw ArgumentError("recvbuf: messages over 2^31-1 bytes need MPI-4");
  check_mpi(MPI_Isend(buf, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, req), "MPI_Isend");
#endif
}

void irecv_bytes(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req) {
#if MPI_VERSION >= 4
  check_mpi(MPI_Irecv_c(buf, bytes, MPI_BYTE, peer, tag, comm, req), "MPI_Irecv_c");
#else
  if (bytes > INT_MAX) throw ArgumentError("recvbuf: messages over 2^31-1 bytes need MPI-4");
  check_mpi(MPI_Irecv(buf, static_cast<int>(bytes), MPI_BYTE, peer, tag, comm, req), "MPI_Irecv");
#endif
}

void count_message(const Topology& topo, int peer, std::int64_t bytes, Stats& stats) {
  if (bytes == 0) return;
  if (topo.node_of[peer] == topo.node) {
    ++stats.intra_messages, stats.intra_bytes += bytes;
  } else {
    ++stats.inter_messages, stats.inter_bytes += bytes;
  }
}

void wait_request(MPI_Request& req, const char* what, double timeout) {
  wait_until(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
        return done != 0;
      },
      what, timeout);
}

}  // namespace shancoll
