// The reduce door (rooted.h): the one path from every front end to the
// algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/coll/rooted.h"

namespace shancoll {
namespace {

void check_buffers(const ReduceCall& call, const Comm& comm) {
  if (call.count < 0) throw ArgumentError("count: negative (" + std::to_string(call.count) + ")");
  check_root(comm, call.root);
  const bool at_root = comm.rank() == call.root;
  if (!call.send && !at_root) throw ArgumentError("sendbuf: in place is only valid at the root");
  if (at_root && !call.recv && call.count > 0) throw ArgumentError("recvbuf: NULL at the root");
}

// `auto`: its choice reads the bytes and
// the op's commutativity.
const ReduceAlgorithm& auto_reduce(Comm& comm, const ReduceArgs& args, Options& o,
                                   const CallOptions* given) {
  const bool commutative = args.reducer->commutative();
  return auto_choice<ReduceAlgorithm>(
      comm, {"reduce", args.bytes(), commutative}, o, given, [&](const Topology& t) {
        return &reduce_registry().at(
            choose_reduce(args.bytes(), commutative, t.size, t.node_count, t.hosts));
      });
}

void check_op(const ReduceAlgorithm& a, const ReduceArgs& args) {
  if (!args.reducer->commutative() && !a.rank_order)
    throw ArgumentError(
        "op: a non-commutative op needs an algorithm that combines in rank order; '" +
        std::string(a.name) + "' combines in tree order (use binomial or mpi)");
}

ReduceArgs args_of(const ReduceCall& call, const Comm& comm, const Reducer& reducer) {
  ReduceArgs args;
  args.send = static_cast<const std::byte*>(call.send);
  args.recv = comm.rank() == call.root ? static_cast<std::byte*>(call.recv) : nullptr;
  args.count = call.count;
  args.reducer = &reducer;
  args.root = call.root;
  return args;
}

// What the door's plan is keyed by.
RepeatKey repeat_key_of(const ReduceCall& call) {
  return {call.count, call.root, call.type, call.datatype, call.op};
}

}  // namespace

bool reduce_repeat(Comm& comm, const ReduceCall& call) {
  auto* plan =
      repeat_plan<ReduceAlgorithm>(comm, call.algorithm, call.options, repeat_key_of(call));
  if (!plan) return false;
  check_buffers(call, comm);
  const ReduceArgs args = args_of(call, comm, *plan->reducer);
  if (run_express(comm, "reduce", *plan, args.send, args.recv)) return true;
  const ReduceAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "reduce", algo.name, [&](Stats& s) { algo.fn(comm, args, plan->options, s); });
  make_express(comm, *plan, args);
  return true;
}

Comm& reduce(const ReduceCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return reduce_repeat(c, call); })) return *known;
  const RepeatKey key = repeat_key_of(call);
  const CallOptions& co = options_or_defaults(call.options, Collective::reduce);
  const std::string_view name = requested(call.algorithm, environment().reduce);
  CallShape shape;
  shape.collective = "reduce";
  shape.algorithm = name;
  shape.root = call.root;
  shape.op = call.op;
  shape.dtype = static_cast<int>(call.type);
  shape.count = call.count;
  verify_agreement(call.comm, co, shape);
  check_release_gather_keys(co, name);
  Options o = co.resolved();
  const Reducer reducer(call.op, call.type, call.datatype);
  Comm& comm = Comm::of(call.comm, o.timeout);
  check_buffers(call, comm);
  const ReduceArgs args = args_of(call, comm, reducer);
  const ReduceAlgorithm& algo =
      name == "auto" ? auto_reduce(comm, args, o, call.options) : reduce_registry().at(name);
  check_op(algo, args);
  run_recorded(comm, "reduce", algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
  if (plannable(call.algorithm, call.options) && !co.check && reducer.typed()) {
    auto& plan = comm.state<RepeatPlan<ReduceAlgorithm>>();
    plan.reducer = reducer;
    plan.remember(key, algo, o);
  }
  return comm;
}

}  // namespace shancoll
