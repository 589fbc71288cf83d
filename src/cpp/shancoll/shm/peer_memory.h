// PeerMemory: single-copy reads from (and writes to) the private memory of
// another rank on the same node, with Linux cross-memory attach
// (process_vm_readv, process_vm_writev): the kernel copies straight between
// the two buffers, one copy where a shared segment takes two (in, then out).
// Writes let both ranks of a pair copy at once, each half of the data.
//
// Why it pays even at two ranks: a buffer the peer only read (its send
// buffer) is clean in its cache, and reading clean lines across cores ran at
// about 20 GB/s here, against about 11 GB/s for lines the peer has just
// written (a segment slot). Measured on this VM, 128 KiB: copy-in + copy-out
// through a slot 12 us, one cross-memory read 6 us.
//
// Availability is probed once per node layout, collectively, when the layout
// is built (Comm::nodes). It needs Linux, real processes (not SimGrid SMPI,
// whose ranks share one process) and ptrace permission over the peer: the
// same user; under Yama's ptrace_scope=1 each rank grants it with
// prctl(PR_SET_PTRACER), as MPI libraries do; ptrace_scope 2 or 3, or a
// container's seccomp profile, may still forbid it. SHANCOLL_SINGLE_COPY=0
// turns it off. Where it is unavailable every local rank agrees, and the
// callers keep their shared-segment paths.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace shancoll {

class PeerMemory {
 public:
  // Collective over `node_comm`.
  explicit PeerMemory(MPI_Comm node_comm);

  bool available() const { return available_; }

  // Copies `bytes` at `remote`, an address in local rank `peer`'s memory,
  // to `local`. The peer must keep that memory unchanged until the caller
  // tells it (through a flag) that the read is over. Throws MpiError.
  void read(int peer, void* local, const void* remote, std::size_t bytes) const;
  // Copies `bytes` at `local` to `remote` in local rank `peer`'s memory,
  // which the peer must not use until told (through a flag) that the write
  // is over. Throws MpiError.
  void write(int peer, void* remote, const void* local, std::size_t bytes) const;

 private:
  void copy(int peer, bool to_peer, void* local, const void* remote, std::size_t bytes) const;
  void copy_direct(int peer, bool to_peer, void* local, const void* remote,
                   std::size_t bytes) const;

  std::vector<long> pids_;  // by local rank
  bool available_ = false;
};

// The smallest block that a path choosing single copy by size (gather and
// scatter shan; alltoall's blocks on average) sends by cross-memory attach:
// its own `by_size`, or 8 KiB where the call asks for single copy (single_copy=1, a
// rule table's choice where single copy won). Below that the system call
// costs more than the segment's second copy. Intel Xeon EMR VM, 2 ranks,
// scatter through the segment against single copy: 4 KiB 1.55 against
// 1.55 us, 8 KiB 2.32 against 1.66, 16 KiB 3.40 against 1.85
// (docs/performance.md).
constexpr std::int64_t kAskedSingleCopyMin = 8 << 10;
constexpr std::int64_t single_copy_min(int single_copy, std::int64_t by_size) {
  return single_copy == 1 && by_size > kAskedSingleCopyMin ? kAskedSingleCopyMin : by_size;
}

// Bytes this thread has copied by cross-memory attach so far (read and
// written): the doors count a call's as the difference (Stats::single_copy_bytes).
std::int64_t single_copy_bytes_so_far();

}  // namespace shancoll
