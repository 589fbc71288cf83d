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

// A copy that writes around the cache (non-temporal stores): a plain store
// first reads the destination line (read for ownership), so copying m bytes
// costs 2m of memory traffic where a streaming store costs m. Worth it only
// where nobody reads the destination from cache soon anyway. Fenced at the
// end: visible to other cores before any later store (a flag). x86-64
// (SSE2) only; elsewhere memcpy. Plus its modelled cost.
void stream_copy(void* dst, const void* src, std::size_t bytes);

// local_copy streams from this many bytes on: a copy of more than half the
// last-level cache evicts what it writes before anyone reads it (Zen 4, one
// core, 16 MiB: 1063 us by memcpy, 635 streamed; 8 MiB 285 against 305, so
// not below). Set when the environment is read (environment.h:
// SHANCOLL_STREAM_COPY, else half the largest cache in sysfs, else never),
// before any collective copies. Callers that know better (a result larger
// than the core's L2, written chunk by chunk) call stream_copy themselves.
extern std::size_t stream_copy_from;

// glibc's memcpy (2.36, Debian 12) copies from 2 KiB to about the L2's size
// by `rep movsb`, which AMD's Zen cores run 15-30 times slower when the
// destination lies 1 to 31 bytes past the source modulo 4 KiB (Zen 3 VM,
// one core: 64 KiB in 24-36 us against 1.4-1.6, 3-384 KiB alike; 32 bytes and
// more, fine: benchmarks/results/peers/zen3/session19/memcpy-distance.txt).
// That is the everyday case of a page-aligned slot of a shared segment
// copied into a buffer that malloc placed 16 bytes past a page (glibc's
// large allocations), or of two heap buffers allocated one after the other.
// Such copies go by vector moves (vector_copy: 1.3x a good memcpy in cache).
inline bool memcpy_slow_distance(const void* dst, const void* src, std::size_t bytes) {
  const std::uintptr_t distance =
      (reinterpret_cast<std::uintptr_t>(dst) - reinterpret_cast<std::uintptr_t>(src)) % 4096;
  return bytes > 2048 && distance - 1 < 31;  // 1 <= distance <= 31
}

// A copy by 16-byte vector loads and stores (x86-64; elsewhere memcpy).
void vector_copy(void* dst, const void* src, std::size_t bytes);

// memcpy (or stream_copy, or vector_copy) plus its modelled cost.
inline void local_copy(void* dst, const void* src, std::size_t bytes) {
  if (bytes >= stream_copy_from) return stream_copy(dst, src, bytes);
  if (memcpy_slow_distance(dst, src, bytes)) return vector_copy(dst, src, bytes);
  std::memcpy(dst, src, bytes);
  charge_copy(bytes);
}

// Whether the copies into a result of `result_bytes` (all a rank receives
// in one call) go around the cache: written chunk by chunk, a result of half
// the last-level cache is evicted before anyone reads it, whatever each
// chunk's size (Zen 4, gather of 16 MiB blocks through the pair channels'
// 2 MiB ring: medians of 1016 us streamed against 2948 not, in one run; but the
// ring at these sizes runs 5-7x slower in some jobs, streamed or not, so
// the Zen 4 tables keep single copy there: docs/performance.md, "Large
// results through the pair channels").
inline bool streams_result(std::int64_t result_bytes) {
  return result_bytes > 0 && static_cast<std::size_t>(result_bytes) >= stream_copy_from;
}

// A copy into a result that streams_result() said to stream, or not.
inline void result_copy(void* dst, const void* src, std::size_t bytes, bool stream) {
  if (stream) return stream_copy(dst, src, bytes);
  local_copy(dst, src, bytes);
}

// The same for a signed count (MPI's byte counts); nothing when not positive.
inline void copy_bytes(std::byte* to, const std::byte* from, std::int64_t bytes) {
  if (bytes > 0) local_copy(to, from, static_cast<std::size_t>(bytes));
}

}  // namespace shancoll
