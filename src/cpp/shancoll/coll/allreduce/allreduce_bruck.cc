// bruck: Bruck's global combine with n ports (Bruck and Ho 1993, as presented
// in End et al., Sec. III-C; pattern/bruck_combine.h): partial results S[0]
// (ranks p+1 .. p+c) and S[1] = x_p o S[0], the rounds driven by the base-(n+1)
// digits of P - 1. Works for every (n, P), each input combined once.
//
// Cost model (alpha, beta, gamma as in allreduce_dissemination.cc, m bytes):
//   rounds      k = ceil(log_{n+1} P);
//   messages    alpha_{k-1} + n (k - 1) per rank, m bytes each;
//   time        k (alpha + n beta m) + k (n + 1) gamma m.
// Ports n: settable (ports=), 1 by default. Combines in a rotated order per
// rank: not bitwise identical across ranks for floating point when P > 2,
// not usable with non-commutative ops.
// Preconditions: any P >= 1, any count, n >= 1; scratch: x_p, S[0], n receive slots.
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/pattern/bruck_combine.h"

namespace shancoll {

pattern::ReduceSchedule bruck_allreduce_schedule(int size, int rank, int ports) {
  return pattern::bruck_combine_schedule(size, rank, ports);
}

void allreduce_bruck(Comm& comm, const AllreduceArgs& args, const Options& options, Stats& stats) {
  run_schedule(comm, args, options, stats, bruck_allreduce_schedule, "bruck");
}

}  // namespace shancoll
