// Rendezvous: the handshake of one single-copy call between the ranks of a
// node (shm/peer_memory.h). Every rank posts the addresses of its buffers,
// reads the others' posts, copies from and to their buffers, then finishes:
// it says its copies are over and waits until every other rank's are, so no
// rank leaves (and lets its caller change a buffer) while another still
// copies from or into it.
//
// Two cache lines per local rank in a small node segment of its own
// (NodeContext::rendezvous): the post line (two addresses, the call's number,
// the call's shape) and the done line.
//
// The shape is what every local rank must agree on before any copy (the
// count, the recvcounts): each rank copies by its own idea of the sizes, so
// ranks whose calls differ (an MPI error that checked mode names) would
// otherwise read or write past a peer's buffer. A disagreement is refused
// on every local rank alike, before any copy. Calls are numbered alike on every local
// rank and every line only grows, so one area serves every single-copy
// collective in turn: a call's finish() keeps the next call's posts from
// overtaking its reads of the addresses.
#pragma once

#include <cstdint>

#include "shancoll/comm.h"

namespace shancoll {

class Rendezvous {
 public:
  // The next call on this node; collective over it on the first call (the
  // segment is allocated then).
  Rendezvous(NodeContext& ctx, double timeout);

  // Publishes my buffers' addresses (either may be null) and the call's
  // shape, and waits for every local rank's post: on a different shape,
  // finishes the call and throws ArgumentError naming `what` on every rank.
  void post(const void* first, const void* second, std::uint64_t shape, const char* what);
  // Local rank `peer`'s addresses, once posted for this call.
  std::byte* first(int peer) const;
  std::byte* second(int peer) const;
  // My copies are over; waits until every local rank's are.
  void finish() const;
  // At least `bytes` of this rank's scratch for chunks in flight, kept by
  // the node context across calls.
  std::byte* scratch(std::size_t bytes);

 private:
  std::byte* line(int kind, int local) const;
  void wait(int kind, int peer, const char* what) const;

  NodeContext& ctx_;
  std::byte* base_;
  int me_, size_;
  std::uint64_t call_;
  double timeout_;
};

}  // namespace shancoll
