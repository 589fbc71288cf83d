// shan gather on one node (every rank on it, at least two): every rank's
// block goes to the root through its pair channel (shm/pair_channels.h),
// chunk by chunk, instead of the node segment's post, layout and done lines.
// The sender copies chunk i + 1 into its slots while the root copies chunk i
// out to its displacement, so a block costs about one copy (and one chunk),
// both cores copying at once, with no flag crossing but the chunks' own;
// the segment path makes two copies one after the other and three crossings
// (measured on the AMD EPYC VM, Zen 3: docs/performance.md, "Gather,
// scatter, alltoall and reduce_scatter through pair channels").
//
// Cost (L local ranks, blocks of b bytes, chunks of c bytes, k = max(1,
// ceil(b / c))): a sender copies b bytes and writes k ready lines; the root
// reads (L - 1) k ready lines, copies (L - 1) b bytes out and writes as many
// acknowledgements, taking the senders' chunks in turn (round robin); its
// own block one copy more (not in place). No call handshake: a sender may
// return while the root still copies, at most S chunks ahead.
// A block whose size differs from the root's recvcounts is taken whole and
// not copied; the root reports it once every block is in (BlockCheck).
#include "shancoll/coll/gather/gather.h"
#include "shancoll/cost.h"
#include "shancoll/shm/pair_channels.h"

namespace shancoll {

void gatherv_shan_channels(Comm& comm, NodeContext& ctx, const GathervArgs& args,
                           const Options& opt, Stats& stats) {
  const Topology& t = ctx.topo;
  PairChannels ch(ctx, opt.wait_timeout(), "gather shan", opt.ring_window);
  const int root_local = t.local_rank_of[args.root];
  stats.node_count = 1;
  stats.rounds = 1;
  if (comm.rank() != args.root) {
    ChannelWriter w(ch, root_local, args.send, args.send_bytes);
    for (std::int64_t k = 0; k < w.chunks(); ++k) w.write(k);
    if (args.send_bytes > 0) stats.intra_messages += 1, stats.intra_bytes += args.send_bytes;
    return;
  }
  auto& readers = ch.readers();
  const auto rank_of = [&](int j) { return t.ranks[0][j]; };
  std::int64_t result = 0;
  for (int j = 0; j < t.local_size(); ++j) result += args.counts[rank_of(j)];
  const bool stream = streams_result(result);
  for (int j = 0; j < t.local_size(); ++j)
    if (j != root_local)
      readers[j] = ChannelReader(ch, j, args.recv + args.displs[rank_of(j)],
                                 args.counts[rank_of(j)], stream);
  if (args.send && args.send_bytes > 0)
    result_copy(args.recv + args.displs[args.root], args.send,
                static_cast<std::size_t>(args.send_bytes), stream);
  for (bool more = true; more;) {
    more = false;
    for (int j = 0; j < t.local_size(); ++j) {
      if (j == root_local || !readers[j].more()) continue;
      readers[j].read_next();
      more |= readers[j].more();
    }
  }
  BlockCheck check;
  for (int j = 0; j < t.local_size(); ++j) {
    if (j == root_local) continue;
    const int r = rank_of(j);
    if (check.fits(r, readers[j].sent(), args.counts[r]) && args.counts[r] > 0)
      stats.intra_messages += 1, stats.intra_bytes += args.counts[r];
  }
  check.throw_if_failed();
}

}  // namespace shancoll
