// The barrier door (barrier.h): the one path from every front end to the
// algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include "shancoll/coll/barrier/barrier.h"

#include <string>

#include "shancoll/coll/door.h"

namespace shancoll {

Comm& barrier(const BarrierCall& call) {
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
  const Topology* topo = named ? nullptr : &comm.nodes(o.ranks_per_node).topo;
  const BarrierAlgorithm& algo =
      named ? *named
            : barrier_registry().at(choose_barrier(comm.size(), topo->node_count, topo->hosts));
  take_rule_options(o, call.options, topo, "barrier", 0, algo.name);
  run_recorded(comm, "barrier", algo.name, [&](Stats& s) { algo.fn(comm, o, s); });
  return comm;
}

}  // namespace shancoll
