// The request doors: the nonblocking (i<coll>) and persistent (<coll>_init)
// form of every collective, from every front end, with the call structures
// of the blocking doors. Each resolves the options and the algorithm, checks
// what only it can check (the root, the algorithm), makes the engine and
// returns the request: started (nonblocking) or ready for start()
// (persistent). Allreduce's is iallreduce (coll/allreduce/allreduce.h).
//
// Algorithms of a request (requests.cc: request_algorithms, listed as
// shancoll.algorithms("i<coll>")), chosen by the call's `algorithm`, else
// SHANCOLL_I<COLL>_ALGORITHM, else auto:
//   mpi        the MPI library's own nonblocking or persistent collective;
//   a schedule shancoll's point-to-point schedule of the blocking algorithm
//              of the same name (pattern/block_schedule.h): barrier
//              `dissemination`, bcast `binomial`, allgather(v) `ring`,
//              alltoall(v) `pairwise`, gather(v) and scatter(v) `binomial`
//              (the v-forms: request_binomial_v.h), reduce `binomial`,
//              reduce_scatter(_block) `pairwise`, (ex)scan
//              `recursive_doubling`;
//   inline     a persistent bcast, reduce (`release_gather`) or allgather(v)
//              (`shan`) of at most 56 bytes per rank on one node of several
//              ranks: lines of the request's own node segment
//              (coll/persistent_inline.h); persistent requests only;
//   auto       a persistent request: the collective's persistent engine
//              (every size it fits) or `mpi` where the rule table's
//              <coll>_init row says so (rules.h: measured per machine and
//              library); without a row, the inline engine where it fits,
//              else `mpi`: the library's own request progresses inside its
//              own tests and waits as well as inside shancoll's, and
//              shancoll's schedules move the same point-to-point messages as
//              the library's. A nonblocking request: `mpi` (allreduce keeps
//              its built-in rule, select_iallreduce).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/coll/check.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/registry.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/rules.h"

namespace shancoll {

// A gather's or scatter's arguments as MPI takes them, from the C API's
// request forms under `mpi`: a datatype MPI alone can read (derived, with
// holes) reaches MPI as it is, on whichever rank has it.
struct TypedRooted {
  const void* block = nullptr;  // a gather's send, a scatter's receive buffer (or MPI_IN_PLACE)
  std::int64_t block_count = 0;
  MPI_Datatype block_type = MPI_DATATYPE_NULL;
  void* layout_buf = nullptr;                // the root's receive (gather) or send buffer
  std::vector<std::int64_t> counts, displs;  // the root's, in elements; empty: regular
  std::int64_t count = 0;                    // the root's per rank (regular)
  MPI_Datatype layout_type = MPI_DATATYPE_NULL;
};

// A call's bytes when its buffers only MPI can read (the C API's typed
// gather and scatter): no persistent engine takes it.
constexpr std::int64_t kTypedCall = -1;

// Persistent `auto`'s table choice on topology `t` of `comm`
// (persistent_choice: `engine`, "mpi", or "" for no row; the row's
// single_copy), the same on every rank: one allreduce at _init,
// since a row's bytes may differ between ranks (an erroneous call, a
// root's in-place block, a rank's typed call: kTypedCall, `mpi` for all)
// and ranks choosing apart would meet in no engine.
PersistentChoice agreed_persistent_choice(const Comm& comm, const Topology& t,
                                          const char* collective, std::int64_t bytes,
                                          const char* engine);

std::unique_ptr<Request> request_of(const BarrierCall& call, bool persistent);
std::unique_ptr<Request> request_of(const BcastCall& call, bool persistent);
std::unique_ptr<Request> request_of(const ReduceCall& call, bool persistent);
std::unique_ptr<Request> request_of(const GathervCall& call, bool persistent);
std::unique_ptr<Request> request_of(const ScattervCall& call, bool persistent);
std::unique_ptr<Request> request_of(const AllgathervCall& call, bool persistent);
std::unique_ptr<Request> request_of(const AlltoallvCall& call, bool persistent);
// block: reduce_scatter_block (call.counts null); exclusive: exscan.
std::unique_ptr<Request> request_of(const ReduceScatterCall& call, bool block, bool persistent);
std::unique_ptr<Request> request_of(const ScanCall& call, bool exclusive, bool persistent);

// What refuse(comm) refuses (an ArgumentError's message); empty: nothing.
template <class Refuse>
std::string refusal_of(const Comm& comm, Refuse&& refuse) {
  try {
    refuse(comm);
  } catch (const ArgumentError& e) {
    return e.what();
  }
  return {};
}

// Whether a request's ranks compare their calls (compare_request): in
// checked mode, at every persistent _init (MPI-4.1 makes the initialization
// calls nonlocal) and at the call that sets the communicator up (`sets_up`:
// it has no Comm yet; that call waits for every rank in Comm::of's
// handshake anyway). Elsewhere a nonblocking call must not wait for its
// peers (MPI: nonblocking collectives are local), so it compares nothing.
// Every rank of a correct program decides alike.
inline bool compares_request(bool check, bool persistent, bool sets_up) {
  return check || persistent || sets_up;
}

// A request door's first step, before anything is posted, where
// compares_request says so: the ranks compare their calls (one allgather on
// the communicator's dup, coll/check.h): in checked mode all of the call
// (the door's CallShape), otherwise only whether one refuses. What a rank
// refuses alone (a door's own checks, an algorithm's name, a front end's refusal:
// refuse_before_door) is then every rank's ArgumentError "check: rank r
// refused <door>: why" (each rank's own when all refuse), nothing is posted,
// and the communicator stays usable. Elsewhere a refusal is its rank's alone
// (docs/design.md, "A refusal on one rank"). `refusal`: this rank's (empty:
// none).
void compare_request(Comm& comm, bool check, CallShape shape, const std::string& refusal,
                     double timeout);

// A request's refusal by a front end before its door (its own arguments,
// parsed: `why`) when the ranks have not compared the call yet
// (door_compared) and compares_request has them compare it: it joins
// the comparison with its refusal, so that every rank raises "rank r refused
// <door>: why" before anything is posted (the others compare in their
// door). Returns without communicating otherwise.
void refuse_before_door(MPI_Comm user, const char* door, const std::string& why, bool persistent);

// What a request of `collective` runs for the caller's name `given` ("" or
// "auto": SHANCOLL_I<COLL>_ALGORITHM, else auto): "mpi" or the schedule's
// name; ArgumentError naming the argument or variable for any other.
const char* request_algorithm(std::string_view given, const char* collective);
// Whether `given` (else SHANCOLL_I<COLL>_ALGORITHM) asks for `auto`.
bool request_asks_auto(std::string_view given, const char* collective);

// The algorithms a request of `collective` ("bcast", ...) can run, as
// "auto, binomial, mpi".
std::string request_algorithms(const char* collective);
// The same as algorithm_listing's entries (auto aside); none when
// `collective` has no request door here (allreduce: iallreduce_registry).
std::optional<std::vector<AlgorithmInfo>> request_listing(std::string_view collective);

}  // namespace shancoll
