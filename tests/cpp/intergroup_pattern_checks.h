// Checks of pattern/intergroup.h, included by pattern_tests.cc (which
// defines check()). For p, q up to 24 and pseudo-random block sizes (zeros
// included):
//   - Algorithm 1: the subgroups partition A in rank order with sizes
//     ceil/floor(p/q), rounds = ceil(p/q), the segments partition each block;
//   - Algorithm 2: what the senders send is exactly what the receivers expect
//     (same pieces), every receiver gets its balanced range (floor/ceil(K/n)),
//     multi-target senders go in ascending receiver order;
//   - Theorem 3: simulated in the single-port model (a message starts when
//     its sender and its receiver have finished their previous ones in their
//     orders, one byte per time unit), the orders never deadlock and the
//     exchange ends within ceil(K/n) + max(k) time units.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "shancoll/pattern/intergroup.h"

namespace intergroup_checks {

using shancoll::pattern::Piece;
using shancoll::pattern::Range;
using V64 = std::vector<std::int64_t>;

inline void algorithm1(int p, int q) {
  const std::string tag = "intergroup alg1 p=" + std::to_string(p) + " q=" + std::to_string(q);
  int next = 0;
  for (int j = 0; j < q; ++j) {
    const Range s = shancoll::pattern::subgroup(p, q, j);
    bool ok = s.begin == next && (s.size() == p / q || s.size() == (p + q - 1) / q);
    for (std::int64_t a = s.begin; a < s.end; ++a) {
      ok = ok && shancoll::pattern::subgroup_of(p, q, static_cast<int>(a)) == j;
    }
    std::int64_t covered = 0;
    for (std::int64_t a = s.begin; a < s.end; ++a) {
      const Range seg = shancoll::pattern::segment_for(p, q, 7, static_cast<int>(a));
      ok = ok && seg.begin == covered;
      covered = seg.end;
    }
    check(ok && covered == 7, tag + ": subgroup/segments of b_" + std::to_string(j));
    next = static_cast<int>(s.end);
  }
  check(next == p, tag + ": subgroups cover A");
  check(shancoll::pattern::segmented_rounds(p, q) == shancoll::pattern::subgroup(p, q, 0).size(),
        tag + ": rounds");
}

// Single-port simulation of one direction; returns the makespan or -1 on deadlock.
inline std::int64_t simulate(const std::vector<std::vector<Piece>>& sends,
                             const std::vector<std::vector<Piece>>& recvs) {
  // Position of every message in its sender's and receiver's order.
  std::vector<std::size_t> s_pos(sends.size(), 0), r_pos(recvs.size(), 0);
  std::vector<std::int64_t> s_free(sends.size(), 0), r_free(recvs.size(), 0);
  std::size_t left = 0;
  for (const auto& r : recvs) left += r.size();
  std::int64_t end = 0;
  while (left > 0) {
    bool progressed = false;
    for (std::size_t r = 0; r < recvs.size(); ++r) {
      if (r_pos[r] == recvs[r].size()) continue;
      const Piece& m = recvs[r][r_pos[r]];
      const auto s = static_cast<std::size_t>(m.peer);
      if (s_pos[s] >= sends[s].size() || sends[s][s_pos[s]].peer != static_cast<int>(r)) continue;
      const std::int64_t done = std::max(s_free[s], r_free[r]) + m.bytes;
      s_free[s] = r_free[r] = done;
      end = std::max(end, done);
      ++s_pos[s], ++r_pos[r], --left, progressed = true;
    }
    if (!progressed) return -1;
  }
  return end;
}

inline void algorithm2(const V64& counts, int parts, const std::string& tag) {
  std::int64_t total = 0, max_k = 0;
  for (std::int64_t c : counts) total += c, max_k = std::max(max_k, c);
  std::vector<std::vector<Piece>> sends(counts.size()), recvs(parts);
  std::map<std::tuple<int, int, std::int64_t>, std::int64_t> sent, received;
  std::int64_t first = 0;
  for (std::size_t x = 0; x < counts.size(); ++x) {
    sends[x] = shancoll::pattern::sender_pieces(total, parts, first, counts[x]);
    for (std::size_t i = 0; i < sends[x].size(); ++i) {
      const Piece& m = sends[x][i];
      sent[{static_cast<int>(x), m.peer, m.index}] = m.bytes;
      check(i == 0 || sends[x][i - 1].peer < m.peer, tag + ": sender order ascending");
    }
    first += counts[x];
  }
  for (int r = 0; r < parts; ++r) {
    recvs[r] = shancoll::pattern::receiver_pieces(counts, parts, r);
    std::int64_t got = 0;
    for (const Piece& m : recvs[r]) received[{m.peer, r, m.index}] = m.bytes, got += m.bytes;
    check(got == total / parts || got == (total + parts - 1) / parts,
          tag + ": receiver " + std::to_string(r) + " gets floor/ceil(K/n)");
  }
  check(sent == received, tag + ": senders' pieces == receivers' pieces");
  const std::int64_t makespan = simulate(sends, recvs);
  check(makespan >= 0, tag + ": the orders deadlock");
  check(makespan <= (total + parts - 1) / parts + max_k,
        tag + ": exchange took " + std::to_string(makespan) + " > ceil(K/n) + max(k)");
}

inline void run() {
  std::uint64_t state = 12345;
  auto next = [&state](std::int64_t bound) {  // LCG: reproducible, no <random> differences
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>((state >> 33) % static_cast<std::uint64_t>(bound));
  };
  for (int p = 1; p <= 24; ++p) {
    for (int q = 1; q <= p; ++q) {
      algorithm1(p, q);
      for (int trial = 0; trial < 3; ++trial) {
        V64 counts(p);
        for (auto& c : counts) c = trial == 0 ? 5 * (&c - counts.data()) : next(3) ? next(40) : 0;
        const std::string tag = "intergroup alg2 p=" + std::to_string(p) +
                                " q=" + std::to_string(q) + " trial " + std::to_string(trial);
        algorithm2(counts, q, tag + " (A to B)");
        algorithm2(V64(counts.begin(), counts.begin() + q), p, tag + " (B to A)");
      }
    }
  }
}

}  // namespace intergroup_checks
