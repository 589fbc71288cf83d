// Block schedules: what ONE rank does in a data-movement collective run as
// a request (coll/request/request_schedule.h runs them), as rounds of
// point-to-point messages of byte ranges.
//
// ---- Representation
// A Region is a byte range of one of the rank's buffers: the caller's send
// buffer, its receive buffer, or the request's own scratch (scratch_bytes).
//   setup     local copies, once per run, before round 0 (the rank's own
//             block, an in-place send buffer saved to scratch);
//   round r   its receives and sends are posted together; the next round
//             starts when all of them are complete. A send's region holds its
//             final value by then (setup, or a receive of an earlier round).
//             Then the round's steps run in order: copies, and for the
//             reductions combines dst = a o b over dst.bytes (a holds the
//             lower ranks' part, so non-commutative ops keep rank order;
//             the executor's op turns bytes into elements).
// Ranks need not have the same number of rounds: every message of a run
// carries the run's one tag, and MPI's non-overtaking rule matches the
// messages between two ranks in the order both post them (round order, then
// list order within a round), so no round number is needed on the wire.
//
// ---- The schedules (P ranks, p = rank)
// dissemination barrier  ceil(log2 P) rounds: in round k send an empty
//                        message to p + 2^k, receive one from p - 2^k.
// binomial bcast         the binomial tree of pattern/binomial.h on members
//                        v = p - root: receive the buffer from the parent,
//                        then send it to every child; depth ceil(log2 P),
//                        P - 1 messages of the whole buffer.
// ring allgatherv        pattern/ring.h: P - 1 rounds, one block to the right
//                        neighbour and one from the left in each; every rank
//                        sends the total minus the block it receives last.
// pairwise alltoallv     pattern/alltoall.h: P - 1 rounds, in round k the
//                        block for p + k out, the block of p - k in.
// More schedules: pattern/block_rooted.h (binomial gather and scatter),
// pattern/block_reduce.h (binomial reduce, pairwise reduce-scatter,
// recursive-doubling scan and exscan).
// Preconditions: 1 <= P, 0 <= rank, root < P; counts and displacements
// (bytes) of P ranks. Pure arithmetic, no MPI.
#pragma once

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "shancoll/pattern/alltoall.h"
#include "shancoll/pattern/binomial.h"
#include "shancoll/pattern/ring.h"

namespace shancoll::pattern {

enum class Buf : unsigned char { send, recv, scratch };

struct Region {
  Buf buf = Buf::recv;
  std::int64_t offset = 0, bytes = 0;
};

struct Move {  // a send (to peer) or a receive (from peer)
  int peer;
  Region region;
};

struct Copy {
  Region dst, src;
};

// After a round's messages: dst = a o b (combine), or dst = a (copy; b unused).
struct BlockStep {
  bool combine;
  Region dst, a, b;
};

struct BlockRound {
  BlockRound() = default;
  BlockRound(std::vector<Move> sends_, std::vector<Move> recvs_, std::vector<BlockStep> steps_ = {})
      : sends(std::move(sends_)), recvs(std::move(recvs_)), steps(std::move(steps_)) {}

  std::vector<Move> sends, recvs;
  std::vector<BlockStep> steps;
};

struct BlockSchedule {
  std::vector<Copy> setup;
  std::vector<BlockRound> rounds;
  std::int64_t scratch_bytes = 0;
};

inline BlockSchedule dissemination_barrier_schedule(int size, int rank) {
  BlockSchedule s;
  for (long long d = 1; d < size; d <<= 1) {
    const int dist = static_cast<int>(d);
    s.rounds.push_back({{{mod_rank(rank + dist, size), {}}}, {{mod_rank(rank - dist, size), {}}}});
  }
  return s;
}

inline BlockSchedule binomial_bcast_schedule(int size, int rank, int root, std::int64_t bytes) {
  BlockSchedule s;
  const Region all{Buf::recv, 0, bytes};
  const int v = mod_rank(rank - root, size);
  if (v != 0) s.rounds.push_back({{}, {{mod_rank(binomial_tree_parent(v) + root, size), all}}});
  BlockRound down;
  for_each_binomial_child(
      size, v, [&](int child) { down.sends.push_back({mod_rank(child + root, size), all}); });
  if (!down.sends.empty()) s.rounds.push_back(std::move(down));
  return s;
}

// counts/displs: the receive layout; in_place: the rank's block is already there.
inline BlockSchedule ring_allgatherv_schedule(int size, int rank, const std::int64_t* counts,
                                              const std::int64_t* displs, bool in_place) {
  BlockSchedule s;
  const auto block = [&](int b) { return Region{Buf::recv, displs[b], counts[b]}; };
  if (!in_place) s.setup.push_back({block(rank), {Buf::send, 0, counts[rank]}});
  for (int step = 0; step < ring_rounds(size); ++step)
    s.rounds.push_back({{{ring_send_to(rank, size), block(ring_send_block(rank, size, step))}},
                        {{ring_recv_from(rank, size), block(ring_recv_block(rank, size, step))}}});
  return s;
}

// send_*: the send layout (in_place: none; the blocks to send are in the
// receive buffer, laid out as received, and are saved to scratch first).
inline BlockSchedule pairwise_alltoallv_schedule(int size, int rank,
                                                 const std::int64_t* send_counts,
                                                 const std::int64_t* send_displs,
                                                 const std::int64_t* recv_counts,
                                                 const std::int64_t* recv_displs, bool in_place) {
  BlockSchedule s;
  const auto in = [&](int q) { return Region{Buf::recv, recv_displs[q], recv_counts[q]}; };
  const auto out = [&](int q) {
    return in_place ? Region{Buf::scratch, recv_displs[q], recv_counts[q]}
                    : Region{Buf::send, send_displs[q], send_counts[q]};
  };
  if (in_place) {
    for (int q = 0; q < size; ++q)
      s.scratch_bytes = std::max(s.scratch_bytes, recv_displs[q] + recv_counts[q]);
    s.setup.push_back({{Buf::scratch, 0, s.scratch_bytes}, {Buf::recv, 0, s.scratch_bytes}});
  } else {
    s.setup.push_back({in(rank), out(rank)});
  }
  for (int k = 1; k <= pairwise_rounds(size); ++k) {
    const int to = pairwise_send_to(rank, size, k), from = pairwise_recv_from(rank, size, k);
    s.rounds.push_back({{{to, out(to)}}, {{from, in(from)}}});
  }
  return s;
}

}  // namespace shancoll::pattern
