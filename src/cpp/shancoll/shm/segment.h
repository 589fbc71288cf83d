// NodeSegment: one shared memory segment per node, the only place where
// shancoll allocates shared memory.
//
// The node leader allocates the whole segment with MPI_Win_allocate_shared and
// the others pass size 0; everybody addresses it through the leader's base
// plus offsets (SimGrid SMPI returns the same base for every rank, so
// per-rank bases cannot be relied on). Growing is collective over the node and
// keeps the old allocation alive until the segment is destroyed, so a shared
// result view a user still holds never points at freed memory.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shancoll {

class NodeSegment {
 public:
  explicit NodeSegment(MPI_Comm node_comm) : node_comm_(node_comm) {}
  ~NodeSegment();
  NodeSegment(const NodeSegment&) = delete;
  NodeSegment& operator=(const NodeSegment&) = delete;

  // Collective over the node (with identical `bytes` on every local rank):
  // makes the segment at least `bytes` long, zero-filled when new.
  void reserve(std::size_t bytes);
  // Like reserve(), but always a new zero-filled segment.
  void renew(std::size_t bytes);

  std::byte* base() const { return base_; }
  std::size_t size() const { return size_; }
  // Increases whenever reserve() moved the segment.
  std::uint64_t generation() const { return generation_; }

 private:
  MPI_Comm node_comm_;
  MPI_Win win_ = MPI_WIN_NULL;
  std::vector<MPI_Win> retired_;
  std::byte* base_ = nullptr;
  std::size_t size_ = 0;
  std::uint64_t generation_ = 0;
};

}  // namespace shancoll
