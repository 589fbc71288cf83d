// Checks of pattern/block_schedule.h for P = 1..40: every rank's schedule
// is run together with the others' (sends complete at once, a round ends
// when its receives have arrived), each message matched to the receive in
// the order both ranks post them (MPI's non-overtaking rule, which the
// schedules' one tag per run relies on); the sizes must agree, every
// message must be received, and the receive buffers must end as the
// collective defines them. The reductions' values are symbolic: a byte
// holds its position and the set of ranks combined into it (join), and a
// combine of ranges that are not adjacent in rank order (a non-commutative
// op's order broken) or that overlap poisons it.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shancoll/pattern/block_reduce.h"
#include "shancoll/pattern/block_rooted.h"
#include "shancoll/pattern/block_schedule.h"

namespace block_schedule_checks {

using shancoll::pattern::BlockSchedule;
using shancoll::pattern::Buf;
using shancoll::pattern::Region;
using Bytes = std::vector<long>;  // a label per byte: where its value came from

struct RankState {
  BlockSchedule s;
  Bytes buf[3];  // send, recv, scratch (Buf's order)
  std::size_t round = 0;
  bool posted = false;
};

inline Bytes& of(RankState& r, const Region& p) { return r.buf[static_cast<int>(p.buf)]; }

// A reduction's symbolic value: position << 42 | the mask of ranks in it.
constexpr long kBad = -2;
inline long value(long position, long mask) { return position << 42 | mask; }
inline long mask_of(long v) { return v & ((1L << 42) - 1); }
inline bool contiguous(long mask) {
  return ((mask >> __builtin_ctzl(mask)) & ((mask >> __builtin_ctzl(mask)) + 1)) == 0;
}

// a o b; `ordered`: a's ranks must end just below b's (non-commutative ops).
inline long join(long a, long b, bool ordered) {
  if (a < 0 || b < 0 || (a >> 42) != (b >> 42) || (mask_of(a) & mask_of(b))) return kBad;
  const long ma = mask_of(a), mb = mask_of(b);
  if (ordered &&
      !(contiguous(ma) && contiguous(mb) && (63 - __builtin_clzl(ma)) + 1 == __builtin_ctzl(mb)))
    return kBad;
  return a | mb;
}

inline void run_steps(RankState& r, const std::vector<shancoll::pattern::BlockStep>& steps,
                      bool ordered) {
  for (const auto& st : steps)
    for (long i = 0; i < st.dst.bytes; ++i) {
      const long a = of(r, st.a)[st.a.offset + i];
      of(r, st.dst)[st.dst.offset + i] =
          st.combine ? join(a, of(r, st.b)[st.b.offset + i], ordered) : a;
    }
}

// Runs the ranks' schedules; false (and `error`) if they do not complete alike.
inline bool run(std::vector<RankState>& ranks, std::string& error, bool ordered = true) {
  std::map<std::pair<int, int>, std::deque<Bytes>> wire;
  for (RankState& r : ranks) {
    r.buf[2].assign(static_cast<std::size_t>(r.s.scratch_bytes), -1);
    for (const auto& c : r.s.setup)
      for (long i = 0; i < c.dst.bytes; ++i)
        of(r, c.dst)[c.dst.offset + i] = of(r, c.src)[c.src.offset + i];
  }
  for (bool moved = true; moved;) {
    moved = false;
    for (int me = 0; me < static_cast<int>(ranks.size()); ++me) {
      RankState& r = ranks[me];
      if (r.round == r.s.rounds.size()) continue;
      const auto& rd = r.s.rounds[r.round];
      if (!r.posted) {
        for (const auto& m : rd.sends) {
          const Bytes& b = of(r, m.region);
          wire[{me, m.peer}].emplace_back(b.begin() + m.region.offset,
                                          b.begin() + m.region.offset + m.region.bytes);
        }
        r.posted = moved = true;
      }
      std::map<int, std::size_t> want;
      for (const auto& m : rd.recvs) ++want[m.peer];
      bool arrived = true;
      for (const auto& [peer, n] : want) arrived = arrived && wire[{peer, me}].size() >= n;
      if (!arrived) continue;
      for (const auto& m : rd.recvs) {
        Bytes msg = std::move(wire[{m.peer, me}].front());
        wire[{m.peer, me}].pop_front();
        if (static_cast<long>(msg.size()) != m.region.bytes) {
          error = "a message's size differs from its receive";
          return false;
        }
        std::copy(msg.begin(), msg.end(), of(r, m.region).begin() + m.region.offset);
      }
      run_steps(r, rd.steps, ordered);
      ++r.round;
      r.posted = false;
      moved = true;
    }
  }
  for (const RankState& r : ranks)
    if (r.round != r.s.rounds.size()) error = "a rank never completed (deadlock)";
  for (const auto& [pair, q] : wire)
    if (!q.empty()) error = "a message was never received";
  return error.empty();
}

inline long label(int rank, long byte) { return rank * 1000000L + byte; }

inline long ranks_below(int r) { return (1L << r) - 1; }  // the mask of ranks 0..r-1

// Binomial gather and scatter of m-byte blocks; at the root, regular
// displacements, then reversed ones with gaps (every block through scratch).
inline void rooted_checks(int P, void (*check)(bool, const std::string&)) {
  const long m = 2;
  std::vector<long> regular(P), reversed(P);
  for (int q = 0; q < P; ++q) regular[q] = q * m, reversed[q] = (P - 1 - q) * (m + 1);
  for (int root : {0, P - 1, P / 2})
    for (const auto* displs : {&regular, &reversed})
      for (bool in_place : {false, true}) {
        const std::string at = " at P=" + std::to_string(P) + " root " + std::to_string(root) +
                               (displs == &regular ? "" : " reversed") +
                               (in_place ? " in place: " : ": ");
        const long extent = P * (m + 1);
        std::string error;
        std::vector<RankState> g(P), sc(P);
        for (int r = 0; r < P; ++r) {
          g[r].s = shancoll::pattern::binomial_gather_schedule(P, r, root, m, displs->data(),
                                                               in_place && r == root);
          g[r].buf[0] = {label(r, 0), label(r, 1)};
          g[r].buf[1].assign(r == root ? extent : 0, -1);
          if (in_place && r == root)
            for (long i = 0; i < m; ++i) g[r].buf[1][(*displs)[r] + i] = label(r, i);
          sc[r].s = shancoll::pattern::binomial_scatter_schedule(P, r, root, m, displs->data(),
                                                                 in_place && r == root);
          sc[r].buf[1].assign(m, -1);
          if (r == root)
            for (long i = 0; i < extent; ++i) sc[r].buf[0].push_back(label(root, i));
        }
        bool ok = run(g, error);
        for (int q = 0; q < P; ++q)
          for (long i = 0; i < m; ++i) ok = ok && g[root].buf[1][(*displs)[q] + i] == label(q, i);
        check(ok, "binomial gather" + at + error);
        ok = run(sc, error);
        for (int q = 0; q < P; ++q)
          for (long i = 0; i < m; ++i)
            ok = ok &&
                 sc[q].buf[1][i] == (in_place && q == root ? -1 : label(root, (*displs)[q] + i));
        check(ok, "binomial scatter" + at + error);
      }
}

// The v-forms: the root's counts down the tree (every member receives its
// subtree's, member order), then the blocks, with counts (q % 3: zeros
// among them) and displacements in reverse rank order with a gap before
// each block, in place at the root or not.
inline void rooted_v_checks(int P, void (*check)(bool, const std::string&)) {
  using shancoll::pattern::binomial_subtree_span;
  using shancoll::pattern::mod_rank;
  std::vector<long> counts(P), displs(P), count_displs(P);
  long extent = 0;
  for (int q = P - 1; q >= 0; --q) counts[q] = q % 3, displs[q] = extent + 1, extent += q % 3 + 1;
  for (int q = 0; q < P; ++q) count_displs[q] = q;
  for (int root : {0, P - 1, P / 2})
    for (bool in_place : {false, true}) {
      const std::string at = " at P=" + std::to_string(P) + " root " + std::to_string(root) +
                             (in_place ? " in place: " : ": ");
      std::string error;
      std::vector<RankState> phase1(P);
      for (int r = 0; r < P; ++r) {
        phase1[r].s = shancoll::pattern::binomial_subtree_scatter_schedule(P, r, root, 1,
                                                                           count_displs.data());
        if (r == root) phase1[r].buf[0] = counts;
        const int v = mod_rank(r - root, P);
        phase1[r].buf[1].assign(r == root ? 0 : binomial_subtree_span(P, v), -1);
      }
      bool ok = run(phase1, error);
      check(ok, "binomial counts scatter" + at + error);
      std::vector<RankState> g(P), sc(P);
      for (int r = 0; r < P; ++r) {
        const int v = mod_rank(r - root, P);
        const Bytes& sub = phase1[r].buf[1];
        const auto bytes = [&](int u) {
          return v == 0 ? counts[mod_rank(u + root, P)] : sub[static_cast<std::size_t>(u - v)];
        };
        const bool place = in_place && r == root;
        g[r].s = shancoll::pattern::binomial_gather_blocks(P, r, root, bytes, counts[r],
                                                           displs.data(), place);
        for (long i = 0; i < counts[r]; ++i) g[r].buf[0].push_back(label(r, i));
        g[r].buf[1].assign(r == root ? extent : 0, -1);
        if (place)
          for (long i = 0; i < counts[r]; ++i) g[r].buf[1][displs[r] + i] = label(r, i);
        sc[r].s = shancoll::pattern::binomial_scatter_blocks(P, r, root, bytes, counts[r],
                                                             displs.data(), place);
        sc[r].buf[1].assign(counts[r], -1);
        if (r == root)
          for (long i = 0; i < extent; ++i) sc[r].buf[0].push_back(label(root, i));
      }
      ok = run(g, error);
      for (int q = 0; q < P; ++q)
        for (long i = 0; i < counts[q]; ++i)
          ok = ok && g[root].buf[1][displs[q] + i] == label(q, i);
      check(ok, "binomial gatherv" + at + error);
      ok = run(sc, error);
      for (int q = 0; q < P; ++q)
        for (long i = 0; i < counts[q]; ++i)
          ok = ok && sc[q].buf[1][i] == (in_place && q == root ? -1 : label(root, displs[q] + i));
      check(ok, "binomial scatterv" + at + error);
    }
}

// Binomial reduce (commutative and not), pairwise reduce-scatter, scan, exscan.
inline void reduction_checks(int P, void (*check)(bool, const std::string&)) {
  const std::string at = " at P=" + std::to_string(P);
  const long m = 3, all = ranks_below(P);
  for (int root : {0, P - 1, P / 2})
    for (bool commutative : {true, false})
      for (bool in_place : {false, true}) {
        std::string error;
        std::vector<RankState> ranks(P);
        for (int r = 0; r < P; ++r) {
          const bool place = in_place && r == root;
          ranks[r].s =
              shancoll::pattern::binomial_reduce_schedule(P, r, root, m, commutative, place);
          for (long i = 0; i < m; ++i) ranks[r].buf[0].push_back(value(i, 1L << r));
          ranks[r].buf[1] = place ? ranks[r].buf[0] : Bytes(m, -1);
        }
        bool ok = run(ranks, error, !commutative);
        for (long i = 0; i < m; ++i) ok = ok && ranks[root].buf[1][i] == value(i, all);
        check(ok, "binomial reduce" + at + " root " + std::to_string(root) +
                      (commutative ? "" : " non-commutative") + (in_place ? " in place: " : ": ") +
                      error);
      }
  std::vector<long> counts(P), displs(P);
  long total = 0;
  for (int q = 0; q < P; ++q) counts[q] = (q * 7) % 5, displs[q] = total, total += counts[q];
  for (bool in_place : {false, true}) {
    std::string error;
    std::vector<RankState> ranks(P);
    for (int r = 0; r < P; ++r) {
      ranks[r].s = shancoll::pattern::pairwise_reduce_scatter_schedule(P, r, counts.data(),
                                                                       displs.data(), in_place);
      for (long j = 0; j < total; ++j) ranks[r].buf[0].push_back(value(j, 1L << r));
      ranks[r].buf[1] = in_place ? ranks[r].buf[0] : Bytes(counts[r], -1);
    }
    bool ok = run(ranks, error);
    for (int r = 0; r < P; ++r)
      for (long i = 0; i < counts[r]; ++i)
        ok = ok && ranks[r].buf[1][i] == value(displs[r] + i, all);
    check(ok, "pairwise reduce-scatter" + at + (in_place ? " in place: " : ": ") + error);
  }
  for (bool exclusive : {false, true})
    for (bool in_place : {false, true}) {
      std::string error;
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        ranks[r].s =
            shancoll::pattern::recursive_doubling_scan_schedule(P, r, m, exclusive, in_place);
        for (long i = 0; i < m; ++i) ranks[r].buf[0].push_back(value(i, 1L << r));
        ranks[r].buf[1] = in_place ? ranks[r].buf[0] : Bytes(m, -1);
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        for (long i = 0; i < m; ++i) {
          const long want = !exclusive ? value(i, ranks_below(r + 1))
                            : r > 0    ? value(i, ranks_below(r))
                            : in_place ? ranks[r].buf[0][i]
                                       : -1;  // rank 0's recv is not written
          ok = ok && ranks[r].buf[1][i] == want;
        }
      check(ok, std::string(exclusive ? "recursive-doubling exscan" : "recursive-doubling scan") +
                    at + (in_place ? " in place: " : ": ") + error);
    }
}

inline void run_all(void (*check)(bool, const std::string&)) {
  for (int P = 1; P <= 40; ++P) {
    const std::string at = " at P=" + std::to_string(P);
    std::vector<long> counts(P), displs(P);  // irregular, zeros included
    long total = 0;
    for (int q = 0; q < P; ++q)
      counts[q] = (q * 7) % 5, displs[q] = total + 1, total += counts[q] + 1;
    std::string error;
    {  // barrier: completes
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r)
        ranks[r].s = shancoll::pattern::dissemination_barrier_schedule(P, r);
      check(run(ranks, error), "dissemination barrier" + at + ": " + error);
    }
    for (int root : {0, P - 1, P / 2}) {  // bcast: the root's bytes everywhere
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        ranks[r].s = shancoll::pattern::binomial_bcast_schedule(P, r, root, 3);
        ranks[r].buf[1] = {label(r, 0), label(r, 1), label(r, 2)};
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        ok = ok && ranks[r].buf[1] == Bytes{label(root, 0), label(root, 1), label(root, 2)};
      check(ok, "binomial bcast" + at + " root " + std::to_string(root) + ": " + error);
    }
    for (bool in_place : {false, true}) {  // allgatherv: block q from rank q at displs[q]
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        ranks[r].s = shancoll::pattern::ring_allgatherv_schedule(P, r, counts.data(), displs.data(),
                                                                 in_place);
        ranks[r].buf[1].assign(total, -1);
        for (long i = 0; i < counts[r]; ++i) {
          ranks[r].buf[0].push_back(label(r, i));
          if (in_place) ranks[r].buf[1][displs[r] + i] = label(r, i);
        }
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        for (int q = 0; q < P; ++q)
          for (long i = 0; i < counts[q]; ++i)
            ok = ok && ranks[r].buf[1][displs[q] + i] == label(q, i);
      check(ok, "ring allgatherv" + at + (in_place ? " in place: " : ": ") + error);
    }
    for (bool in_place : {false, true}) {  // alltoallv: (r + q) % 3 bytes between r and q
      std::vector<std::vector<long>> c(P, std::vector<long>(P)), d(P, std::vector<long>(P));
      std::vector<RankState> ranks(P);
      for (int r = 0; r < P; ++r) {
        long at_byte = 0;
        for (int q = 0; q < P; ++q) c[r][q] = (r + q) % 3, d[r][q] = at_byte, at_byte += c[r][q];
        ranks[r].s = shancoll::pattern::pairwise_alltoallv_schedule(
            P, r, c[r].data(), d[r].data(), c[r].data(), d[r].data(), in_place);
        for (long i = 0; i < at_byte; ++i) ranks[r].buf[0].push_back(label(r, i));
        ranks[r].buf[1] = in_place ? ranks[r].buf[0] : Bytes(at_byte, -1);
      }
      bool ok = run(ranks, error);
      for (int r = 0; r < P; ++r)
        for (int q = 0; q < P; ++q)
          for (long i = 0; i < c[r][q]; ++i)
            ok = ok && ranks[r].buf[1][d[r][q] + i] == label(q, d[q][r] + i);
      check(ok, "pairwise alltoallv" + at + (in_place ? " in place: " : ": ") + error);
    }
    rooted_checks(P, check);
    rooted_v_checks(P, check);
    reduction_checks(P, check);
  }
}

}  // namespace block_schedule_checks
