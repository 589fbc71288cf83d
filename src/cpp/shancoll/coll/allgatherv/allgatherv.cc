// The allgather(v) door (allgatherv.h): the one path from every front end to
// the algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include "shancoll/coll/allgatherv/allgatherv.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

void check_layout(const Comm& comm, const AllgathervCall& call) {
  const AllgathervArgs& a = call.args;
  const auto size = static_cast<std::size_t>(comm.size());
  if (a.counts.size() != size || a.displs.size() != size)
    throw ArgumentError("recvcounts: " + std::to_string(a.counts.size()) + " counts and " +
                        std::to_string(a.displs.size()) + " displacements for " +
                        std::to_string(size) + " ranks");
  for (std::size_t r = 0; r < size; ++r) {
    if (a.counts[r] < 0)
      throw ArgumentError("recvcounts: negative count for rank " + std::to_string(r));
    if (a.displs[r] < 0)
      throw ArgumentError("displs: negative displacement for rank " + std::to_string(r));
  }
  const std::int64_t mine = a.counts[comm.rank()];
  if (a.send && call.send_bytes >= 0 && call.send_bytes != mine)
    throw ArgumentError("sendbuf: " + std::to_string(call.send_bytes) + " bytes, but recvcounts[" +
                        std::to_string(comm.rank()) + "] expects " + std::to_string(mine));
}

std::string_view requested_name(const AllgathervCall& call) {
  const Environment& env = environment();
  const bool chosen = !call.algorithm.empty() && call.algorithm != "auto";
  if (call.allgather && !chosen && !env.allgather.empty()) return env.allgather;
  return requested(call.algorithm, env.allgatherv);
}

// `auto`: its choice reads the total
// bytes (the rule table is keyed by bytes per rank) and whether the result
// has a buffer of its own.
const AllgathervAlgorithm& auto_allgatherv(Comm& comm, const AllgathervArgs& args, Options& o,
                                           const CallOptions* given) {
  const std::int64_t total = args.total();
  // total and the per-rank bytes the rule reads determine each other at a given size
  const AutoShape shape{"allgatherv", total / std::max(comm.size(), 1),
                        static_cast<std::uint64_t>(total) << 1 | (args.recv != nullptr)};
  return auto_choice<AllgathervAlgorithm>(comm, shape, o, given, [&](const Topology& t) {
    return &select_allgatherv("auto", args, t);
  });
}

// The layout of the allgather plan's block (allgather_repeat's arguments):
// made with the plan, its buffers set on every repeat.
struct AllgatherLayout : LayoutState {
  AllgathervArgs args;
};

// After an allgather into a buffer that `auto` chose for: its plan.
void remember_allgather(Comm& comm, const AllgathervCall& call, const AllgathervAlgorithm& algo,
                        const Options& o) {
  if (!call.allgather || !call.args.recv || call.args.counts.empty()) return;
  AllgathervArgs& layout = comm.state<AllgatherLayout>().args;
  layout.counts.assign(call.args.counts.begin(), call.args.counts.end());
  layout.displs.assign(call.args.displs.begin(), call.args.displs.end());
  comm.state<RepeatPlan<AllgathervAlgorithm>>().remember({call.args.counts[0]}, algo, o);
}

}  // namespace

bool allgather_repeat(Comm& comm, const AllgatherRepeat& call) {
  auto* plan = repeat_plan<AllgathervAlgorithm>(comm, "", nullptr, {call.block});
  if (!plan) return false;
  AllgathervArgs& args = comm.state<AllgatherLayout>().args;
  args.send = call.send;
  args.recv = call.recv;
  const AllgathervAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "allgather", algo.name,
               [&](Stats& s) { return algo.fn(comm, args, plan->options, s); });
  return true;
}

std::int64_t AllgathervArgs::extent() const {
  std::int64_t e = 0;
  for (std::size_t r = 0; r < counts.size(); ++r) {
    if (counts[r] > 0) e = std::max(e, displs[r] + counts[r]);
  }
  return e;
}

std::int64_t AllgathervArgs::total() const {
  std::int64_t t = 0;
  for (std::int64_t c : counts) t += c;
  return t;
}

void copy_own_block(const Comm& comm, const AllgathervArgs& args) {
  const int r = comm.rank();
  if (args.send && args.counts[r] > 0) {
    local_copy(args.recv + args.displs[r], args.send, static_cast<std::size_t>(args.counts[r]));
  }
}

AllgathervResult allgatherv(const AllgathervCall& call) {
  const Collective which = call.allgather ? Collective::allgather : Collective::allgatherv;
  const CallOptions& co = options_or_defaults(call.options, which);
  const std::string_view name = requested_name(call);
  CallShape shape;
  shape.collective = collective_name(which);
  shape.algorithm = name;
  shape.counts = &call.args.counts;
  shape.send_bytes = call.args.send ? call.send_bytes : -1;
  verify_agreement(call.comm, co, shape);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  check_layout(comm, call);
  const AllgathervAlgorithm& algo = name == "auto"
                                        ? auto_allgatherv(comm, call.args, o, call.options)
                                        : allgatherv_registry().at(name);
  if (!call.args.recv && algo.fn != allgatherv_shan)
    throw ArgumentError(std::string("algorithm: only shan leaves the result in the node segment, "
                                    "not '") +
                        algo.name + "'");
  const std::byte* data = run_recorded(comm, collective_name(which), algo.name,
                                       [&](Stats& s) { return algo.fn(comm, call.args, o, s); });
  if (plannable(call.algorithm, call.options) && !co.check) remember_allgather(comm, call, algo, o);
  return {comm, data};
}

void allgatherv_within(Comm& comm, const AllgathervArgs& args, std::string_view algorithm,
                       const Options& options, Stats& stats) {
  const std::string_view name = requested(algorithm, environment().allgatherv);
  const AllgathervAlgorithm& algo =
      name == "auto" ? select_allgatherv(name, args, comm.nodes(options.ranks_per_node).topo)
                     : allgatherv_registry().at(name);
  algo.fn(comm, args, options, stats);
}

}  // namespace shancoll
