// nway_dissemination: Hoefler's n-way dissemination with the adaptation of
// End et al., "Butterfly-like Algorithms for GASPI Split Phase Allreduce",
// Sec. III-B, Theorem 1 (pattern/nway_dissemination.h): data boundaries and
// the 5-tuple (s, l_snd, l_rcv, j_snd, j_rcv) make the last round combine
// every input exactly once, so non-idempotent ops (sum) are correct.
//
// Ports n: settable (ports=); by default the smallest n for which a 5-tuple
// exists for P (the choice of the paper's experiments). Where no 5-tuple
// exists for the requested (n, P) (e.g. n = 1, P = 13), the fallback is the
// one the paper suggests in Sec. III-D, larger messages "carrying ... some
// additional initial data items": the radix-(n+1) dissemination with partial
// reductions (GASPI Sec. III-A generalised to n ports), which sends the
// stored partials of the lower digits of P alongside the regular rounds.
//
// Cost model (alpha, beta, gamma as in allreduce_dissemination.cc, m bytes):
//   rounds      k = ceil(log_{n+1} P) (fallback: <= k);
//   messages    n (k - 1) + s per rank (s: senders of the adapted last round);
//   time        k (alpha + n beta m) + (n k + tail) gamma m.
// Combines in a rotated order per rank: not bitwise identical across ranks
// for floating point when P > 2, not usable with non-commutative ops.
// Preconditions: any P >= 1, any count, n >= 1.
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/pattern/nway_dissemination.h"

namespace shancoll {

pattern::ReduceSchedule nway_allreduce_schedule(int size, int rank, int ports) {
  return pattern::nway_dissemination_schedule(size, rank, ports);
}

void allreduce_nway_dissemination(Comm& comm, const AllreduceArgs& args, const Options& options,
                                  Stats& stats) {
  run_schedule(comm, args, options, stats, nway_allreduce_schedule, "nway_dissemination");
}

}  // namespace shancoll
