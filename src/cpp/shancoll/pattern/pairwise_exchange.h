// Pairwise exchange (butterfly) allreduce: End et al., "Butterfly-like
// Algorithms for GASPI Split Phase Allreduce", Sec. III-A (Brooks' butterfly,
// Fig. 1 right; also Gupta et al. 2002).
//
// P = 2^K + q with 0 <= q < 2^K. Ranks 0 .. 2^K - 1 are the core; the q
// "leftover" ranks 2^K + i (i < q) pair with core rank i:
//   fold in    (only if q > 0) leftover 2^K + i sends its input to i, which
//              combines it: A_i = x_i o x_{2^K + i};
//   butterfly  K rounds; in round b core rank p exchanges its accumulated
//              value A with p xor 2^b and both compute (lower partner's A) o
//              (higher partner's A), so the two hold the same expression;
//   fold out   (only if q > 0) core rank i sends the result to 2^K + i.
// Leftover ranks idle during the butterfly (the paper notes that the
// application should give them other work in a split-phase allreduce).
// The paper's other adaptation (virtual ranks for P' = 2^K) combines inputs
// twice and is not used, as in the paper.
//
// Every rank ends with the same expression tree: results are bitwise identical
// on all ranks. Plain rank order (non-commutative ops) only for q = 0: the fold
// combines x_i with x_{2^K + i}.
// Cost: rounds K = log2 P for q = 0, else floor(log2 P) + 2 (Sec. III-D);
// messages per rank: K (core without leftover), K + 1 (core with leftover),
// 1 (leftover); combines: K, K + 1, 0. Every exchange is symmetric (one link
// used in both directions at once, the congestion the paper discusses).
// Preconditions: P >= 1, 0 <= rank < P. Pure arithmetic, no MPI.
#pragma once

#include "shancoll/pattern/dissemination.h"

namespace shancoll::pattern {

inline int pairwise_core(int size) {  // 2^K, the largest power of two <= size
  int core = 1;
  while (2LL * core <= size) core *= 2;
  return core;
}

inline int pairwise_exchange_rounds(int size) {
  int k = 0;
  while ((1 << k) < pairwise_core(size)) ++k;
  return size == pairwise_core(size) ? k : k + 2;
}

inline ReduceSchedule pairwise_exchange_schedule(int size, int rank) {
  check_schedule_args(size, rank, 1, "pairwise_exchange_schedule");
  ReduceSchedule s;
  s.size = size, s.rank = rank;
  const int core = pairwise_core(size), q = size - core;
  const bool leftover = rank >= core;
  const int partner = leftover ? rank - core : (rank < q ? rank + core : -1);
  s.slots[0] = "A: my accumulated value (the ranks of my butterfly group); at the end the result";
  const int r = s.add_slot("receive buffer");
  if (q > 0) {  // fold in
    Round& rd = s.rounds.emplace_back();
    if (leftover) rd.sends.push_back({partner, 0});
    if (partner >= 0 && !leftover) {
      rd.recvs.push_back({partner, r});
      add_combine(rd.steps, 0, 0, r);  // x_i o x_{2^K + i}
    }
  }
  for (int bit = 1; bit < core; bit *= 2) {
    Round& rd = s.rounds.emplace_back();
    if (leftover) continue;
    const int peer = rank ^ bit;
    rd.sends.push_back({peer, 0});
    rd.recvs.push_back({peer, r});
    if (rank < peer)
      add_combine(rd.steps, 0, 0, r);  // lower group first
    else
      add_combine(rd.steps, 0, r, 0);
  }
  if (q > 0) {  // fold out: the result lands directly in the leftover's slot 0
    Round& rd = s.rounds.emplace_back();
    if (leftover)
      rd.recvs.push_back({partner, 0});
    else if (partner >= 0)
      rd.sends.push_back({partner, 0});
  }
  return s;
}

}  // namespace shancoll::pattern
