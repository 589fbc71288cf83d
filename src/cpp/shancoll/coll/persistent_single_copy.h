// The persistent single-copy engines: bcast, gather(v), scatter(v),
// allgather(v) and alltoall(v) past the deposit engines' bounds
// (coll/persistent_deposit.h), on one node of several ranks where
// cross-memory attach works (shm/peer_memory.h). MPI fixes a persistent
// collective's buffers at _init, so the ranks tell each other there, once,
// where in its memory each takes its blocks from; a start publishes only
// the run in the rank's line, and each rank copies what it takes straight
// from the owners' buffers (one copy, by the kernel: process_vm_readv),
// where a deposit copies into the request's segment and out again.
//
// Who copies: whoever of the two is there. A block crosses in chunks
// (kClaimedChunk), each claimed by the taker (a read, process_vm_readv)
// or by the giver (a write into the taker's buffer, process_vm_writev),
// whichever claims it first in its own test, once both have started the
// run. So a rank waiting in its request never needs a peer's test after the
// peer's start: it copies all that is left of what it exchanges with that
// peer itself. That is MPI's progress rule for a nonblocking collective, and
// what the PMPI library's routing asks (capi/pmpi_persistent.cc): a peer may
// sit in a blocking call shancoll does not see (an MPI_Recv) while this
// rank's wait needs its blocks. Where both wait, both copy, chunk by chunk:
// a bcast's root and reader, a gather's root and owner, share the work, the
// taker from the block's front and the giver from its back (claim_chunks).
//
// The rules of a run (`k`): a start writes the rank's line and copies its
// own block (local: it waits for nobody); a chunk of a block between two
// ranks is claimed (one compare-and-swap on the pair's claim word) only
// once both lines say k (the
// giver's send buffer holds run k's data, the taker's receive buffer is the
// run's), copied, then counted in the pair's done counter; a run completes
// once every block the rank gives or takes is done. So a buffer is read or
// written only between its owner's start and its completion, when MPI
// forbids the owner to touch it, and neither rank can be past run k while a
// chunk of k is unclaimed.
//
// Cost per run (n local ranks, blocks of b bytes): one line write at the
// start, per chunk a claim and a count on the pair's line and one system
// call, and the reads of those lines. Segment: a line per rank and one per
// ordered pair. No MPI call, no allocation.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <vector>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/comm.h"
#include "shancoll/pattern/chunk_claims.h"
#include "shancoll/shm/flags.h"

namespace shancoll {

// The most bytes a claim copies: enough that its system call and its claim
// cost little beside it, few enough that both ranks of a pair share a
// block. 256 KiB, as the blocking pair's chunks (kPairChunkBytes): against
// 128 KiB, start + wait of a 1 MiB allgather 155-157 us against 170-172, a
// 4 MiB bcast 210-212 against 220-259; 512 KiB slower than both (Xeon VM,
// 2026-11-30).
constexpr std::size_t kClaimedChunk = std::size_t{256} << 10;

// Blocks (and the pair reduction's vectors) under 32 KiB cross whole: a
// system call more would cost more than it saves. Larger ones in claims of
// whole pages (page multiples hold whole elements of every type a reduction
// takes): halves of a bcast's blocks (one 128 KiB chunk made its start +
// wait 17-21 us where the blocking call, on both cores, took 5-6, Xeon VM).
constexpr std::size_t kUnsplitBytes = std::size_t{32} << 10;

// The part of a block its taker copies, from the front, where both ranks
// are there (pattern::claim_bounds; the giver writes the rest, from the
// back). Where every rank takes as much as it gives (allgather, alltoall):
// all of it, so each rank reads its own takes whole (in claims of at most
// kClaimedChunk) and its results' lines land in its own cache; the giver
// writes only what a late taker has not claimed. Whole blocks against
// halves, start + wait / the blocking call at 64-128 KiB: allgather
// 0.86-0.97x against 0.97-1.05x, alltoall 0.89-1.07x against 1.02-1.11x
// (Xeon VM, 2026-11-30).
constexpr double kSymmetricTakerShare = 1.0;

// The root's part of each block of a rooted engine (gather: the taker's,
// scatter: the giver's) on n local ranks: the root copies its own block
// besides its part of the n - 1 others, and a local copy costs about half a
// cross-memory one (kOwnCopyWeight in gather_shan.cc), so every core copies
// as much where the root takes 1/(2n) of each block and its owner the rest,
// each in one claim up to kClaimedChunk, as the blocking gather splits it
// (rooted_node.h, owner_share). Start + wait / the blocking call, 2 ranks,
// Xeon VM: gather 64 KiB 0.96 (chunks of b/(2n) claimed from both ends,
// which settled at the same split with n - 1 more system calls for the
// owner: 1.14), scatter 64 KiB 0.84-0.89 (1.09-1.11). A scatter's reader
// taking all of it, as the blocking scatter's does: 0.97-1.00 at 64 KiB.
constexpr double root_share(int local_size) { return 0.5 / local_size; }

// Runs `work(k)` for every chunk k of run `run` (of `chunks` chunks, at
// most pattern::kMaxClaimedChunks) that nobody has claimed yet, claiming
// each first in the word at `claims`: one rank of the pair from the front,
// the other (`from_back`) from the back (pattern/chunk_claims.h), so that
// where both are there each takes the same chunks in every run and the
// lines it writes stay in its own core's cache (claimed by whoever came
// first, they moved between the cores from run to run: the persistent
// allreduce at 64 KiB spent twice the blocking call's time in its copies and
// its combine, perf on the Xeon VM). `done` counts every chunk finished in
// every run, after its work; once per call, for all the chunks it took (the
// peer waits for them all: a count per chunk only pulled the line the peer
// polls back and forth once more per chunk; a 64 KiB gather's start + wait
// 1.13-1.29x its blocking call against 1.27-1.34x, the others within the
// noise, Xeon VM).
template <class Work>
void claim_chunks(std::byte* claims, std::byte* done, std::uint64_t run, std::uint64_t chunks,
                  bool from_back, Work&& work) {
  std::atomic<std::uint64_t>& word = flag_at(claims);
  std::uint64_t w = word.load(std::memory_order_acquire);
  std::uint64_t finished = 0;
  for (;;) {
    const pattern::ChunkClaim c = pattern::next_chunk_claim(w, run, chunks, from_back);
    if (!c.claimed) break;
    if (!word.compare_exchange_weak(w, c.word, std::memory_order_acq_rel)) continue;
    work(c.chunk);
    ++finished;
    w = word.load(std::memory_order_acquire);
  }
  if (finished > 0) flag_at(done).fetch_add(finished, std::memory_order_release);  // after the work
}

// `chunks`, checked against what a claim word counts (blocks past 2 TiB:
// no buffer of a process today, but an ArgumentError, not a wrong count).
std::uint64_t claimable(std::uint64_t chunks);

// What one rank gives and takes in every run, by local rank.
struct SingleCopyPlan {
  explicit SingleCopyPlan(int local_size)
      : give(static_cast<std::size_t>(local_size)),
        give_bytes(give.size()),
        take(give.size()),
        take_bytes(give.size()) {}

  // By local rank j: where my block for j lies and its bytes,
  // where what I take of j's goes and the bytes I expect; at j = me the
  // bytes of my own block as I give it and as I expect it (checked alike).
  std::vector<const std::byte*> give;
  std::vector<std::size_t> give_bytes;
  std::vector<std::byte*> take;
  std::vector<std::size_t> take_bytes;
  const char* counts_name = "count";  // the argument a mismatch names
  // My own block, copied by the start (no bytes: none, or in place).
  const std::byte* own_from = nullptr;
  std::byte* own_to = nullptr;
  std::size_t own_bytes = 0;
  // The part of each block its taker copies where both are there, alike on
  // every rank: halves (a bcast: the root would idle), kSymmetricTakerShare,
  // root_share (gather) or 1 - root_share (scatter).
  double taker_share = 0.5;
};

// Whether every local rank runs a single-copy engine: one node of several
// ranks, cross-memory attach available, `single_copy` (the option) not 0,
// and `fits` on every rank (one allreduce over the node: an engine is made
// on every rank or on none).
bool single_copy_agreed(NodeContext& ctx, int single_copy, bool fits);

// The engine of `plan` (collective over the node: the ranks exchange where
// they give, and check that what each takes is what its owner gives: an
// ArgumentError on every local rank where a count differs).
std::unique_ptr<Engine> single_copy_engine(NodeContext& ctx, const SingleCopyPlan& plan);

// Each makes its engine where it fits (alike on every rank), else null.
// bcast_persistent_single_copy.cc: from 128 KiB.
std::unique_ptr<Engine> single_copy_bcast(NodeContext& ctx, const BcastCall& call, int single_copy);
// gather_persistent_single_copy.cc: gather and gatherv.
std::unique_ptr<Engine> single_copy_gather(NodeContext& ctx, const GathervCall& call,
                                           int single_copy);
// scatter_persistent_single_copy.cc: scatter and scatterv.
std::unique_ptr<Engine> single_copy_scatter(NodeContext& ctx, const ScattervCall& call,
                                            int single_copy);
// allgatherv_persistent_single_copy.cc: allgather and allgatherv.
std::unique_ptr<Engine> single_copy_allgatherv(NodeContext& ctx, const AllgathervCall& call,
                                               int single_copy);
// persistent_pair_reduce.cc: a node of two ranks, where `single_copy` is
// 1 (a rule table's allreduce_init or reduce_init row, or the call's
// option): measured on one machine only, so off by default.
std::unique_ptr<Engine> single_copy_allreduce(NodeContext& ctx, const AllreduceArgs& args,
                                              int single_copy);
std::unique_ptr<Engine> single_copy_reduce(NodeContext& ctx, const ReduceCall& call,
                                           int single_copy);
// alltoallv_persistent_single_copy.cc: alltoall and alltoallv, not in place,
// blocks of at most 128 KiB.
std::unique_ptr<Engine> single_copy_alltoallv(NodeContext& ctx, const AlltoallvCall& call,
                                              int single_copy);

}  // namespace shancoll
