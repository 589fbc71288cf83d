// Barrier: no rank leaves the call before every rank of the communicator
// has entered it (and, as MPI_Barrier, everything a rank wrote before it is
// visible to the others after it where shared memory carries the signal).
//
// Every algorithm has the same signature; the registry is
// barrier_select.cc, the door every front end calls barrier.cc.
#pragma once

#include <mpi.h>

#include <string>
#include <string_view>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/options.h"

namespace shancoll {

using BarrierFn = void (*)(Comm&, const Options&, Stats&);

void barrier_release_gather(Comm&, const Options&, Stats&);
void barrier_dissemination(Comm&, const Options&, Stats&);
void barrier_mpi(Comm&, const Options&, Stats&);

// Which rank of comm.mpi() member i of a dissemination is (no list is
// built per call: a repeated call allocates nothing).
using MemberRank = int (*)(const Topology& topo, int i);

// Dissemination among `size` members (member i is rank_of(topo, i); I am
// member `me`): zero-byte messages, each wait with `timeout`. Counts rounds
// and messages (intra or inter node by `topo`) into `stats`.
// barrier_dissemination.cc.
void dissemination_among(Comm& comm, int size, int me, MemberRank rank_of, const Topology& topo,
                         double timeout, Stats& stats);

// ---------------------------------------------------------------------------
// The registry and "auto"

struct Express;  // coll/door.h
using BarrierExpressFn = Express (*)(Comm&, const Options&);
Express barrier_release_gather_express(Comm&, const Options&);

struct BarrierAlgorithm {
  const char* name;
  BarrierFn fn;
  const char* summary;
  BarrierExpressFn express = nullptr;  // its replay of a repeated call, if any (door.h)
};

const Registry<BarrierAlgorithm>& barrier_registry();

// "auto": the active rule table (rules.h; a barrier row's bytes are 0) for
// `ranks` ranks on `nodes` nodes, else the built-in rule: release_gather
// on one host (virtual nodes included), the MPI library's across hosts.
std::string choose_barrier(int ranks, int nodes, int hosts);

// ---------------------------------------------------------------------------
// The door: barrier from every front end (Python, the C API, the PMPI
// library, the bench). Resolves the options and the algorithm
// (SHANCOLL_BARRIER_ALGORITHM), checks before any communication, runs, and
// records what ran in the Comm (last_stats, last_algorithm).

struct BarrierCall {
  MPI_Comm comm = MPI_COMM_NULL;         // an intra-communicator
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

Comm& barrier(const BarrierCall& call);
// The door's repeat path alone (as bcast_repeat, coll/rooted.h).
bool barrier_repeat(Comm& comm, const BarrierCall& call);

// Tags on comm.mpi() (a private dup): kBarrierTag + round.
constexpr int kBarrierTag = 0x5b40;

}  // namespace shancoll
