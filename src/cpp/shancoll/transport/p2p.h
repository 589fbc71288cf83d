// Point-to-point helpers of the flat algorithms (ring, bruck,
// recursive_doubling, the trees, ...): byte messages of any length, waited on
// with a deadline, and their statistics.
#pragma once

#include <mpi.h>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <memory>

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

// Frees an internal communicator that carried point-to-point messages, after
// receiving and dropping every message that has already arrived on it. Such
// a message comes from a peer's call that failed (a timeout): nothing will
// receive it, and once the context id is reused by a later communicator
// (MPI's own included), it would match a receive there. Seen: on two real
// nodes of two ranks, a READY left by a timed-out shan call matched inside a
// later MPI_Win_free, which then hung at MPI_Finalize. Without such messages
// it costs one MPI_Iprobe.
void free_drained(MPI_Comm& comm);

// A failed call's requests must not outlive it: a receive still posted when
// a wait gives up (a TimeoutError, a refusal) would be matched by a later
// message, a late peer's or the next call's on the same communicator, and
// written into memory its caller has since reused or freed (seen: heap
// corruption in a later test, after timed-out calls). Every pending request
// among `reqs` is cancelled and freed: an unmatched receive is then gone at
// once (MPICH and Open MPI remove it from the posted queue in MPI_Cancel);
// an unmatched send cannot be cancelled portably and completes, or not, on
// its own. Null ones are skipped, so on success this is n null checks.
// Returns whether any was pending: a receive matched before its cancel may
// then still be written into, a send still read from (see below).
bool cancel_pending(MPI_Request* reqs, std::size_t n);

// Memory of requests cancel_pending found pending, that their owner would
// free (a request engine's scratch): kept until the process ends, since the
// library may still write into it (a receive matched before the cancel, a
// rendezvous under way) or read from it (a send it completes on its own).
// Thread-safe. A leak of what abandoned runs held, and only of that.
void keep_for_freed_requests(std::shared_ptr<void> memory);
// How many keep_for_freed_requests has kept (tests).
std::size_t kept_for_freed_requests();

// Non-blocking send/receive of a byte range (MPI-4 large counts; else at
// most INT_MAX bytes, larger ones refused with ArgumentError).
// Blocks until the point-to-point request `req` completes, through
// wait_until (TimeoutError naming `what`, after cancelling `req`).
void wait_request(MPI_Request& req, const char* what, double timeout);
// The same for `n` requests posted together, waited on in turn: a failure
// in any wait cancels every one still pending.
void wait_requests(MPI_Request* reqs, std::size_t n, const char* what, double timeout);

// Blocks until a nonblocking collective of the MPI library completes (set-up
// barriers, checked mode's comparisons): never cancelled, as MPI forbids
// MPI_Cancel on one. What it writes lives in a CollectiveBuffer.
void wait_collective(MPI_Request& req, const char* what, double timeout);

// Memory that a nonblocking collective of the MPI library writes or reads,
// kept alive when its wait fails: the collective cannot be cancelled, so a
// late rank may complete it long after the call gave up (seen: a checked
// mode comparison that timed out was completed by a later call's messages,
// into the freed vector, and a later test aborted in malloc). On failure the
// memory is leaked (bytes, on a communicator that refuses later calls).
template <class T>
class CollectiveBuffer {
 public:
  explicit CollectiveBuffer(std::size_t n) : data_(new T[n]()) {}
  ~CollectiveBuffer() {
    if (!abandoned_) delete[] data_;
  }
  CollectiveBuffer(const CollectiveBuffer&) = delete;
  CollectiveBuffer& operator=(const CollectiveBuffer&) = delete;
  T* data() { return data_; }
  T& operator[](std::size_t i) { return data_[i]; }
  // wait_collective; on any failure the memory is left to the collective.
  void wait(MPI_Request& req, const char* what, double timeout) {
    try {
      wait_collective(req, what, timeout);
    } catch (...) {
      abandoned_ = true;
      throw;
    }
  }
  // Leaves the memory to a collective that another buffer's wait gave up on.
  void abandon() { abandoned_ = true; }

 private:
  T* data_;
  bool abandoned_ = false;
};

void isend_bytes(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req);
void irecv_bytes(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                 MPI_Request* req);

// Counts a message to `peer` as intra- or inter-node.
void count_message(const Topology& topo, int peer, std::int64_t bytes, Stats& stats);

}  // namespace shancoll
