// The reduce_scatter and reduce_scatter_block doors (reduce_scatter.h): the
// one path from every front end to the algorithms. Everything that can
// refuse the call is checked before the first communication, alike on every
// rank given the same arguments.
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"

#include <string>
#include <vector>

#include "shancoll/coll/allreduce/shan_fractions.h"
#include "shancoll/coll/door.h"

namespace shancoll {
namespace {

// The counts and their prefix sums of one call, kept per thread and reused:
// a repeated call allocates nothing.
struct Blocks {
  std::vector<std::int64_t> counts, displs;
  std::int64_t total = 0;
};

Blocks& blocks_of(const ReduceScatterCall& call, bool block, int size) {
  thread_local Blocks b;
  b.counts.resize(static_cast<std::size_t>(size));
  b.displs.resize(b.counts.size());
  b.total = 0;
  for (int q = 0; q < size; ++q) {
    const std::int64_t n = block ? call.count : call.counts[q];
    if (n < 0)
      throw ArgumentError(block ? "count: negative (" + std::to_string(n) + ")"
                                : "recvcounts: negative count " + std::to_string(n) + " for rank " +
                                      std::to_string(q));
    b.counts[q] = n;
    b.displs[q] = b.total;
    b.total += n;
  }
  return b;
}

void check_buffers(const ReduceScatterCall& call, const Blocks& b, int rank) {
  const std::int64_t needed = call.send ? b.counts[rank] : b.total;
  if (!call.recv && needed > 0) throw ArgumentError("recvbuf: NULL");
  if (!call.send && !call.recv && b.total > 0) throw ArgumentError("recvbuf: NULL (in place)");
}

ReduceScatterArgs args_of(const ReduceScatterCall& call, const Blocks& b, const Reducer& reducer,
                          bool block) {
  ReduceScatterArgs args;
  args.send = static_cast<const std::byte*>(call.send);
  args.recv = static_cast<std::byte*>(call.recv);
  args.counts = b.counts.data();
  args.displs = b.displs.data();
  args.total = b.total;
  args.reducer = &reducer;
  args.block = block;
  return args;
}

// What reduce_scatter_block's plan is keyed by (reduce_scatter's varying
// counts make none).
RepeatKey repeat_key_of(const ReduceScatterCall& call) {
  return {call.count, -1, call.type, call.datatype, call.op};
}

// `auto`: its choice reads the bytes per rank, block or not and the op's
// commutativity; the layout (contiguous nodes) is the layout's own.
const ReduceScatterAlgorithm& auto_reduce_scatter(Comm& comm, const ReduceScatterArgs& args,
                                                  Options& o, const CallOptions* given) {
  const bool commutative = args.reducer->commutative();
  const std::int64_t bytes = args.total * args.esize() / comm.size();
  const char* coll = args.block ? "reduce_scatter_block" : "reduce_scatter";
  const std::uint64_t traits = std::uint64_t{commutative} | std::uint64_t{args.block} << 1;
  return auto_choice<ReduceScatterAlgorithm>(
      comm, {coll, bytes, traits}, o, given, [&](const Topology& t) {
        return &reduce_scatter_registry().at(choose_reduce_scatter(
            bytes, args.block, commutative, t.size, t.node_count, t.hosts, nodes_contiguous(t)));
      });
}

void check_op(const ReduceScatterAlgorithm& a, const Reducer& reducer) {
  if (!reducer.commutative() && !a.rank_order)
    throw ArgumentError(
        "op: a non-commutative op needs an algorithm that combines in rank order; '" +
        std::string(a.name) + "' does not (use pairwise, shan or mpi)");
}

Comm& run_reduce_scatter(const ReduceScatterCall& call, bool block) {
  const Collective collective =
      block ? Collective::reduce_scatter_block : Collective::reduce_scatter;
  const Registry<ReduceScatterAlgorithm>& registry =
      block ? reduce_scatter_block_registry() : reduce_scatter_registry();
  const char* coll = registry.collective();
  const CallOptions& co = options_or_defaults(call.options, collective);
  const std::string_view name = requested(
      call.algorithm, block ? environment().reduce_scatter_block : environment().reduce_scatter);
  int size = 0, rank = 0;
  check_mpi(MPI_Comm_size(call.comm, &size), "MPI_Comm_size");
  check_mpi(MPI_Comm_rank(call.comm, &rank), "MPI_Comm_rank");
  if (!block && !call.counts) throw ArgumentError("recvcounts: NULL");
  const Blocks& b = blocks_of(call, block, size);
  CallShape shape;
  shape.collective = coll;
  shape.algorithm = name;
  shape.op = call.op;
  shape.dtype = static_cast<int>(call.type);
  shape.count = b.total;
  shape.counts = &b.counts;
  verify_agreement(call.comm, co, shape);
  check_buffers(call, b, rank);
  // An unknown name is refused here, before Comm::of's set-up.
  const ReduceScatterAlgorithm* named = name == "auto" ? nullptr : &registry.at(name);
  const Reducer reducer(call.op, call.type, call.datatype);
  if (named) check_op(*named, reducer);
  const ReduceScatterArgs args = args_of(call, b, reducer, block);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  const ReduceScatterAlgorithm& algo =
      named ? *named : auto_reduce_scatter(comm, args, o, call.options);
  run_recorded(comm, coll, algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
  if (block && plannable(call.algorithm, call.options) && !co.check && reducer.typed()) {
    auto& plan = comm.state<RepeatPlan<ReduceScatterAlgorithm>>();
    plan.reducer = reducer;
    plan.remember(repeat_key_of(call), algo, o);
  }
  return comm;
}

}  // namespace

bool reduce_scatter_block_repeat(Comm& comm, const ReduceScatterCall& call) {
  auto* plan =
      repeat_plan<ReduceScatterAlgorithm>(comm, call.algorithm, call.options, repeat_key_of(call));
  if (!plan) return false;
  const Blocks& b = blocks_of(call, true, comm.size());
  check_buffers(call, b, comm.rank());
  const ReduceScatterArgs args = args_of(call, b, *plan->reducer, true);
  const ReduceScatterAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "reduce_scatter_block", algo.name,
               [&](Stats& s) { algo.fn(comm, args, plan->options, s); });
  return true;
}

Comm& reduce_scatter(const ReduceScatterCall& call) { return run_reduce_scatter(call, false); }

Comm& reduce_scatter_block(const ReduceScatterCall& call) {
  if (Comm* known = repeated(call, [&](Comm& c) { return reduce_scatter_block_repeat(c, call); }))
    return *known;
  return run_reduce_scatter(call, true);
}

}  // namespace shancoll
