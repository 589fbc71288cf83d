// Checks of pattern/scan.h, included by pattern_tests.cc (which defines
// check() and Exprs). For P = 1..130 the recursive doubling prefix runs
// symbolically on every rank at once, as scan_recursive_doubling.cc runs it
// (an exchange only when both partners name each other; the received total
// on the left of the prefix when the partner is lower; no new total in the
// last round). Checked: partners agree, rounds = ceil(log2 P), and rank r
// ends with x_0 o ... o x_r (scan) and x_0 o ... o x_{r-1} (exscan), each
// input exactly once and every combine joining adjacent ranges in rank
// order (non-commutative ops).
#pragma once

#include <string>
#include <vector>

namespace scan_checks {

void run_one(int P) {
  using namespace shancoll::pattern;
  const std::string at = "scan P=" + std::to_string(P);
  Exprs ex{P, {}, {}, {}, {}, {}, {}};
  std::vector<int> total(P), scan(P), exscan(P, -1);
  for (int r = 0; r < P; ++r) total[r] = scan[r] = ex.leaf(r);
  const int rounds = scan_rounds(P);
  check((1LL << rounds) >= P && (rounds == 0 || (1LL << (rounds - 1)) < P), at + ": rounds");
  for (int k = 0; k < rounds; ++k) {
    std::vector<int> sent = total;  // every total leaves before any is updated
    for (int r = 0; r < P; ++r) {
      const ScanRound round = scan_round(P, r, k);
      if (round.peer < 0) continue;
      const ScanRound back = scan_round(P, round.peer, k);
      check(back.peer == r && back.lower != round.lower, at + ": partners agree");
      const int got = sent[round.peer];
      if (round.lower) {
        scan[r] = ex.combine(got, scan[r]);
        exscan[r] = exscan[r] < 0 ? got : ex.combine(got, exscan[r]);
        if (k + 1 < rounds) total[r] = ex.combine(got, total[r]);
      } else if (k + 1 < rounds) {
        total[r] = ex.combine(total[r], got);
      }
    }
  }
  for (int r = 0; r < P; ++r) {
    const std::string who = at + " rank " + std::to_string(r);
    bool exact = ex.lo[scan[r]] == 0 && ex.hi[scan[r]] == r && ex.ordered[scan[r]];
    for (int i = 0; i < P; ++i) exact = exact && ex.counts[scan[r] * P + i] == (i <= r);
    check(exact, who + ": scan is x_0..x_r once each, in rank order");
    if (r == 0) {
      check(exscan[r] < 0, who + ": exscan writes nothing on rank 0");
      continue;
    }
    const int e = exscan[r];
    exact = e >= 0 && ex.lo[e] == 0 && ex.hi[e] == r - 1 && ex.ordered[e];
    for (int i = 0; e >= 0 && i < P; ++i) exact = exact && ex.counts[e * P + i] == (i < r);
    check(exact, who + ": exscan is x_0..x_{r-1} once each, in rank order");
  }
}

void run() {
  for (int P = 1; P <= 130; ++P) run_one(P);
}

}  // namespace scan_checks
