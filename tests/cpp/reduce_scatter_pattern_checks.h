// Checks of pattern/reduce_scatter.h, included by pattern_tests.cc (which
// defines check()). For P = 1..130, all ranks simulated at once:
//   - pairwise: in every round the rank I send to receives from me, the
//     block I send is the receiver's own, and over the P - 1 rounds every
//     other rank's contribution to my block arrives exactly once;
//   - ring: what rank r sends in step s is the block its right neighbour
//     expects, and after P - 1 steps rank r holds every contribution to
//     block r exactly once (a partial is a count per contributing rank).
#pragma once

#include <string>
#include <vector>

namespace reduce_scatter_checks {

void pairwise(int P) {
  using namespace shancoll::pattern;
  const std::string at = "reduce_scatter pairwise P=" + std::to_string(P);
  for (int r = 0; r < P; ++r) {
    std::vector<int> heard(P, 0);
    heard[r] = 1;
    for (int k = 1; k < P; ++k) {
      const PairwiseRound me = pairwise_round(P, r, k), them = pairwise_round(P, me.to, k);
      check(them.from == r, at + ": the receiver expects me");
      ++heard[me.from];
    }
    bool once = true;
    for (int q = 0; q < P; ++q) once = once && heard[q] == 1;
    check(once, at + " rank " + std::to_string(r) + ": every contribution once");
  }
}

void ring(int P) {
  using namespace shancoll::pattern;
  const std::string at = "reduce_scatter ring P=" + std::to_string(P);
  // partial[r]: contributions (per rank) of the partial rank r sends next.
  std::vector<std::vector<int>> partial(P, std::vector<int>(P, 0));
  for (int r = 0; r < P; ++r) partial[r][r] = 1;  // step 0 sends my own contribution
  for (int s = 0; s + 1 < P; ++s) {
    std::vector<std::vector<int>> next(P);
    for (int r = 0; r < P; ++r) {
      const int left = mod_rank(r - 1, P);
      const RingStep mine = ring_reduce_scatter_step(P, r, s);
      check(ring_reduce_scatter_step(P, left, s).send_block == mine.recv_block,
            at + ": the left neighbour sends the block I expect");
      next[r] = partial[left];
      ++next[r][r];  // my own contribution to that block
    }
    partial = next;
  }
  for (int r = 0; r < P; ++r) {
    bool once = true;
    for (int q = 0; q < P; ++q) once = once && partial[r][q] == 1;
    const int last = P > 1 ? ring_reduce_scatter_step(P, r, P - 2).recv_block : r;
    check(once && last == r, at + " rank " + std::to_string(r) + ": block r complete");
  }
}

void run() {
  for (int P = 1; P <= 130; ++P) pairwise(P), ring(P);
}

}  // namespace reduce_scatter_checks
