// The scatter(v) door (scatter.h): the one path from every front end to the
// algorithms. Everything that can refuse the call is checked before the
// first communication: what every rank knows (the root, its own block) alike
// on every rank, the root's layout at the root. A block whose size differs
// from what its receiver expects is refused by the receiver once the call's
// communication is over (check_received).
#include "shancoll/coll/scatter/scatter.h"

#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/coll/rooted_tree.h"

namespace shancoll {
namespace {

std::string_view requested_name(const ScattervCall& call) {
  const Environment& env = environment();
  const bool chosen = !call.algorithm.empty() && call.algorithm != "auto";
  if (call.args.regular && !chosen && !env.scatter.empty()) return env.scatter;
  return requested(call.algorithm, env.scatterv);
}

// The root's send layout: counts and displacements of every rank, the
// buffer they come from, its own block's size.
void check_root_layout(const Comm& comm, const ScattervArgs& a) {
  const int p = comm.size();
  if (!a.counts || !a.displs) throw ArgumentError("sendcounts: NULL at the root");
  bool any = false;
  for (int r = 0; r < p; ++r) {
    if (a.counts[r] < 0)
      throw ArgumentError("sendcounts: negative count for rank " + std::to_string(r));
    if (a.displs[r] < 0)
      throw ArgumentError("displs: negative displacement for rank " + std::to_string(r));
    any = any || a.counts[r] > 0;
  }
  if (any && !a.send) throw ArgumentError("sendbuf: NULL at the root");
  const std::int64_t mine = a.counts[a.root];
  if (a.recv && a.recv_bytes != mine)
    throw ArgumentError("recvbuf: " + std::to_string(a.recv_bytes) + " bytes, but sendcounts[" +
                        std::to_string(a.root) + "] sends " + std::to_string(mine));
}

// `auto`: its choice reads the layout and, for a scatter, the block's bytes
// (every rank knows them; a scatterv's only the root).
const ScattervAlgorithm& auto_scatterv(Comm& comm, const ScattervArgs& a, Options& o,
                                       const CallOptions* given) {
  const std::int64_t bytes = a.regular ? a.recv_bytes : 0;
  const AutoShape shape{a.regular ? "scatter" : "scatterv", bytes};
  return auto_choice<ScattervAlgorithm>(comm, shape, o, given, [&](const Topology& t) {
    return &scatterv_registry().at(
        choose_scatterv(a.regular, bytes, t.size, t.node_count, t.hosts));
  });
}

}  // namespace

void check_received(std::int64_t sent, std::int64_t expected) {
  if (sent == expected) return;
  throw ArgumentError("recvbuf: the root sends " + std::to_string(sent) +
                      " bytes, but the receive count gives " + std::to_string(expected) +
                      kBlockNotWritten);
}

Comm& scatterv(const ScattervCall& call) {
  const ScattervArgs& a = call.args;
  const Collective which = a.regular ? Collective::scatter : Collective::scatterv;
  const CallOptions& co = options_or_defaults(call.options, which);
  const std::string_view name = requested_name(call);
  CallShape shape;
  shape.collective = collective_name(which);
  shape.algorithm = name;
  shape.root = a.root;
  if (a.regular) shape.count = a.recv_bytes;
  verify_agreement(call.comm, co, shape);
  if (a.recv_bytes < 0)
    throw ArgumentError("recvcount: negative (" + std::to_string(a.recv_bytes) + ")");
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  check_root(comm, a.root);
  if (comm.rank() == a.root)
    check_root_layout(comm, a);
  else if (!a.recv && a.recv_bytes > 0)
    throw ArgumentError("recvbuf: NULL (in place is only valid at the root)");
  const ScattervAlgorithm& algo =
      name == "auto" ? auto_scatterv(comm, a, o, call.options) : scatterv_registry().at(name);
  run_recorded(comm, collective_name(which), algo.name, [&](Stats& s) { algo.fn(comm, a, o, s); });
  if (a.regular && plannable(call.algorithm, call.options) && !co.check) {
    comm.state<RegularLayout<ScattervAlgorithm>>().make(comm.size(), a.recv_bytes);
    comm.state<RepeatPlan<ScattervAlgorithm>>().remember({a.recv_bytes, a.root}, algo, o);
  }
  return comm;
}

bool scatter_repeat(Comm& comm, const ScatterRepeat& call) {
  auto* plan = repeat_plan<ScattervAlgorithm>(comm, "", nullptr, {call.block, call.root});
  if (!plan) return false;
  const RegularLayout<ScattervAlgorithm>& layout = comm.state<RegularLayout<ScattervAlgorithm>>();
  ScattervArgs a;
  a.send = call.send;
  a.counts = layout.counts.data();
  a.displs = layout.displs.data();
  a.recv = call.recv;
  a.recv_bytes = call.block;
  a.root = call.root;
  a.regular = true;
  const ScattervAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "scatter", algo.name, [&](Stats& s) { algo.fn(comm, a, plan->options, s); });
  return true;
}

}  // namespace shancoll
