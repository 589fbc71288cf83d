// Local work (memory copies, reductions) as the one place a simulator can
// charge time for it.
//
// Under SimGrid SMPI (compile definition SHANCOLL_SMPI) code between MPI
// calls costs no simulated time when run with smpi/simulate-computation:no,
// which 1024-rank runs need. Copies and reductions would then be free, and
// shan's node-local gathers (the part that grows with ranks per node) would
// look better than they are. So every local copy and every combine step of
// the algorithms calls these functions, which, under SMPI, execute
//   copy:    bytes       "flops"
//   reduce:  1.5 * bytes "flops"  (two streams read, one written, vs 1 + 1)
// on the rank's simulated core: the platform file's host speed is read as
// the memory bandwidth one core gets when all cores of the node copy at
// once (node bandwidth / cores), in bytes per second. Outside SMPI they
// are memcpy and nothing: no cost, no branch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace shancoll {

#ifdef SHANCOLL_SMPI
void charge_copy(std::size_t bytes);
void charge_reduce(std::size_t bytes);
#else
inline void charge_copy(std::size_t) {}
inline void charge_reduce(std::size_t) {}
#endif

// memcpy plus its modelled cost.
inline void local_copy(void* dst, const void* src, std::size_t bytes) {
  std::memcpy(dst, src, bytes);
  charge_copy(bytes);
}

// The same for a signed count (MPI's byte counts); nothing when not positive.
inline void copy_bytes(std::byte* to, const std::byte* from, std::int64_t bytes) {
  if (bytes > 0) local_copy(to, from, static_cast<std::size_t>(bytes));
}

}  // namespace shancoll
