// What every collective's door (coll/<coll>/<coll>.cc) does alike: start
// from the call's options or the defaults, and run the chosen algorithm
// under Comm::run, recording what ran for last_stats.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "shancoll/call_options.h"
#include "shancoll/coll/check.h"
#include "shancoll/comm.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/ops.h"
#include "shancoll/rules.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/ring_stores.h"

namespace shancoll {

// The call's options (completed by the front end), else the collective's
// defaults (SHANCOLL_<COLL>_OPTIONS).
inline const CallOptions& options_or_defaults(const CallOptions* given, Collective c) {
  return given ? *given : default_options(c);
}

// The name to run: the caller's, else (none or "auto") the environment's,
// else "auto".
inline std::string_view requested(std::string_view given, const std::string& from_environment) {
  if (!given.empty() && given != "auto") return given;
  return from_environment.empty() ? std::string_view("auto") : std::string_view(from_environment);
}

// release_gather's options name what release_gather does: with another
// algorithm asked for by name they would be silently ignored.
inline void check_release_gather_keys(const CallOptions& o, std::string_view algorithm) {
  if (!o.release_gather_keys.empty() && algorithm != "auto" && algorithm != "release_gather")
    throw ArgumentError("algorithm: options " + o.release_gather_keys +
                        " belong to release_gather, not '" + std::string(algorithm) + "'");
}

// ArgumentError naming `root` unless it is a rank of `comm`.
inline void check_root(const Comm& comm, int root) {
  if (root < 0 || root >= comm.size())
    throw ArgumentError("root: must be a rank of the communicator (0.." +
                        std::to_string(comm.size() - 1) + "), got " + std::to_string(root));
}

// Checked mode (coll/check.h), first thing in a door: the ranks compare
// their calls before any of them refuses its own arguments alone (a rank's
// bad count is then every rank's "disagree on the count"). A timeout waiting
// for the others breaks the communicator, as in any collective.
inline void verify_agreement(MPI_Comm user, const CallOptions& co, const CallShape& shape) {
  if (!co.check) return;
  door_compared() = true;
  const double timeout = co.resolved().timeout;
  Comm& comm = Comm::of(user, timeout);
  const std::string collective(shape.collective);
  comm.run({collective.c_str(), "check"}, [&] { check_agreement(comm, shape, timeout); });
}

// What `auto`'s choice for a call depends on, besides the node layout:
// the collective (its rule table key), the bytes its rule is keyed by, and
// anything else its built-in rule reads (element type, op, ...) as `traits`.
struct AutoShape {
  const char* collective;
  std::int64_t rule_bytes;
  std::uint64_t traits = 0;
};

// The last choice of `auto` for one collective on one node layout: a loop
// of calls of one shape (a solver's allreduce of one size, an application
// under the PMPI library) reads the rule table and the built-in rule once,
// not on every call. Stale when the shape changes or the selection
// generation moves (set_rules, reload_environment).
template <class A>
struct AutoChoice : LayoutState {
  std::uint64_t generation = 0;  // selection_generation() when chosen; 0: never
  std::int64_t rule_bytes = -1;
  std::uint64_t traits = 0;
  const A* algorithm = nullptr;
  const CallOptions* rule_options = nullptr;  // the choosing rule's, if it has some
};

// `auto`'s algorithm on the layout of o.ranks_per_node for a call of
// `shape`: choose(the layout's topology) on
// the first call of that shape, the remembered entry after it. For a call
// that gave no options of its own (`given` null), the options of the rule
// that chose it (a machine's rule table, rules.h) replace `o`.
template <class A, class Choose>
const A& auto_choice(Comm& comm, const AutoShape& shape, Options& o, const CallOptions* given,
                     Choose&& choose) {
  NodeContext& ctx = comm.nodes(o.ranks_per_node);
  AutoChoice<A>& memo = ctx.state<AutoChoice<A>>();
  const std::uint64_t generation = selection_generation();
  if (memo.generation != generation || memo.rule_bytes != shape.rule_bytes ||
      memo.traits != shape.traits) {
    memo.algorithm = choose(ctx.topo);  // the registry's entry
    memo.rule_options = rule_options(shape.collective, shape.rule_bytes, ctx.topo.size,
                                     ctx.topo.node_count, ctx.topo.hosts, memo.algorithm->name);
    memo.generation = generation;
    memo.rule_bytes = shape.rule_bytes;
    memo.traits = shape.traits;
  }
  if (!given && memo.rule_options) o = memo.rule_options->resolved();
  return *memo.algorithm;
}

// An algorithm's express for its door's plan: the replay of the plan's call
// on the caller's buffers without the algorithm's set-up (its node layout,
// options, trees and checks, which the calls before it went through with
// the same arguments), for the paths where that set-up is most of a call
// (bcast and reduce inlined on release_gather's lines, release_gather.h).
// The algorithm makes it (its registry entry's `express`) after the plan's
// first repeat ran the usual way; `run` does the call and returns true, or
// returns false having done nothing (the door then runs the algorithm the
// usual way, which decides afresh). A replay records `stats`: those of the
// call the express was made after, which every replay repeats. Every process-wide or
// communicator-wide rule holds as on the usual path: run under Comm::run, a timeout breaks the
// communicator.
struct Express {
  bool (*run)(const Express& e, const std::byte* send, std::byte* recv) = nullptr;
  void* state = nullptr;             // the algorithm's (release_gather: the NodeContext)
  std::int64_t count = 0;            // the call's bytes or elements
  int root = 0;                      // the local rank of the root
  const Reducer* reducer = nullptr;  // the plan's
  double timeout = 0;
  Stats stats;  // set by make_express
};

// What a door's plan for a repeated call is keyed by: the arguments its
// resolution read (bytes or elements, root, element type, the caller's
// datatype and op; unused ones stay at their defaults).
struct RepeatKey {
  std::int64_t count = -1;
  int root = -1;
  DType type{};
  MPI_Datatype datatype = MPI_DATATYPE_NULL;
  MPI_Op op = MPI_OP_NULL;
  bool operator==(const RepeatKey& o) const {
    return count == o.count && root == o.root && type == o.type && datatype == o.datatype &&
           op == o.op;
  }
};

// A door's last resolution on one communicator (Comm::state): a call of the
// same key, with no options of its own and no algorithm named ("" or "auto"),
// goes from Comm::find straight to the algorithm with the algorithm, options
// and reducer worked out before (a loop of small calls under the PMPI
// library asks the options, the environment, the rules and MPI nothing
// again). Made only outside checked mode and, for reductions, with a
// predefined op: a user op's handle may be freed and come back as another op
// (commutative or not). Stale when the selection generation moves
// (set_rules, reload_environment: the defaults, the environment's algorithm
// and the rules may all have changed). Everything the door checks that the
// key does not fix (buffers, in place) is checked again on every call.
// `Slot` keeps apart the plans of doors that share an algorithm type (scan
// and exscan), so that calls alternating between them both repeat.
template <class A, int Slot = 0>
struct RepeatPlan : LayoutState {
  std::uint64_t generation = 0;  // selection_generation() when made; 0: none
  RepeatKey key;
  const A* algorithm = nullptr;
  Options options;
  std::optional<Reducer> reducer;
  Express express;             // the algorithm's, once asked (make_express)
  bool express_asked = false;  // asked since remembered

  bool matches(const RepeatKey& k) const {
    return generation == selection_generation() && key == k;
  }
  void remember(const RepeatKey& k, const A& a, const Options& o) {
    key = k;
    algorithm = &a;
    options = o;
    generation = selection_generation();
    express = {};
    express_asked = false;
  }
};

// The layout arrays of a regular rooted collective's plan (gather, scatter:
// the algorithm type `A` keeps each door's apart on one communicator): every
// rank's block of `block` bytes, in rank order; made with the plan, so that
// a repeat builds none.
template <class A>
struct RegularLayout : LayoutState {
  std::vector<std::int64_t> counts, displs;
  void make(int size, std::int64_t block) {
    counts.assign(static_cast<std::size_t>(size), block);
    displs.resize(counts.size());
    for (std::size_t r = 0; r < displs.size(); ++r)
      displs[r] = static_cast<std::int64_t>(r) * block;
  }
};

// Whether a call may use or make its door's plan: no options of its own,
// no algorithm named.
inline bool plannable(std::string_view algorithm, const CallOptions* options) {
  return !options && (algorithm.empty() || algorithm == "auto");
}

// The plan of collective A on `comm` when `key` repeats it; none for a call
// with options or an algorithm named, or on a broken communicator (a broken
// one refuses the call the long way, with its message).
template <class A, int Slot = 0>
RepeatPlan<A, Slot>* repeat_plan(Comm& comm, std::string_view algorithm, const CallOptions* options,
                                 const RepeatKey& key) {
  if (!plannable(algorithm, options) || comm.broken()) return nullptr;
  RepeatPlan<A, Slot>& plan = comm.state<RepeatPlan<A, Slot>>();
  if (!plan.matches(key)) return nullptr;
  comm.set_call_timeout(plan.options.timeout);  // as Comm::of
  return &plan;
}

// A door's first step: `repeat(comm)` (its <coll>_repeat, which runs the
// call on its plan and returns true, or does nothing and returns false) on
// the Comm of `call`'s communicator, if set up; that Comm when it ran.
template <class Call, class Repeat>
Comm* repeated(const Call& call, Repeat&& repeat) {
  if (!plannable(call.algorithm, call.options)) return nullptr;
  Comm* comm = Comm::find(call.comm);
  return comm && repeat(*comm) ? comm : nullptr;
}

// The PMPI library's offer to run the MPI library's own call itself: set
// (`offered`) just before it calls a C API function, taken by the first
// run_recorded of that call. When the door chose `mpi`, the door returns
// without running it (`taken`) and the PMPI library calls PMPI_<Coll> on the
// user's communicator with the user's arguments: the library's call alone,
// not the library's call on shancoll's dup behind the door's conversions.
// Every rank of a call makes the same choice (the door's), so every rank
// calls the library on the user's communicator; per thread, as the calls.
struct LibraryOffer {
  bool offered = false;
  bool taken = false;
};
inline thread_local LibraryOffer t_library_offer;

// Whether this call's `algorithm` is left to the caller that offered to run
// the MPI library's own call (LibraryOffer); the offer is used up either way.
inline bool library_offer_taken(const char* algorithm) {
  LibraryOffer& offer = t_library_offer;
  if (!offer.offered) return false;
  offer.offered = false;
  offer.taken = std::string_view(algorithm) == "mpi";
  return offer.taken;
}

// Runs body(stats) as `collective` with `algorithm` (Comm::run: a failure
// breaks the communicator, SHANCOLL_ON_ERROR) and records the statistics;
// an `mpi` the PMPI library offered to run is left to it (LibraryOffer).
template <class C, class F>
auto run_recorded(C& comm, const char* collective, const char* algorithm, F&& body) {
  Stats stats;
  const auto record = [&] {
    comm.last_stats = stats;
    comm.last_algorithm = algorithm;
  };
  if (library_offer_taken(algorithm)) {
    record();
    return decltype(body(stats))();
  }
  const std::int64_t copied = single_copy_bytes_so_far();
  const std::int64_t streamed = ring_streamed_bytes_so_far();
  const auto record_run = [&] {
    stats.single_copy_bytes = single_copy_bytes_so_far() - copied;
    stats.streamed_ring_bytes = ring_streamed_bytes_so_far() - streamed;
    record();
  };
  if constexpr (std::is_void_v<decltype(body(stats))>) {
    comm.run({collective, algorithm}, [&] { body(stats); });
    record_run();
  } else {
    auto result = comm.run({collective, algorithm}, [&] { return body(stats); });
    record_run();
    return result;
  }
}

// The door's repeat through its plan's express (Express): true when it ran.
template <class Plan>
bool run_express(Comm& comm, const char* collective, const Plan& plan, const std::byte* send,
                 std::byte* recv) {
  const Express& e = plan.express;
  if (!e.run) return false;
  t_library_offer.offered = false;  // used up, as by run_recorded (an express is never `mpi`)
  const char* algorithm = plan.algorithm->name;
  if (!comm.run({collective, algorithm}, [&] { return e.run(e, send, recv); })) return false;
  comm.last_stats = e.stats;
  comm.last_algorithm = algorithm;
  return true;
}

// After the plan's call ran the usual way: its algorithm's express, asked
// once per plan (an algorithm without one, or a call it has none for, is
// not asked again), recording what that call recorded.
template <class Plan, class... Args>
void make_express(Comm& comm, Plan& plan, const Args&... args) {
  if (plan.express_asked) return;
  plan.express_asked = true;
  if (!plan.algorithm->express) return;
  plan.express = plan.algorithm->express(comm, args..., plan.options);
  plan.express.stats = comm.last_stats;
}

}  // namespace shancoll
