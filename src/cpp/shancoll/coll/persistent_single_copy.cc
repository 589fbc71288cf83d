// The persistent single-copy engine (persistent_single_copy.h): its lines,
// the exchange at _init, and a run.
#include "shancoll/coll/persistent_single_copy.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/shm/flags.h"
#include "shancoll/shm/peer_memory.h"
#include "shancoll/shm/segment.h"

namespace shancoll {
namespace {

// What a rank tells local rank j at _init: where its block for j lies and
// its bytes, and where j's block goes in its memory.
struct Given {
  std::uint64_t address = 0, bytes = 0, destination = 0;
};

// One block between two local ranks, as one of them sees it: the peer, the
// direction, where it lies on each side, where its chunks begin (then its
// end: pattern::claim_bounds), and the pair's line.
struct Block {
  int peer = 0;
  bool give = false;  // mine to the peer (else the peer's to me)
  const std::byte* from = nullptr;
  std::byte* to = nullptr;
  std::vector<std::size_t> bounds;
  std::uint64_t chunks = 0;
  std::byte* line = nullptr;  // claim word, then done counter
};

class SingleCopyEngine final : public Engine {
 public:
  SingleCopyEngine(NodeContext& ctx, const SingleCopyPlan& plan, const std::vector<Given>& peer)
      : me_(ctx.topo.local_rank),
        size_(ctx.topo.local_size()),
        memory_(*ctx.peer_memory),
        own_from_(plan.own_from),
        own_to_(plan.own_to),
        own_bytes_(plan.own_bytes),
        lines_(ctx.topo.node_comm, ctx.topo.node_comm, ctx.call_timeout) {
    const auto n = static_cast<std::size_t>(size_);
    lines_.reserve(kCacheLine * (n + n * n));
    for (int k = 1; k < size_; ++k) {  // rank i starts with rank i + 1: no hot spot
      const int j = (me_ + k) % size_;
      if (plan.take_bytes[j] > 0)
        blocks_.push_back(block(j, false, reinterpret_cast<const std::byte*>(peer[j].address),
                                plan.take[j], plan.take_bytes[j], pair_line(j, me_),
                                plan.taker_share));
    }
    for (int k = 1; k < size_; ++k) {
      const int j = (me_ + k) % size_;
      if (plan.give_bytes[j] > 0)
        blocks_.push_back(block(j, true, plan.give[j],
                                reinterpret_cast<std::byte*>(peer[j].destination),
                                plan.give_bytes[j], pair_line(me_, j), plan.taker_share));
    }
  }

  void start() override {
    ++run_;
    release_store(started(me_), run_);  // my buffers are this run's
    if (own_bytes_ > 0) local_copy(own_to_, own_from_, own_bytes_);
  }

  bool test() override {
    for (const Block& b : blocks_)
      if (acquire_load(started(b.peer)) >= run_) copy_unclaimed(b);
    for (const Block& b : blocks_)
      if (acquire_load(done(b)) < run_ * b.chunks) return false;
    return true;
  }

  void count(Stats& stats) const override {
    stats.rounds = 1;
    stats.node_count = 1;
    for (const Block& b : blocks_)
      if (!b.give) stats.intra_messages += 1, stats.intra_bytes += b.bounds.back();
  }

 private:
  // The run local rank j's buffers are in, in a line of its own; then the
  // line of each ordered pair (giver, taker).
  std::byte* started(int j) const { return lines_.base() + kCacheLine * j; }
  std::byte* pair_line(int giver, int taker) const {
    return started(size_) + kCacheLine * (giver * size_ + taker);
  }
  static std::byte* done(const Block& b) { return b.line + sizeof(std::uint64_t); }
  static Block block(int peer, bool give, const std::byte* from, std::byte* to, std::size_t bytes,
                     std::byte* line, double taker_share) {
    const auto cut = static_cast<std::size_t>(static_cast<double>(bytes) * taker_share);
    std::vector<std::size_t> bounds =
        pattern::claim_bounds(bytes, cut, kClaimedChunk, kUnsplitBytes);
    const std::uint64_t chunks = claimable(bounds.size() - 1);
    return {peer, give, from, to, std::move(bounds), chunks, line};
  }

  // Copies every chunk of `b` that nobody has claimed in this run (both
  // ranks have started it), claiming each first: the taker from the front,
  // the giver from the back.
  void copy_unclaimed(const Block& b) const {
    claim_chunks(b.line, done(b), run_, b.chunks, b.give, [&](std::uint64_t k) {
      const std::size_t at = b.bounds[k], bytes = b.bounds[k + 1] - at;
      if (b.give)
        memory_.write(b.peer, b.to + at, b.from + at, bytes);
      else
        memory_.read(b.peer, b.to + at, b.from + at, bytes);
    });
  }

  const int me_, size_;
  const PeerMemory& memory_;
  const std::byte* const own_from_;
  std::byte* const own_to_;
  const std::size_t own_bytes_;
  NodeSegment lines_;
  std::vector<Block> blocks_;  // what I take, then what I give
  std::uint64_t run_ = 0;
};

// The first local rank whose block differs from what this rank expects of
// it (this rank's own included: what it gives itself), else -1; `said`: the
// message.
int mismatch(const SingleCopyPlan& plan, const std::vector<Given>& from, int me,
             std::string& said) {
  for (std::size_t j = 0; j < from.size(); ++j) {
    if (from[j].bytes == plan.take_bytes[j]) continue;
    said = std::string(plan.counts_name) + ": local rank " + std::to_string(j) +
           (static_cast<int>(j) == me ? " (this rank)" : "") + " gives " +
           std::to_string(from[j].bytes) + " bytes where this rank expects " +
           std::to_string(plan.take_bytes[j]) + " (counts must match on every rank)";
    return static_cast<int>(j);
  }
  return -1;
}

}  // namespace

std::uint64_t claimable(std::uint64_t chunks) {
  if (chunks > pattern::kMaxClaimedChunks)
    throw ArgumentError("count: a single-copy block of " + std::to_string(chunks) +
                        " chunks, more than a claim word counts (" +
                        std::to_string(pattern::kMaxClaimedChunks) + ")");
  return chunks;
}

bool single_copy_agreed(NodeContext& ctx, int single_copy, bool fits) {
  const Topology& t = ctx.topo;
  int ok = fits && single_copy != 0 && t.node_count == 1 && t.local_size() > 1 && ctx.peer_memory &&
           ctx.peer_memory->available();
  check_mpi(PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_LAND, t.node_comm),
            "MPI_Allreduce (single-copy engine)");
  return ok != 0;
}

std::unique_ptr<Engine> single_copy_engine(NodeContext& ctx, const SingleCopyPlan& plan) {
  const Topology& t = ctx.topo;
  std::vector<Given> mine(plan.give.size()), from(plan.give.size());
  for (std::size_t j = 0; j < mine.size(); ++j)
    mine[j] = {reinterpret_cast<std::uint64_t>(plan.give[j]), plan.give_bytes[j],
               reinterpret_cast<std::uint64_t>(plan.take[j])};
  check_mpi(PMPI_Alltoall(mine.data(), sizeof(Given), MPI_BYTE, from.data(), sizeof(Given),
                          MPI_BYTE, t.node_comm),
            "MPI_Alltoall (single-copy buffers)");
  std::string said;
  int bad = mismatch(plan, from, t.local_rank, said);
  int first = bad < 0 ? t.local_size() : t.local_rank;
  check_mpi(PMPI_Allreduce(MPI_IN_PLACE, &first, 1, MPI_INT, MPI_MIN, t.node_comm),
            "MPI_Allreduce (single-copy counts)");
  if (bad >= 0) throw ArgumentError(said);
  if (first < t.local_size())
    throw ArgumentError(std::string(plan.counts_name) + ": local rank " + std::to_string(first) +
                        " expects other bytes than its peers give (counts must match on every "
                        "rank)");
  return std::make_unique<SingleCopyEngine>(ctx, plan, from);
}

}  // namespace shancoll
