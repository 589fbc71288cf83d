// The gather(v) door (gather.h): the one path from every front end to the
// algorithms. Everything that can refuse the call is checked before the
// first communication: what every rank knows (the root, its own block) alike
// on every rank, the root's layout at the root. What only the root can see
// against another rank's block (a count that differs) it refuses once the
// blocks have arrived (BlockCheck).
#include "shancoll/coll/gather/gather.h"

#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/coll/rooted_tree.h"

namespace shancoll {
namespace {

std::string_view requested_name(const GathervCall& call) {
  const Environment& env = environment();
  const bool chosen = !call.algorithm.empty() && call.algorithm != "auto";
  if (call.args.regular && !chosen && !env.gather.empty()) return env.gather;
  return requested(call.algorithm, env.gatherv);
}

// The root's receive layout: counts and displacements of every rank, a
// buffer where they land, its own block's size.
void check_root_layout(const Comm& comm, const GathervArgs& a) {
  const int p = comm.size();
  if (!a.counts || !a.displs) throw ArgumentError("recvcounts: NULL at the root");
  bool any = false;
  for (int r = 0; r < p; ++r) {
    if (a.counts[r] < 0)
      throw ArgumentError("recvcounts: negative count for rank " + std::to_string(r));
    if (a.displs[r] < 0)
      throw ArgumentError("displs: negative displacement for rank " + std::to_string(r));
    any = any || a.counts[r] > 0;
  }
  if (any && !a.recv) throw ArgumentError("recvbuf: NULL at the root");
  const std::int64_t mine = a.counts[a.root];
  if (a.send && a.send_bytes != mine)
    throw ArgumentError("sendbuf: " + std::to_string(a.send_bytes) + " bytes, but recvcounts[" +
                        std::to_string(a.root) + "] expects " + std::to_string(mine));
}

// `auto`: its choice reads the layout and, for a gather, the block's bytes
// (every rank knows them; a gatherv's only the root).
const GathervAlgorithm& auto_gatherv(Comm& comm, const GathervArgs& a, Options& o,
                                     const CallOptions* given) {
  const std::int64_t bytes = a.regular ? a.send_bytes : 0;
  const AutoShape shape{a.regular ? "gather" : "gatherv", bytes};
  return auto_choice<GathervAlgorithm>(comm, shape, o, given, [&](const Topology& t) {
    return &gatherv_registry().at(choose_gatherv(a.regular, bytes, t.size, t.node_count, t.hosts));
  });
}

}  // namespace

bool BlockCheck::fits(int r, std::int64_t sent_bytes, std::int64_t expected_bytes) {
  if (sent_bytes == expected_bytes) return true;
  if (rank < 0) rank = r, sent = sent_bytes, expected = expected_bytes;
  return false;
}

void BlockCheck::throw_if_failed() const {
  if (rank < 0) return;
  const std::string r = std::to_string(rank);
  throw ArgumentError("recvcounts: rank " + r + " sent " + std::to_string(sent) +
                      " bytes, but recvcounts[" + r + "] expects " + std::to_string(expected) +
                      kBlockNotWritten);
}

Comm& gatherv(const GathervCall& call) {
  const GathervArgs& a = call.args;
  const Collective which = a.regular ? Collective::gather : Collective::gatherv;
  const CallOptions& co = options_or_defaults(call.options, which);
  const std::string_view name = requested_name(call);
  CallShape shape;
  shape.collective = collective_name(which);
  shape.algorithm = name;
  shape.root = a.root;
  if (a.regular) shape.count = a.send_bytes;
  verify_agreement(call.comm, co, shape);
  if (a.send_bytes < 0)
    throw ArgumentError("sendcount: negative (" + std::to_string(a.send_bytes) + ")");
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  check_root(comm, a.root);
  if (comm.rank() == a.root)
    check_root_layout(comm, a);
  else if (!a.send && a.send_bytes > 0)
    throw ArgumentError("sendbuf: NULL (in place is only valid at the root)");
  const GathervAlgorithm& algo =
      name == "auto" ? auto_gatherv(comm, a, o, call.options) : gatherv_registry().at(name);
  run_recorded(comm, collective_name(which), algo.name, [&](Stats& s) { algo.fn(comm, a, o, s); });
  if (a.regular && plannable(call.algorithm, call.options) && !co.check) {
    comm.state<RegularLayout<GathervAlgorithm>>().make(comm.size(), a.send_bytes);
    comm.state<RepeatPlan<GathervAlgorithm>>().remember({a.send_bytes, a.root}, algo, o);
  }
  return comm;
}

bool gather_repeat(Comm& comm, const GatherRepeat& call) {
  auto* plan = repeat_plan<GathervAlgorithm>(comm, "", nullptr, {call.block, call.root});
  if (!plan) return false;
  const RegularLayout<GathervAlgorithm>& layout = comm.state<RegularLayout<GathervAlgorithm>>();
  GathervArgs a;
  a.send = call.send;
  a.send_bytes = call.block;
  a.recv = call.recv;
  a.counts = layout.counts.data();
  a.displs = layout.displs.data();
  a.root = call.root;
  a.regular = true;
  const GathervAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "gather", algo.name, [&](Stats& s) { algo.fn(comm, a, plan->options, s); });
  return true;
}

}  // namespace shancoll
