// What the PMPI library's files share: the environment switches, the
// verbose log, the summary counters and the routing of one call.
#pragma once

#include <mpi.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <optional>
#include <type_traits>

#include "capi_internal.h"
#include "pmpi_route.h"
#include "shancoll.h"

namespace shancoll::pmpi {

bool enabled();  // SHANCOLL_PMPI (default on)
bool verbose();  // SHANCOLL_PMPI_VERBOSE
bool summary();  // SHANCOLL_PMPI_SUMMARY
bool quiet();    // neither of the two: nothing to log or sum per call

// Prints (SHANCOLL_PMPI_VERBOSE=1) "<prefix><detail>" the first time it
// happens on this communicator and collective. Never throws. The first
// report of the process (every interposed call makes one, unless it fails)
// is preceded by the start-up line: the thread level, the MPI library, the
// rule table and what falls back.
void report(const char* collective, MPI_Comm comm, const char* prefix, const char* detail);

// "routed to shancoll <algorithm>", with release_gather's trees, once per
// communicator and collective (as report()). Never throws.
void report_routed(const char* collective, MPI_Comm comm);

// A refusal caused by the configuration, a SHANCOLL_* variable (a misspelt
// option in SHANCOLL_BCAST_OPTIONS, say) or a rule table that cannot be used
// (SHANCOLL_RULES naming a file this process cannot read: "rules: ..."),
// sends every such call to the MPI library: that is said on stderr once per
// process, verbose or not, so that it is never silent. Then as report().
// Never throws.
inline void report_refusal(const char* collective, MPI_Comm comm, const char* error) {
  if (std::strncmp(error, "SHANCOLL_", 9) == 0 || std::strncmp(error, "rules: ", 7) == 0) {
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

// The verbose line of a call whose choice is the MPI library's own call.
inline constexpr const char* kLibraryChoice =
    "routed to shancoll mpi (the MPI library's own call, on the caller's communicator)";

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

// shancoll's call, offering to leave an `mpi` choice to the caller
// (LibraryOffer); true when the door left it (the call is not made then).
template <class Shancoll>
bool left_to_library(Shancoll&& shancoll_call, int& rc) {
  LibraryOffer& offer = t_library_offer;
  offer.offered = true;
  rc = shancoll_call();
  offer.offered = false;  // refused before the door: not used up
  const bool taken = offer.taken;
  offer.taken = false;
  return taken;
}

// A routed library call with the verbose line and the summary's record.
template <class Bytes, class Library>
int logged_library_call(const char* collective, MPI_Comm comm, Bytes&& bytes,
                        Library&& library_call, bool timed) {
  const double start = timed ? PMPI_Wtime() : 0;
  const int rc = library_call();
  report(collective, comm, "", kLibraryChoice);
  if (timed) record(collective, "mpi", bytes(), PMPI_Wtime() - start);
  return rc;
}

// What interpose() needs to route a call straight to the MPI library's own
// call when shancoll's choice for it is `mpi` (pmpi_route.h):
// the function's route and the collective whose options decide.
struct Route {
  Entry entry;
  Collective collective;
};

// A route's key for a call with one count, datatype and op (in place: the
// send buffer).
inline auto key_of(MPI_Count count, MPI_Datatype type, MPI_Op op, const void* sendbuf,
                   int root = -1) {
  return [=](const Comm&) {
    RouteKey k;
    k.counts[0] = count;
    k.types[0] = type;
    k.op = op;
    k.root = root;
    k.in_place = sendbuf == MPI_IN_PLACE;
    return k;
  };
}

// A route's key for a call with send and receive counts and datatypes.
inline auto send_recv_key(MPI_Count sendcount, MPI_Datatype sendtype, MPI_Count recvcount,
                          MPI_Datatype recvtype, const void* in_place_buffer, int root = -1) {
  return [=](const Comm&) {
    RouteKey k;
    k.counts[0] = sendcount;
    k.counts[1] = recvcount;
    k.types[0] = sendtype;
    k.types[1] = recvtype;
    k.root = root;
    k.in_place = in_place_buffer == MPI_IN_PLACE;
    return k;
  };
}

// send_recv_key's key plus a v-collective's counts and displacements (int
// or MPI_Count / MPI_Aint): a rooted one's only at the root, which alone
// reads them.
template <class Count, class Disp>
auto layout_key(MPI_Count sendcount, MPI_Datatype sendtype, MPI_Count recvcount,
                MPI_Datatype recvtype, const void* in_place_buffer, const Count* counts,
                const Disp* displs, std::optional<int> root = std::nullopt) {
  return [=](const Comm& c) {
    RouteKey k = send_recv_key(sendcount, sendtype, recvcount, recvtype, in_place_buffer,
                               root.value_or(-1))(c);
    const bool read = !root || c.rank() == *root;
    k.add_array(counts, c.size(), read);
    k.add_array(displs, c.size(), read);
    return k;
  };
}

// Alltoallv's key: both sides' counts and displacements (in place: the
// receive side's alone).
template <class Count, class Disp>
auto alltoallv_key(const void* sendbuf, const Count* sendcounts, const Disp* sdispls,
                   MPI_Datatype sendtype, const Count* recvcounts, const Disp* rdispls,
                   MPI_Datatype recvtype) {
  return [=](const Comm& c) {
    RouteKey k = send_recv_key(0, sendtype, 0, recvtype, sendbuf)(c);
    const bool in_place = sendbuf == MPI_IN_PLACE;
    k.add_array(sendcounts, c.size(), !in_place);
    k.add_array(sdispls, c.size(), !in_place);
    k.add_array(recvcounts, c.size());
    k.add_array(rdispls, c.size());
    return k;
  };
}

// What an entry without a route to shancoll passes as interpose's `repeat`.
inline constexpr std::nullptr_t kNoRepeat = nullptr;

// After shancoll's call failed with `rc`: the MPI library's call when it was
// refused before any communication, else the communicator's error handler.
template <class Library>
int after_failure(const char* collective, MPI_Comm comm, int rc, Library&& library_call) {
  if (!capi::refused(rc)) return failed(collective, comm, rc);
  report_refusal(collective, comm, shancoll_last_error());
  return library_call();
}

// Routes one call: where a call of the same arguments went before (the
// route: the MPI library's own call, or, with `repeat`, shancoll's plan),
// else shancoll when it accepts the arguments (and offered to leave an `mpi`
// choice to this function), else the MPI library. `bytes()` is only
// evaluated for the summary; `key(comm's Comm)` is the call's route key;
// `repeat(Comm&, int& rc)` (capi::repeat_<coll>, or kNoRepeat) runs a
// repeated call on the door's plan, false when the door has none.
template <class MakeKey, class Bytes, class Shancoll, class Library, class Repeat>
int interpose(const char* collective, Route route, MPI_Comm comm, MakeKey&& key, Bytes&& bytes,
              Shancoll&& shancoll_call, Library&& library_call, Repeat&& repeat) {
  constexpr bool repeats = !std::is_null_pointer_v<std::decay_t<Repeat>>;
  // The route first: a call from inside shancoll (no recursion) would go
  // to the library too.
  Comm* known = Comm::find(comm);
  const CallRoute* routed = route_of(route.entry, known, key);
  if (routed && routed->target() == Target::library) {
    if (quiet()) return library_call();  // the usual case: nothing to report
    return logged_library_call(collective, comm, bytes, library_call, summary());
  }
  if (capi::inside()) return library_call();  // no recursion, no output
  if constexpr (repeats) {
    int rc = MPI_SUCCESS;
    if (routed && quiet() && repeat(*known, rc))
      return rc == MPI_SUCCESS ? rc : after_failure(collective, comm, rc, library_call);
  }
  const bool timed = summary();
  const double start = timed ? PMPI_Wtime() : 0;
  const char* algorithm = kLibrary;
  int rc = MPI_SUCCESS;
  if (const char* why = global_fallback()) {
    report(collective, comm, "fallback: ", why);
    rc = library_call();
  } else if (const std::uint64_t generation = selection_generation();
             left_to_library(shancoll_call, rc)) {
    // The library's call here, on the user's communicator; from now on, the route.
    remember_route(route.entry, route.collective, comm, generation, Target::library, key);
    rc = library_call();  // an MPI error went to the communicator's handler, as without us
    if (!timed && !verbose()) return rc;
    algorithm = "mpi";
    report(collective, comm, "", kLibraryChoice);
  } else if (rc == MPI_SUCCESS) {
    if constexpr (repeats)
      remember_route(route.entry, route.collective, comm, generation, Target::shancoll, key);
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

// MPI_Allgatherv's library call: the library's MPI_Allgather (`gather(block)`)
// when the layout is regular (every block counts[0], in rank order), as
// shancoll's `mpi` does (libraries tune the two apart: Intel MPI's allgather
// is 1.3-1.5x its allgatherv at 32-128 KiB on the AMD EPYC VM); else
// `gatherv()`. Only on a communicator shancoll knows (an intra-communicator
// whose size it has: no MPI query).
template <class Count, class Displ, class Gather, class Gatherv>
int allgatherv_library(const Count counts[], const Displ displs[], MPI_Comm comm, Gather&& gather,
                       Gatherv&& gatherv) {
  const Comm* known = Comm::find(comm);
  bool regular = known && counts && displs;
  for (int r = 0; regular && r < known->size(); ++r)
    regular = counts[r] == counts[0] && displs[r] == static_cast<Displ>(r) * counts[0];
  return regular ? gather(counts[0]) : gatherv();
}

}  // namespace shancoll::pmpi
