// Notified write between nodes, the primitive of the shared-notification
// algorithms: write `bytes` into the target node's segment at `offset`, then
// set notification `id` there to the call's epoch, visible to every rank of
// that node. MPI has no notified write; the implementations emulate it:
//
//   rma        MPI_Put of the data, MPI_Win_flush, MPI_Put of the epoch into
//              the notification slot (transport/rma.cc).
//   two_sided  the receiving node pre-posts receives straight into its
//              segment; whoever completes one publishes the notification as
//              a shared flag (transport/two_sided.cc).
//
// The default (transport "auto") is two_sided on every layout, chosen by
// measurement: on 2 virtual nodes and on 2 real MPI nodes (hosts) under
// MPICH's UCX and OFI (tcp) network modules it was faster at 21 of 24 sizes
// from 8 B to 4 MiB per rank, by up to 17x under OFI, where every rma flush
// waits for the target's progress (docs/performance.md, "Transports across
// hosts"); no network module measured called for a default of its own.
//
// Notification slots live at notify_offset + 8 * id in every node segment;
// id 0 is reserved for the READY handshake that rma needs (see comm.h and
// allgatherv_shan.cc; two_sided has none).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "shancoll/options.h"
#include "shancoll/shm/segment.h"
#include "shancoll/topology.h"

namespace shancoll {

// A notification this rank must be ready to receive (two_sided posts a
// receive for it; rma needs nothing), and the rank that sends it. The sender
// is always named, never MPI_ANY_SOURCE: under MPICH with UCX, pre-posted
// any-source receives that a peer on another node matches were seen never to
// complete (shan allgatherv on two real nodes hung at 64 KiB-1 MiB per rank,
// 1 run in 2; with named sources 0 hangs in 40 runs).
// The receiver names where the data lands (`dest`, in its segment or, where
// nobody else on its node reads the result, in the caller's recvbuf).
struct Expected {
  int id;
  std::byte* dest;
  std::size_t bytes;
  int source;
};

class Transport {
 public:
  virtual ~Transport() = default;

  // Start of a call: the epoch and where notification slots are. Collective
  // over the communicator when the segment moved since the last call.
  virtual void begin(std::uint64_t epoch, std::size_t notify_offset) = 0;

  // Whether notifications must be announced with expect() before the
  // sender may write (two_sided: pre-posted receives). Such a transport also
  // needs every sender known in advance: a node's arriving block is then
  // forwarded by its receiver(), not by whichever local rank claims it first.
  virtual bool posts_receives() const = 0;
  virtual void expect(const std::vector<Expected>& expected) = 0;

  // Receiver for notification `id` on `node` (two_sided sends it there).
  virtual int receiver(int node, int id) const = 0;

  virtual void put_notify(int node, std::size_t offset, const void* data, std::size_t bytes,
                          int id) = 0;

  // Non-blocking: advance outstanding operations, publish arrivals.
  virtual void progress() = 0;

  // Blocks until every operation this rank started in the call is complete
  // locally and every expected notification has been published.
  virtual void end(double timeout) = 0;
};

// Collective over `comm`. Each transport communicates on a dup of its own:
// a pre-posted any-source receive must never match another algorithm's
// message, which a rank may send while a slower peer is still in this call.
std::unique_ptr<Transport> make_transport(TransportKind kind, MPI_Comm comm, const Topology& topo,
                                          NodeSegment& segment);

}  // namespace shancoll
