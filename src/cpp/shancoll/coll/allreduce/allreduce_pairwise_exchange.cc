// pairwise_exchange: the butterfly of End et al., Sec. III-A
// (pattern/pairwise_exchange.h), with the q leftover ranks of P = 2^K + q
// folded in before and out after the butterfly.
//
// Cost model (alpha, beta, gamma as in allreduce_dissemination.cc, m bytes):
//   rounds      log2 P when P is a power of two, else floor(log2 P) + 2;
//   messages    K (+1 for a core rank with a leftover partner; 1 for a
//               leftover), m bytes each, every exchange symmetric;
//   time        rounds x (alpha + beta m) + K gamma m.
// Every rank evaluates the same expression tree: bitwise-identical results
// on all ranks. Plain rank order (non-commutative ops) when q = 0.
// Preconditions: any P >= 1, any count; scratch: one receive slot.
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/allreduce/schedule_executor.h"
#include "shancoll/pattern/pairwise_exchange.h"

namespace shancoll {

pattern::ReduceSchedule pairwise_allreduce_schedule(int size, int rank, int /*ports*/) {
  return pattern::pairwise_exchange_schedule(size, rank);
}

void allreduce_pairwise_exchange(Comm& comm, const AllreduceArgs& args, const Options& options,
                                 Stats& stats) {
  run_schedule(comm, args, options, stats, pairwise_allreduce_schedule, "pairwise_exchange");
}

}  // namespace shancoll
