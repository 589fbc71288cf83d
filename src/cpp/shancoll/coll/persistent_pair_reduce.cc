// shan as a persistent allreduce, and release_gather as a persistent
// reduce, on a node of two ranks by single copy: the blocking pair's halves
// (shan_node_single_copy.cc, coll/pair_reduce.cc) under the persistent
// engines' rules (coll/persistent_single_copy.h). MPI fixes the buffers at
// _init, so the two ranks tell each other there where their input and their
// recvbuf (a reduce's non-root: none) lie; a start publishes only the run in
// the rank's line (no copy: the deposit engines copy the whole input into
// the segment first).
//
// The vector is cut into chunks as the blocking pair splits it: local rank
// 0's part in front (halves for an allreduce; a reduce's root 60%,
// kPairRootSharePercent), local rank 1's behind, each in claims of at most
// kPairChunkBytes (pattern::claim_bounds; a vector under 32 KiB whole). A
// chunk is claimed, once both lines say run k, in its test by local rank 0
// from the front and by local rank 1 from the back (claim_chunks: where both
// are there each takes its own part in every run, as the blocking pair does).
// The claimer reads the peer's input chunk (process_vm_readv), combines it
// with its own in rank order (input of local rank 0 first) into its recvbuf
// (a reduce's non-root: scratch), and writes that result into the peer's
// recvbuf where the peer keeps one (process_vm_writev). So a waiting rank
// needs nothing of its peer after the peer's start: it computes all that is
// left itself (MPI's progress rule for a nonblocking collective; the PMPI
// library's routing asks it, capi/pmpi_persistent.cc). Each chunk is
// combined once, by one rank: both recvbufs get the same bits,
// non-commutative ops keep rank order. In place the input is recvbuf: a
// chunk's input is read, by either rank, only by the chunk's claimer, before
// it writes the chunk's result.
//
// The rules of a run: a recvbuf or input is read or written only between its
// owner's start and its completion (every chunk of the run done), and no
// rank is past run k while a chunk of k is unclaimed (persistent_single_copy.h).
//
// Cost per run (m bytes, c chunks): per chunk a claim and a count on the
// pair's line, one or two system calls (m/c read, m/c written) and a
// combine of m/c, the two ranks at once. Measured (Xeon VM, start + wait
// against the blocking call, docs/performance.md "Persistent single copy,
// claimed from both ends"): allreduce 0.96-1.07x at 64-256 KiB with halves,
// 1.09-1.26x with quarters, 1.1-1.65x with quarters claimed by whoever came
// first; reduce at 256 KiB-1 MiB 1.00-1.15x with halves, 1.14-1.28x with
// quarters, 0.95-1.37x with eighths; at 64 KiB halves left the reduce
// 1.07-1.09x (the root, which only reads, ends first).
// Segment: three lines. No MPI call, no allocation per run.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "shancoll/coll/pair_reduce.h"
#include "shancoll/coll/persistent_single_copy.h"
#include "shancoll/error.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/segment.h"

namespace shancoll {
namespace {

// Where a rank's input and recvbuf (0: none) lie, and its bytes (told at _init).
struct Buffers {
  std::uint64_t input = 0, recv = 0, bytes = 0;
};

// What a rank reduces: its input, its recvbuf (null: it keeps no result)
// and the bytes of each; and the percent of them local rank 0 combines.
struct PairReduce {
  const std::byte* input = nullptr;
  std::byte* recv = nullptr;
  std::size_t bytes = 0;
  std::int64_t front_percent = 50;
};

class PairReduceEngine final : public Engine {
 public:
  PairReduceEngine(NodeContext& ctx, const Reducer& reducer, const PairReduce& mine,
                   const Buffers& peer)
      : me_(ctx.topo.local_rank),
        memory_(*ctx.peer_memory),
        reducer_(reducer),
        input_(mine.input),
        recv_(mine.recv),
        peer_input_(reinterpret_cast<const std::byte*>(peer.input)),
        peer_recv_(reinterpret_cast<std::byte*>(peer.recv)),
        bytes_(mine.bytes),
        bounds_(pattern::claim_bounds(bytes_,
                                      bytes_ * static_cast<std::size_t>(mine.front_percent) / 100,
                                      kPairChunkBytes, unsplit(reducer.elem_size()))),
        chunks_(claimable(bounds_.size() - 1)),
        theirs_(recv_ == input_ ? largest_chunk() : 0),
        tmp_(largest_chunk()),
        result_(recv_ ? 0 : largest_chunk()),
        lines_(ctx.topo.node_comm, ctx.topo.node_comm, ctx.call_timeout) {
    lines_.reserve(3 * kCacheLine);
  }

  void start() override {
    ++run_;
    release_store(started(me_), run_);  // my buffers are this run's
  }

  bool test() override {
    if (acquire_load(started(1 - me_)) >= run_) reduce_unclaimed();
    return flag_at(done()).load(std::memory_order_acquire) >= run_ * chunks_;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    stats.intra_messages = 1;  // the peer's input, read once by one of the two
    stats.intra_bytes = static_cast<std::int64_t>(bytes_);
  }

 private:
  std::byte* started(int j) const { return lines_.base() + kCacheLine * j; }
  std::byte* claims() const { return lines_.base() + 2 * kCacheLine; }
  std::byte* done() const { return claims() + sizeof(std::uint64_t); }

  void reduce_unclaimed() {
    claim_chunks(claims(), done(), run_, chunks_, me_ == 1,
                 [&](std::uint64_t k) { reduce_chunk(bounds_[k], bounds_[k + 1] - bounds_[k]); });
  }

  // Chunks begin on whole pages: an element that does not divide a page
  // (no predefined type; a derived one would) keeps the vector whole.
  static std::size_t unsplit(std::size_t elem_size) {
    return pattern::kClaimPage % elem_size == 0 ? kUnsplitBytes : SIZE_MAX;
  }

  std::size_t largest_chunk() const {
    std::size_t most = 0;
    for (std::size_t k = 0; k + 1 < bounds_.size(); ++k)
      most = std::max(most, bounds_[k + 1] - bounds_[k]);
    return most;
  }

  // The chunk of `bytes` at byte `at`: the peer's input read, combined in
  // rank order into my recvbuf (or scratch), and the result written into
  // the peer's.
  void reduce_chunk(std::size_t at, std::size_t bytes) {
    const auto count = static_cast<std::int64_t>(bytes / reducer_.elem_size());
    std::byte* out = recv_ ? recv_ + at : result_.data();
    // Straight into `out` unless it holds my input (in place), as the blocking
    // pair reads: a third buffer of a chunk per rank made a 1 MiB allreduce's
    // start + wait 1.10-1.24x the blocking call's time, 0.93-1.03x without
    // (three alternating jobs, Xeon VM, 2026-11-30).
    std::byte* theirs = out != input_ + at ? out : theirs_.data();
    memory_.read(1 - me_, theirs, peer_input_ + at, bytes);
    const std::byte* first = me_ == 0 ? input_ + at : theirs;
    const std::byte* second = me_ == 0 ? theirs : input_ + at;
    reducer_.combine(out, first, second, count, tmp_.data());
    if (peer_recv_) memory_.write(1 - me_, peer_recv_ + at, out, bytes);
  }

  const int me_;
  const PeerMemory& memory_;
  const Reducer reducer_;
  const std::byte* const input_;
  std::byte* const recv_;
  const std::byte* const peer_input_;
  std::byte* const peer_recv_;
  const std::size_t bytes_;
  const std::vector<std::size_t> bounds_;  // where each chunk begins, then the end
  const std::uint64_t chunks_;
  // The peer's chunk (in place); a non-commutative op's scratch; the result
  // where I keep none.
  std::vector<std::byte> theirs_, tmp_, result_;
  NodeSegment lines_;
  std::uint64_t run_ = 0;
};

// The engine on both ranks, once they have told each other their buffers
// (collective over the node); an ArgumentError on both where the bytes differ.
std::unique_ptr<Engine> pair_reduce_engine(NodeContext& ctx, const Reducer& reducer,
                                           const PairReduce& mine) {
  const Topology& t = ctx.topo;
  const Buffers told{reinterpret_cast<std::uint64_t>(mine.input),
                     reinterpret_cast<std::uint64_t>(mine.recv), mine.bytes};
  Buffers both[2];
  check_mpi(PMPI_Allgather(&told, sizeof(Buffers), MPI_BYTE, both, sizeof(Buffers), MPI_BYTE,
                           t.node_comm),
            "MPI_Allgather (single-copy reduction's buffers)");
  if (both[0].bytes != both[1].bytes)
    throw ArgumentError("count: local ranks 0 and 1 reduce " + std::to_string(both[0].bytes) +
                        " and " + std::to_string(both[1].bytes) +
                        " bytes (counts must match on every rank)");
  return std::make_unique<PairReduceEngine>(ctx, reducer, mine, both[1 - t.local_rank]);
}

}  // namespace

std::unique_ptr<Engine> single_copy_allreduce(NodeContext& ctx, const AllreduceArgs& args,
                                              int single_copy) {
  if (!single_copy_agreed(ctx, single_copy, single_copy > 0 && ctx.topo.local_size() == 2))
    return nullptr;
  const PairReduce mine{args.send ? args.send : args.recv, args.recv,
                        static_cast<std::size_t>(args.bytes())};
  return pair_reduce_engine(ctx, *args.reducer, mine);
}

std::unique_ptr<Engine> single_copy_reduce(NodeContext& ctx, const ReduceCall& call,
                                           int single_copy) {
  const Topology& t = ctx.topo;
  const Reducer reducer(call.op, call.type, call.datatype);
  if (!single_copy_agreed(ctx, single_copy, single_copy > 0 && t.local_size() == 2)) return nullptr;
  const bool root = t.local_rank == t.local_rank_of[call.root];
  auto* recv = static_cast<std::byte*>(call.recv);
  const auto* input = call.send ? static_cast<const std::byte*>(call.send) : recv;
  const PairReduce mine{input, root ? recv : nullptr,
                        static_cast<std::size_t>(call.count) * reducer.elem_size(),
                        pair_front_percent(t.local_rank_of[call.root])};
  return pair_reduce_engine(ctx, reducer, mine);
}

}  // namespace shancoll
