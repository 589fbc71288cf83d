#include "shancoll/shm/segment.h"

#include <algorithm>
#include <cstring>

#include "shancoll/error.h"
#include "shancoll/handshake.h"

namespace shancoll {

NodeSegment::~NodeSegment() {
  for (MPI_Win& w : retired_) MPI_Win_free(&w);
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

void NodeSegment::reserve(std::size_t bytes) {
  if (bytes <= size_ && win_ != MPI_WIN_NULL) return;
  // Grow geometrically so that slowly growing messages do not reallocate
  // (a collective) on every call.
  renew(std::max<std::size_t>({bytes, 2 * size_, 4096}));
}

void NodeSegment::renew(std::size_t want) {
  handshake(grown_by_,
            grown_by_ == node_comm_ ? "a shared-memory segment of the node"
                                    : "a shared-memory segment of every node",
            timeout_);
  int local_rank = 0;
  MPI_Comm_rank(node_comm_, &local_rank);
  MPI_Info info;
  MPI_Info_create(&info);
  MPI_Info_set(info, "alloc_shared_noncontig", "false");
  void* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  const MPI_Aint mine_size = local_rank == 0 ? static_cast<MPI_Aint>(want) : 0;
  int rc = MPI_Win_allocate_shared(mine_size, 1, info, node_comm_, &mine, &win);
  MPI_Info_free(&info);
  check_mpi(rc, "MPI_Win_allocate_shared (node segment)");

  MPI_Aint size = 0;
  int disp_unit = 1;
  void* leader_base = nullptr;
  check_mpi(MPI_Win_shared_query(win, 0, &size, &disp_unit, &leader_base), "MPI_Win_shared_query");
  if (local_rank == 0) std::memset(leader_base, 0, want);
  PMPI_Barrier(node_comm_);  // the zero fill is visible before anyone uses a flag

  if (win_ != MPI_WIN_NULL) retired_.push_back(win_);
  win_ = win;
  base_ = static_cast<std::byte*>(leader_base);
  size_ = want;
  ++generation_;
}

}  // namespace shancoll
