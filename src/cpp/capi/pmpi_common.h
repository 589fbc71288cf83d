// What the PMPI library's files share: the environment switches, the
// verbose log, the summary counters and the routing of one call.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "capi_internal.h"
#include "shancoll.h"

namespace shancoll::pmpi {

bool enabled();  // SHANCOLL_PMPI (default on)
bool verbose();  // SHANCOLL_PMPI_VERBOSE
bool summary();  // SHANCOLL_PMPI_SUMMARY

// Prints (SHANCOLL_PMPI_VERBOSE=1) "<prefix><detail>" the first time it
// happens on this communicator and collective. Never throws. The first
// report of the process (every interposed call makes one, unless it fails)
// is preceded by the start-up line: the thread level, the MPI library, the
// rule table and what falls back.
void report(const char* collective, MPI_Comm comm, const char* prefix, const char* detail);

// "routed to shancoll <algorithm>", with release_gather's trees, once per
// communicator and collective (as report()). Never throws.
void report_routed(const char* collective, MPI_Comm comm);

// A refusal caused by a SHANCOLL_* variable (a misspelt option in
// SHANCOLL_BCAST_OPTIONS, say) sends every such call to the MPI library: that
// is said on stderr once per process, verbose or not, so that it is never
// silent. Then as report(). Never throws.
inline void report_refusal(const char* collective, MPI_Comm comm, const char* error) {
  if (std::strncmp(error, "SHANCOLL_", 9) == 0) {
    static std::atomic<bool> told{false};
    if (!told.exchange(true))
      std::fprintf(stderr,
                   "shancoll_pmpi: %s goes to the MPI library: %s (and so does every call that "
                   "variable refuses; SHANCOLL_PMPI_VERBOSE=1 lists them)\n",
                   collective, error);
  }
  report(collective, comm, "fallback: ", error);
}

// The reason every call goes to the MPI library now, or nullptr.
const char* global_fallback();

// The label of calls left to the MPI library in the summary.
inline constexpr const char* kLibrary = "(MPI library)";

// Adds one call to the summary (SHANCOLL_PMPI_SUMMARY=1). Never throws.
void record(const char* collective, const char* algorithm, std::int64_t bytes, double seconds);

// Collective over MPI_COMM_WORLD: rank 0 prints the summary of all ranks.
void print_summary();

// A failure during the collective: nothing to fall back on; the
// communicator's error handler decides (fatal by default), as for an MPI error.
int failed(const char* collective, MPI_Comm comm, int rc);

// Bytes of count elements of type (0 for a bad type: the call reports it).
std::int64_t bytes_of(MPI_Count count, MPI_Datatype type);

// The summary's bytes of the block collectives, blocking and nonblocking.
// The ranks whose data a gather receives: the remote group of an
// inter-communicator, else the communicator's.
int gathered_ranks(MPI_Comm comm);

// Bytes of the gathered result: recvcount elements from each of those ranks.
std::int64_t gathered_bytes(MPI_Count recvcount, MPI_Datatype type, MPI_Comm comm);

template <class Count>
std::int64_t gathered_bytes(const Count recvcounts[], MPI_Datatype type, MPI_Comm comm) {
  const int size = gathered_ranks(comm);
  MPI_Count total = 0;
  for (int r = 0; recvcounts && r < size; ++r) total += recvcounts[r];
  return bytes_of(total, type);
}

// Bytes of this rank's own block of a gather or scatter (`count` of `type`
// at `buf`), or, in place at the root, of its entry in the root's counts.
std::int64_t own_bytes(const void* buf, MPI_Count count, MPI_Datatype type, MPI_Count root_count,
                       MPI_Datatype root_type);

// This rank's entry of the root's counts (a v-collective in place at the root).
template <class Count>
MPI_Count count_at_root(const Count counts[], MPI_Comm comm) {
  int rank = 0;
  PMPI_Comm_rank(comm, &rank);
  return counts ? counts[rank] : 0;
}

// The bytes of a reduce_scatter call: this rank's block.
template <class Count>
std::int64_t my_block_bytes(const Count recvcounts[], MPI_Datatype datatype, MPI_Comm comm) {
  int rank = 0;
  if (!recvcounts || PMPI_Comm_rank(comm, &rank) != MPI_SUCCESS) return 0;
  return bytes_of(recvcounts[rank], datatype);
}

// Routes one call: shancoll when it accepts the arguments, else the MPI
// library. `bytes()` is only evaluated for the summary.
template <class Bytes, class Shancoll, class Library>
int interpose(const char* collective, MPI_Comm comm, Bytes&& bytes, Shancoll&& shancoll_call,
              Library&& library_call) {
  if (capi::inside()) return library_call();  // first: no recursion, no output
  const bool timed = summary();
  const double start = timed ? PMPI_Wtime() : 0;
  const char* algorithm = kLibrary;
  int rc = MPI_SUCCESS;
  if (const char* why = global_fallback()) {
    report(collective, comm, "fallback: ", why);
    rc = library_call();
  } else if ((rc = shancoll_call()) == MPI_SUCCESS) {
    if (!timed && !verbose()) return rc;  // the usual case: nothing to report
    algorithm = shancoll_last_algorithm();
    report_routed(collective, comm);
  } else if (capi::refused(rc)) {
    report_refusal(collective, comm, shancoll_last_error());
    rc = library_call();
  } else {
    return failed(collective, comm, rc);
  }
  if (timed) record(collective, algorithm, bytes(), PMPI_Wtime() - start);
  return rc;
}

}  // namespace shancoll::pmpi
