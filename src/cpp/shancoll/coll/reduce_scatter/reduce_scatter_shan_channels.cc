// shan reduce_scatter on one node (every rank on it, at least two): rank i's
// block j goes to rank j through their pair channel (shm/pair_channels.h),
// chunk by chunk, and rank j combines each chunk where it lies in the slot,
// with its own block's chunk, straight into its recvbuf. In round k every
// rank writes chunk k of each outgoing block, then combines chunk k - 1 of
// its own from every rank's slot: per rank one copy in of the others'
// blocks and one combine reading its own, with no node barrier; the segment
// path (reduce_scatter_shan.cc) copies the whole input in, crosses a node
// barrier, combines a fraction, crosses another and copies the result out.
//
// Rank order kept (local rank order is rank order on one node): the chunk's
// sum is folded from the right, x_0 o (x_1 o (... o x_{n-1})), as the
// segment path folds it, so both give the same bits.
//
// Cost (n local ranks, T elements of e bytes, blocks of b = T e / n bytes,
// chunks of c bytes, k = max(1, ceil(b / c))): per rank (n - 1) b bytes
// copied in, (n - 1) combines of b bytes out of the slots into recvbuf;
// (n - 1) k ready lines written and read, as many acknowledgements; k + 1
// rounds. In place, the input is copied aside first (T e bytes), since the
// result overwrites its start while its blocks go out.
// Chunks are whole cache lines, so whole elements only where an element's
// size divides a line (every NumPy numeric type); other sizes take the
// segment path. A block whose size differs from the receiver's count is
// taken whole, not combined, and the receiver refuses the call after it.
#include <algorithm>
#include <string>
#include <vector>

#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/pair_channels.h"

namespace shancoll {
namespace {

struct ReduceScatterChannelsState : LayoutState {
  std::vector<std::byte> input;  // in place: the input, set aside
};

// Chunk k - 1 of every incoming block, combined with my own into recvbuf
// (or, once a block of another size came, `drain`, only acknowledged).
void combine_chunk(PairChannels& ch, const ReduceScatterArgs& args, const std::byte* own,
                   bool& drain) {
  auto& readers = ch.readers();
  const int n = ch.local_size(), me = ch.local_rank();
  std::vector<const std::byte*>& at = ch.chunk_pointers();
  std::int64_t bytes = 0, offset = 0;
  for (int l = 0; l < n; ++l) {
    if (l == me || !readers[l].more()) continue;
    at[l] = readers[l].peek_next(&bytes);
    offset = readers[l].next_offset();
    drain |= !readers[l].matched();  // known from the first chunk on
  }
  if (!drain && bytes > 0) {
    at[me] = own + offset;
    const std::int64_t count = bytes / args.esize();
    std::byte* dst = args.recv + offset;
    args.reducer->combine(dst, at[n - 2], at[n - 1], count, nullptr);
    for (int l = n - 3; l >= 0; --l) args.reducer->combine(dst, at[l], dst, count, nullptr);
  }
  for (int l = 0; l < n; ++l)
    if (l != me && readers[l].more()) readers[l].release_next();
}

}  // namespace

bool reduce_scatter_channels_fit(const NodeContext& ctx, const ReduceScatterArgs& args) {
  return pair_channels_fit(ctx) && static_cast<std::int64_t>(kCacheLine) % args.esize() == 0;
}

void reduce_scatter_shan_channels(Comm& comm, NodeContext& ctx, const ReduceScatterArgs& args,
                                  const Options& opt, Stats& stats) {
  const Topology& t = ctx.topo;
  const int n = t.local_size(), me = t.local_rank;
  const std::int64_t e = args.esize();
  const std::byte* input = args.send;
  if (!input) {
    auto& aside = ctx.state<ReduceScatterChannelsState>().input;
    aside.resize(static_cast<std::size_t>(args.total * e));
    local_copy(aside.data(), args.recv, aside.size());
    input = aside.data();
  }
  PairChannels ch(ctx, opt.wait_timeout(), "reduce_scatter 'shan'", opt.ring_window);
  auto& writers = ch.writers();
  auto& readers = ch.readers();
  const std::int64_t mine = args.counts[comm.rank()] * e;
  std::int64_t rounds = 0;
  for (int i = 1; i < n; ++i) {
    const int j = (me + i) % n, r = t.ranks[0][j];
    writers[j] = ChannelWriter(ch, j, args.block_of(input, r), args.counts[r] * e);
    readers[j] = ChannelReader(ch, j, nullptr, mine);
    rounds = std::max(rounds, writers[j].chunks());
    if (args.counts[r] > 0) ++stats.intra_messages, stats.intra_bytes += args.counts[r] * e;
  }
  const std::byte* own = args.block_of(input, comm.rank());
  bool drain = false;
  for (std::int64_t k = 0;; ++k) {
    bool more = k + 1 < rounds;
    for (int i = 1; i < n; ++i) {
      const int j = (me + i) % n;
      if (k < writers[j].chunks()) writers[j].write(k);
    }
    if (k == 0) continue;
    combine_chunk(ch, args, own, drain);
    for (int l = 0; l < n; ++l) more |= l != me && readers[l].more();
    if (!more) break;
  }
  stats.node_count = 1;
  stats.rounds = rounds + 1;
  for (int l = 0; l < n; ++l)
    if (l != me && !readers[l].matched())
      throw ArgumentError("recvcounts: rank " + std::to_string(t.ranks[0][l]) + " sent rank " +
                          std::to_string(comm.rank()) + " a block of " +
                          std::to_string(readers[l].sent()) + " bytes, but its recvcounts give " +
                          std::to_string(mine) + " (the result was not written)");
}

}  // namespace shancoll
