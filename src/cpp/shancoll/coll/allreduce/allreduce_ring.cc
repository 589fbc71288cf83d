// ring: reduce-scatter + allgather on a ring, pipelined in chunks, for large
// messages (Patarasuk and Yuan's bandwidth-optimal allreduce).
//
// The message is split into P blocks of ~count/P elements. Rank r sends to
// r+1 and receives from r-1:
//   reduce-scatter  steps s = 0 .. P-2: send block r-s, receive block r-s-1
//                   into scratch and combine it: block = received o block
//                   (the received value holds the ranks left of r, cyclically);
//                   afterwards rank r holds block r+1 fully reduced;
//   allgather       steps t = 0 .. P-2: send block r+1-t, receive block r-t
//                   straight into the receive buffer.
// Pipelining: the block sent in step s+1 is the block received in step s,
// so each chunk (kRingChunkBytes) is forwarded as soon as it has arrived and been
// combined, while the rest of the block is still on its way.
//
// Cost model (alpha, beta, gamma as in allreduce_dissemination.cc, m bytes):
//   rounds      2 (P - 1);
//   bytes sent  2 (P - 1) m / P per rank (bandwidth optimal), in
//               2 (P - 1) ceil(m / (P chunk)) messages;
//   time        2 (P - 1) alpha + 2 (P - 1)/P beta m + (P - 1)/P gamma m.
// Each block is reduced once, along one chain, then copied: bitwise-identical
// results on all ranks. The order is cyclic from the block's owner, so
// non-commutative ops are refused (registry).
// Preconditions: any P >= 1, any count (blocks may be empty: no message).
#include <algorithm>
#include <vector>

#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kRingTag = 0x5a20;  // comm.mpi() is a private dup; allreduce schedules use 0x6000+
// 1 MiB: on 2 real nodes under MPICH's OFI/tcp 256 KiB chunks made the ring
// 0.72-0.89x MPICH's own allreduce at 1-16 MiB, 1 MiB chunks 0.87-0.98x (its
// messages cost a rendezvous each); under UCX and on one host 1.03-1.17x
// either way (Xeon VM, docs/performance.md "Two real nodes, idle").
constexpr std::int64_t kRingChunkBytes = 1 << 20;

struct RingPlan {
  int size, rank;
  std::int64_t count, esize, chunk;  // chunk: elements per message
  std::int64_t lo(int block) const { return count * block / size; }
  std::int64_t len(int block) const { return lo(block + 1) - lo(block); }
  std::int64_t chunks(int block) const { return (len(block) + chunk - 1) / chunk; }
  int block(long long b) const { return pattern::mod_rank(b, size); }
  // Blocks sent and received in step s of 2 (P - 1).
  int send_block(int s) const {
    return s < size - 1 ? block(rank - s) : block(rank + 1 - (s - size + 1));
  }
  int recv_block(int s) const { return block(send_block(s) - 1LL); }
};

std::int64_t esize(const AllreduceArgs& args) {
  return static_cast<std::int64_t>(args.reducer->elem_size());
}

class Ring {
 public:
  Ring(Comm& comm, const AllreduceArgs& args, const Options& options, const Topology& topo,
       Stats& stats)
      : comm_(comm),
        args_(args),
        timeout_(options.wait_timeout()),
        topo_(topo),
        stats_(stats),
        plan_{comm.size(), comm.rank(), args.count, esize(args),
              std::max<std::int64_t>(1, kRingChunkBytes / esize(args))},
        tmp_(comm.scratch(static_cast<std::size_t>((args.count / plan_.size + 1) * plan_.esize))) {}

  // A failed step leaves chunks posted: none may outlive the call.
  ~Ring() {
    for (auto& sends : sends_) cancel_pending(sends.data(), sends.size());
    cancel_pending(recvs_.data(), recvs_.size());
  }
  Ring(const Ring&) = delete;
  Ring& operator=(const Ring&) = delete;

  void run() {
    const int steps = 2 * (plan_.size - 1);
    for (int c = 0; c < plan_.chunks(plan_.send_block(0)); ++c) send_chunk(0, c);
    for (int s = 0; s < steps; ++s) run_step(s, s + 1 < steps);
    stats_.rounds = steps;
  }

 private:
  std::byte* at(int block, std::int64_t chunk) const {
    return args_.recv + (plan_.lo(block) + chunk * plan_.chunk) * plan_.esize;
  }
  std::int64_t chunk_len(int block, std::int64_t chunk) const {
    return std::min(plan_.chunk, plan_.len(block) - chunk * plan_.chunk);
  }
  void send_chunk(int s, std::int64_t c) {
    const int b = plan_.send_block(s);
    const int next = pattern::mod_rank(plan_.rank + 1LL, plan_.size);
    const std::int64_t bytes = chunk_len(b, c) * plan_.esize;
    MPI_Request& req = sends_[s % 2].emplace_back();
    isend_bytes(at(b, c), bytes, next, kRingTag, comm_.mpi(), &req);
    count_message(topo_, next, bytes, stats_);
  }
  // Receives step s's block chunk by chunk, combines each (reduce-scatter)
  // and forwards it at once as part of step s+1.
  void run_step(int s, bool forward) {
    const bool reduce = s < plan_.size - 1;
    const int b = plan_.recv_block(s);
    const int prev = pattern::mod_rank(plan_.rank - 1LL, plan_.size);
    const std::int64_t n = plan_.chunks(b);
    recvs_.assign(static_cast<std::size_t>(n), MPI_REQUEST_NULL);
    for (std::int64_t c = 0; c < n; ++c) {
      std::byte* dst = reduce ? tmp_ + c * plan_.chunk * plan_.esize : at(b, c);
      irecv_bytes(dst, chunk_len(b, c) * plan_.esize, prev, kRingTag, comm_.mpi(), &recvs_[c]);
    }
    for (std::int64_t c = 0; c < n; ++c) {
      wait_request(recvs_[c], "allreduce 'ring': a chunk from the left neighbour", timeout_);
      if (reduce)
        args_.reducer->combine(at(b, c), tmp_ + c * plan_.chunk * plan_.esize, at(b, c),
                               chunk_len(b, c), nullptr);
      if (forward) send_chunk(s + 1, c);
    }
    // This step's sends: their blocks are overwritten by later receives.
    for (MPI_Request& req : sends_[s % 2])
      wait_request(req, "allreduce 'ring': a chunk to the right neighbour", timeout_);
    sends_[s % 2].clear();
  }

  Comm& comm_;
  const AllreduceArgs& args_;
  double timeout_;
  const Topology& topo_;
  Stats& stats_;
  RingPlan plan_;
  std::byte* tmp_;
  std::vector<MPI_Request> sends_[2], recvs_;
};

}  // namespace

void allreduce_ring(Comm& comm, const AllreduceArgs& args, const Options& options, Stats& stats) {
  const Topology& topo = comm.nodes(options.ranks_per_node).topo;
  copy_input(args);
  stats.node_count = topo.node_count;
  if (args.count == 0 || comm.size() == 1) return;
  Ring(comm, args, options, topo, stats).run();
}

}  // namespace shancoll
