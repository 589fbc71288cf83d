// dissemination: the dissemination allreduce with partial reductions of the
// GASPI shared-notification paper, Sec. III-A (pattern/dissemination.h).
//
// Cost model (alpha: latency per message, beta: time per byte, gamma: time
// per byte combined, m: message bytes, n: ports, 1 by default = the paper's
// 2-way dissemination):
//   rounds      l + [c_l > 1] <= ceil(log_{n+1} P), where P = sum_j c_j (n+1)^j;
//               n = 1: floor(log2 P), the partial results of the lower binary
//               digits of P travel out of band during the ongoing rounds;
//   messages    n l + sum_{j<l} c_j + (c_l - 1) per rank, each m bytes
//               (n = 1: floor(log2 P) + popcount(P) - 1);
//   time        rounds x (alpha + n beta m) + combines x gamma m.
// All ranks busy in every round. Combines in a rotated (cyclic) order per
// rank: reproducible run to run, but not bitwise identical across ranks for
// floating point when P > 2, and not usable with non-commutative ops.
// Preconditions: any P >= 1, any count; scratch: E and up to 2n receive slots.
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/pattern/dissemination.h"

namespace shancoll {

pattern::ReduceSchedule dissemination_allreduce_schedule(int size, int rank, int ports) {
  return pattern::dissemination_schedule(size, rank, ports);
}

void allreduce_dissemination(Comm& comm, const AllreduceArgs& args, const Options& options,
                             Stats& stats) {
  run_schedule(comm, args, options, stats, dissemination_allreduce_schedule, "dissemination");
}

}  // namespace shancoll
