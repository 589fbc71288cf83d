// shan reduce_scatter on one node of two ranks, single copy: each rank reads
// its own block of the other rank's input straight out of the other's
// buffer (cross-memory attach, shm/peer_memory.h), chunk by chunk, and
// combines it with its own block in rank order into its recvbuf while the
// chunk is in cache (pair_reduce, coll/pair_reduce.cc, each rank keeping
// its own part). The pair channels (reduce_scatter_shan_channels.cc) copy
// each block into a ring first and combine it from there: lines the other
// core has just written, read across cores at about half the speed of the
// clean lines of an input it only reads (shm/peer_memory.h).
//
// In place, local rank 1's block goes to the start of its buffer, where
// local rank 0 reads rank 1's copy of block 0 meanwhile: rank 1 combines
// into a buffer of its own and copies the block into place once both ranks'
// reads are over. Local rank 0's block already starts its buffer.
//
// Cost (T elements of e bytes in all, block b = counts[me] e, single-copy
// bandwidth B_x, gamma per byte combined, sigma a system call, chunks of C
// bytes): per rank b/B_x read + gamma b (+ b copied, local rank 1 in place),
// sigma ceil(b/C), two flag crossings (shm/rendezvous.h); both ranks at once.
// Against the pair channels: no copy into a ring, and reads of clean lines.
// Results: x_0 o x_1 per element, rank order kept (non-commutative ops).
#include <vector>

#include "shancoll/coll/pair_reduce.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/cost.h"
#include "shancoll/shm/peer_memory.h"

namespace shancoll {
namespace {

struct ReduceScatterSingleCopyState : LayoutState {
  std::vector<std::byte> result;  // local rank 1 in place: its block, until both reads are over
};

}  // namespace

bool reduce_scatter_single_copy_fits(const NodeContext& ctx, const ReduceScatterArgs& args,
                                     int single_copy) {
  // Only where asked (single_copy=1, a rule table's row where it won): on
  // the Zen 3 EPYC VM the pair channels beat it from blocks of 64 KiB (1 MiB
  // 122 against 200 us; 16 KiB 10.3 against 7.5) in the jobs where they run
  // fast, which were a minority in tune's runs (docs/performance.md,
  // sixteenth session).
  // The mean block decides: the total, alike on both ranks even where their
  // counts differ (the rendezvous then refuses the call on both).
  return single_copy == 1 && ctx.topo.node_count == 1 && ctx.topo.local_size() == 2 &&
         args.total * args.esize() / 2 >= kAskedSingleCopyMin && ctx.peer_memory->available();
}

void reduce_scatter_shan_single_copy(Comm& comm, NodeContext& ctx, const ReduceScatterArgs& args,
                                     const Options& opt, Stats& stats) {
  const int me = ctx.topo.local_rank;
  const std::int64_t mine = args.counts[comm.rank()];
  const bool aside = !args.send && me == 1;  // in place: block 0's place is still read
  std::byte* result = args.recv;
  if (aside) {
    auto& st = ctx.state<ReduceScatterSingleCopyState>().result;
    st.resize(static_cast<std::size_t>(mine * args.esize()));
    result = st.data();
  }
  pair_reduce(ctx, args.input(), result, args.total, args.counts[0], *args.reducer,
              opt.wait_timeout(), stats, PairResult::own_part);
  if (aside && mine > 0)
    local_copy(args.recv, result, static_cast<std::size_t>(mine * args.esize()));
  stats.node_count = 1;
  stats.rounds = 1;
}

}  // namespace shancoll
