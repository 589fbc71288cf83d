// libshancoll_pmpi.so: MPI_Allgather, MPI_Allgatherv, MPI_Allreduce,
// MPI_Bcast and MPI_Reduce (and their MPI-4 large-count _c variants) for unmodified MPI programs
// (LD_PRELOAD, or linked before the MPI library), routed to shancoll's C API when it can run the
// call, else to the MPI library's PMPI_ function.
//
// When a call is routed: the C API's checks decide (shancoll.h), before any
// communication, so a call refused on one rank is refused on all ranks given
// MPI's rule that ops, datatypes, counts and roots agree. What always goes to
// the MPI library:
//   - calls made from inside shancoll (its `mpi` algorithms and topology
//     discovery call MPI collectives: they must not come back here);
//   - everything when SHANCOLL_PMPI=0;
//   - everything when the thread level is MPI_THREAD_MULTIPLE: shancoll's
//     per-communicator state (the cached Comm, its scratch memory and
//     segments) is not safe under concurrent calls on one communicator.
//
// SHANCOLL_PMPI_VERBOSE=1 prints each distinct outcome (the algorithm, or
// why it fell back) once per communicator and collective on stderr.
#include <mpi.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "capi_internal.h"
#include "shancoll.h"

namespace {

bool env_flag(const char* name, bool fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  return std::strcmp(text, "0") != 0;
}

// Read once: the environment of an MPI job does not change under it.
bool enabled() {
  static const bool on = env_flag("SHANCOLL_PMPI", true);
  return on;
}

bool verbose() {
  static const bool on = env_flag("SHANCOLL_PMPI_VERBOSE", false);
  return on;
}

// The thread level cannot change after MPI_Init_thread; -1: not asked yet.
bool thread_multiple() {
  static std::atomic<int> level{-1};
  int known = level.load(std::memory_order_relaxed);
  if (known < 0) {
    PMPI_Query_thread(&known);
    level.store(known, std::memory_order_relaxed);
  }
  return known == MPI_THREAD_MULTIPLE;
}

// Prints an outcome the first time it happens on this communicator and collective.
void report_once(const char* collective, MPI_Comm comm, const std::string& outcome) {
  static std::mutex mutex;
  static std::set<std::string> seen;
  // The Fortran handle: a portable integer for any MPI's MPI_Comm.
  const std::string key = std::string(collective) + " on comm " +
                          std::to_string(static_cast<long>(PMPI_Comm_c2f(comm))) + ": ";
  std::lock_guard<std::mutex> lock(mutex);
  if (!seen.insert(key + outcome).second) return;
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  std::fprintf(stderr, "shancoll_pmpi: rank %d: %s%s\n", rank, key.c_str(), outcome.c_str());
}

// The same, never throwing (it runs inside extern "C" MPI functions).
void report(const char* collective, MPI_Comm comm, const char* prefix, const char* detail) {
  if (!verbose()) return;
  try {
    report_once(collective, comm, std::string(prefix) + detail);
  } catch (...) {
    // Out of memory while logging: the collective itself is unaffected.
  }
}

// "routed to shancoll <algorithm>", with release_gather's trees (their socket
// map's source says when one socket was assumed); never throwing, like report().
void report_routed(const char* collective, MPI_Comm comm) {
  if (!verbose()) return;
  try {
    const std::string trees = shancoll::capi::last_trees();
    report_once(collective, comm,
                std::string("routed to shancoll ") + shancoll_last_algorithm() +
                    (trees.empty() ? "" : " (" + trees + ")"));
  } catch (...) {
    // Out of memory while logging: the collective itself is unaffected.
  }
}

// The reason every call goes to the MPI library now, or nullptr.
const char* global_fallback() {
  if (!enabled()) return "SHANCOLL_PMPI=0";
  if (thread_multiple()) return "MPI_THREAD_MULTIPLE (shancoll's per-communicator state)";
  return nullptr;
}

// Routes one call: shancoll when it accepts the arguments, else the MPI library.
template <class Shancoll, class Library>
int interpose(const char* collective, MPI_Comm comm, Shancoll&& shancoll_call,
              Library&& library_call) {
  if (shancoll::capi::inside()) return library_call();  // first: no recursion, no output
  if (const char* why = global_fallback()) {
    report(collective, comm, "fallback: ", why);
    return library_call();
  }
  const int rc = shancoll_call();
  if (rc == MPI_SUCCESS) {
    report_routed(collective, comm);
    return rc;
  }
  if (shancoll::capi::refused(rc)) {
    report(collective, comm, "fallback: ", shancoll_last_error());
    return library_call();
  }
  // Failed during the collective: nothing to fall back on; the communicator's
  // error handler decides (fatal by default), as for an MPI error.
  std::fprintf(stderr, "shancoll_pmpi: %s failed: %s\n", collective, shancoll_last_error());
  PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

}  // namespace

extern "C" {

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Allgather", comm,
      [&] {
        return shancoll_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  nullptr);
      },
      [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  return interpose(
      "MPI_Allgatherv", comm,
      [&] {
        return shancoll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                   recvtype, comm, nullptr);
      },
      [&] {
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               comm);
      });
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  return interpose(
      "MPI_Allreduce", comm,
      [&] { return shancoll_allreduce(sendbuf, recvbuf, count, datatype, op, comm, nullptr); },
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Bcast", comm,
      [&] { return shancoll_bcast(buffer, count, datatype, root, comm, nullptr); },
      [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce", comm,
      [&] { return shancoll_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr); },
      [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

// The large-count variants (MPI-4): mpi4py 4 and other MPI-4 codes call these.
#if MPI_VERSION >= 4

int MPI_Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Allgather_c", comm,
      [&] {
        return shancoll_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, nullptr);
      },
      [&] {
        return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      });
}

int MPI_Allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm) {
  return interpose(
      "MPI_Allgatherv_c", comm,
      [&] {
        return shancoll_allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                     recvtype, comm, nullptr);
      },
      [&] {
        return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                 recvtype, comm);
      });
}

int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Allreduce_c", comm,
      [&] { return shancoll_allreduce_c(sendbuf, recvbuf, count, datatype, op, comm, nullptr); },
      [&] { return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm); });
}

int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Bcast_c", comm,
      [&] { return shancoll_bcast_c(buffer, count, datatype, root, comm, nullptr); },
      [&] { return PMPI_Bcast_c(buffer, count, datatype, root, comm); });
}

int MPI_Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce_c", comm,
      [&] { return shancoll_reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr); },
      [&] { return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm); });
}

#endif  // MPI_VERSION >= 4

}  // extern "C"
