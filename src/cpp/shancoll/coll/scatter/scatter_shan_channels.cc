// shan scatter on one node (every rank on it, at least two): the mirror of
// gather_shan_channels.cc. The root writes every rank's block into its pair
// channel (shm/pair_channels.h) chunk by chunk, the ranks in turn (round
// robin), and each rank copies its chunks out as they come: one copy on
// each side, overlapping chunk by chunk, where the node segment makes two
// one after the other (post, layout, written: two or three crossings).
//
// Cost (L local ranks, blocks of b bytes, chunks of c bytes, k = max(1,
// ceil(b / c))): the root copies (L - 1) b bytes into the slots and writes
// (L - 1) k ready lines, its own block one copy more (not in place); a rank
// reads k ready lines, copies b bytes out and writes k acknowledgements.
// No call handshake: the root may return while the ranks still copy, at
// most S chunks ahead of each.
// A rank whose recvcount differs from the root's count for it takes every
// chunk without copying and refuses the call once they are in.
#include <algorithm>

#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/cost.h"
#include "shancoll/shm/pair_channels.h"

namespace shancoll {

void scatterv_shan_channels(Comm& comm, NodeContext& ctx, const ScattervArgs& args,
                            const Options& opt, Stats& stats) {
  const Topology& t = ctx.topo;
  PairChannels ch(ctx, opt.wait_timeout(), "scatter shan", opt.ring_window);
  const int root_local = t.local_rank_of[args.root];
  stats.node_count = 1;
  stats.rounds = 1;
  if (comm.rank() != args.root) {
    ChannelReader r(ch, root_local, args.recv, args.recv_bytes, streams_result(args.recv_bytes));
    while (r.more()) r.read_next();
    if (r.matched() && r.sent() > 0) stats.intra_messages += 1, stats.intra_bytes += r.sent();
    check_received(r.sent(), args.recv_bytes);
    return;
  }
  auto& writers = ch.writers();
  std::int64_t rounds = 0;
  for (int j = 0; j < t.local_size(); ++j) {
    if (j == root_local) continue;
    const int r = t.ranks[0][j];
    writers[j] = ChannelWriter(ch, j, args.send + args.displs[r], args.counts[r]);
    rounds = std::max(rounds, writers[j].chunks());
    if (args.counts[r] > 0) stats.intra_messages += 1, stats.intra_bytes += args.counts[r];
  }
  for (std::int64_t k = 0; k < rounds; ++k) {
    for (int j = 0; j < t.local_size(); ++j)
      if (j != root_local && k < writers[j].chunks()) writers[j].write(k);
    if (k == 0 && args.recv && args.recv_bytes > 0)  // the others copy out meanwhile
      local_copy(args.recv, args.send + args.displs[args.root],
                 static_cast<std::size_t>(args.recv_bytes));
  }
}

}  // namespace shancoll
