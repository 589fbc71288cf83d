// NodeSegment: one shared memory segment per node, the only place where
// shancoll allocates shared memory.
//
// The node leader makes the whole segment (a POSIX shared-memory object,
// unlinked once every local rank has mapped it; under SimGrid SMPI a window
// of MPI_Win_allocate_shared, whose base is the same for every rank) and
// every local rank maps it; offsets into it mean the same on every rank.
// Freeing is local (munmap). Growing is collective over the node and
// keeps the old allocation alive until the segment is destroyed, so a shared
// result view a user still holds never points at freed memory. Every
// allocation starts with a handshake (handshake.h): a rank missing from it is
// a TimeoutError, not a hang in the collective calls that follow.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shancoll {

class NodeSegment {
 public:
  // `grown_by`: the ranks that allocate it together, node_comm or, for a
  // segment that every node grows in the same call, the whole communicator.
  // `timeout`: the deadline of the handshake, read when it grows (the owning
  // Comm's call timeout, so the call's own).
  NodeSegment(MPI_Comm node_comm, MPI_Comm grown_by, const double& timeout)
      : node_comm_(node_comm), grown_by_(grown_by), timeout_(timeout) {}
  ~NodeSegment();
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;

  // Collective over grown_by (with identical `bytes` on all its ranks; if a
  // mismatched call's ranks differ, the largest is made, so no rank maps
  // past the segment): makes it at least `bytes` long, zero-filled when new.
  void reserve(std::size_t bytes);
  // Like reserve(), but always a new zero-filled segment.
  void renew(std::size_t bytes);

  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }
  // Increases whenever reserve() moved the segment.
  std::uint64_t generation() const { return generation_; }

 private:
  std::size_t agreed_size(std::size_t want) const;

  MPI_Comm node_comm_;
  MPI_Comm grown_by_;
  const double& timeout_;
  struct Mapping {
    void* base;
    std::size_t bytes;
  };
  std::vector<Mapping> retired_;  // earlier segments, unmapped with this one
#if defined(SHANCOLL_SMPI)
  MPI_Win win_ = MPI_WIN_NULL;  // the segment's window, and the earlier ones
  std::vector<MPI_Win> retired_windows_;
#endif
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t generation_ = 0;
};

}  // namespace shancoll
