// shan alltoall(v) on one node (every rank on it, at least two): each block
// goes from its sender to its receiver through their pair channel
// (shm/pair_channels.h), chunk by chunk, with no posting of counts and no
// node barrier. In round i every rank writes chunk i of each of its
// outgoing blocks (the next local rank first: no hot spot), then reads
// chunk i - 1 of each incoming one, whose flag is usually up by then; so a
// rank's copy in of one chunk overlaps its peers' copies out of the chunk
// before, and every byte is copied once by its sender and once by its
// receiver, through slots that stay in the caches. The segment path
// (alltoallv_shan.cc) posts the counts, crosses two node barriers and
// copies the whole exchange in before any of it goes out; single copy by
// cross-memory attach makes one system call per block.
//
// Cost (n local ranks, blocks of b bytes, chunks of c bytes, k = max(1,
// ceil(b / c))): per rank (n - 1) b bytes copied in and (n - 1) b out, its
// own block once; (n - 1) k ready lines written and (n - 1) k read, (n - 1) k
// acknowledgements; k + 1 rounds. A rank may return while its receivers
// still copy its last chunks (at most S chunks ahead of each).
// A block whose size differs from the receiver's recvcounts is taken whole,
// not copied, and the receiver refuses the call once every block is in.
#include <algorithm>
#include <string>

#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/pair_channels.h"

namespace shancoll {

void alltoallv_shan_channels(Comm& comm, NodeContext& ctx, const AlltoallvArgs& args,
                             const Options& opt, Stats& stats) {
  const Topology& t = ctx.topo;
  const int n = t.local_size(), me = t.local_rank;
  PairChannels ch(ctx, opt.wait_timeout(), "alltoall 'shan'", opt.ring_window);
  auto& writers = ch.writers();
  auto& readers = ch.readers();
  std::int64_t rounds = 0, result = 0;
  for (int j = 0; j < n; ++j) result += args.recv_counts[t.ranks[0][j]];
  const bool stream = streams_result(result);
  for (int i = 1; i < n; ++i) {
    const int j = (me + i) % n, r = t.ranks[0][j];
    writers[j] = ChannelWriter(ch, j, args.send + args.send_displs[r], args.send_counts[r]);
    readers[j] = ChannelReader(ch, j, args.recv + args.recv_displs[r], args.recv_counts[r], stream);
    rounds = std::max(rounds, writers[j].chunks());
  }
  copy_self_block(comm, args, stats, stream);
  for (std::int64_t k = 0;; ++k) {
    bool more = k + 1 < rounds;
    for (int i = 1; i < n; ++i) {
      const int j = (me + i) % n;
      if (k < writers[j].chunks()) writers[j].write(k);
    }
    for (int i = 1; i < n && k > 0; ++i) {
      const int j = (me + i) % n;
      if (readers[j].more()) readers[j].read_next();
      more |= readers[j].more();
    }
    if (!more && k > 0) break;
  }
  int refused = -1;
  for (int i = 1; i < n; ++i) {
    const int j = (me + i) % n, r = t.ranks[0][j];
    if (args.send_counts[r] > 0) ++stats.intra_messages, stats.intra_bytes += args.send_counts[r];
    if (!readers[j].matched())
      refused = refused < 0 ? r : std::min(refused, r);
    else if (args.recv_counts[r] > 0)
      ++stats.intra_messages, stats.intra_bytes += args.recv_counts[r];
  }
  stats.node_count = 1;
  stats.rounds = rounds + 1;
  if (refused >= 0)
    throw ArgumentError("recvcounts: rank " + std::to_string(refused) + " sent rank " +
                        std::to_string(comm.rank()) + " " +
                        std::to_string(readers[t.local_rank_of[refused]].sent()) +
                        " bytes, but recvcounts[" + std::to_string(refused) + "] expects " +
                        std::to_string(args.recv_counts[refused]) + " (the block was not written)");
}

}  // namespace shancoll
