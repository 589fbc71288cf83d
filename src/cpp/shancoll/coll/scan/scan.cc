// The scan and exscan doors (scan.h): the one path from every front end to
// the algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include "shancoll/coll/scan/scan.h"

#include <string>

#include "shancoll/coll/allreduce/shan_fractions.h"
#include "shancoll/coll/door.h"

namespace shancoll {
namespace {

void check_buffers(const ScanCall& call) {
  if (call.count < 0) throw ArgumentError("count: negative (" + std::to_string(call.count) + ")");
  if (!call.recv && call.count > 0) throw ArgumentError("recvbuf: NULL");
}

ScanArgs args_of(const ScanCall& call, const Reducer& reducer, bool exclusive) {
  ScanArgs args;
  args.send = static_cast<const std::byte*>(call.send);
  args.recv = static_cast<std::byte*>(call.recv);
  args.count = call.count;
  args.reducer = &reducer;
  args.exclusive = exclusive;
  return args;
}

// What the doors' plans are keyed by; scan's and exscan's lie apart
// (RepeatPlan's slot: one algorithm type serves both).
RepeatKey repeat_key_of(const ScanCall& call) {
  return {call.count, -1, call.type, call.datatype, call.op};
}

// Exclusive: 1 for exscan, 0 for scan (the plan's slot).
template <int Exclusive>
bool repeat_in(Comm& comm, const ScanCall& call) {
  auto* plan = repeat_plan<ScanAlgorithm, Exclusive>(comm, call.algorithm, call.options,
                                                     repeat_key_of(call));
  if (!plan) return false;
  check_buffers(call);
  const ScanArgs args = args_of(call, *plan->reducer, Exclusive);
  const char* collective = Exclusive ? "exscan" : "scan";
  if (run_express(comm, collective, *plan, args.send, args.recv)) return true;
  const ScanAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, collective, algo.name,
               [&](Stats& s) { algo.fn(comm, args, plan->options, s); });
  make_express(comm, *plan, args);
  return true;
}

template <int Exclusive>
void remember(Comm& comm, const ScanCall& call, const Reducer& reducer, const ScanAlgorithm& algo,
              const Options& o) {
  auto& plan = comm.state<RepeatPlan<ScanAlgorithm, Exclusive>>();
  plan.reducer = reducer;
  plan.remember(repeat_key_of(call), algo, o);
}

// `auto`: its choice reads the bytes, scan or exscan (one memo for both:
// alternating calls choose again) and whether the layout's nodes are
// contiguous (shan's precondition; the layout's own). Every algorithm keeps
// rank order, so the op is no trait.
const ScanAlgorithm& auto_scan(Comm& comm, const ScanArgs& args, Options& o,
                               const CallOptions* given) {
  const Registry<ScanAlgorithm>& registry = args.exclusive ? exscan_registry() : scan_registry();
  return auto_choice<ScanAlgorithm>(
      comm, {registry.collective(), args.bytes(), args.exclusive}, o, given,
      [&](const Topology& t) {
        return &registry.at(choose_scan(args.bytes(), args.exclusive, t.size, t.node_count, t.hosts,
                                        nodes_contiguous(t)));
      });
}

Comm& run_scan(const ScanCall& call, bool exclusive) {
  const Collective collective = exclusive ? Collective::exscan : Collective::scan;
  const Registry<ScanAlgorithm>& registry = exclusive ? exscan_registry() : scan_registry();
  const char* coll = registry.collective();
  const CallOptions& co = options_or_defaults(call.options, collective);
  const std::string_view name =
      requested(call.algorithm, exclusive ? environment().exscan : environment().scan);
  CallShape shape;
  shape.collective = coll;
  shape.algorithm = name;
  shape.op = call.op;
  shape.dtype = static_cast<int>(call.type);
  shape.count = call.count;
  verify_agreement(call.comm, co, shape);
  check_buffers(call);
  // An unknown name is refused here, before Comm::of's set-up.
  const ScanAlgorithm* named = name == "auto" ? nullptr : &registry.at(name);
  const Reducer reducer(call.op, call.type, call.datatype);
  const ScanArgs args = args_of(call, reducer, exclusive);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  const ScanAlgorithm& algo = named ? *named : auto_scan(comm, args, o, call.options);
  run_recorded(comm, coll, algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
  if (plannable(call.algorithm, call.options) && !co.check && reducer.typed())
    (exclusive ? remember<1> : remember<0>)(comm, call, reducer, algo, o);
  return comm;
}

}  // namespace

bool scan_repeat(Comm& comm, const ScanCall& call) { return repeat_in<0>(comm, call); }
bool exscan_repeat(Comm& comm, const ScanCall& call) { return repeat_in<1>(comm, call); }

Comm& scan(const ScanCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return repeat_in<0>(c, call); })) return *known;
  return run_scan(call, false);
}

Comm& exscan(const ScanCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return repeat_in<1>(c, call); })) return *known;
  return run_scan(call, true);
}

}  // namespace shancoll
