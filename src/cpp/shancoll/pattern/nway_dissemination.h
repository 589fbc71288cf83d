// Adapted n-way dissemination allreduce: End, Yahyapour, Simmendinger, Alrutz,
// "Butterfly-like Algorithms for GASPI Split Phase Allreduce", Sec. III-B, Theorem 1.
//
// Hoefler's n-way dissemination (eq. 1, 2): k = ceil(log_{n+1} P) rounds; in
// round l rank p sends its partial result S_{l-1} to p + i(n+1)^{l-1}, receives
// S_{l-1} of p - j(n+1)^{l-1} (i, j = 1..n) and computes S_l = S_{l-1} o received.
// S_l covers p and its (n+1)^l - 1 left neighbours, so for P != (n+1)^k the last
// round combines some inputs twice (eq. 3, 4): wrong for sum, fine for max.
//
// Data boundaries (eq. 5, 6). p's accumulation is a sequence of tiles: its input,
// then block (l, j), received in round l from p - j(n+1)^{l-1}. Its prefix up to
// block (l, j) covers len(l, j) = (j+1)(n+1)^{l-1} ranks (the paper's distance
// p - g_l[j] plus 1); len(0, .) = 1 is the input alone.
// Adaptation (eq. 7, 8). Let m = (n+1)^{k-1}. In round k, p receives S_{k-1} from
// p - t m, t = 1..senders-1, and from p - senders*m only that sender's prefix of
// len_snd ranks; when the union wraps onto p's own prefix of len_rcv ranks, p
// leaves that prefix out ("takes it out"; len_rcv = 0 is the base border gB):
//     P = senders * m + len_snd - len_rcv.
// Theorem 1, 5-tuple (s, l_snd, l_rcv, j_snd, j_rcv), as reported in NwayPlan:
//   1  l_rcv, l_snd > 0   sender sends its prefix up to g^s_{l_snd}[j_snd], receiver
//                         takes out its prefix up to g_{l_rcv}[j_rcv];
//   2  l_rcv > 0 = l_snd  sender sends its input, receiver takes out as in 1;
//   3  l_rcv = l_snd = 0  P = s m: only senders 1..s-1 send, their full S_{k-1};
//   4  l_rcv = 0, l_snd = 1   P = s m + j_snd: sender sends up to g[j_snd - 1]
//                         (its input if j_snd = 1), nothing is taken out; also
//                         the base-border case P - 1 = g^s_{l_snd}[j_snd] (base_border);
//   5  l_rcv = 0, l_snd > 1   sender sends up to g^s_{l_snd}[j_snd], the receiver
//                         takes out its own input.
// Among several tuples we prefer no take-out, then fewest senders, then the
// largest len_rcv (fewest extra combines). Taking out without an inverse op:
// the receiver keeps a second accumulator `tail` of its blocks beyond the
// boundary, built as they arrive; the result is R_s o ... o R_1 o tail. (With an
// inverse one could instead apply o^-1 to a stored prefix; not used: user ops.)
//
// No 5-tuple for (n, P) (e.g. n = 1: P = 13, 21, 25, ...; listed by pattern_tests):
// the paper (Sec. III-D) suggests larger messages "carrying not only a given
// partial result but maybe some additional initial data items". We realise this
// as dissemination_schedule(P, rank, n): the radix-(n+1) digits of P decide which
// stored partials (for the lowest digit: initial data items) travel as additional
// messages alongside the regular rounds (GASPI Sec. III-A, generalised to n
// ports); rounds <= k, more messages. The paper's experiments instead pick the
// smallest n that is adaptable: nway_smallest_adaptable_n(P).
//
// Cost (adaptable): k rounds; messages per rank n(k-1) + senders; combines the
// same plus the tail's; memory: n receive buffers, a stored prefix when
// 1 < len_snd < m, a copy of the input when len_snd = 1 < m, tail when len_rcv > 0.
// Preconditions: P >= 1, 0 <= rank < P, n >= 1. Pure arithmetic, no MPI.
#pragma once

#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "shancoll/pattern/dissemination.h"

namespace shancoll::pattern {

struct NwayPlan {
  int size = 1, n = 1;
  int k = 0;              // rounds: ceil(log_{n+1} P)
  long long m = 1;        // (n+1)^(k-1): ranks covered by S_{k-1}
  bool adaptable = true;  // false: no 5-tuple; the schedule is the fallback
  int senders = 0;        // round k: ranks p - t m, t = 1..senders, send to p
  long long len_snd = 0;  // ... the last of them sends its prefix of len_snd ranks
  long long len_rcv = 0;  // the receiver leaves out its prefix of len_rcv ranks
  int s = 0, l_snd = 0, l_rcv = 0, j_snd = 0, j_rcv = 0;  // the paper's 5-tuple
  int paper_case = 0;        // Theorem 1 case 1..5; 0: P = (n+1)^k or P = 1, nothing to adapt
  bool base_border = false;  // the sender's boundary meets gB ("complies to case 4")
};

// Prefix lengths at p's data boundaries, ascending: 1, then (j+1)(n+1)^{l-1}.
inline std::vector<long long> nway_prefix_lengths(int n, int k) {
  std::vector<long long> lens{1};
  long long pw = 1;
  for (int l = 1; l < k; ++l, pw *= n + 1)
    for (int j = 1; j <= n; ++j) lens.push_back((j + 1) * pw);
  return lens;
}

// (l, j) of the boundary with prefix length len; (0, 0) for the input alone.
inline std::pair<int, int> nway_boundary(int n, long long len) {
  long long pw = 1;
  for (int l = 1; len > 1 && pw <= len; ++l, pw *= n + 1)
    if (len % pw == 0 && len / pw >= 2 && len / pw <= n + 1) return {l, int(len / pw - 1)};
  return {0, 0};
}

// Translates (senders, len_snd, len_rcv) into the paper's tuple and case.
inline void nway_label(NwayPlan& p) {
  const auto [ls, js] = nway_boundary(p.n, p.len_snd);
  const auto [lr, jr] = nway_boundary(p.n, p.len_rcv);
  p.s = p.senders;
  if (p.len_rcv == 0 && p.len_snd == p.m) {  // every sender sends its full S_{k-1}
    p.paper_case = p.senders == p.n ? 0 : 3;
    p.s = p.senders == p.n ? p.n : p.senders + 1;
  } else if (p.len_rcv == 0 && p.len_snd <= p.n) {
    p.paper_case = 4, p.l_snd = 1, p.j_snd = int(p.len_snd);
  } else if (p.len_rcv == 0) {
    p.paper_case = 4, p.base_border = true, p.l_snd = ls, p.j_snd = js;
  } else {
    p.l_snd = ls, p.j_snd = js, p.l_rcv = lr, p.j_rcv = jr;
    p.paper_case = lr > 0 ? (ls > 0 ? 1 : 2) : 5;
    if (lr == 0 && ls <= 1) throw std::logic_error("nway_label: dominated tuple chosen");
  }
}

inline NwayPlan nway_plan(int size, int n) {
  check_schedule_args(size, 0, n, "nway_plan");
  NwayPlan p;
  p.size = size, p.n = n;
  for (long long cover = 1; cover < size; cover *= n + 1) p.k++;
  if (p.k == 0) return p;
  for (int l = 1; l < p.k; ++l) p.m *= n + 1;
  const std::vector<long long> lens = nway_prefix_lengths(n, p.k);
  auto is_len = [&](long long v) {
    for (long long x : lens)
      if (x == v) return true;
    return false;
  };
  bool found = false;  // preference: no take-out, then fewest senders, then largest len_rcv
  auto key = [](long long rcv, int s) { return std::make_tuple(rcv > 0, s, -rcv); };
  for (int s = 1; s <= n; ++s) {
    for (long long snd : lens) {
      const long long rcv = s * p.m + snd - size;
      const bool ok = rcv == 0 || (rcv > 0 && rcv < p.m && rcv != snd && is_len(rcv));
      if (ok && (!found || key(rcv, s) < key(p.len_rcv, p.senders)))
        p.senders = s, p.len_snd = snd, p.len_rcv = rcv, found = true;
    }
  }
  p.adaptable = found;
  if (found) nway_label(p);
  return p;
}

inline bool nway_adaptable(int size, int n) { return nway_plan(size, n).adaptable; }

// The smallest n with a 5-tuple for P (the choice of the paper's Sec. IV);
// n = P - 1 (a single round) always is one.
inline int nway_smallest_adaptable_n(int size) {
  for (int n = 1; n < size; ++n)
    if (nway_adaptable(size, n)) return n;
  return 1;
}

// Human-readable plan, e.g. for logs and the algorithm registry.
inline std::string nway_plan_text(const NwayPlan& p) {
  const std::string head = "n=" + std::to_string(p.n) + " P=" + std::to_string(p.size) + ": ";
  if (!p.adaptable)
    return head + "no 5-tuple; fallback: dissemination with partial reductions, radix n+1";
  return head + std::to_string(p.k) + " rounds, Theorem 1 case " + std::to_string(p.paper_case) +
         (p.base_border ? " (base border)" : "") + ", (s, l_snd, l_rcv, j_snd, j_rcv) = (" +
         std::to_string(p.s) + ", " + std::to_string(p.l_snd) + ", " + std::to_string(p.l_rcv) +
         ", " + std::to_string(p.j_snd) + ", " + std::to_string(p.j_rcv) + ")";
}

// Rounds 1..k-1, regular; on the way, store the prefix the last round sends
// (len == len_snd) and build the tail the receiver keeps (len > len_rcv).
inline void add_nway_rounds(ReduceSchedule& s, RecvSlots& recv, const NwayPlan& plan, int snd_slot,
                            int tail) {
  bool tail_full = false;
  long long pw = 1;
  for (int l = 1; l < plan.k; ++l, pw *= plan.n + 1) {
    Round& rd = s.rounds.emplace_back();
    for (int j = 1; j <= plan.n; ++j) {
      rd.sends.push_back({mod_rank(s.rank + j * pw, s.size), 0});
      rd.recvs.push_back({mod_rank(s.rank - j * pw, s.size), recv(j - 1)});
    }
    for (int j = 1; j <= plan.n; ++j) {
      add_combine(rd.steps, 0, recv(j - 1), 0);  // block (l, j) lies left of S
      const long long len = (j + 1) * pw;
      if (len == plan.len_snd && snd_slot > 0) add_copy(rd.steps, snd_slot, 0);
      if (tail < 0 || len <= plan.len_rcv) continue;
      if (tail_full)
        add_combine(rd.steps, tail, recv(j - 1), tail);
      else
        add_copy(rd.steps, tail, recv(j - 1));
      tail_full = true;
    }
  }
}

inline ReduceSchedule nway_dissemination_schedule(int size, int rank, int n) {
  check_schedule_args(size, rank, n, "nway_dissemination_schedule");
  const NwayPlan plan = nway_plan(size, n);
  if (!plan.adaptable) return dissemination_schedule(size, rank, n);  // fallback, see top
  ReduceSchedule s;
  s.size = size, s.rank = rank;
  if (plan.k == 0) return s;
  s.slots[0] = "S: my partial result S_l (my input, (n+1)^l - 1 left neighbours); then the result";
  RecvSlots recv{s, {}};
  int snd_slot = 0, tail = -1;  // what the last round sends to p + senders*m; what p keeps
  if (plan.len_snd == 1 && plan.m > 1) {
    snd_slot = s.add_slot("my input x_p, kept: the last round sends it");
    add_copy(s.setup, snd_slot, 0);
  } else if (plan.len_snd > 1 && plan.len_snd < plan.m) {
    snd_slot = s.add_slot("stored partial: my prefix up to boundary (l_snd, j_snd)");
  }
  if (plan.len_rcv > 0) tail = s.add_slot("tail: my blocks beyond boundary (l_rcv, j_rcv)");
  add_nway_rounds(s, recv, plan, snd_slot, tail);
  Round& rd = s.rounds.emplace_back();  // round k, adapted
  for (int t = 1; t <= plan.senders; ++t) {
    rd.sends.push_back({mod_rank(rank + t * plan.m, size), t < plan.senders ? 0 : snd_slot});
    rd.recvs.push_back({mod_rank(rank - t * plan.m, size), recv(t - 1)});
    add_combine(rd.steps, 0, recv(t - 1), t == 1 && tail >= 0 ? tail : 0);  // R_t o ... o base
  }
  return s;
}

}  // namespace shancoll::pattern
