// Allreduce: every rank contributes `count` elements, every rank ends with
// their elementwise reduction x_0 o x_1 o ... o x_{P-1}.
//
// Every algorithm has the same signature; the registry (allreduce_select.cc)
// says which ones combine in plain rank order (non-commutative ops) and which
// give bitwise-identical results on every rank (floating point). The door
// every front end calls: allreduce.cc.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"
#include "shancoll/pattern/dissemination.h"

namespace shancoll {

struct AllreduceArgs {
  const std::byte* send = nullptr;  // nullptr: in place, the input is already in recv
  std::byte* recv = nullptr;
  std::int64_t count = 0;  // elements
  const Reducer* reducer = nullptr;
  int ports = 0;  // n of nway_dissemination, bruck, dissemination; 0 chooses
  // Floating point: results must be bitwise identical on all ranks, so
  // "auto" (and shan's inter-node step) never picks a rank-varying algorithm.
  bool consistent = true;

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(reducer->elem_size()); }
};

using AllreduceFn = void (*)(Comm&, const AllreduceArgs&, const Options&, Stats&);
// The schedule of a schedule-driven algorithm for (P, rank, ports > 0).
using ScheduleFn = pattern::ReduceSchedule (*)(int size, int rank, int ports);

void allreduce_dissemination(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_nway_dissemination(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_bruck(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_pairwise_exchange(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_binomial(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_ring(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_mpi(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_release_gather(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_shan(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_pieces(Comm&, const AllreduceArgs&, const Options&, Stats&);

pattern::ReduceSchedule dissemination_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule nway_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule bruck_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule pairwise_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule binomial_allreduce_schedule(int size, int rank, int ports);

// The ports an algorithm uses when args.ports is 0.
int default_ports(const char* algorithm, int size);

// Copies the input into the receive buffer (not in place).
void copy_input(const AllreduceArgs& args);

// ---------------------------------------------------------------------------
// The registry and "auto" (allreduce_select.cc)

struct AllreduceAlgorithm {
  const char* name;
  AllreduceFn fn;
  ScheduleFn schedule;           // schedule-driven (split-phase capable); nullptr otherwise
  bool (*rank_order)(int size);  // combines in plain rank order: non-commutative ops allowed
  bool (*same_tree)(int size);   // the same expression on every rank: bitwise-identical floats
  const char* summary;
};

const Registry<AllreduceAlgorithm>& allreduce_registry();
// The split-phase algorithms: the schedule-driven ones and mpi.
const Registry<AllreduceAlgorithm>& iallreduce_registry();

// What a call needs of an algorithm, as far as "auto" is concerned.
struct AllreduceNeeds {
  std::int64_t count = 0, bytes = 0;
  bool commutative = true;
  bool inexact = false;    // floating point
  bool consistent = true;  // the same bits on every rank required
};
AllreduceNeeds allreduce_needs(const AllreduceArgs& args);

// Can `a` run such a call at `size` ranks, as "auto" understands it (rank
// order for a non-commutative op, the same bits everywhere for consistent
// floating point, ring only with an element per rank)?
bool allreduce_allowed(const AllreduceAlgorithm& a, const AllreduceNeeds& needs, int size);

// "auto": the active rule table if it names an allowed algorithm, else the
// built-in rule, which goes through shared memory when nodes == 1 (nodes <=
// 0: not known) and leaves calls across hosts (physical nodes) to the MPI
// library. Pure: no communication.
std::string choose_allreduce(const AllreduceNeeds& needs, int size, int nodes, int hosts = 1);

// The algorithm for a name ("auto" or a registry name) that can run this op
// at `size` ranks; ArgumentError naming `algorithm` or `op`.
const AllreduceAlgorithm& select_allreduce(std::string_view name, const AllreduceArgs& args,
                                           int size, int nodes, int hosts = 1);
// The same for a split-phase call ("auto": the built-in rule among the
// split-phase algorithms).
const AllreduceAlgorithm& select_iallreduce(std::string_view name, const AllreduceArgs& args,
                                            int size);

// The built-in rule behind "auto" (no rule table) on a communicator of one
// node or of unknown layout.
const char* auto_allreduce(const AllreduceArgs& args, int size);
// The algorithm of shan's step between nodes: `size` ranks, one per node, on
// `hosts` hosts. The active table's row for that layout where it names one
// of shancoll's algorithms of messages alone (a schedule's, ring: no node
// step of its own), which is what `auto` runs on nodes of one rank (a row
// may name the network module, rules.h: at 2 hosts, 256 KiB,
// pairwise_exchange 1.21-1.31x MPICH's call under OFI's tcp where ring read
// 1.03-1.12x, and ring 1.13-1.18x under UCX where pairwise_exchange read
// 0.82-0.91x); else the built-in rule without the node step (ring from 64
// KiB). Never the library's call: a step of shan stays within shancoll's
// timeout (MPI_Allreduce with counts that differ between ranks hung a
// two-host suite under Open MPI).
const char* between_nodes_allreduce(const AllreduceArgs& args, int size, int hosts);

// ---------------------------------------------------------------------------
// The door: allreduce and iallreduce from every front end (Python, the C
// API, the PMPI library, the bench). Resolves the options and the algorithm
// (SHANCOLL_ALLREDUCE_ALGORITHM, SHANCOLL_IALLREDUCE_ALGORITHM), checks
// everything before any communication, runs, and records what ran in the
// Comm (last_stats, last_algorithm).

struct AllreduceCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an intra-communicator
  const void* send = nullptr;     // nullptr: in place (the input is in recv)
  void* recv = nullptr;
  std::int64_t count = 0;  // elements
  DType type{};
  MPI_Datatype datatype = MPI_DATATYPE_NULL;  // the caller's (user ops); NULL: type's own
  MPI_Op op = MPI_SUM;
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

class Request;

Comm& allreduce(const AllreduceCall& call);
// The door's repeat path alone (as bcast_repeat, coll/rooted.h).
bool allreduce_repeat(Comm& comm, const AllreduceCall& call);
// A split-phase allreduce, started (the request's test()/wait() finish it),
// or, persistent (allreduce_init), a request ready for start(): the
// schedule, the scratch or the MPI library's persistent request made once.
std::unique_ptr<Request> iallreduce(const AllreduceCall& call, bool persistent = false);

}  // namespace shancoll
