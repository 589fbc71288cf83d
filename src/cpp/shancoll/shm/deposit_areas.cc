#include "shancoll/shm/deposit_areas.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/error.h"

namespace shancoll {

std::size_t node_largest(const Topology& topo, std::size_t bytes) {
  unsigned long long mine = bytes, most = 0;
  check_mpi(PMPI_Allreduce(&mine, &most, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, topo.node_comm),
            "MPI_Allreduce (deposit area size)");
  return static_cast<std::size_t>(most);
}

// Per local rank: its counter line, its flag lines (slot by slot, chunk by
// chunk), then its areas.
DepositAreas::DepositAreas(const Topology& topo, int slots, std::size_t bytes,
                           const double& timeout)
    : segment_(topo.node_comm, topo.node_comm, timeout),
      slots_(static_cast<std::size_t>(slots)),
      chunks_(deposit_chunks(node_largest(topo, bytes))),
      area_bytes_(line_align(kDepositChunk * chunks_)),
      flag_bytes_(kCacheLine * slots_ * chunks_),
      rank_bytes_(kCacheLine + flag_bytes_ + area_bytes_ * slots_) {
  segment_.reserve(rank_bytes_ * static_cast<std::size_t>(topo.local_size()));
}

std::byte* DepositAreas::counter(int local_rank) const {
  return segment_.base() + rank_bytes_ * static_cast<std::size_t>(local_rank);
}

std::byte* DepositAreas::flag(int local_rank, std::uint64_t run, std::size_t c) const {
  return counter(local_rank) + kCacheLine * (1 + (run % slots_) * chunks_ + c);
}

const std::byte* DepositAreas::area(int local_rank, std::uint64_t run) const {
  return counter(local_rank) + kCacheLine + flag_bytes_ + area_bytes_ * (run % slots_);
}

void DepositAreas::write(int local_rank, std::uint64_t run, const void* data,
                         std::size_t bytes) const {
  auto* mine = const_cast<std::byte*>(area(local_rank, run));
  const auto* from = static_cast<const std::byte*>(data);
  std::memcpy(flag(local_rank, run, 0) + kFlagBytes, &bytes, sizeof bytes);
  for (std::size_t c = 0, at = 0; c < deposit_chunks(bytes); ++c, at += kDepositChunk) {
    const std::size_t n = std::min(kDepositChunk, bytes - std::min(bytes, at));
    if (n > 0) std::memcpy(mine + at, from + at, n);
    release_store(flag(local_rank, run, c), run);  // data (and chunk 0's bytes) before flag
  }
}

const std::byte* DepositAreas::chunk(int local_rank, std::uint64_t run, std::size_t c,
                                     std::size_t bytes, const char* what) const {
  if (acquire_load(flag(local_rank, run, c)) < run) return nullptr;
  if (c == 0) {
    std::size_t theirs = 0;
    std::memcpy(&theirs, flag(local_rank, run, 0) + kFlagBytes, sizeof theirs);
    if (theirs != bytes)
      throw ArgumentError(std::string(what) + ": rank " + std::to_string(local_rank) +
                          " contributes " + std::to_string(theirs) +
                          " bytes where this rank expects " + std::to_string(bytes) +
                          " (counts must match on every rank)");
  }
  return area(local_rank, run) + kDepositChunk * c;
}

bool DepositAreas::all_completed(int& next, int end, int except, std::uint64_t need) const {
  for (; next < end; ++next)
    if (next != except && completed_by(next) < need) return false;
  return true;
}

void DepositAreas::completed(int local_rank, std::uint64_t run) const {
  release_store(counter(local_rank), run);
}

std::uint64_t DepositAreas::completed_by(int local_rank) const {
  return acquire_load(counter(local_rank));
}

}  // namespace shancoll
