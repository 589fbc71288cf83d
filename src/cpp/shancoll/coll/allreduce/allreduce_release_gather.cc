// release_gather allreduce (seed: intranode-release-gather, Sec. II-E):
//   1. intra-node reduce to local rank 0, straight into its recvbuf
//      (data-copy optimisation; release_gather_node.cc);
//   2. several nodes: an allreduce among the node leaders, in place in their
//      recvbufs, with any of the library's allreduce algorithms
//      (inter_algorithm, "auto" by default), on a communicator of the leaders;
//   3. intra-node bcast of the result from local rank 0.
// One node of two ranks, with single copy: the reduce's two halves are
// written to both ranks' recvbufs (rg_reduce_pair), no bcast phase: it would
// only carry back the half the other rank computed.
// One expression tree per call (the same on every rank): bitwise-identical
// results everywhere. Commutative ops only (a tree combines in tree order).
// Cost: reduce + bcast on the node (each m/c chunks) plus the leaders' allreduce.
#include <string>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/release_gather/release_gather.h"
#include "shancoll/error.h"
#include "shancoll/handshake.h"

namespace shancoll {
namespace {

// The node leaders' Comm (null on the other ranks), made once per node
// layout behind a handshake (collective over the whole communicator: every
// rank reaches it in the same call). Kept by the layout, so that a failed
// call that breaks the communicator keeps it too (Comm::~Comm).
Comm* leaders_comm(Comm& comm, NodeContext& ctx, const ReleaseGatherOptions& o, double timeout) {
  ReleaseGatherState& st = release_gather_state(ctx, o.buffer_for(false, 0).bytes);
  if (!st.leaders_made) {
    handshake(comm.mpi(), "release_gather's communicator of the node leaders", timeout);
    const int color = ctx.topo.local_rank == 0 ? 0 : MPI_UNDEFINED;
    MPI_Comm split = MPI_COMM_NULL;
    check_mpi(MPI_Comm_split(comm.mpi(), color, comm.rank(), &split), "MPI_Comm_split");
    if (split != MPI_COMM_NULL) {
      st.leaders = Comm::of_sub(split, timeout);  // its own dup
      MPI_Comm_free(&split);
    }
    st.leaders_made = true;
  }
  return st.leaders.get();
}

void allreduce_leaders(Comm& lc, const AllreduceArgs& args, const ReleaseGatherOptions& o,
                       const Options& opt, Stats& stats) {
  lc.set_call_timeout(opt.wait_timeout());
  AllreduceArgs in_place = args;
  in_place.send = nullptr;
  // Checked by the door before any communication (an unknown name, or
  // release_gather itself, is refused on every rank there).
  const AllreduceAlgorithm& algo =
      select_allreduce(o.inter_algorithm, in_place, lc.size(), lc.size());
  Options inter = opt;
  inter.release_gather = nullptr;
  inter.ranks_per_node = 0;  // one leader per node: every leader is a node of its own
  Stats s;
  lc.run([&] { algo.fn(lc, in_place, inter, s); });
  stats.rounds += s.rounds;
  stats.inter_messages += s.inter_messages + s.intra_messages;
  stats.inter_bytes += s.inter_bytes + s.intra_bytes;
}

}  // namespace

void allreduce_release_gather(Comm& comm, const AllreduceArgs& args, const Options& opt,
                              Stats& stats) {
  const ReleaseGatherOptions& o = release_gather_options(opt);
  NodeContext& ctx = comm.nodes(opt.ranks_per_node);
  rg_check_sockets(ctx.topo, o);
  const double timeout = opt.wait_timeout();
  const std::byte* input = args.send ? args.send : args.recv;
  if (ctx.topo.node_count == 1 && rg_reduce_pair_fits(ctx, o, args.bytes())) {
    rg_reduce_pair(ctx, input, args.recv, args.count, *args.reducer, 0, true, timeout, stats);
    stats.node_count = 1;
    return;
  }
  bool sizes_differ =
      rg_reduce_on_node(ctx, input, args.recv, args.count, *args.reducer, 0, o, timeout, stats);
  if (ctx.topo.node_count > 1) {
    Comm* leaders = leaders_comm(comm, ctx, o, timeout);
    if (leaders) allreduce_leaders(*leaders, args, o, opt, stats);
  }
  // A root that saw sizes differ in the reduce says so to every reader.
  sizes_differ |=
      rg_bcast_on_node(ctx, args.recv, args.bytes(), 0, o, timeout, stats, sizes_differ);
  stats.node_count = ctx.topo.node_count;
  if (sizes_differ) throw_sizes_differ(ctx, args.bytes());
}

}  // namespace shancoll
