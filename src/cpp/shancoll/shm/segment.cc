#include "shancoll/shm/segment.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#if !defined(SHANCOLL_SMPI)
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "shancoll/error.h"
#include "shancoll/handshake.h"

namespace shancoll {

// The size every rank that grows it together maps: the largest any of them
// asked for. The ranks of a correct call ask alike, but in a call whose ranks
// disagree on its count a local rank would otherwise map more than the
// leader made (touching that excess is a SIGBUS, not an error), and a
// remote writer (rma transport) would put past another node's window; with
// one size everywhere, its own segment's size bounds its puts.
std::size_t NodeSegment::agreed_size(std::size_t want) const {
  unsigned long long mine = want, largest = 0;
  check_mpi(PMPI_Allreduce(&mine, &largest, 1, MPI_UNSIGNED_LONG_LONG, MPI_MAX, grown_by_),
            "MPI_Allreduce (node segment size)");
  return static_cast<std::size_t>(largest);
}

#if !defined(SHANCOLL_SMPI)

namespace {

constexpr int kNameBytes = 64;

// A name no other segment of any process has: the leader's pid and a count.
std::string fresh_name() {
  static std::atomic<std::uint64_t> made{0};
  char name[kNameBytes];
  std::snprintf(name, sizeof name, "/shancoll-%ld-%llu", static_cast<long>(getpid()),
                static_cast<unsigned long long>(made.fetch_add(1)));
  return name;
}

// Maps the whole segment with its page tables filled (MAP_POPULATE): the
// pages are allocated already (posix_fallocate), and a ring of chunks
// (shm/chunk_ring.h) first touches its pages one lap after it starts, so
// without this its first lap paid a page fault per 4 KiB on both sides:
// scatters of 16 KiB timed right after a 2 MiB ring's first use ran 12.0 us
// a call against 2.1 once it had come round (Zen 4 VM, MPICH preload,
// peers_select; docs/performance.md).
void* map_populated(int fd, std::size_t bytes) {
  return mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, fd, 0);
}

// The leader's new segment, mapped; else null, with '!' and the reason in
// `name`. posix_fallocate, not ftruncate alone: a tmpfs /dev/shm smaller
// than the segment (a container's default 64 MiB) would otherwise hand out
// a mapping whose first touch past the space left is a SIGBUS; allocated
// here, the shortage is an error every rank raises.
void* create(std::size_t bytes, char (&name)[kNameBytes]) {
  const std::string fresh = fresh_name();
  const int fd = shm_open(fresh.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
  void* base = MAP_FAILED;
  int error = fd < 0 ? errno : 0;
  if (fd >= 0) {
    if (ftruncate(fd, static_cast<off_t>(bytes)) != 0)  // zero-filled
      error = errno;
    else if (const int e = posix_fallocate(fd, 0, static_cast<off_t>(bytes)); e != 0)
      error = e;
    else if ((base = map_populated(fd, bytes)) == MAP_FAILED)
      error = errno;
    close(fd);
    if (base == MAP_FAILED) shm_unlink(fresh.c_str());
  }
  if (base == MAP_FAILED) {
    std::snprintf(name, kNameBytes, "!%s", std::strerror(error));
    return nullptr;
  }
  std::snprintf(name, kNameBytes, "%s", fresh.c_str());
  return base;
}

void* attach(const char* name, std::size_t bytes) {
  const int fd = shm_open(name, O_RDWR, 0600);
  if (fd < 0) return nullptr;
  void* base = map_populated(fd, bytes);
  close(fd);
  return base == MAP_FAILED ? nullptr : base;
}

}  // namespace

NodeSegment::~NodeSegment() {
  for (const Mapping& m : retired_) munmap(m.base, m.bytes);
  if (base_) munmap(base_, size_);
}

// The leader makes a POSIX shared-memory object and sends its name; the
// others map it; once all have, the leader unlinks the name (nothing is
// left in /dev/shm, whatever happens later). Not MPI_Win_allocate_shared:
// MPICH 5.0.2 aborts ("shm_seg != NULL", mpidu_shm_alloc.c) when threads
// allocate and free shared windows on different communicators at once,
// which MPI_THREAD_MULTIPLE allows and programs that make communicators on
// threads do (a plain MPI program shows it: docs/design.md, "Threads").
void NodeSegment::renew(std::size_t want) {
  handshake(grown_by_,
            grown_by_ == node_comm_ ? "a shared-memory segment of the node"
                                    : "a shared-memory segment of every node",
            timeout_);
  want = agreed_size(want);
  int local_rank = 0;
  MPI_Comm_rank(node_comm_, &local_rank);
  char name[kNameBytes] = "";
  void* base = local_rank == 0 ? create(want, name) : nullptr;
  check_mpi(PMPI_Bcast(name, kNameBytes, MPI_CHAR, 0, node_comm_), "MPI_Bcast (node segment)");
  if (name[0] == '!')
    throw MpiError("shared memory: the node leader could not make a segment of " +
                   std::to_string(want) + " bytes in /dev/shm (" + (name + 1) +
                   "); a container's /dev/shm is often small: enlarge it (docker run "
                   "--shm-size=...)");
  if (local_rank != 0) base = attach(name, want);
  int mapped = base != nullptr, everywhere = 0;
  check_mpi(PMPI_Allreduce(&mapped, &everywhere, 1, MPI_INT, MPI_MIN, node_comm_),
            "MPI_Allreduce (node segment)");
  if (local_rank == 0) shm_unlink(name);  // every rank has mapped it, or failed to
  if (!everywhere) {
    if (base) munmap(base, want);
    throw MpiError(std::string("shared memory: a local rank could not map ") + name);
  }
  if (base_) retired_.push_back({base_, size_});
  base_ = static_cast<std::byte*>(base);
  size_ = want;
  ++generation_;
}

#else  // SimGrid SMPI: its ranks are threads of one process; its window is the segment

NodeSegment::~NodeSegment() {
  for (MPI_Win& w : retired_windows_) MPI_Win_free(&w);
  if (win_ != MPI_WIN_NULL) MPI_Win_free(&win_);
}

void NodeSegment::renew(std::size_t want) {
  handshake(grown_by_, "a shared-memory segment of the node", timeout_);
  want = agreed_size(want);
  int local_rank = 0;
  MPI_Comm_rank(node_comm_, &local_rank);
  void* mine = nullptr;
  MPI_Win win = MPI_WIN_NULL;
  const MPI_Aint mine_size = local_rank == 0 ? static_cast<MPI_Aint>(want) : 0;
  check_mpi(MPI_Win_allocate_shared(mine_size, 1, MPI_INFO_NULL, node_comm_, &mine, &win),
            "MPI_Win_allocate_shared (node segment)");
  MPI_Aint size = 0;
  int disp_unit = 1;
  void* leader_base = nullptr;
  check_mpi(MPI_Win_shared_query(win, 0, &size, &disp_unit, &leader_base), "MPI_Win_shared_query");
  if (local_rank == 0) std::memset(leader_base, 0, want);
  PMPI_Barrier(node_comm_);  // the zero fill is visible before anyone uses a flag
  if (win_ != MPI_WIN_NULL) retired_windows_.push_back(win_);
  win_ = win;
  base_ = static_cast<std::byte*>(leader_base);
  size_ = want;
  ++generation_;
}

#endif

void NodeSegment::reserve(std::size_t bytes) {
  if (bytes <= size_ && base_) return;
  // Grow geometrically so that slowly growing messages do not reallocate
  // (a collective) on every call.
  renew(std::max<std::size_t>({bytes, 2 * size_, 4096}));
}

}  // namespace shancoll
