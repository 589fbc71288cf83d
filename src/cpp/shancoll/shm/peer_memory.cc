#include "shancoll/shm/peer_memory.h"

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>

#include "shancoll/cost.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"

#if defined(__linux__) && !defined(SHANCOLL_SMPI)
#include <sys/prctl.h>
#include <sys/uio.h>
#include <unistd.h>
#define SHANCOLL_HAVE_CMA 1
#endif

namespace shancoll {
namespace {

bool wanted() {
  const std::string v = environment_value("SHANCOLL_SINGLE_COPY");
  return v != "0" && v != "off" && v != "false";
}

#ifdef SHANCOLL_HAVE_CMA
// One process_vm_readv (writev) call may copy less than asked (it stops at a fault);
// -1 on error with errno set.
long read_some(long pid, void* local, const void* remote, std::size_t bytes) {
  iovec l{local, bytes};
  iovec r{const_cast<void*>(remote), bytes};
  return static_cast<long>(process_vm_readv(static_cast<pid_t>(pid), &l, 1, &r, 1, 0));
}

long write_some(long pid, const void* remote, const void* local, std::size_t bytes) {
  iovec l{const_cast<void*>(local), bytes};
  iovec r{const_cast<void*>(remote), bytes};
  return static_cast<long>(process_vm_writev(static_cast<pid_t>(pid), &l, 1, &r, 1, 0));
}
#endif

}  // namespace

PeerMemory::PeerMemory(MPI_Comm node_comm) {
  int size = 0, rank = 0;
  check_mpi(MPI_Comm_size(node_comm, &size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(node_comm, &rank), "MPI_Comm_rank");
  // Each rank offers a word of its own, a random value, to be read by every
  // other rank at the address it publishes: reading the same value back
  // proves the pid names that very process (ranks in different pid
  // namespaces, or a pid reused by another process, fail the check).
  struct Probe {
    long pid;
    std::uint64_t address;
    std::uint64_t value;
  };
  static const std::uint64_t probe_word = std::random_device{}() * 0x9e3779b97f4a7c15ULL + 1;
  Probe mine{0, reinterpret_cast<std::uint64_t>(&probe_word), probe_word};
  int ok = wanted() ? 1 : 0;
#ifdef SHANCOLL_HAVE_CMA
  mine.pid = static_cast<long>(getpid());
#if defined(PR_SET_PTRACER) && defined(PR_SET_PTRACER_ANY)
  // Yama's ptrace_scope=1 (Ubuntu's default) lets only ancestors read a
  // process; MPI ranks are siblings. Like MPI libraries' own single-copy
  // paths, each rank lets other processes of its user read it (what holds
  // without Yama anyway); a kernel without Yama refuses this harmlessly.
  if (ok) prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
#else
  ok = 0;
#endif
  std::vector<Probe> all(static_cast<std::size_t>(size));
  check_mpi(
      PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, node_comm),
      "MPI_Allgather");
#ifdef SHANCOLL_HAVE_CMA
  for (int j = 0; j < size && ok; ++j) {
    if (j == rank) continue;
    std::uint64_t seen = 0;
    const void* remote = reinterpret_cast<const void*>(all[j].address);
    ok = all[j].pid != mine.pid &&
         read_some(all[j].pid, &seen, remote, sizeof seen) == sizeof seen && seen == all[j].value;
  }
#endif
  check_mpi(PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, node_comm), "MPI_Allreduce");
  available_ = ok != 0 && size > 1;
  for (const Probe& p : all) pids_.push_back(p.pid);
}

namespace {
thread_local std::int64_t t_copied = 0;  // single_copy_bytes_so_far
}  // namespace

std::int64_t single_copy_bytes_so_far() { return t_copied; }

void PeerMemory::read(int peer, void* local, const void* remote, std::size_t bytes) const {
  copy(peer, false, local, remote, bytes);
}

void PeerMemory::write(int peer, void* remote, const void* local, std::size_t bytes) const {
  copy(peer, true, const_cast<void*>(local), remote, bytes);
}

#ifdef SHANCOLL_HAVE_CMA
namespace {
// The kernel copies page by page with the instruction glibc's memcpy uses
// (rep movsb, on CPUs with fast short rep movsb), so a destination 1-31
// bytes past its source modulo 4 KiB costs it as much (cost.h,
// memcpy_slow_distance): process_vm_readv of 1 MiB took 600-630 us against
// 114-120 on the Zen 3 VM (benchmarks/results/peers/zen3/session19/
// cma-distance.txt). Such copies bounce through this thread's buffer,
// placed at the remote address's offset in its page: the kernel then copies
// at distance 0, and the local copy goes by vector moves.
constexpr std::size_t kBounceBytes = 64 << 10;  // stays in L2 between the two copies
constexpr std::size_t kPage = 4096;

std::byte* bounce_at(const void* remote) {
  thread_local std::vector<std::byte> buffer(kBounceBytes + kPage);
  const auto base = reinterpret_cast<std::uintptr_t>(buffer.data());
  const auto want = reinterpret_cast<std::uintptr_t>(remote) % kPage;
  return buffer.data() + (want - base % kPage + kPage) % kPage;
}
}  // namespace
#endif

void PeerMemory::copy(int peer, bool to_peer, void* local, const void* remote,
                      std::size_t bytes) const {
#ifdef SHANCOLL_HAVE_CMA
  const void* dst = to_peer ? remote : local;
  if (memcpy_slow_distance(dst, to_peer ? local : remote, bytes)) {
    auto* mine = static_cast<std::byte*>(local);
    auto* theirs = static_cast<const std::byte*>(remote);
    std::byte* bounce = bounce_at(remote);
    for (std::size_t at = 0; at < bytes; at += kBounceBytes) {
      const std::size_t n = std::min(kBounceBytes, bytes - at);
      if (to_peer) vector_copy(bounce, mine + at, n);
      copy_direct(peer, to_peer, bounce, theirs + at, n);
      if (!to_peer) vector_copy(mine + at, bounce, n);
    }
    return;
  }
#endif
  copy_direct(peer, to_peer, local, remote, bytes);
}

void PeerMemory::copy_direct(int peer, bool to_peer, void* local, const void* remote,
                             std::size_t bytes) const {
#ifdef SHANCOLL_HAVE_CMA
  auto* mine = static_cast<std::byte*>(local);
  auto* theirs = static_cast<const std::byte*>(remote);
  const long pid = pids_[static_cast<std::size_t>(peer)];
  while (bytes > 0) {
    const long done =
        to_peer ? write_some(pid, theirs, mine, bytes) : read_some(pid, mine, theirs, bytes);
    if (done <= 0) {
      throw MpiError(std::string("single-copy ") + (to_peer ? "write to" : "read from") +
                     " local rank " + std::to_string(peer) +
                     " failed: " + (done < 0 ? std::strerror(errno) : "nothing copied"));
    }
    mine += done;
    theirs += done;
    t_copied += done;
    bytes -= static_cast<std::size_t>(done);
  }
#else
  (void)peer, (void)to_peer, (void)local, (void)remote, (void)bytes;
  throw MpiError("single-copy reads are not available in this build");
#endif
}

}  // namespace shancoll
