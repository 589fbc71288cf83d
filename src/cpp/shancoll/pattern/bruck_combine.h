// Bruck's global combine with n ports (Bruck and Ho, "Efficient global combine
// operations in multi-port message-passing systems", 1993), as presented in
// End et al., "Butterfly-like Algorithms for GASPI Split Phase Allreduce",
// Sec. III-C (eq. 15-24). Works for every (n, P); not to be confused with
// pattern/bruck.h, Bruck's allgather (concatenation).
//
// Write P - 1 in base n+1: P - 1 = (alpha_{k-1} ... alpha_0)_{n+1}, so that
// k = ceil(log_{n+1} P). Rank p keeps two partial results:
//   S[0]  the ranks p+1 .. p+c  (without its own input; empty while c = 0),
//   S[1]  = x_p o S[0]: the ranks p .. p+c,
// where the counter c counts the ranks combined besides p. Round i (i = 1..k)
// uses alpha = alpha_{k-i}:
//   S[1] goes to p - t(c+1), t = 1..alpha, and comes from p + t(c+1);
//   S[0] goes to p - alpha(c+1) - u c, u = 1..n-alpha, and comes from
//        p + alpha(c+1) + u c  (skipped while c = 0: S[0] is empty);
//   the received tiles lie right of S[0] in rank order, nearest first:
//   S[0] = S[0] o R_1 o ... o R_n, S[1] = x_p o S[0], c = (n+1)c + alpha.
// By Horner's rule c ends at P - 1: S[1] covers all P ranks, each once.
// Example (paper, P = 8, n = 2, rank 0): 7 = (21)_3; round 1 sends x_0 to 7, 6;
// round 2 sends S[1] to 5 and S[0] to 3, receives S[1] of 3 and S[0] of 5.
//
// Cost: k = ceil(log_{n+1} P) rounds; messages per rank alpha_{k-1} + n(k-1)
// (every later round sends exactly n); combines per round n + 1; memory: the
// input copy, S[0] and n receive buffers. All ranks busy in every round.
// Preconditions: P >= 1, 0 <= rank < P, n >= 1. Pure arithmetic, no MPI.
#pragma once

#include <vector>

#include "shancoll/pattern/dissemination.h"

namespace shancoll::pattern {

inline int bruck_combine_rounds(int size, int n) {
  return static_cast<int>(base_digits(size - 1LL, n + 1).size());
}

inline ReduceSchedule bruck_combine_schedule(int size, int rank, int n) {
  check_schedule_args(size, rank, n, "bruck_combine_schedule");
  ReduceSchedule s;
  s.size = size, s.rank = rank;
  const std::vector<int> alpha = base_digits(size - 1LL, n + 1);  // alpha[0] = alpha_0
  const int k = static_cast<int>(alpha.size());
  if (k == 0) return s;
  s.slots[0] = "S[1]: my input combined with S[0] (ranks p .. p+c); at the end the result";
  const int x = s.add_slot("my input x_p, kept: S[1] = x_p o S[0] after every round");
  const int s0 = s.add_slot("S[0]: the partial result of ranks p+1 .. p+c, without my input");
  add_copy(s.setup, x, 0);
  RecvSlots recv{s, {}};
  long long c = 0;
  for (int i = k - 1; i >= 0; --i) {
    const int a = alpha[i];
    Round& rd = s.rounds.emplace_back();
    std::vector<long long> from;  // offsets of the senders, nearest first
    for (int t = 1; t <= a; ++t) {
      rd.sends.push_back({mod_rank(rank - t * (c + 1), size), 0});
      from.push_back(t * (c + 1));
    }
    for (int u = 1; c > 0 && u <= n - a; ++u) {
      rd.sends.push_back({mod_rank(rank - a * (c + 1) - u * c, size), s0});
      from.push_back(a * (c + 1) + u * c);
    }
    for (size_t t = 0; t < from.size(); ++t) {
      const int r = recv(static_cast<int>(t));
      rd.recvs.push_back({mod_rank(rank + from[t], size), r});
      if (c == 0 && t == 0)
        add_copy(rd.steps, s0, r);
      else
        add_combine(rd.steps, s0, s0, r);  // the new tile lies right of S[0]
    }
    add_combine(rd.steps, 0, x, s0);
    c = (n + 1) * c + a;
  }
  return s;
}

}  // namespace shancoll::pattern
