// Allreduce: every rank contributes `count` elements, every rank ends with
// their elementwise reduction x_0 o x_1 o ... o x_{P-1}.
//
// Every algorithm has the same signature; the registry (allreduce_select.h)
// says which ones combine in plain rank order (non-commutative ops) and which
// give bitwise-identical results on every rank (floating point).
#pragma once

#include <cstddef>
#include <cstdint>

#include "shancoll/comm.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"
#include "shancoll/pattern/dissemination.h"

namespace shancoll {

struct AllreduceArgs {
  const std::byte* send = nullptr;  // nullptr: in place, the input is already in recv
  std::byte* recv = nullptr;
  std::int64_t count = 0;  // elements
  const Reducer* reducer = nullptr;
  int ports = 0;  // n of nway_dissemination, bruck, dissemination; 0 chooses
  // Floating point: results must be bitwise identical on all ranks, so
  // "auto" (and shan's inter-node step) never picks a rank-varying algorithm.
  bool consistent = true;

  std::int64_t bytes() const { return count * static_cast<std::int64_t>(reducer->elem_size()); }
};

using AllreduceFn = void (*)(Comm&, const AllreduceArgs&, const Options&, Stats&);
// The schedule of a schedule-driven algorithm for (P, rank, ports > 0).
using ScheduleFn = pattern::ReduceSchedule (*)(int size, int rank, int ports);

void allreduce_dissemination(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_nway_dissemination(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_bruck(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_pairwise_exchange(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_binomial(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_ring(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_mpi(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_release_gather(Comm&, const AllreduceArgs&, const Options&, Stats&);
void allreduce_shan(Comm&, const AllreduceArgs&, const Options&, Stats&);

pattern::ReduceSchedule dissemination_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule nway_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule bruck_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule pairwise_allreduce_schedule(int size, int rank, int ports);
pattern::ReduceSchedule binomial_allreduce_schedule(int size, int rank, int ports);

// The ports an algorithm uses when args.ports is 0.
int default_ports(const char* algorithm, int size);

// Copies the input into the receive buffer (not in place).
void copy_input(const AllreduceArgs& args);

}  // namespace shancoll
