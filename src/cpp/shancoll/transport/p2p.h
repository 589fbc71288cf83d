// Point-to-point helpers of the flat algorithms (ring, bruck,
// recursive_doubling, the trees, ...): byte messages of any length, waited on
// with a deadline, and their statistics.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>

#include "shancoll/options.h"
#include "shancoll/topology.h"

namespace shancoll {

// One exchange of byte ranges of any length (MPI-4 large counts, else chunks
// of at most INT_MAX): a nonblocking receive and send, waited on together
// through wait_until, so that a peer that never comes is a TimeoutError
// naming `what` (and the peers) after `timeout` seconds, not a hang. A side
// with no bytes is skipped; both sides know the counts, so they agree on it.
void sendrecv(const std::byte* sbuf, std::int64_t sbytes, int dest, std::byte* rbuf,
              std::int64_t rbytes, int source, int tag, MPI_Comm comm, const char* what,
              double timeout);

// Non-blocking send/receive of a byte range (MPI-4 large counts; else at
// most INT_MAX bytes, larger ones refused with ArgumentError).
// Blocks until `req` completes, through wait_until (TimeoutError naming `what`).
void wait_request(MPI_Request& req, const char* what, double timeout);

void isend_bytes(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req);
void irecv_bytes(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req);

// Counts a message to `peer` as intra- or inter-node.
void count_message(const Topology& topo, int peer, std::int64_t bytes, Stats& stats);

}  // namespace shancoll
