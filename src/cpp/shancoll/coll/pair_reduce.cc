// pair_reduce: the message split in two parts, one per local rank. Each rank
// reads its part of the other rank's input chunk by chunk (cross-memory
// attach, shm/peer_memory.h), combines it with its own in local rank order
// while the chunk is in cache, into its recvbuf (or scratch when it keeps
// no result), and writes the chunk into the other rank's recvbuf when that
// one keeps a result. Both cores read and combine at once.
//
// In place works unchanged: part p of a rank's buffer is read and then
// overwritten by the other rank only, in that order, chunk by chunk.
//
// Cost per rank (its part of p bytes, single-copy bandwidth B_x, gamma per
// byte combined, sigma a system call, chunks of C bytes): p/B_x read +
// gamma p + p/B_x written (when the other keeps a result), 2 sigma p/C,
// and the rendezvous's flag crossings (shm/rendezvous.h).
// Results: every element is x_0 o x_1, computed once: the same bytes on
// both ranks; rank order for non-commutative ops.
#include "shancoll/coll/pair_reduce.h"

#include <algorithm>

#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/rendezvous.h"

namespace shancoll {

void pair_reduce(NodeContext& ctx, const std::byte* input, std::byte* result, std::int64_t count,
                 std::int64_t split, const Reducer& reducer, double timeout, Stats& stats,
                 PairResult keeps) {
  const std::size_t esize = reducer.elem_size();
  const int me = ctx.topo.local_rank, peer = 1 - me;
  const bool own_part = keeps == PairResult::own_part;
  Rendezvous meet(ctx, timeout);
  // own_part: the split is each rank's own count, so it is compared too
  const std::uint64_t shape = (static_cast<std::uint64_t>(count) * 131 + esize) +
                              (own_part ? static_cast<std::uint64_t>(split) * 8191 + 1 : 0);
  meet.post(input, own_part ? nullptr : result, shape, own_part ? "recvcounts" : "count");
  const std::byte* their_input = meet.first(peer);
  std::byte* their_result = meet.second(peer);  // null: the other keeps nothing

  const std::size_t chunk = std::max<std::size_t>(1, kPairChunkBytes / esize) * esize;
  std::byte* scratch = meet.scratch(3 * chunk);  // the other's chunk, my part, a temporary
  const std::size_t lo = static_cast<std::size_t>(me == 0 ? 0 : split) * esize;
  const std::size_t hi = static_cast<std::size_t>(me == 0 ? split : count) * esize;
  for (std::size_t off = lo; off < hi; off += chunk) {
    const std::size_t len = std::min(chunk, hi - off);
    std::byte* out = !result ? scratch + chunk : result + (own_part ? off - lo : off);
    // read straight into recvbuf unless it holds my input (in place)
    std::byte* theirs = result && result != input ? out : scratch;
    ctx.peer_memory->read(peer, theirs, their_input + off, len);
    combine_in_rank_order(reducer, me, out, input + off, theirs,
                          static_cast<std::int64_t>(len / esize), scratch + 2 * chunk);
    if (their_result) ctx.peer_memory->write(peer, their_result + off, out, len);
  }
  const int copies = their_result ? 2 : 1;
  stats.intra_messages += copies;
  stats.intra_bytes += static_cast<std::int64_t>(copies * (hi - lo));
  meet.finish();  // my input is read, and my recvbuf written
}

}  // namespace shancoll
