// The PMPI library's routes: a repeated call goes straight to where the
// same call went last time, the MPI library's own call or shancoll's plan.
//
// To the library: when shancoll's choice for a call is `mpi` (a rule table
// sends its size to the library, SHANCOLL_<COLL>=mpi), the entry calls
// PMPI_<Coll> on the user's communicator with the user's arguments, as if
// shancoll were not there. The first call of a shape goes through the door,
// which chooses; it offers the door to run the library's call itself
// (coll/door.h, LibraryOffer), and when the door chose `mpi` it calls the
// library and remembers the call's arguments as its route. A repeated call
// with the same arguments (and the same selection generation: set_rules and
// reload_environment move it) goes straight to the library: Comm::find (the
// thread's last communicator), one slot read and the arguments compared,
// about 40 instructions over PMPI_<Coll> (docs/performance.md, "The
// library's own call").
//
// To shancoll (bcast, reduce, allreduce, barrier, allgather, alltoall,
// reduce_scatter_block, gather, scatter, scan, exscan: the collectives of one size per
// rank, whose call path is most of a small call's time; gather and scatter
// with predefined datatypes, a derived one being staged the long way):
// after a call
// shancoll ran, the entry remembers its arguments, and a repeated call goes
// from the route to the door's repeat path (the door's RepeatPlan, through
// capi::repeat_<coll>), without the C API function's checks and
// conversions, which the same arguments passed before. The door's plan
// decides: when it does not match (another entry of the collective changed
// it), nothing is done and the call goes the long way. Only when nothing is
// logged or summed (quiet()).
//
// Why the ranks agree: a route is remembered only where the door ran the
// call with its plain options, and the door's choice is a function of what
// the route's key holds (the counts, datatypes, op, root, in place and, for
// the v-collectives, the counts and displacements the rank reads) on a
// given communicator and generation. So a rank that takes the route to the
// library would have chosen `mpi` through the door too, and a rank whose
// route missed (an argument the MPI standard calls insignificant there
// changed) goes through the door, which chooses `mpi` again and leaves the
// call to this file: every rank calls the library on the user's
// communicator. A route to shancoll ends in the door's own plan. Not
// remembered: checked mode (its agreement check runs every call),
// user-defined ops (a freed op's handle may come back as another op), calls
// that fell back.
//
// The routes live in the Comm (Comm::state), so they go with it when the
// communicator is freed; one per interposed function, the last shape only.
// Threads: per communicator, unlocked (MPI's rule: one collective at a time
// per communicator).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/door.h"
#include "shancoll/comm.h"
#include "shancoll/environment.h"
#include "shancoll/ops.h"

namespace shancoll::pmpi {

// Every interposed blocking function, its _c variant apart (one route each).
enum class Entry : unsigned {
  allgather,
  allgather_c,
  allgatherv,
  allgatherv_c,
  allreduce,
  allreduce_c,
  alltoall,
  alltoall_c,
  alltoallv,
  alltoallv_c,
  barrier,
  bcast,
  bcast_c,
  reduce,
  reduce_c,
  scan,
  scan_c,
  exscan,
  exscan_c,
  reduce_scatter_block,
  reduce_scatter_block_c,
  reduce_scatter,
  reduce_scatter_c,
  gather,
  gather_c,
  gatherv,
  gatherv_c,
  scatter,
  scatter_c,
  scatterv,
  scatterv_c,
  count
};

// An array argument the choice reads (counts, displacements), by content.
struct ArrayArg {
  const void* data;
  std::size_t bytes;
};

// The arguments of one call a route is keyed by; unused scalars stay zero.
// Only the first `array_count` arrays are set (the others are not even
// zeroed: the blocking collectives without arrays build their key in a few
// stores).
struct RouteKey {
  static constexpr int kArrays = 4;
  MPI_Count counts[2] = {0, 0};
  MPI_Datatype types[2] = {MPI_DATATYPE_NULL, MPI_DATATYPE_NULL};
  MPI_Op op = MPI_OP_NULL;
  int root = -1;
  bool in_place = false;
  int array_count = 0;
  ArrayArg arrays[kArrays];

  // Adds the array argument `a` of `size` entries, as empty when the rank
  // does not read it (a rooted collective's counts away from the root).
  template <class T>
  void add_array(const T* a, int size, bool read = true) {
    const bool used = read && a && size > 0;
    arrays[array_count++] = {used ? a : nullptr,
                             used ? sizeof(T) * static_cast<std::size_t>(size) : 0};
  }
};

// Where a route sends its calls.
enum class Target : unsigned char { library, shancoll };

// One interposed function's remembered call on one communicator.
class CallRoute {
 public:
  Target target() const { return target_; }
  bool matches(const RouteKey& k) const {
    if (generation_ != selection_generation() || k.counts[0] != key_.counts[0] ||
        k.counts[1] != key_.counts[1] || k.types[0] != key_.types[0] ||
        k.types[1] != key_.types[1] || k.op != key_.op || k.root != key_.root ||
        k.in_place != key_.in_place || k.array_count != key_.array_count)
      return false;
    for (int i = 0; i < k.array_count; ++i)
      if (k.arrays[i].bytes != arrays_[i].size() ||
          (k.arrays[i].bytes &&
           std::memcmp(k.arrays[i].data, arrays_[i].data(), k.arrays[i].bytes)))
        return false;
    return true;
  }
  // The arrays' copies keep their capacity: a communicator's arrays have one
  // size, so a new shape allocates nothing after the first.
  void remember(const RouteKey& k, std::uint64_t generation, Target target) {
    key_ = k;
    target_ = target;
    for (int i = 0; i < k.array_count; ++i) {
      const auto* data = static_cast<const std::byte*>(k.arrays[i].data);
      arrays_[i].assign(data, data + k.arrays[i].bytes);
      key_.arrays[i] = {nullptr, 0};  // the copy is compared, not the caller's pointer
    }
    generation_ = generation;
  }
  void forget() { generation_ = 0; }

 private:
  std::uint64_t generation_ = 0;  // selection_generation() when remembered; 0: none
  Target target_ = Target::library;
  RouteKey key_;
  std::vector<std::byte> arrays_[RouteKey::kArrays];
};

struct CallRoutes : LayoutState {
  CallRoute of[static_cast<unsigned>(Entry::count)];
};

// This function's route on `comm` (null: not set up) when `key` (made by
// make_key(*comm)) repeats it; null otherwise.
template <class MakeKey>
const CallRoute* route_of(Entry e, Comm* comm, MakeKey&& make_key) {
  if (!comm) return nullptr;
  const CallRoute& route = comm->state<CallRoutes>().of[static_cast<unsigned>(e)];
  return route.matches(make_key(*comm)) ? &route : nullptr;
}

// After a call the door left to the library (LibraryOffer taken) or
// shancoll ran: remembers it as the route of `e` on `comm`, unless checked
// mode or a user op make every call go through the door.
template <class MakeKey>
void remember_route(Entry e, Collective c, MPI_Comm comm, std::uint64_t generation, Target target,
                    MakeKey&& make_key) {
  Comm* found = Comm::find(comm);
  if (!found) return;
  CallRoute& route = found->state<CallRoutes>().of[static_cast<unsigned>(e)];
  const RouteKey key = make_key(*found);
  if (default_options(c).check || (key.op != MPI_OP_NULL && predefined_op_index(key.op) < 0)) {
    route.forget();
    return;
  }
  route.remember(key, generation, target);
}

}  // namespace shancoll::pmpi
