// Block schedules (the representation: pattern/block_schedule.h) of the
// reductions: every combine is a step dst = a o b whose a holds the lower
// ranks, so non-commutative ops keep rank order. m: the vector's bytes.
//
// binomial reduce          the binomial tree of pattern/binomial.h, rooted
//     at the root for a commutative op, else at rank 0 (member v's children
//     c hold the next ranks [c, c + span(c)) in order, so acc = acc o c
//     extends its range) and one message from rank 0 to the root. A rank
//     receives all its children in one round, combines them in order, then
//     sends its accumulator to its parent. ceil(log2 P) levels (+1 for a
//     non-commutative op with root != 0), P - 1 messages of m bytes
//     (+1), one combine per child; scratch (children + 1) m.
// pairwise reduce-scatter  pattern/reduce_scatter.h: in round k = 1 .. P-1
//     rank r sends its contribution to block r + k and receives r - k's to
//     block r into a slot per source; after the last round the slots fold
//     from the right, x_0 o (x_1 o (... o x_{P-1})), and the result is copied
//     to the start of recv. P - 1 rounds, one message of the receiver's
//     block each way; P - 1 combines of my block m_r; scratch P m_r.
// recursive-doubling scan  pattern/scan.h: in round k rank r swaps its
//     group's total with r ^ 2^k; a lower partner's total goes on the left
//     of its prefix (exscan: the first is copied, rank 0's recv is never
//     written) and of its total, a higher one's on the right of its total
//     (none in the last round). ceil(log2 P) rounds of at most one m-byte
//     message each way; at most 2 ceil(log2 P) combines; scratch 2m.
// m = 0 (every rank's count is the same): no messages at all.
// Preconditions: 1 <= P, 0 <= rank, root < P. Pure arithmetic, no MPI.
#pragma once

#include <cstdint>
#include <vector>

#include "shancoll/pattern/binomial.h"
#include "shancoll/pattern/block_schedule.h"
#include "shancoll/pattern/reduce_scatter.h"
#include "shancoll/pattern/scan.h"

namespace shancoll::pattern {

inline BlockStep combine(Region dst, Region a, Region b) { return {true, dst, a, b}; }
inline BlockStep copy(Region dst, Region src) { return {false, dst, src, {}}; }

// in_place: the root's input is in recv (the result's place).
inline BlockSchedule binomial_reduce_schedule(int size, int rank, int root, std::int64_t m,
                                              bool commutative, bool in_place) {
  BlockSchedule s;
  if (m == 0) return s;
  const int tree_root = commutative ? root : 0;
  const int v = mod_rank(rank - tree_root, size);
  std::vector<int> children;
  for_each_binomial_child(size, v,
                          [&](int c) { children.push_back(mod_rank(c + tree_root, size)); });
  Region acc{Buf::send, 0, m};  // a leaf sends its input as it is
  if (rank == root) {
    acc = {Buf::recv, 0, m};
    if (!in_place) s.setup.push_back({acc, {Buf::send, 0, m}});
  } else if (!children.empty()) {
    acc = {Buf::scratch, 0, m};
    s.setup.push_back({acc, {Buf::send, 0, m}});
    s.scratch_bytes = m;
  }
  BlockRound in;
  for (int child : children) {
    const Region part{Buf::scratch, s.scratch_bytes, m};
    s.scratch_bytes += m;
    in.recvs.push_back({child, part});
    in.steps.push_back(combine(acc, acc, part));
  }
  if (!in.recvs.empty()) s.rounds.push_back(std::move(in));
  if (v != 0)
    s.rounds.push_back({{{mod_rank(binomial_tree_parent(v) + tree_root, size), acc}}, {}});
  else if (rank != root)  // rank 0 of a non-commutative reduce: the result to the root
    s.rounds.push_back({{{root, acc}}, {}});
  if (rank == root && rank != tree_root) s.rounds.push_back({{}, {{tree_root, acc}}});
  return s;
}

// counts, displs: every rank's block of the input vector (bytes); in_place:
// the input is in recv, the result goes to its start.
inline BlockSchedule pairwise_reduce_scatter_schedule(int size, int rank,
                                                      const std::int64_t* counts,
                                                      const std::int64_t* displs, bool in_place) {
  BlockSchedule s;
  const Buf input = in_place ? Buf::recv : Buf::send;
  const auto block = [&](int q) { return Region{input, displs[q], counts[q]}; };
  const std::int64_t mine = counts[rank];
  const Region result{Buf::recv, 0, mine};
  if (size == 1) {
    if (!in_place) s.setup.push_back({result, block(rank)});
    return s;
  }
  const auto slot = [&](int q) { return Region{Buf::scratch, q * mine, mine}; };
  s.scratch_bytes = size * mine;
  s.setup.push_back({slot(rank), block(rank)});
  for (int k = 1; k < size; ++k) {
    const PairwiseRound pr = pairwise_round(size, rank, k);
    s.rounds.push_back({{{pr.to, block(pr.to)}}, {{pr.from, slot(pr.from)}}});
  }
  std::vector<BlockStep>& fold = s.rounds.back().steps;
  for (int q = size - 2; q >= 0; --q)
    fold.push_back(combine(slot(size - 1), slot(q), slot(size - 1)));
  fold.push_back(copy(result, slot(size - 1)));
  return s;
}

// exclusive: exscan; in_place: the input is in recv.
inline BlockSchedule recursive_doubling_scan_schedule(int size, int rank, std::int64_t m,
                                                      bool exclusive, bool in_place) {
  BlockSchedule s;
  if (m == 0) return s;
  const Region prefix{Buf::recv, 0, m}, total{Buf::scratch, 0, m}, other{Buf::scratch, m, m};
  s.scratch_bytes = 2 * m;
  const Region input{in_place ? Buf::recv : Buf::send, 0, m};
  s.setup.push_back({total, input});
  if (!exclusive && !in_place) s.setup.push_back({prefix, input});
  bool has_prefix = !exclusive;
  const int rounds = scan_rounds(size);
  for (int k = 0; k < rounds; ++k) {
    const ScanRound sr = scan_round(size, rank, k);
    if (sr.peer < 0) continue;
    BlockRound rd{{{sr.peer, total}}, {{sr.peer, other}}, {}};
    if (sr.lower)
      rd.steps.push_back(has_prefix ? combine(prefix, other, prefix) : copy(prefix, other));
    has_prefix = has_prefix || sr.lower;
    if (k + 1 < rounds)
      rd.steps.push_back(sr.lower ? combine(total, other, total) : combine(total, total, other));
    s.rounds.push_back(std::move(rd));
  }
  return s;
}

}  // namespace shancoll::pattern
