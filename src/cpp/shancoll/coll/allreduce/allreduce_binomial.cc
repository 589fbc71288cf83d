// binomial: binomial spanning tree reduce to rank 0, then broadcast from it
// (the papers' baseline; pattern/binomial.h).
//
// Cost model (alpha, beta, gamma as in allreduce_dissemination.cc, m bytes):
//   rounds      2 ceil(log2 P), most ranks idle in most rounds;
//   messages    1 up + one per child down; 2 (P - 1) in total, m bytes each;
//   time        2 ceil(log2 P) (alpha + beta m) + ceil(log2 P) gamma m.
// One expression tree, evaluated once at the root in plain rank order:
// bitwise-identical results on all ranks, correct for non-commutative ops.
// Preconditions: any P >= 1, any count; scratch: one receive slot.
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/pattern/binomial.h"

namespace shancoll {

pattern::ReduceSchedule binomial_allreduce_schedule(int size, int rank, int /*ports*/) {
  return pattern::binomial_schedule(size, rank, 0);
}

void allreduce_binomial(Comm& comm, const AllreduceArgs& args, const Options& options,
                        Stats& stats) {
  run_schedule(comm, args, options, stats, binomial_allreduce_schedule, "binomial");
}

}  // namespace shancoll
