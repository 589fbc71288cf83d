// The allreduce and iallreduce door (allreduce.h): the one path from every
// front end to the algorithms. Everything that can refuse the call is
// checked before the first communication, alike on every rank given the same
// arguments.
#include "shancoll/coll/allreduce/allreduce.h"

#include <cstring>
#include <string>

#include "shancoll/coll/allreduce/allreduce_persistent_inline.h"
#include "shancoll/coll/allreduce/allreduce_request.h"
#include "shancoll/coll/door.h"
#include "shancoll/coll/persistent_deposit.h"
#include "shancoll/coll/persistent_single_copy.h"
#include "shancoll/coll/request/request_mpi.h"
#include "shancoll/coll/request/requests.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/pattern/nway_dissemination.h"
#include "shancoll/rules.h"

namespace shancoll {
namespace {

void check_buffers(const AllreduceCall& call) {
  if (call.count < 0) throw ArgumentError("count: negative (" + std::to_string(call.count) + ")");
  if (!call.recv && call.count > 0) throw ArgumentError("recvbuf: NULL");
}

// inter_algorithm runs on the node leaders only, after the node's reduce:
// refused there, it would leave the other ranks waiting. So it is checked
// here, on every rank.
void check_inter_algorithm(const CallOptions& o) {
  const std::string& inter = o.release_gather.inter_algorithm;
  if (inter == "auto") return;
  if (inter == "release_gather" || !allreduce_registry().find(inter)) {
    std::string valid = "auto";
    for (const AllreduceAlgorithm& a : allreduce_registry().all())
      if (std::string_view(a.name) != "release_gather") valid += std::string(", ") + a.name;
    throw ArgumentError(
        "inter_algorithm: '" + inter +
        "' is not an allreduce algorithm the node leaders can run (valid: " + valid + ")");
  }
}

AllreduceArgs args_of(const AllreduceCall& call, const Reducer& reducer, const CallOptions& o) {
  AllreduceArgs args;
  args.send = static_cast<const std::byte*>(call.send);
  args.recv = static_cast<std::byte*>(call.recv);
  args.count = call.count;
  args.reducer = &reducer;
  args.ports = o.ports;
  args.consistent = o.consistent;
  return args;
}

// What checked mode compares (coll/check.h).
CallShape shape_of(const AllreduceCall& call, std::string_view collective, std::string_view name) {
  CallShape s;
  s.collective = collective;
  s.algorithm = name;
  s.op = call.op;
  s.dtype = static_cast<int>(call.type);
  s.count = call.count;
  return s;
}

// `auto`: what its choice reads of the
// call: the bytes, the element type, the op's commutativity and whether
// the same bits are required on every rank.
const AllreduceAlgorithm& auto_allreduce(Comm& comm, const AllreduceArgs& args, Options& o,
                                         const CallOptions* given) {
  const std::uint64_t traits = static_cast<std::uint64_t>(args.reducer->type()) |
                               std::uint64_t{args.reducer->commutative()} << 16 |
                               std::uint64_t{args.consistent} << 17;
  return auto_choice<AllreduceAlgorithm>(
      comm, {"allreduce", args.bytes(), traits}, o, given, [&](const Topology& t) {
        return &select_allreduce("auto", args, t.size, t.node_count, t.hosts);
      });
}

// shan's persistent engines on one node where they fit: the inline lines
// (persistent `auto` and `shan`: they beat any message schedule and MPI's
// own persistent allreduce, docs/performance.md), and past 56 bytes, where
// `deposit`, single copy on a node of two ranks where `single_copy` is 1,
// else the deposit areas; null elsewhere.
std::unique_ptr<Request> persistent_shan(Comm& comm, const AllreduceArgs& args, const Options& o,
                                         bool deposit, int single_copy) {
  NodeContext& ctx = comm.nodes(o.ranks_per_node);
  const Topology& t = ctx.topo;
  const bool small = persistent_inline_fits(t, args);
  if (!small && !(deposit && deposit_fits(t, args.bytes()))) return nullptr;
  return comm.run({"iallreduce", "shan"}, [&]() -> std::unique_ptr<Request> {
    std::unique_ptr<Engine> engine;
    if (small)
      engine = std::make_unique<InlineAllreduceEngine>(t, args, ctx.call_timeout);
    else if (!(engine = single_copy_allreduce(ctx, args, single_copy)))
      engine = deposit_allreduce(t, args, ctx.call_timeout);
    if (!engine) return nullptr;
    return std::make_unique<Request>(comm, "iallreduce", "shan", std::move(engine),
                                     o.wait_timeout(), true);
  });
}

// A persistent `auto`'s engine by the rule table's allreduce_init row
// (rules.h): "shan" (the deposit too), "mpi" (the library's own), or ""
// (no row: the inline engine alone, else the built-in rule).
PersistentChoice persistent_auto(Comm& comm, const AllreduceArgs& args, const Options& o) {
  const Topology& t = comm.nodes(o.ranks_per_node).topo;
  return agreed_persistent_choice(comm, t, "allreduce", args.bytes(), "shan");
}

// What the door's plan is keyed by.
RepeatKey repeat_key_of(const AllreduceCall& call) {
  return {call.count, -1, call.type, call.datatype, call.op};
}

}  // namespace

void copy_input(const AllreduceArgs& args) {
  if (args.send && args.send != args.recv && args.count > 0)
    local_copy(args.recv, args.send, static_cast<std::size_t>(args.bytes()));
}

int default_ports(const char* algorithm, int size) {
  // nway_dissemination: the smallest n with a 5-tuple (the paper's choice);
  // dissemination and bruck: one port, the papers' 2-way baselines.
  if (std::strcmp(algorithm, "nway_dissemination") == 0)
    return pattern::nway_smallest_adaptable_n(size);
  return 1;
}

bool allreduce_repeat(Comm& comm, const AllreduceCall& call) {
  auto* plan =
      repeat_plan<AllreduceAlgorithm>(comm, call.algorithm, call.options, repeat_key_of(call));
  if (!plan) return false;
  check_buffers(call);
  const AllreduceArgs args = args_of(call, *plan->reducer, default_options(Collective::allreduce));
  const AllreduceAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "allreduce", algo.name,
               [&](Stats& s) { algo.fn(comm, args, plan->options, s); });
  return true;
}

Comm& allreduce(const AllreduceCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return allreduce_repeat(c, call); }))
    return *known;
  const RepeatKey key = repeat_key_of(call);
  const CallOptions& co = options_or_defaults(call.options, Collective::allreduce);
  const std::string_view name = requested(call.algorithm, environment().allreduce);
  verify_agreement(call.comm, co, shape_of(call, "allreduce", name));
  check_buffers(call);
  check_release_gather_keys(co, name);
  check_inter_algorithm(co);
  const Reducer reducer(call.op, call.type, call.datatype);
  const AllreduceArgs args = args_of(call, reducer, co);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  const AllreduceAlgorithm& algo = name == "auto" ? auto_allreduce(comm, args, o, call.options)
                                                  : select_allreduce(name, args, comm.size(), 0);
  run_recorded(comm, "allreduce", algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
  if (plannable(call.algorithm, call.options) && !co.check && reducer.typed()) {
    auto& plan = comm.state<RepeatPlan<AllreduceAlgorithm>>();
    plan.reducer = reducer;
    plan.remember(key, algo, o);
  }
  return comm;
}

std::unique_ptr<Request> iallreduce(const AllreduceCall& call, bool persistent) {
  const CallOptions& co = options_or_defaults(call.options, Collective::iallreduce);
  const std::string_view name = requested(call.algorithm, environment().iallreduce);
  const Options o = co.resolved();
  Comm* known = Comm::find(call.comm);
  if (known) known->set_call_timeout(o.timeout);  // as Comm::of
  Comm& comm = known ? *known : Comm::of(call.comm, o.timeout);
  if (compares_request(co.check, persistent, !known))
    compare_request(comm, co.check, shape_of(call, "iallreduce", name),
                    refusal_of(comm, [&](const Comm&) { check_buffers(call); }), o.timeout);
  check_buffers(call);
  const Reducer reducer(call.op, call.type, call.datatype);  // copied by the request
  const AllreduceArgs args = args_of(call, reducer, co);
  std::string_view chosen = name;
  if (persistent && (name == "auto" || name == "shan")) {
    const PersistentChoice row =
        name == "shan" ? PersistentChoice{"shan", -1} : persistent_auto(comm, args, o);
    const int single_copy = o.single_copy >= 0 ? o.single_copy : row.single_copy;
    if (row.algorithm != "mpi")
      if (auto shan = persistent_shan(comm, args, o, row.algorithm == "shan", single_copy))
        return shan;
    if (name == "shan")
      throw ArgumentError(
          "algorithm: 'shan' as a request is the persistent allreduce on one node of several "
          "ranks (of a predefined element type past 56 bytes)");
    if (row.algorithm == "mpi") chosen = "mpi";
  }
  const AllreduceAlgorithm& algo = select_iallreduce(chosen, args, comm.size());
  return comm.run({"iallreduce", algo.name}, [&] {
    std::unique_ptr<Engine> engine;
    if (algo.schedule)
      engine = std::make_unique<AllreduceScheduleEngine>(comm, comm.nodes(o.ranks_per_node).topo,
                                                         args, algo);
    else
      engine = mpi_allreduce(comm.mpi(), call);
    return std::make_unique<Request>(comm, "iallreduce", algo.name, std::move(engine),
                                     o.wait_timeout(), persistent);
  });
}

}  // namespace shancoll
