// The bcast door (rooted.h): the one path from every front end to the
// algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/coll/rooted.h"

namespace shancoll {
namespace {

// `auto`: its choice reads only the bytes.
const BcastAlgorithm& auto_bcast(Comm& comm, std::int64_t bytes, Options& o,
                                 const CallOptions* given) {
  return auto_choice<BcastAlgorithm>(comm, {"bcast", bytes}, o, given, [&](const Topology& t) {
    return &bcast_registry().at(choose_bcast(bytes, t.size, t.node_count, t.hosts));
  });
}

// What the door's plan is keyed by.
RepeatKey repeat_key_of(const BcastCall& call) { return {call.bytes, call.root}; }

}  // namespace

bool bcast_repeat(Comm& comm, const BcastCall& call) {
  auto* plan = repeat_plan<BcastAlgorithm>(comm, call.algorithm, call.options, repeat_key_of(call));
  if (!plan) return false;
  if (!call.buf && call.bytes > 0) throw ArgumentError("buf: NULL");
  if (run_express(comm, "bcast", *plan, nullptr, static_cast<std::byte*>(call.buf))) return true;
  const BcastArgs args{static_cast<std::byte*>(call.buf), call.bytes, call.root};
  const BcastAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "bcast", algo.name, [&](Stats& s) { algo.fn(comm, args, plan->options, s); });
  make_express(comm, *plan, args);
  return true;
}

Comm& bcast(const BcastCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return bcast_repeat(c, call); })) return *known;
  const RepeatKey key = repeat_key_of(call);
  const CallOptions& co = options_or_defaults(call.options, Collective::bcast);
  const std::string_view name = requested(call.algorithm, environment().bcast);
  CallShape shape;
  shape.collective = "bcast";
  shape.algorithm = name;
  shape.root = call.root;
  shape.count = call.bytes;
  verify_agreement(call.comm, co, shape);
  if (call.bytes < 0) throw ArgumentError("count: negative (" + std::to_string(call.bytes) + ")");
  if (!call.buf && call.bytes > 0) throw ArgumentError("buf: NULL");
  check_release_gather_keys(co, name);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  check_root(comm, call.root);
  BcastArgs args;
  args.buf = static_cast<std::byte*>(call.buf);
  args.bytes = call.bytes;
  args.root = call.root;
  const BcastAlgorithm& algo =
      name == "auto" ? auto_bcast(comm, args.bytes, o, call.options) : bcast_registry().at(name);
  run_recorded(comm, "bcast", algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
  if (plannable(call.algorithm, call.options) && !co.check)
    comm.state<RepeatPlan<BcastAlgorithm>>().remember(key, algo, o);
  return comm;
}

}  // namespace shancoll
