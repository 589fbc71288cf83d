// Reduction schedules (the representation shared by the allreduce patterns),
// and the dissemination allreduce with partial reductions of the GASPI
// shared-notification paper, Sec. III-A.
//
// ---- ReduceSchedule: what ONE rank does to end with x_0 o x_1 o ... o x_{P-1}
// The rank owns numbered slots, each a buffer of the full message size:
//   slot 0    its input when the schedule starts, the complete result when it ends;
//   slot i>0  scratch: an accumulator, a stored partial result, a receive buffer.
// slots[i] says in words which partial result slot i holds, so a send of slot i
// is "send that partial result".
// Execution (generic; the same executor runs every pattern):
//   setup      local steps, once, before round 0;
//   round r    every send posts the value its slot has at the START of round r;
//              every recv lands in its own slot (never a slot this round sends,
//              never two recvs in one slot); when all messages of the round are
//              complete, the round's steps run in list order.
//   steps      kCopy dst = a;  kCombine dst = a o b.
// All ranks have the same number of rounds (idle ranks have empty rounds), so
// round r's messages can carry tag r; messages between the same two ranks in
// one round match in list order (MPI's non-overtaking rule).
// Operand order: in kCombine, a's contributions come before b's in cyclic rank
// order. A commutative op may be evaluated as b o a (IEEE + and * are bitwise
// commutative); tests/cpp/pattern_tests.cc reports which schedules combine in
// plain rank order (needed for non-commutative ops) and which build the same
// expression tree on every rank (bitwise-identical results on all ranks).
// A schedule never combines a contribution twice: correct for non-idempotent ops.
// Cost: every message carries one full vector, so bytes sent = messages x size.
//
// ---- Dissemination with partial reductions (GASPI paper, Sec. III-A)
// Note: the paper's "2-way dissemination" is radix 2, one message per round:
// Hoefler's/End's n-way dissemination with n = 1. Here n is a parameter (radix
// n+1) so that nway_dissemination.h can use this schedule as its fallback.
// Decompose P = sum_{j=0..l} c_j (n+1)^j (digits c_j < n+1, c_l >= 1).
//   rounds 1..l    regular n-way dissemination: in round r rank i sends its
//                  accumulated value A_{r-1} (its input and its (n+1)^{r-1} - 1
//                  left neighbours) to i + t(n+1)^{r-1}, t = 1..n;
//   out of band    in round j+1 (for j < l, c_j > 0), alongside the regular
//                  messages, A_j ("the stored partial of step j") also goes to
//                  i + off_j + t(n+1)^j, t = 0..c_j - 1, off_j = sum_{k>j} c_k (n+1)^k;
//                  for n = 1 this is the paper's "send to i + sum_{k=j+1..l} c_k 2^k";
//   round l+1      only when c_l > 1: A_l goes to i + t(n+1)^l, t = 1..c_l - 1.
// The receiver keeps the out-of-band partials in one slot E and combines them
// at the end, in schedule order: the tiles cover [i-P+1, i] exactly once.
// Cost: rounds l + [c_l > 1] <= ceil(log_{n+1} P) (n = 1: floor(log2 P), the
// paper's "hide the partials in the ongoing dissemination"); messages per rank
// n*l + sum_{j<l} c_j + (c_l - 1) (n = 1: floor(log2 P) + popcount(P) - 1);
// extra memory E plus up to 2n receive buffers.
// "Bit-identical" (paper): the result is reproducible from run to run, because
// every partial is combined in a fixed order on its target, whatever the
// arrival order. It is NOT identical across ranks: each rank combines a rotated
// sequence (see the order report of pattern_tests).
// Preconditions: 1 <= P, 0 <= rank < P, n >= 1. Pure arithmetic, no MPI.
#pragma once

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace shancoll::pattern {

enum class StepKind : unsigned char { kCopy, kCombine };

struct Step {
  StepKind kind;
  int dst, a, b;  // kCopy: dst = a (b = -1); kCombine: dst = a o b
};

struct Transfer {
  int peer;  // rank sent to / received from
  int slot;  // send: the slot whose value is sent; recv: the slot it lands in
};

struct Round {
  std::vector<Transfer> sends, recvs;
  std::vector<Step> steps;  // after all of the round's messages are complete
};

struct ReduceSchedule {
  int size = 1, rank = 0;
  std::vector<std::string> slots{"my input; at the end the result"};
  std::vector<Step> setup;
  std::vector<Round> rounds;

  int add_slot(std::string what) {
    slots.push_back(std::move(what));
    return static_cast<int>(slots.size()) - 1;
  }
  int messages_sent() const {
    int total = 0;
    for (const Round& r : rounds) total += static_cast<int>(r.sends.size());
    return total;
  }
};

inline void add_copy(std::vector<Step>& steps, int dst, int src) {
  steps.push_back({StepKind::kCopy, dst, src, -1});
}
inline void add_combine(std::vector<Step>& steps, int dst, int a, int b) {
  steps.push_back({StepKind::kCombine, dst, a, b});
}

// Rank arithmetic in long long: offsets reach ~2P before the reduction.
inline int mod_rank(long long r, int size) {
  const long long m = r % size;
  return static_cast<int>(m < 0 ? m + size : m);
}

inline void check_schedule_args(int size, int rank, int n, const char* who) {
  if (size < 1) throw std::invalid_argument(std::string(who) + ": size must be >= 1");
  if (rank < 0 || rank >= size)
    throw std::invalid_argument(std::string(who) + ": rank " + std::to_string(rank) +
                                " out of range [0, " + std::to_string(size) + ")");
  if (n < 1) throw std::invalid_argument(std::string(who) + ": n (ports) must be >= 1");
}

// Digits of value in `base`, least significant first (empty for 0).
inline std::vector<int> base_digits(long long value, int base) {
  std::vector<int> digits;
  for (; value > 0; value /= base) digits.push_back(static_cast<int>(value % base));
  return digits;
}

// Receive buffers are allocated on first use and reused across rounds.
struct RecvSlots {
  ReduceSchedule& s;
  std::vector<int> ids;
  int operator()(int i) {
    while (static_cast<int>(ids.size()) <= i)
      ids.push_back(s.add_slot("receive buffer " + std::to_string(ids.size())));
    return ids[i];
  }
};

// Appends E = E o R (E empty: E = R) for the received tiles, leftmost first.
inline void append_tiles(std::vector<Step>& steps, int e, bool& e_full, const std::vector<int>& r) {
  for (int slot : r) {
    if (e_full) {
      add_combine(steps, e, e, slot);
    } else {
      add_copy(steps, e, slot);
      e_full = true;
    }
  }
}

// P = sum_j c[j] (n+1)^j; pw[j] = (n+1)^j; off[j] = sum_{k>j} c[k] (n+1)^k.
struct RadixDigits {
  std::vector<int> c;
  std::vector<long long> pw, off;
  int top() const { return static_cast<int>(c.size()) - 1; }  // l
};

inline RadixDigits radix_digits(int size, int n) {
  RadixDigits d{base_digits(size, n + 1), {}, {}};
  d.pw.assign(d.c.size() + 1, 1);
  for (size_t j = 1; j < d.pw.size(); ++j) d.pw[j] = d.pw[j - 1] * (n + 1);
  d.off.assign(d.c.size(), 0);
  for (int j = d.top() - 1; j >= 0; --j) d.off[j] = d.off[j + 1] + d.c[j + 1] * d.pw[j + 1];
  return d;
}

// Round r (1-based) of the regular dissemination: A_{r-1} to and from t = 1..count
// tiles of `width` ranks; every received tile lies left of A: A = R o A.
inline void add_regular(ReduceSchedule& s, RecvSlots& recv, Round& rd, int count, long long width) {
  for (int t = 1; t <= count; ++t) {
    rd.sends.push_back({mod_rank(s.rank + t * width, s.size), 0});
    rd.recvs.push_back({mod_rank(s.rank - t * width, s.size), recv(t - 1)});
    add_combine(rd.steps, 0, recv(t - 1), 0);
  }
}

inline ReduceSchedule dissemination_schedule(int size, int rank, int n = 1) {
  check_schedule_args(size, rank, n, "dissemination_schedule");
  ReduceSchedule s;
  s.size = size, s.rank = rank;
  const RadixDigits d = radix_digits(size, n);
  const int l = d.top();
  s.slots[0] =
      "A: my accumulated value (before round r: my input and my (n+1)^(r-1) - 1 left "
      "neighbours = the stored partial of step r-1); at the end the result";
  RecvSlots recv{s, {}};
  bool lower = false;  // E is needed only when a lower digit c_j (j < l) is nonzero
  for (int j = 0; j < l; ++j) lower = lower || d.c[j] > 0;
  const int e = lower ? s.add_slot("E: out-of-band partials received so far, in rank order") : -1;
  bool e_full = false;
  for (int r = 1; r <= l; ++r) {
    Round& rd = s.rounds.emplace_back();
    add_regular(s, recv, rd, n, d.pw[r - 1]);
    const int j = r - 1;  // out-of-band partial of step j, in parallel to round r
    std::vector<int> tiles;
    for (int t = d.c[j] - 1; t >= 0; --t) {  // leftmost tile first
      rd.sends.push_back({mod_rank(rank + d.off[j] + t * d.pw[j], size), 0});
      rd.recvs.push_back({mod_rank(rank - d.off[j] - t * d.pw[j], size), recv(n + t)});
      tiles.push_back(recv(n + t));
    }
    append_tiles(rd.steps, e, e_full, tiles);
  }
  if (l >= 0 && d.c[l] > 1)  // the top digit: c_l - 1 more tiles of (n+1)^l ranks
    add_regular(s, recv, s.rounds.emplace_back(), d.c[l] - 1, d.pw[l]);
  if (e_full) add_combine(s.rounds.back().steps, 0, e, 0);  // E is the leftmost part
  return s;
}

}  // namespace shancoll::pattern

namespace shancoll::pattern {

// ---- Dissemination barrier (Hensgen, Finkel and Manber 1988)
// Round k (0-based) of ceil(log2 P): rank i signals i + 2^k and waits for
// i - 2^k (mod P). After round k, rank i has heard, directly or through the
// signals it waited for, from ranks i - 2^(k+1) + 1 .. i, so after the last
// round from all P: no rank leaves before every rank arrived. The partners
// of one rank differ in every round (2^k < P), so each message is told apart
// by its source and round. Cost: ceil(log2 P) rounds, one message (no data)
// sent and one received per rank per round; P = 1: none.
struct BarrierRound {
  int to, from;
};

inline int dissemination_barrier_rounds(int size) {
  int rounds = 0;
  for (long long span = 1; span < size; span *= 2) ++rounds;
  return rounds;
}

inline BarrierRound dissemination_barrier_round(int size, int rank, int round) {
  const long long step = 1LL << round;
  return {mod_rank(rank + step, size), mod_rank(rank - step, size)};
}

}  // namespace shancoll::pattern
