// The barrier door (barrier.h): the one path from every front end to the
// algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include "shancoll/coll/barrier/barrier.h"

#include <string>

#include "shancoll/coll/door.h"

namespace shancoll {
namespace {

// `auto`: its choice reads only the layout.
const BarrierAlgorithm& auto_barrier(Comm& comm, Options& o, const CallOptions* given) {
  return auto_choice<BarrierAlgorithm>(comm, {"barrier", 0}, o, given, [](const Topology& t) {
    return &barrier_registry().at(choose_barrier(t.size, t.node_count, t.hosts));
  });
}

}  // namespace

bool barrier_repeat(Comm& comm, const BarrierCall& call) {
  auto* plan = repeat_plan<BarrierAlgorithm>(comm, call.algorithm, call.options, {});
  if (!plan) return false;
  if (run_express(comm, "barrier", *plan, nullptr, nullptr)) return true;
  const BarrierAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "barrier", algo.name, [&](Stats& s) { algo.fn(comm, plan->options, s); });
  make_express(comm, *plan);
  return true;
}

Comm& barrier(const BarrierCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return barrier_repeat(c, call); })) return *known;
  const CallOptions& co = options_or_defaults(call.options, Collective::barrier);
  const std::string_view name = requested(call.algorithm, environment().barrier);
  CallShape shape;
  shape.collective = "barrier";
  shape.algorithm = name;
  verify_agreement(call.comm, co, shape);
  // An unknown name is refused here, before Comm::of's set-up.
  const BarrierAlgorithm* named = name == "auto" ? nullptr : &barrier_registry().at(name);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  const BarrierAlgorithm& algo = named ? *named : auto_barrier(comm, o, call.options);
  run_recorded(comm, "barrier", algo.name, [&](Stats& s) { algo.fn(comm, o, s); });
  if (plannable(call.algorithm, call.options) && !co.check)
    comm.state<RepeatPlan<BarrierAlgorithm>>().remember({}, algo, o);
  return comm;
}

}  // namespace shancoll
