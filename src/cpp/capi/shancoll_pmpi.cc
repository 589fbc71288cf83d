// libshancoll_pmpi.so: MPI_Allgather, MPI_Allgatherv, MPI_Allreduce,
// MPI_Alltoall, MPI_Alltoallv, MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Gather(v),
// MPI_Scatter(v), MPI_Scan, MPI_Exscan and MPI_Reduce_scatter(_block) (and their MPI-4
// large-count _c variants) for unmodified MPI programs (LD_PRELOAD, or linked before the MPI
// library), routed to shancoll's C API when it can run the call, else to the MPI library's PMPI_
// function.
//
// When a call is routed: the C API's checks decide (shancoll.h), before any
// communication, so a call refused on one rank is refused on all ranks given
// MPI's rule that ops, datatypes, counts and roots agree. What always goes to
// the MPI library:
//   - calls made from inside shancoll: the core calls MPI's collectives by
//     their PMPI_ names (comm.h), and the C API's "inside" flag guards any
//     other path back here (a user op calling MPI_Allreduce, say);
//   - everything when SHANCOLL_PMPI=0.
//
// Threads: every thread level, MPI_THREAD_MULTIPLE included, is routed.
// MPI forbids concurrent collectives on one communicator and allows them on
// different ones; shancoll's per-communicator state needs no lock under that
// rule, and its process-wide state is safe for threads on different
// communicators (docs/design.md, "Threads"). Here: the switches below are
// read once (magic statics), the verbose log and the summary take a mutex,
// only when they are on.
//
// SHANCOLL_PMPI_VERBOSE=1 prints one start-up line per process at the first
// interposed call (the thread level, the MPI library, the rule table and what
// falls back), then each distinct outcome (the algorithm, or why it fell
// back) once per communicator and collective on stderr;
// SHANCOLL_PMPI_SUMMARY=1 prints calls, bytes and time per collective and
// algorithm at MPI_Finalize (pmpi_summary.cc). The nonblocking collectives: pmpi_requests.cc;
// the persistent ones, MPI_Start(all) and the completion calls: pmpi_persistent.cc.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>

#include "pmpi_common.h"
#include "shancoll/environment.h"
#include "shancoll/rules.h"

namespace shancoll::pmpi {
namespace {

bool env_flag(const char* name, bool fallback) {
  const char* text = std::getenv(name);
  if (!text || !*text) return fallback;
  return std::strcmp(text, "0") != 0;
}

const char* thread_level_name() {
  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  switch (level) {
    case MPI_THREAD_SINGLE:
      return "MPI_THREAD_SINGLE";
    case MPI_THREAD_FUNNELED:
      return "MPI_THREAD_FUNNELED";
    case MPI_THREAD_SERIALIZED:
      return "MPI_THREAD_SERIALIZED";
    case MPI_THREAD_MULTIPLE:
      return "MPI_THREAD_MULTIPLE";
  }
  return "unknown";
}

// What goes to the MPI library in this process, and why (README's list).
std::string what_falls_back() {
  if (!enabled()) return "everything (SHANCOLL_PMPI=0)";
  try {
    shancoll::check_environment();
  } catch (const std::exception& e) {
    return std::string("everything (") + e.what() + ")";
  }
  std::string out =
      "inter-communicators, derived datatypes and predefined ones with holes, reductions on "
      "types other than C/Fortran integer, floating-point, complex and bool or with "
      "MINLOC/MAXLOC/REPLACE/NO_OP, non-commutative user ops under algorithms that do not "
      "combine in rank order";
#if !defined(MPICH_VERSION)
  out += ", every MPI_Iallreduce (not interposed: no MPIX_Grequest_start)";
#endif
  out +=
      ", persistent collectives on several nodes, with a user op, where the rule table has no "
      "<coll>_init row naming their engine (then only those of at most 56 bytes per rank run "
      "shancoll's), or past their engine's bound (reduce_scatter(_block) blocks of 8 KiB, scan "
      "and exscan 16 KiB; alltoall(v) blocks of 4 KiB, gather(v) 16 KiB, scatter(v) 2 "
      "KiB and allgather(v) 1 MiB unless single copy works, alltoall(v) not in place), and all "
      "of them while an MPI Fortran binding is loaded (where the library's own persistent "
      "gather, scatter or allgather is wrong, Intel MPI's, shancoll's mpi runs them instead)";
  return out;
}

// The start-up line, once per process (SHANCOLL_PMPI_VERBOSE=1).
void print_status() {
  int rank = -1;
  PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const std::string line = "shancoll_pmpi: rank " + std::to_string(rank) +
                           ": start-up: thread level " + thread_level_name() +
                           "; MPI library: " + machine_mpi() + "; rules: " + shancoll_rules_info() +
                           "; falls back to the MPI library: " + what_falls_back() + "\n";
  std::fwrite(line.data(), 1, line.size(), stderr);  // one write: ranks' lines do not mix
}

// The start-up line, before the first outcome (verbose only: no cost per call otherwise).
void announce() {
  static std::once_flag told;
  std::call_once(told, print_status);
}

// Prints an outcome the first time it happens on this communicator and collective.
void report_once(const char* collective, MPI_Comm comm, const std::string& outcome) {
  announce();
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

}  // namespace

// Read once: the environment of an MPI job does not change under it.
bool enabled() {
  static const bool on = env_flag("SHANCOLL_PMPI", true);
  return on;
}

bool verbose() {
  static const bool on = env_flag("SHANCOLL_PMPI_VERBOSE", false);
  return on;
}

bool summary() {
  static const bool on = env_flag("SHANCOLL_PMPI_SUMMARY", false);
  return on;
}

bool quiet() {
  static const bool on = !verbose() && !summary();
  return on;
}

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

const char* global_fallback() { return enabled() ? nullptr : "SHANCOLL_PMPI=0"; }

// The start-up line after the error: it asks the C API, which clears the error.
int failed(const char* collective, MPI_Comm comm, int rc) {
  std::fprintf(stderr, "shancoll_pmpi: %s failed: %s\n", collective, shancoll_last_error());
  if (verbose()) {
    try {
      announce();
    } catch (...) {
      // Out of memory while logging: the error itself is reported.
    }
  }
  PMPI_Comm_call_errhandler(comm, rc);
  return rc;
}

std::int64_t bytes_of(MPI_Count count, MPI_Datatype type) {
  int size = 0;
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) return 0;
  return count * size;
}

int gathered_ranks(MPI_Comm comm) {
  int inter = 0, size = 0;
  PMPI_Comm_test_inter(comm, &inter);
  if (inter) {
    PMPI_Comm_remote_size(comm, &size);
  } else {
    PMPI_Comm_size(comm, &size);
  }
  return size;
}

std::int64_t gathered_bytes(MPI_Count recvcount, MPI_Datatype type, MPI_Comm comm) {
  return gathered_ranks(comm) * bytes_of(recvcount, type);
}

std::int64_t own_bytes(const void* buf, MPI_Count count, MPI_Datatype type, MPI_Count root_count,
                       MPI_Datatype root_type) {
  return buf == MPI_IN_PLACE ? bytes_of(root_count, root_type) : bytes_of(count, type);
}

}  // namespace shancoll::pmpi

using shancoll::Collective;
using shancoll::Comm;
namespace capi = shancoll::capi;
using shancoll::pmpi::allgatherv_library;
using shancoll::pmpi::alltoallv_key;
using shancoll::pmpi::bytes_of;
using shancoll::pmpi::count_at_root;
using shancoll::pmpi::Entry;
using shancoll::pmpi::gathered_bytes;
using shancoll::pmpi::interpose;
using shancoll::pmpi::key_of;
using shancoll::pmpi::kNoRepeat;
using shancoll::pmpi::layout_key;
using shancoll::pmpi::my_block_bytes;
using shancoll::pmpi::own_bytes;
using shancoll::pmpi::RouteKey;
using shancoll::pmpi::send_recv_key;

extern "C" {

int MPI_Allgather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Allgather", {Entry::allgather, Collective::allgather}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, sendbuf),
      [&] { return gathered_bytes(recvcount, recvtype, comm); },
      [&] {
        return shancoll_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                  nullptr, nullptr);
      },
      [&] {
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_allgather(c, sendbuf, recvbuf, recvcount, recvtype, rc);
      });
}

int MPI_Allgatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype,
                   MPI_Comm comm) {
  return interpose(
      "MPI_Allgatherv", {Entry::allgatherv, Collective::allgatherv}, comm,
      layout_key(sendcount, sendtype, 0, recvtype, sendbuf, recvcounts, displs),
      [&] { return gathered_bytes(recvcounts, recvtype, comm); },
      [&] {
        return shancoll_allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                   recvtype, comm, nullptr, nullptr);
      },
      [&] {
        return allgatherv_library(
            recvcounts, displs, comm,
            [&](int block) {
              return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, block, recvtype, comm);
            },
            [&] {
              return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                     recvtype, comm);
            });
      },
      kNoRepeat);
}

int MPI_Allreduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                  MPI_Comm comm) {
  return interpose(
      "MPI_Allreduce", {Entry::allreduce, Collective::allreduce}, comm,
      key_of(count, datatype, op, sendbuf), [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_allreduce(sendbuf, recvbuf, count, datatype, op, comm, nullptr, nullptr);
      },
      [&] { return PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_allreduce(c, comm, sendbuf, recvbuf, count, datatype, op, rc);
      });
}

int MPI_Alltoall(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Alltoall", {Entry::alltoall, Collective::alltoall}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, sendbuf),
      [&] { return gathered_bytes(recvcount, recvtype, comm); },
      [&] {
        return shancoll_alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                 nullptr, nullptr);
      },
      [&] {
        return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_alltoall(c, sendbuf, recvbuf, recvcount, recvtype, rc);
      });
}

int MPI_Alltoallv(const void* sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void* recvbuf, const int recvcounts[], const int rdispls[],
                  MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Alltoallv", {Entry::alltoallv, Collective::alltoallv}, comm,
      alltoallv_key(sendbuf, sendcounts, sdispls, sendtype, recvcounts, rdispls, recvtype),
      [&] { return gathered_bytes(recvcounts, recvtype, comm); },
      [&] {
        return shancoll_alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                  rdispls, recvtype, comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
      },
      kNoRepeat);
}

int MPI_Barrier(MPI_Comm comm) {
  return interpose(
      "MPI_Barrier", {Entry::barrier, Collective::barrier}, comm,
      [](const Comm&) { return RouteKey{}; }, [] { return std::int64_t{0}; },
      [&] { return shancoll_barrier(comm, nullptr, nullptr); }, [&] { return PMPI_Barrier(comm); },
      [&](Comm& c, int& rc) { return capi::repeat_barrier(c, comm, rc); });
}

int MPI_Bcast(void* buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Bcast", {Entry::bcast, Collective::bcast}, comm,
      key_of(count, datatype, MPI_OP_NULL, buffer, root), [&] { return bytes_of(count, datatype); },
      [&] { return shancoll_bcast(buffer, count, datatype, root, comm, nullptr, nullptr); },
      [&] { return PMPI_Bcast(buffer, count, datatype, root, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_bcast(c, comm, buffer, count, datatype, root, rc);
      });
}

int MPI_Reduce(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               int root, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce", {Entry::reduce, Collective::reduce}, comm,
      key_of(count, datatype, op, sendbuf, root), [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_reduce(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr, nullptr);
      },
      [&] { return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_reduce(c, comm, sendbuf, recvbuf, count, datatype, op, root, rc);
      });
}

// MPI_Scan and MPI_Exscan are interposed too (their _c variants below).
int MPI_Scan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
             MPI_Comm comm) {
  return interpose(
      "MPI_Scan", {Entry::scan, Collective::scan}, comm, key_of(count, datatype, op, sendbuf),
      [&] { return bytes_of(count, datatype); },
      [&] { return shancoll_scan(sendbuf, recvbuf, count, datatype, op, comm, nullptr, nullptr); },
      [&] { return PMPI_Scan(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_scan(c, comm, sendbuf, recvbuf, count, datatype, op, false, rc);
      });
}

int MPI_Exscan(const void* sendbuf, void* recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
               MPI_Comm comm) {
  return interpose(
      "MPI_Exscan", {Entry::exscan, Collective::exscan}, comm, key_of(count, datatype, op, sendbuf),
      [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_exscan(sendbuf, recvbuf, count, datatype, op, comm, nullptr, nullptr);
      },
      [&] { return PMPI_Exscan(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_scan(c, comm, sendbuf, recvbuf, count, datatype, op, true, rc);
      });
}

// MPI_Reduce_scatter_block and MPI_Reduce_scatter (their _c variants below).
int MPI_Reduce_scatter_block(const void* sendbuf, void* recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce_scatter_block", {Entry::reduce_scatter_block, Collective::reduce_scatter_block},
      comm, key_of(recvcount, datatype, op, sendbuf), [&] { return bytes_of(recvcount, datatype); },
      [&] {
        return shancoll_reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                             nullptr, nullptr);
      },
      [&] { return PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_reduce_scatter_block(c, comm, sendbuf, recvbuf, recvcount, datatype, op,
                                                 rc);
      });
}

int MPI_Reduce_scatter(const void* sendbuf, void* recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce_scatter", {Entry::reduce_scatter, Collective::reduce_scatter}, comm,
      [&](const Comm& c) {
        RouteKey k = key_of(0, datatype, op, sendbuf)(c);
        k.add_array(recvcounts, c.size());
        return k;
      },
      [&] { return my_block_bytes(recvcounts, datatype, comm); },
      [&] {
        return shancoll_reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm, nullptr,
                                       nullptr);
      },
      [&] { return PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm); },
      kNoRepeat);
}

int MPI_Gather(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
               int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Gather", {Entry::gather, Collective::gather}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, sendbuf, root),
      [&] { return own_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype); },
      [&] {
        return shancoll_gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                               comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Gather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                   root, rc);
      });
}

int MPI_Gatherv(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                const int recvcounts[], const int displs[], MPI_Datatype recvtype, int root,
                MPI_Comm comm) {
  return interpose(
      "MPI_Gatherv", {Entry::gatherv, Collective::gatherv}, comm,
      layout_key(sendcount, sendtype, 0, recvtype, sendbuf, recvcounts, displs, root),
      [&] {
        const MPI_Count mine = sendbuf == MPI_IN_PLACE ? count_at_root(recvcounts, comm) : 0;
        return own_bytes(sendbuf, sendcount, sendtype, mine, recvtype);
      },
      [&] {
        return shancoll_gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                                root, comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Gatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                            root, comm);
      },
      kNoRepeat);
}

int MPI_Scatter(const void* sendbuf, int sendcount, MPI_Datatype sendtype, void* recvbuf,
                int recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Scatter", {Entry::scatter, Collective::scatter}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, recvbuf, root),
      [&] { return own_bytes(recvbuf, recvcount, recvtype, sendcount, sendtype); },
      [&] {
        return shancoll_scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Scatter(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root, comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    root, rc);
      });
}

int MPI_Scatterv(const void* sendbuf, const int sendcounts[], const int displs[],
                 MPI_Datatype sendtype, void* recvbuf, int recvcount, MPI_Datatype recvtype,
                 int root, MPI_Comm comm) {
  return interpose(
      "MPI_Scatterv", {Entry::scatterv, Collective::scatterv}, comm,
      layout_key(0, sendtype, recvcount, recvtype, recvbuf, sendcounts, displs, root),
      [&] {
        const MPI_Count mine = recvbuf == MPI_IN_PLACE ? count_at_root(sendcounts, comm) : 0;
        return own_bytes(recvbuf, recvcount, recvtype, mine, sendtype);
      },
      [&] {
        return shancoll_scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                 recvtype, root, comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Scatterv(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                             root, comm);
      },
      kNoRepeat);
}

// The large-count variants (MPI-4): mpi4py 4 and other MPI-4 codes call these.
#if MPI_VERSION >= 4

int MPI_Allgather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                    MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Allgather_c", {Entry::allgather_c, Collective::allgather}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, sendbuf),
      [&] { return gathered_bytes(recvcount, recvtype, comm); },
      [&] {
        return shancoll_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_allgather(c, sendbuf, recvbuf, recvcount, recvtype, rc);
      });
}

int MPI_Allgatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                     const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                     MPI_Comm comm) {
  return interpose(
      "MPI_Allgatherv_c", {Entry::allgatherv_c, Collective::allgatherv}, comm,
      layout_key(sendcount, sendtype, 0, recvtype, sendbuf, recvcounts, displs),
      [&] { return gathered_bytes(recvcounts, recvtype, comm); },
      [&] {
        return shancoll_allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                     recvtype, comm, nullptr, nullptr);
      },
      [&] {
        return allgatherv_library(
            recvcounts, displs, comm,
            [&](MPI_Count block) {
              return PMPI_Allgather_c(sendbuf, sendcount, sendtype, recvbuf, block, recvtype, comm);
            },
            [&] {
              return PMPI_Allgatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                       recvtype, comm);
            });
      },
      kNoRepeat);
}

int MPI_Alltoall_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                   MPI_Count recvcount, MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Alltoall_c", {Entry::alltoall_c, Collective::alltoall}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, sendbuf),
      [&] { return gathered_bytes(recvcount, recvtype, comm); },
      [&] {
        return shancoll_alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm,
                                   nullptr, nullptr);
      },
      [&] {
        return PMPI_Alltoall_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_alltoall(c, sendbuf, recvbuf, recvcount, recvtype, rc);
      });
}

int MPI_Alltoallv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void* recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, MPI_Comm comm) {
  return interpose(
      "MPI_Alltoallv_c", {Entry::alltoallv_c, Collective::alltoallv}, comm,
      alltoallv_key(sendbuf, sendcounts, sdispls, sendtype, recvcounts, rdispls, recvtype),
      [&] { return gathered_bytes(recvcounts, recvtype, comm); },
      [&] {
        return shancoll_alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                    rdispls, recvtype, comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Alltoallv_c(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts,
                                rdispls, recvtype, comm);
      },
      kNoRepeat);
}

int MPI_Allreduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                    MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Allreduce_c", {Entry::allreduce_c, Collective::allreduce}, comm,
      key_of(count, datatype, op, sendbuf), [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_allreduce_c(sendbuf, recvbuf, count, datatype, op, comm, nullptr, nullptr);
      },
      [&] { return PMPI_Allreduce_c(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_allreduce(c, comm, sendbuf, recvbuf, count, datatype, op, rc);
      });
}

int MPI_Bcast_c(void* buffer, MPI_Count count, MPI_Datatype datatype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Bcast_c", {Entry::bcast_c, Collective::bcast}, comm,
      key_of(count, datatype, MPI_OP_NULL, buffer, root), [&] { return bytes_of(count, datatype); },
      [&] { return shancoll_bcast_c(buffer, count, datatype, root, comm, nullptr, nullptr); },
      [&] { return PMPI_Bcast_c(buffer, count, datatype, root, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_bcast(c, comm, buffer, count, datatype, root, rc);
      });
}

int MPI_Reduce_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce_c", {Entry::reduce_c, Collective::reduce}, comm,
      key_of(count, datatype, op, sendbuf, root), [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm, nullptr,
                                 nullptr);
      },
      [&] { return PMPI_Reduce_c(sendbuf, recvbuf, count, datatype, op, root, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_reduce(c, comm, sendbuf, recvbuf, count, datatype, op, root, rc);
      });
}

int MPI_Scan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
               MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Scan_c", {Entry::scan_c, Collective::scan}, comm, key_of(count, datatype, op, sendbuf),
      [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_scan_c(sendbuf, recvbuf, count, datatype, op, comm, nullptr, nullptr);
      },
      [&] { return PMPI_Scan_c(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_scan(c, comm, sendbuf, recvbuf, count, datatype, op, false, rc);
      });
}

int MPI_Exscan_c(const void* sendbuf, void* recvbuf, MPI_Count count, MPI_Datatype datatype,
                 MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Exscan_c", {Entry::exscan_c, Collective::exscan}, comm,
      key_of(count, datatype, op, sendbuf), [&] { return bytes_of(count, datatype); },
      [&] {
        return shancoll_exscan_c(sendbuf, recvbuf, count, datatype, op, comm, nullptr, nullptr);
      },
      [&] { return PMPI_Exscan_c(sendbuf, recvbuf, count, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_scan(c, comm, sendbuf, recvbuf, count, datatype, op, true, rc);
      });
}

int MPI_Reduce_scatter_block_c(const void* sendbuf, void* recvbuf, MPI_Count recvcount,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce_scatter_block_c",
      {Entry::reduce_scatter_block_c, Collective::reduce_scatter_block}, comm,
      key_of(recvcount, datatype, op, sendbuf), [&] { return bytes_of(recvcount, datatype); },
      [&] {
        return shancoll_reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm,
                                               nullptr, nullptr);
      },
      [&] { return PMPI_Reduce_scatter_block_c(sendbuf, recvbuf, recvcount, datatype, op, comm); },
      [&](Comm& c, int& rc) {
        return capi::repeat_reduce_scatter_block(c, comm, sendbuf, recvbuf, recvcount, datatype, op,
                                                 rc);
      });
}

int MPI_Reduce_scatter_c(const void* sendbuf, void* recvbuf, const MPI_Count recvcounts[],
                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm) {
  return interpose(
      "MPI_Reduce_scatter_c", {Entry::reduce_scatter_c, Collective::reduce_scatter}, comm,
      [&](const Comm& c) {
        RouteKey k = key_of(0, datatype, op, sendbuf)(c);
        k.add_array(recvcounts, c.size());
        return k;
      },
      [&] { return my_block_bytes(recvcounts, datatype, comm); },
      [&] {
        return shancoll_reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm, nullptr,
                                         nullptr);
      },
      [&] { return PMPI_Reduce_scatter_c(sendbuf, recvbuf, recvcounts, datatype, op, comm); },
      kNoRepeat);
}

int MPI_Gather_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                 MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Gather_c", {Entry::gather_c, Collective::gather}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, sendbuf, root),
      [&] { return own_bytes(sendbuf, sendcount, sendtype, recvcount, recvtype); },
      [&] {
        return shancoll_gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                 comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Gather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                             comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_gather(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                   root, rc);
      });
}

int MPI_Gatherv_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  const MPI_Count recvcounts[], const MPI_Aint displs[], MPI_Datatype recvtype,
                  int root, MPI_Comm comm) {
  return interpose(
      "MPI_Gatherv_c", {Entry::gatherv_c, Collective::gatherv}, comm,
      layout_key(sendcount, sendtype, 0, recvtype, sendbuf, recvcounts, displs, root),
      [&] {
        const MPI_Count mine = sendbuf == MPI_IN_PLACE ? count_at_root(recvcounts, comm) : 0;
        return own_bytes(sendbuf, sendcount, sendtype, mine, recvtype);
      },
      [&] {
        return shancoll_gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs,
                                  recvtype, root, comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Gatherv_c(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                              root, comm);
      },
      kNoRepeat);
}

int MPI_Scatter_c(const void* sendbuf, MPI_Count sendcount, MPI_Datatype sendtype, void* recvbuf,
                  MPI_Count recvcount, MPI_Datatype recvtype, int root, MPI_Comm comm) {
  return interpose(
      "MPI_Scatter_c", {Entry::scatter_c, Collective::scatter}, comm,
      send_recv_key(sendcount, sendtype, recvcount, recvtype, recvbuf, root),
      [&] { return own_bytes(recvbuf, recvcount, recvtype, sendcount, sendtype); },
      [&] {
        return shancoll_scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                                  comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Scatter_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, root,
                              comm);
      },
      [&](Comm& c, int& rc) {
        return capi::repeat_scatter(c, sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype,
                                    root, rc);
      });
}

int MPI_Scatterv_c(const void* sendbuf, const MPI_Count sendcounts[], const MPI_Aint displs[],
                   MPI_Datatype sendtype, void* recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                   int root, MPI_Comm comm) {
  return interpose(
      "MPI_Scatterv_c", {Entry::scatterv_c, Collective::scatterv}, comm,
      layout_key(0, sendtype, recvcount, recvtype, recvbuf, sendcounts, displs, root),
      [&] {
        const MPI_Count mine = recvbuf == MPI_IN_PLACE ? count_at_root(sendcounts, comm) : 0;
        return own_bytes(recvbuf, recvcount, recvtype, mine, sendtype);
      },
      [&] {
        return shancoll_scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount,
                                   recvtype, root, comm, nullptr, nullptr);
      },
      [&] {
        return PMPI_Scatterv_c(sendbuf, sendcounts, displs, sendtype, recvbuf, recvcount, recvtype,
                               root, comm);
      },
      kNoRepeat);
}

#endif  // MPI_VERSION >= 4

// The summary needs every rank, so it is printed before MPI shuts down.
int MPI_Finalize(void) {
  if (shancoll::pmpi::summary()) shancoll::pmpi::print_summary();
  return PMPI_Finalize();
}

}  // extern "C"
