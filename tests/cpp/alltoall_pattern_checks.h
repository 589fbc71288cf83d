// Checks of pattern/alltoall.h, included by pattern_tests.cc (which defines
// check()). For P (or N nodes) up to 40, every rank at once:
//   - pairwise: every round is a permutation whose sends and receives
//     match, and every ordered pair of distinct ranks meets exactly once;
//   - bruck: simulated block by block, every block ends at its destination
//     at the position the final copy reads, in ceil(log2 P) rounds;
//   - node exchange: every ordered pair of distinct nodes exchanges exactly
//     one message, sent and received by the local ranks both sides compute,
//     and the steps are spread over the local ranks (none idle while
//     another has two more).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "shancoll/pattern/alltoall.h"

namespace alltoall_checks {

namespace sp = shancoll::pattern;

inline void pairwise(int p) {
  const std::string tag = "alltoall pairwise P=" + std::to_string(p);
  std::vector<std::vector<int>> met(p, std::vector<int>(p, 0));
  bool ok = sp::pairwise_rounds(p) == p - 1;
  for (int k = 1; k <= sp::pairwise_rounds(p); ++k) {
    for (int r = 0; r < p; ++r) {
      const int to = sp::pairwise_send_to(r, p, k);
      ok = ok && to != r && sp::pairwise_recv_from(to, p, k) == r;
      ++met[r][to];
    }
  }
  for (int a = 0; a < p; ++a)
    for (int b = 0; b < p; ++b) ok = ok && met[a][b] == (a != b ? 1 : 0);
  check(ok, tag);
}

inline void bruck(int p) {
  const std::string tag = "alltoall bruck P=" + std::to_string(p);
  // held[r][i]: (source, destination) of the block at position i of rank r.
  std::vector<std::vector<std::pair<int, int>>> held(p, std::vector<std::pair<int, int>>(p));
  for (int r = 0; r < p; ++r)
    for (int i = 0; i < p; ++i) held[r][i] = {r, sp::alltoall_bruck_dest(r, p, i)};
  int rounds = 0;
  bool ok = true;
  for (int k = 0; k < sp::alltoall_bruck_rounds(p); ++k, ++rounds) {
    std::vector<std::vector<std::pair<int, int>>> next = held;
    for (int r = 0; r < p; ++r) {
      const int to = sp::alltoall_bruck_send_to(r, p, k);
      ok = ok && sp::alltoall_bruck_recv_from(to, p, k) == r;
      for (int i = 0; i < p; ++i)
        if (sp::alltoall_bruck_moves(i, k)) next[to][i] = held[r][i];
    }
    held = std::move(next);
  }
  for (int d = 0; d < p; ++d)
    for (int i = 0; i < p; ++i)
      ok = ok && held[d][i] == std::make_pair(sp::alltoall_bruck_source(d, p, i), d);
  ok = ok && (p == 1 ? rounds == 0 : (1 << (rounds - 1)) < p && p <= (1 << rounds));
  check(ok, tag);
}

inline void node_exchange(int nodes, int local_size_seed) {
  const std::string tag = "alltoall node exchange N=" + std::to_string(nodes);
  std::vector<int> size(nodes);
  for (int n = 0; n < nodes; ++n) size[n] = 1 + (n * 7 + local_size_seed) % 5;  // uneven
  std::vector<std::vector<int>> sent(nodes, std::vector<int>(nodes, 0));
  bool ok = sp::node_exchange_steps(nodes) == nodes - 1;
  for (int n = 0; n < nodes; ++n) {
    std::vector<int> load(size[n], 0);
    for (int k = 1; k <= sp::node_exchange_steps(nodes); ++k) {
      const int to = sp::node_exchange_to(n, nodes, k);
      ok = ok && to != n && sp::node_exchange_from(to, nodes, k) == n;
      const int l = sp::node_exchange_local_rank(k, size[n]);
      ok = ok && l >= 0 && l < size[n];
      ++load[l];
      ++sent[n][to];
    }
    for (int a : load)
      for (int b : load) ok = ok && a - b <= 1;
  }
  for (int a = 0; a < nodes; ++a)
    for (int b = 0; b < nodes; ++b) ok = ok && sent[a][b] == (a != b ? 1 : 0);
  check(ok, tag);
}

inline void run() {
  for (int p = 1; p <= 40; ++p) {
    pairwise(p);
    bruck(p);
    node_exchange(p, p % 3);
  }
}

}  // namespace alltoall_checks
