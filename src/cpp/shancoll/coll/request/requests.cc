#include "shancoll/coll/request/requests.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/coll/persistent_inline.h"
#include "shancoll/coll/persistent_single_copy.h"
#include "shancoll/coll/request/request_binomial_v.h"
#include "shancoll/coll/request/request_mpi.h"
#include "shancoll/coll/request/request_schedule.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/ops.h"
#include "shancoll/pattern/block_reduce.h"
#include "shancoll/pattern/block_rooted.h"
#include "shancoll/rules.h"

namespace shancoll {
namespace {

// The collectives that have a shancoll schedule as a request: its name and
// what it does, for the listing.
struct ScheduleName {
  const char* collective;
  const char* algorithm;
  const char* summary;
};
constexpr ScheduleName kSchedules[] = {
    {"barrier", "dissemination", "dissemination barrier: ceil(log2 P) rounds of empty messages"},
    {"bcast", "binomial", "binomial tree from the root: ceil(log2 P) rounds"},
    {"allgather", "ring", "ring: P - 1 rounds, one block to the right neighbour in each"},
    {"allgatherv", "ring", "ring: P - 1 rounds, one block to the right neighbour in each"},
    {"alltoall", "pairwise", "pairwise: P - 1 rounds, the block for rank + k out in round k"},
    {"alltoallv", "pairwise", "pairwise: P - 1 rounds, the block for rank + k out in round k"},
    {"gather", "binomial", "binomial tree to the root: ceil(log2 P) rounds, subtrees' blocks"},
    {"scatter", "binomial", "binomial tree from the root: ceil(log2 P) rounds, subtrees' blocks"},
    {"gatherv", "binomial",
     "binomial tree to the root: the root's counts down the tree, then subtrees' blocks up "
     "(2 ceil(log2 P) rounds)"},
    {"scatterv", "binomial",
     "binomial tree from the root: its counts, then subtrees' blocks down (2 ceil(log2 P) "
     "rounds)"},
    {"reduce", "binomial",
     "binomial tree to the root (rank 0 for non-commutative ops, then to the root)"},
    {"reduce_scatter", "pairwise",
     "pairwise: P - 1 rounds, the block for rank + k out; folded in rank order"},
    {"reduce_scatter_block", "pairwise",
     "pairwise: P - 1 rounds, the block for rank + k out; folded in rank order"},
    {"scan", "recursive_doubling", "recursive doubling: ceil(log2 P) rounds, rank order kept"},
    {"exscan", "recursive_doubling", "recursive doubling: ceil(log2 P) rounds, rank order kept"},
};

const ScheduleName* schedule_of(std::string_view collective) {
  for (const ScheduleName& s : kSchedules)
    if (collective == s.collective) return &s;
  return nullptr;
}

// The persistent engines (coll/persistent_inline.h, coll/persistent_deposit.h,
// coll/persistent_single_copy.h): what a persistent request runs under
// `auto` (its inline engine where it fits, the others where the rule
// table's <coll>_init row names it: engines_asked), or by name; `takes`
// says where it fits, for the refusal of a call that does not ("single
// copy": where the ranks may copy straight between their buffers, the
// single_copy option not off).
struct PersistentName {
  const char* collective;
  const char* algorithm;
  const char* summary;
  const char* takes;
};
constexpr PersistentName kPersistent[] = {
    {"barrier", "release_gather",
     "persistent only, on one node of several ranks: every rank's flag line, read by all", ""},
    {"bcast", "release_gather",
     "persistent only, on one node: the root's line, read by every rank (at most 56 bytes; "
     "auto's choice), else (by name, or auto by the rule table) the root's deposit, copied "
     "out by every rank, or from 128 KiB where cross-memory attach works its buffer, copied "
     "straight into every rank's",
     ""},
    {"reduce", "release_gather",
     "persistent only, on one node, predefined ops: every rank's line (at most 56 bytes; "
     "auto's choice), else its deposit (by name, or auto by the rule table), combined by the "
     "root in rank order",
     " of a predefined op"},
    {"allgather", "shan",
     "persistent only, on one node: every rank's line (at most 56 bytes per rank; auto's "
     "choice), else (by name, or auto by the rule table) its deposit (at most 1 MiB per "
     "rank), read by all, or past it where cross-memory attach works its block, copied "
     "straight into every rank's",
     " of at most 1 MiB per rank, or more by single copy"},
    {"allgatherv", "shan",
     "persistent only, on one node: every rank's line (at most 56 bytes per rank; auto's "
     "choice), else (by name, or auto by the rule table) its deposit (at most 1 MiB per "
     "rank), read by all, or past it where cross-memory attach works its block, copied "
     "straight into every rank's",
     " of at most 1 MiB per rank, or more by single copy"},
    {"alltoall", "shan",
     "persistent only, by name or auto by the rule table, on one node: every rank's deposit "
     "of its blocks (of at most 4 KiB), each rank's block read by its owner; past it, not in "
     "place, where cross-memory attach works, each block copied straight from its owner's "
     "buffer",
     " of blocks of at most 4 KiB, or larger by single copy (not in place)"},
    {"alltoallv", "shan",
     "persistent only, by name or auto by the rule table, on one node: every rank's deposit "
     "of its blocks (of at most 4 KiB), each rank's block read by its owner; past it, not in "
     "place, where cross-memory attach works, each block copied straight from its owner's "
     "buffer",
     " of blocks of at most 4 KiB, or larger by single copy (not in place)"},
    {"gather", "shan",
     "persistent only, by name or auto by the rule table, on one node: every rank's deposit "
     "of its block (of at most 16 KiB), copied out by the root; past it, where cross-memory "
     "attach works, each block copied straight from its owner's buffer",
     " of blocks of at most 16 KiB, or larger by single copy"},
    {"gatherv", "shan",
     "persistent only, by name or auto by the rule table, on one node: every rank's deposit "
     "of its block (of at most 16 KiB), copied out by the root; past it, where cross-memory "
     "attach works, each block copied straight from its owner's buffer",
     " of blocks of at most 16 KiB, or larger by single copy"},
    {"scatter", "shan",
     "persistent only, by name or auto by the rule table, on one node: the root's deposit of "
     "its blocks (of at most 2 KiB), each rank's block read by its owner; past it, where "
     "cross-memory attach works, each block copied straight from the root's buffer",
     " of blocks of at most 2 KiB, or larger by single copy"},
    {"scatterv", "shan",
     "persistent only, by name or auto by the rule table, on one node: the root's deposit of "
     "its blocks (of at most 2 KiB), each rank's block read by its owner; past it, where "
     "cross-memory attach works, each block copied straight from the root's buffer",
     " of blocks of at most 2 KiB, or larger by single copy"},
    {"reduce_scatter_block", "shan",
     "persistent only, by name or auto by the rule table, on one node, predefined ops: every "
     "rank's deposit of its input (blocks of at most 8 KiB), each rank's block combined by "
     "its owner in rank order",
     " of a predefined op and blocks of at most 8 KiB"},
    {"reduce_scatter", "shan",
     "persistent only, by name or auto by the rule table, on one node, predefined ops: every "
     "rank's deposit of its input (blocks of at most 8 KiB), each rank's block combined by "
     "its owner in rank order",
     " of a predefined op and blocks of at most 8 KiB"},
    {"scan", "shan",
     "persistent only, by name or auto by the rule table, on one node, predefined ops: every "
     "rank's deposit of its input (at most 16 KiB), the earlier ranks' combined by each in "
     "rank order",
     " of a predefined op and at most 16 KiB"},
    {"exscan", "shan",
     "persistent only, by name or auto by the rule table, on one node, predefined ops: every "
     "rank's deposit of its input (at most 16 KiB), the earlier ranks' combined by each in "
     "rank order",
     " of a predefined op and at most 16 KiB"},
};

const PersistentName* persistent_of(std::string_view collective) {
  for (const PersistentName& s : kPersistent)
    if (collective == s.collective) return &s;
  return nullptr;
}

// Every collective with a request form here (iallreduce: allreduce.h).
bool has_request_form(std::string_view collective) { return is_request_collective(collective); }

// "gatherv" for "gather": the v-form whose variable a regular collective
// falls back to, as the blocking SHANCOLL_<COLL>_ALGORITHM do.
std::string v_form(std::string_view collective) {
  for (const char* c : {"gather", "scatter", "allgather", "alltoall"})
    if (collective == c) return std::string(collective) + "v";
  return std::string(collective);
}

// `name` as a static name of a request algorithm of `collective` ("auto" is
// "mpi"), else an ArgumentError naming `source` (the argument or variable).
const char* named(std::string_view name, const char* collective, const std::string& source) {
  if (name == "auto" || name == "mpi") return "mpi";
  const ScheduleName* schedule = schedule_of(collective);
  if (schedule && name == schedule->algorithm) return schedule->algorithm;
  const PersistentName* persistent = persistent_of(collective);
  if (persistent && name == persistent->algorithm) return persistent->algorithm;
  throw ArgumentError(source + ": '" + std::string(name) + "' has no request form for " +
                      collective + " (valid: " + request_algorithms(collective) + ")");
}

// What a request door starts from: the options, the communicator, and the
// algorithm by name ("mpi" or the collective's schedule; "auto" is "mpi").
struct Setup {
  Options options;
  Comm& comm;
  const char* algorithm;  // a static name
  const char* collective;
  bool persistent;
  bool automatic;  // `auto` asked for (by the call or the environment)

  std::unique_ptr<Request> make(std::unique_ptr<Engine> engine) const {
    return std::make_unique<Request>(comm, collective, algorithm, std::move(engine),
                                     options.wait_timeout(), persistent);
  }
  bool scheduled() const { return std::strcmp(algorithm, "mpi") != 0; }
  NodeContext& nodes() const { return comm.nodes(options.ranks_per_node); }
  const Topology& topo() const { return nodes().topo; }
};

// Which of a persistent collective's engines `s` asks for: all of them
// (its name, or a rule table's `auto` choice of it: rules.h, <coll>_init
// rows), the inline ones alone (`auto` without such a row: the built-in
// rule), or none (a nonblocking request, another name, the table's `mpi`);
// and the single_copy option they run with (the call's, else the row's).
// `bytes`: the call's as the table's rows count them.
struct Engines {
  bool any = false;
  bool all = false;  // past the inline engines too
  int single_copy = -1;
};
Engines engines_asked(const Setup& s, const PersistentName& engine, std::int64_t bytes) {
  const int own = s.options.single_copy;
  if (!s.persistent) return {};
  if (std::strcmp(s.algorithm, engine.algorithm) == 0) return {true, true, own};
  if (!s.automatic) return {};
  const PersistentChoice choice =
      agreed_persistent_choice(s.comm, s.topo(), s.collective, bytes, engine.algorithm);
  if (choice.algorithm.empty()) return {true, false, own};
  if (choice.algorithm == "mpi") return {};
  return {true, true, own >= 0 ? own : choice.single_copy};
}

// The persistent engine where `s` asks for it (engines_asked) and
// `make(topo, timeout, engines)` finds that it fits; null otherwise. Its
// name on a nonblocking request, or where it does not fit, is an
// ArgumentError.
template <class Make>
std::unique_ptr<Request> persistent_request(const Setup& s, std::int64_t bytes, Make&& make) {
  const PersistentName* persistent = persistent_of(s.collective);
  const bool named = std::strcmp(s.algorithm, persistent->algorithm) == 0;
  std::unique_ptr<Request> request;
  const Engines asked = engines_asked(s, *persistent, bytes);
  if (asked.any) {
    NodeContext& nodes = s.nodes();
    request = s.comm.run({s.collective, persistent->algorithm}, [&]() -> std::unique_ptr<Request> {
      std::unique_ptr<Engine> engine = make(nodes.topo, nodes.call_timeout, asked);
      if (!engine) return nullptr;
      return std::make_unique<Request>(s.comm, s.collective, persistent->algorithm,
                                       std::move(engine), s.options.wait_timeout(), true);
    });
  }
  if (!request && named)
    throw ArgumentError(std::string("algorithm: '") + persistent->algorithm +
                        "' as a request is the " + "persistent " + s.collective +
                        persistent->takes + " on one node of several ranks");
  return request;
}

// What checked mode compares of a rooted call (count: bytes every rank
// agrees on, -1: none) and of a reduction.
CallShape rooted_shape(int root, std::int64_t count) {
  CallShape shape;
  shape.root = root;
  shape.count = count;
  return shape;
}
CallShape reduction_shape(MPI_Op op, DType type, std::int64_t count, int root = -1) {
  CallShape shape = rooted_shape(root, count);
  shape.op = op;
  shape.dtype = static_cast<int>(type);
  return shape;
}

// A reduction's bytes (count elements of `type`) for the rule tables.
std::int64_t reduction_bytes(std::int64_t count, DType type) {
  return count * static_cast<std::int64_t>(dtype_size(type));
}

// What a door refuses that one rank alone may see (its root's layout,
// MPI_IN_PLACE off the root, a NULL receive buffer): ArgumentError naming
// the argument.
using RefuseAlone = std::function<void(const Comm&)>;

// The door's start: options, communicator, algorithm. Where the ranks compare
// their calls (compares_request: checked mode, every _init, the call that
// sets the communicator up) they compare `shape` (its collective and
// algorithm filled in here: "i<coll>" or "<coll>_init" and the name asked
// for; outside checked mode the door alone), and what `alone` or the
// algorithm's name refuses on one rank becomes every rank's refusal, before
// anything is posted. Elsewhere the door refuses it on that rank alone.
Setup setup(MPI_Comm user, std::string_view algorithm, const CallOptions* given, Collective c,
            const char* collective, bool persistent, CallShape shape = {},
            const RefuseAlone& alone = {}) {
  const CallOptions& co = options_or_defaults(given, c);
  const Options o = co.resolved();
  Comm* known = Comm::find(user);
  if (known) known->set_call_timeout(o.timeout);  // as Comm::of
  Comm& comm = known ? *known : Comm::of(user, o.timeout);
  if (compares_request(co.check, persistent, !known)) {
    const std::string door =
        std::string(persistent ? "" : "i") + collective + (persistent ? "_init" : "");
    shape.collective = door;
    shape.algorithm = algorithm.empty() ? std::string_view("auto") : algorithm;
    const std::string refusal = refusal_of(comm, [&](const Comm& c) {
      if (alone) alone(c);
      (void)request_algorithm(algorithm, collective);
    });
    compare_request(comm, co.check, shape, refusal, o.timeout);
  }
  return {o,          comm,       request_algorithm(algorithm, collective),
          collective, persistent, request_asks_auto(algorithm, collective)};
}

// Runs make() as the request's collective (Comm::run: a failure breaks the
// communicator, SHANCOLL_ON_ERROR).
template <class Make>
std::unique_ptr<Request> made(const Setup& s, Make&& make) {
  return s.comm.run({s.collective, s.algorithm}, [&] { return make(); });
}

// The root's layout of a gather(v) or scatter(v) schedule: P counts and
// displacements (bytes), none negative.
void check_layout(const std::int64_t* counts, const std::int64_t* displs, int size,
                  const char* counts_name) {
  if (!counts || !displs) throw ArgumentError(std::string(counts_name) + ": NULL at the root");
  for (int r = 0; r < size; ++r) {
    if (counts[r] < 0)
      throw ArgumentError(std::string(counts_name) + ": negative count for rank " +
                          std::to_string(r));
    if (displs[r] < 0)
      throw ArgumentError("displs: negative displacement for rank " + std::to_string(r));
  }
}

CallShape allgatherv_shape(const AllgathervCall& call) {
  CallShape shape;
  shape.counts = &call.args.counts;
  shape.send_bytes = call.args.send ? call.send_bytes : -1;
  return shape;
}

void refuse_reduce(const Comm& comm, const ReduceCall& call) {
  check_root(comm, call.root);
  if (!call.send && comm.rank() != call.root)
    throw ArgumentError("sendbuf: MPI.IN_PLACE is for the root alone (rank " +
                        std::to_string(comm.rank()) + ")");
}

// A gather's or scatter's root and, at the root, its layout (the C API's
// typed call's is MPI's to read).
template <class Call>
void refuse_rooted(const Comm& comm, const Call& call, const char* counts_name) {
  const auto& a = call.args;
  check_root(comm, a.root);
  if (comm.rank() == a.root && !call.typed)
    check_layout(a.counts, a.displs, comm.size(), counts_name);
}

void refuse_allgatherv(const AllgathervCall& call) {
  if (!call.args.recv) throw ArgumentError("recvbuf: a request needs a receive buffer");
}

}  // namespace

// igather, iscatter, iallgather, ialltoall fall back to their v-form's
// variable, as the blocking SHANCOLL_<COLL>_ALGORITHM do.
const char* request_algorithm(std::string_view given, const char* collective) {
  if (!given.empty() && given != "auto") return named(given, collective, "algorithm");
  const auto& set = environment().requests;
  auto it = set.find(collective);
  if (it == set.end()) it = set.find(v_form(collective));
  if (it == set.end()) return "mpi";
  return named(it->second, collective, request_algorithm_variable(it->first));
}

bool request_asks_auto(std::string_view given, const char* collective) {
  if (!given.empty()) return given == "auto";
  const auto& set = environment().requests;
  auto it = set.find(collective);
  if (it == set.end()) it = set.find(v_form(collective));
  return it == set.end() || it->second == "auto";
}

void compare_request(Comm& comm, bool check, CallShape shape, const std::string& refusal,
                     double timeout) {
  if (!check) {  // the door and the refusals alone
    CallShape door_only;
    door_only.collective = shape.collective;
    shape = door_only;
  }
  shape.refusal = refusal;
  door_compared() = true;
  const std::string door(shape.collective);
  comm.run({door.c_str(), "check"}, [&] { check_agreement(comm, shape, timeout); });
}

void refuse_before_door(MPI_Comm user, const char* door, const std::string& why, bool persistent) {
  if (door_compared()) return;
  const double timeout = default_options(Collective::barrier).resolved().timeout;
  const bool sets_up = !Comm::find(user);
  if (!compares_request(environment().check, persistent, sets_up)) return;
  Comm& comm = Comm::of(user, timeout);
  CallShape shape;
  shape.collective = door;
  compare_request(comm, false, shape, why, timeout);
}

PersistentChoice agreed_persistent_choice(const Comm& comm, const Topology& t,
                                          const char* collective, std::int64_t bytes,
                                          const char* engine) {
  PersistentChoice mine = bytes == kTypedCall ? PersistentChoice{"mpi", -1}
                                              : persistent_choice(collective, bytes, t.size,
                                                                  t.node_count, t.hosts, engine);
  const int own = mine.algorithm == "mpi" ? 0 : mine.algorithm.empty() ? 1 : 2;  // the least wins
  int agreed = own;
  check_mpi(PMPI_Allreduce(MPI_IN_PLACE, &agreed, 1, MPI_INT, MPI_MIN, comm.mpi()),
            "MPI_Allreduce (persistent auto's choice)");
  if (agreed == own) return mine;
  return {agreed == 0 ? "mpi" : "", -1};
}

std::string request_algorithms(const char* collective) {
  const ScheduleName* schedule = schedule_of(collective);
  const PersistentName* persistent = persistent_of(collective);
  return std::string("auto, ") + (schedule ? std::string(schedule->algorithm) + ", " : "") + "mpi" +
         (persistent ? std::string(", ") + persistent->algorithm : "");
}

std::optional<std::vector<AlgorithmInfo>> request_listing(std::string_view collective) {
  if (!has_request_form(collective)) return std::nullopt;
  std::vector<AlgorithmInfo> out;
  if (const ScheduleName* s = schedule_of(collective)) out.push_back({s->algorithm, s->summary});
  out.push_back({"mpi", "the MPI library's own nonblocking MPI_I" + std::string(collective)});
  if (const PersistentName* s = persistent_of(collective))
    out.push_back({s->algorithm, s->summary});
  return out;
}

std::unique_ptr<Request> request_of(const BarrierCall& call, bool persistent) {
  const Setup s =
      setup(call.comm, call.algorithm, call.options, Collective::barrier, "barrier", persistent);
  const auto engine = [&](const Topology& t, const double& timeout, const Engines&) {
    return inline_barrier(t, timeout);
  };
  if (auto r = persistent_request(s, 0, engine)) return r;
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_barrier(s.comm.mpi()));
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(), pattern::dissemination_barrier_schedule(s.comm.size(), s.comm.rank()),
        nullptr, nullptr));
  });
}

std::unique_ptr<Request> request_of(const BcastCall& call, bool persistent) {
  const Setup s =
      setup(call.comm, call.algorithm, call.options, Collective::bcast, "bcast", persistent,
            rooted_shape(call.root, call.bytes), [&](const Comm& c) { check_root(c, call.root); });
  check_root(s.comm, call.root);
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (auto lines = inline_bcast(t, call, timeout)) return lines;
    if (!e.all) return nullptr;
    if (auto single = single_copy_bcast(s.nodes(), call, e.single_copy)) return single;
    return deposit_bcast(t, call, timeout);
  };
  if (auto r = persistent_request(s, call.bytes, engine)) return r;
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_bcast(s.comm.mpi(), call));
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::binomial_bcast_schedule(s.comm.size(), s.comm.rank(), call.root, call.bytes),
        nullptr, call.buf));
  });
}

std::unique_ptr<Request> request_of(const ReduceCall& call, bool persistent) {
  const Setup s = setup(call.comm, call.algorithm, call.options, Collective::reduce, "reduce",
                        persistent, reduction_shape(call.op, call.type, call.count, call.root),
                        [&](const Comm& c) { refuse_reduce(c, call); });
  refuse_reduce(s.comm, call);
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (auto lines = inline_reduce(t, call, timeout)) return lines;
    if (!e.all) return nullptr;
    if (auto single = single_copy_reduce(s.nodes(), call, e.single_copy)) return single;
    return deposit_reduce(t, call, timeout);
  };
  if (auto r = persistent_request(s, reduction_bytes(call.count, call.type), engine)) return r;
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_reduce(s.comm.mpi(), call));
    Reducer reducer = Reducer(call.op, call.type, call.datatype);
    const std::int64_t bytes = call.count * static_cast<std::int64_t>(reducer.elem_size());
    const bool in_place = call.send == nullptr;
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::binomial_reduce_schedule(s.comm.size(), s.comm.rank(), call.root, bytes,
                                          reducer.commutative(), in_place),
        call.send, call.recv, std::move(reducer)));
  });
}

std::unique_ptr<Request> request_of(const GathervCall& call, bool persistent) {
  const bool regular = call.args.regular;
  const Setup s =
      setup(call.comm, call.algorithm, call.options,
            regular ? Collective::gather : Collective::gatherv, regular ? "gather" : "gatherv",
            persistent, rooted_shape(call.args.root, regular ? call.args.send_bytes : -1),
            [&](const Comm& c) { refuse_rooted(c, call, "recvcounts"); });
  check_root(s.comm, call.args.root);
  const std::int64_t bytes = call.typed ? kTypedCall : regular ? call.args.send_bytes : 0;
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (!e.all) return nullptr;
    if (auto deposit = deposit_gather(t, call, timeout)) return deposit;
    return single_copy_gather(s.nodes(), call, e.single_copy);
  };
  if (auto r = persistent_request(s, bytes, engine)) return r;
  return made(s, [&] {
    if (!s.scheduled())
      return s.make(mpi_gatherv(s.comm.mpi(), call, s.comm.rank(), s.comm.size()));
    const GathervArgs& a = call.args;
    const bool at_root = s.comm.rank() == a.root;
    if (at_root) check_layout(a.counts, a.displs, s.comm.size(), "recvcounts");
    if (!regular)
      return s.make(
          std::make_unique<BinomialVEngine>(s.comm, s.topo(),
                                            RootedvPart{true, a.root, a.send, a.recv, a.send_bytes,
                                                        a.counts, a.displs, a.send == nullptr}));
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::binomial_gather_schedule(s.comm.size(), s.comm.rank(), a.root,
                                          at_root ? a.counts[a.root] : a.send_bytes, a.displs,
                                          a.send == nullptr),
        a.send, a.recv));
  });
}

std::unique_ptr<Request> request_of(const ScattervCall& call, bool persistent) {
  const bool regular = call.args.regular;
  const Setup s =
      setup(call.comm, call.algorithm, call.options,
            regular ? Collective::scatter : Collective::scatterv, regular ? "scatter" : "scatterv",
            persistent, rooted_shape(call.args.root, regular ? call.args.recv_bytes : -1),
            [&](const Comm& c) { refuse_rooted(c, call, "sendcounts"); });
  check_root(s.comm, call.args.root);
  const std::int64_t bytes = call.typed ? kTypedCall : regular ? call.args.recv_bytes : 0;
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (!e.all) return nullptr;
    if (auto deposit = deposit_scatter(t, call, timeout)) return deposit;
    return single_copy_scatter(s.nodes(), call, e.single_copy);
  };
  if (auto r = persistent_request(s, bytes, engine)) return r;
  return made(s, [&] {
    if (!s.scheduled())
      return s.make(mpi_scatterv(s.comm.mpi(), call, s.comm.rank(), s.comm.size()));
    const ScattervArgs& a = call.args;
    const bool at_root = s.comm.rank() == a.root;
    if (at_root) check_layout(a.counts, a.displs, s.comm.size(), "sendcounts");
    if (!regular)
      return s.make(
          std::make_unique<BinomialVEngine>(s.comm, s.topo(),
                                            RootedvPart{false, a.root, a.send, a.recv, a.recv_bytes,
                                                        a.counts, a.displs, a.recv == nullptr}));
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::binomial_scatter_schedule(s.comm.size(), s.comm.rank(), a.root,
                                           at_root ? a.counts[a.root] : a.recv_bytes, a.displs,
                                           a.recv == nullptr),
        a.send, a.recv));
  });
}

std::unique_ptr<Request> request_of(const AllgathervCall& call, bool persistent) {
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        call.allgather ? Collective::allgather : Collective::allgatherv,
                        call.allgather ? "allgather" : "allgatherv", persistent,
                        allgatherv_shape(call), [&](const Comm&) { refuse_allgatherv(call); });
  refuse_allgatherv(call);
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (auto lines = inline_allgatherv(t, call, timeout)) return lines;
    if (!e.all) return nullptr;
    if (e.single_copy > 0)  // asked for (the call, or its rule): before the deposit
      if (auto single = single_copy_allgatherv(s.nodes(), call, e.single_copy)) return single;
    if (auto deposit = deposit_allgatherv(t, call, timeout)) return deposit;
    return e.single_copy > 0 ? nullptr : single_copy_allgatherv(s.nodes(), call, e.single_copy);
  };
  if (auto r = persistent_request(s, call.args.total() / std::max(s.comm.size(), 1), engine))
    return r;
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_allgatherv(s.comm.mpi(), call, s.comm.rank()));
    const AllgathervArgs& a = call.args;
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::ring_allgatherv_schedule(s.comm.size(), s.comm.rank(), a.counts.data(),
                                          a.displs.data(), a.send == nullptr),
        a.send, a.recv));
  });
}

std::unique_ptr<Request> request_of(const AlltoallvCall& call, bool persistent) {
  const Setup s = setup(
      call.comm, call.algorithm, call.options,
      call.alltoall ? Collective::alltoall : Collective::alltoallv,
      call.alltoall ? "alltoall" : "alltoallv", persistent,
      rooted_shape(
          -1, call.args.regular && !call.args.recv_counts.empty() ? call.args.recv_counts[0] : -1));
  const AlltoallvArgs& a = call.args;
  const std::int64_t block = call.alltoall && !a.recv_counts.empty() ? a.recv_counts[0] : 0;
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (!e.all) return nullptr;
    if (auto deposit = deposit_alltoallv(t, call, timeout)) return deposit;
    return single_copy_alltoallv(s.nodes(), call, e.single_copy);
  };
  if (auto r = persistent_request(s, block, engine)) return r;
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_alltoallv(s.comm.mpi(), call));
    const bool in_place = a.send == nullptr;
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::pairwise_alltoallv_schedule(s.comm.size(), s.comm.rank(),
                                             in_place ? nullptr : a.send_counts.data(),
                                             in_place ? nullptr : a.send_displs.data(),
                                             a.recv_counts.data(), a.recv_displs.data(), in_place),
        a.send, a.recv));
  });
}

std::unique_ptr<Request> request_of(const ReduceScatterCall& call, bool block, bool persistent) {
  const Collective c = block ? Collective::reduce_scatter_block : Collective::reduce_scatter;
  std::vector<std::int64_t> checked_counts;  // what checked mode compares of the v-form
  CallShape shape = reduction_shape(call.op, call.type, block ? call.count : -1);
  if (!block && options_or_defaults(call.options, c).check && call.counts) {
    int p = 0;
    check_mpi(MPI_Comm_size(call.comm, &p), "MPI_Comm_size");
    checked_counts.assign(call.counts, call.counts + p);
    shape.counts = &checked_counts;
  }
  const Setup s = setup(call.comm, call.algorithm, call.options, c,
                        block ? "reduce_scatter_block" : "reduce_scatter", persistent, shape);
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (!e.all) return nullptr;
    return deposit_reduce_scatter(t, call, block, timeout);
  };
  if (auto r = persistent_request(s, block ? reduction_bytes(call.count, call.type) : 0, engine))
    return r;
  return made(s, [&] {
    const int p = s.comm.size();
    if (!s.scheduled()) return s.make(mpi_reduce_scatter(s.comm.mpi(), call, p, block));
    Reducer reducer = Reducer(call.op, call.type, call.datatype);
    const auto esize = static_cast<std::int64_t>(reducer.elem_size());
    std::vector<std::int64_t> counts(static_cast<std::size_t>(p)), displs(counts.size());
    std::int64_t total = 0;
    for (int q = 0; q < p; ++q) {
      const std::int64_t n = block ? call.count : call.counts[q];
      if (n < 0)
        throw ArgumentError("recvcounts: negative count " + std::to_string(n) + " for rank " +
                            std::to_string(q));
      counts[q] = n * esize, displs[q] = total, total += counts[q];
    }
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::pairwise_reduce_scatter_schedule(p, s.comm.rank(), counts.data(), displs.data(),
                                                  call.send == nullptr),
        call.send, call.recv, std::move(reducer)));
  });
}

std::unique_ptr<Request> request_of(const ScanCall& call, bool exclusive, bool persistent) {
  const Setup s = setup(
      call.comm, call.algorithm, call.options, exclusive ? Collective::exscan : Collective::scan,
      exclusive ? "exscan" : "scan", persistent, reduction_shape(call.op, call.type, call.count));
  const auto engine = [&](const Topology& t, const double& timeout,
                          const Engines& e) -> std::unique_ptr<Engine> {
    if (!e.all) return nullptr;
    return deposit_scan(t, call, exclusive, timeout);
  };
  if (auto r = persistent_request(s, reduction_bytes(call.count, call.type), engine)) return r;
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_scan(s.comm.mpi(), call, exclusive));
    Reducer reducer = Reducer(call.op, call.type, call.datatype);
    const std::int64_t bytes = call.count * static_cast<std::int64_t>(reducer.elem_size());
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::recursive_doubling_scan_schedule(s.comm.size(), s.comm.rank(), bytes, exclusive,
                                                  call.send == nullptr),
        call.send, call.recv, std::move(reducer)));
  });
}

}  // namespace shancoll
