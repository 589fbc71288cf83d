// Rooted collectives: bcast (the root's buffer to every rank) and reduce
// (every rank's contribution combined elementwise into the root's recvbuf).
// Every algorithm of a collective has the same signature; the registries
// are bcast/bcast_select.cc and reduce/reduce_select.cc, the doors every
// front end calls bcast/bcast.cc and reduce/reduce.cc. Also the blocking
// point-to-point helpers they share (every wait has the call's timeout: a
// missing peer is an error, not a hang).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "shancoll/call_options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"

namespace shancoll {

struct BcastArgs {
  std::byte* buf = nullptr;  // the root's data; the result everywhere
  std::int64_t bytes = 0;
  int root = 0;
};

struct ReduceArgs {
  const std::byte* send = nullptr;  // nullptr: in place (root only), the input is in recv
  std::byte* recv = nullptr;        // the root's result; ignored elsewhere
  std::int64_t count = 0;           // elements
  const Reducer* reducer = nullptr;
  int root = 0;

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(reducer->elem_size()); }
};

using BcastFn = void (*)(Comm&, const BcastArgs&, const Options&, Stats&);
using ReduceFn = void (*)(Comm&, const ReduceArgs&, const Options&, Stats&);
struct Express;  // coll/door.h
using BcastExpressFn = Express (*)(Comm&, const BcastArgs&, const Options&);
using ReduceExpressFn = Express (*)(Comm&, const ReduceArgs&, const Options&);

void bcast_release_gather(Comm&, const BcastArgs&, const Options&, Stats&);
void bcast_binomial(Comm&, const BcastArgs&, const Options&, Stats&);
void bcast_mpi(Comm&, const BcastArgs&, const Options&, Stats&);
void reduce_release_gather(Comm&, const ReduceArgs&, const Options&, Stats&);
void reduce_binomial(Comm&, const ReduceArgs&, const Options&, Stats&);
void reduce_mpi(Comm&, const ReduceArgs&, const Options&, Stats&);
Express bcast_release_gather_express(Comm&, const BcastArgs&, const Options&);
Express reduce_release_gather_express(Comm&, const ReduceArgs&, const Options&);

// ---------------------------------------------------------------------------
// The registries and "auto"

struct BcastAlgorithm {
  const char* name;
  BcastFn fn;
  const char* summary;
  BcastExpressFn express = nullptr;  // its replay of a repeated call, if any (door.h)
};

struct ReduceAlgorithm {
  const char* name;
  ReduceFn fn;
  bool rank_order;  // combines in rank order: non-commutative ops allowed
  const char* summary;
  ReduceExpressFn express = nullptr;  // its replay of a repeated call, if any (door.h)
};

const Registry<BcastAlgorithm>& bcast_registry();
const Registry<ReduceAlgorithm>& reduce_registry();

// "auto" of each: the active rule table (rules.h) for a call on `ranks`
// ranks and `nodes` nodes (<= 0: not known), else the built-in rule. Pure.
// Across hosts (physical nodes) the built-in rules leave the call to the MPI library.
std::string choose_bcast(std::int64_t bytes, int ranks, int nodes, int hosts = 1);
std::string choose_reduce(std::int64_t bytes, bool commutative, int ranks, int nodes,
                          int hosts = 1);

// ---------------------------------------------------------------------------
// The doors: bcast and reduce from every front end (Python, the C API, the
// PMPI library, the bench). Resolve the options and the algorithm
// (SHANCOLL_BCAST_ALGORITHM, SHANCOLL_REDUCE_ALGORITHM), check everything
// before any communication, run, and record what ran in the Comm.

struct BcastCall {
  MPI_Comm comm = MPI_COMM_NULL;  // an intra-communicator
  void* buf = nullptr;
  std::int64_t bytes = 0;
  int root = 0;
  std::string_view algorithm;            // "": the environment's, else "auto"
  const CallOptions* options = nullptr;  // completed; nullptr: default_options
};

struct ReduceCall {
  MPI_Comm comm = MPI_COMM_NULL;
  const void* send = nullptr;  // nullptr: in place (the root only)
  void* recv = nullptr;        // the root's result; ignored elsewhere
  std::int64_t count = 0;      // elements
  DType type{};
  MPI_Datatype datatype = MPI_DATATYPE_NULL;  // the caller's (user ops); NULL: type's own
  MPI_Op op = MPI_SUM;
  int root = 0;
  std::string_view algorithm;
  const CallOptions* options = nullptr;
};

Comm& bcast(const BcastCall& call);
Comm& reduce(const ReduceCall& call);

// The doors' repeat paths alone (door.h, RepeatPlan), on the call's Comm:
// true when the call repeats the door's last plannable call there (it ran,
// or threw as the door does), false when it does not (nothing was done).
// What the PMPI library's route to shancoll calls (capi/pmpi_route.h).
bool bcast_repeat(Comm& comm, const BcastCall& call);
bool reduce_repeat(Comm& comm, const ReduceCall& call);

// Tags on comm.mpi() (a private dup; allreduce schedules use 0x6000 and up).
constexpr int kBcastTag = 0x5b10;
constexpr int kReduceTag = 0x5b11;

// Blocking send / receive of bytes, polled with wait_until (timeout, pause hook).
void send_bytes_waiting(const std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                        double timeout);
void recv_bytes_waiting(std::byte* buf, std::int64_t bytes, int peer, int tag, MPI_Comm comm,
                        double timeout);

}  // namespace shancoll
