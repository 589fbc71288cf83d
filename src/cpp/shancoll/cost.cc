#include "shancoll/cost.h"

#ifdef SHANCOLL_SMPI
#include <mpi.h>  // SMPI's mpi.h declares smpi_execute_flops

namespace shancoll {

// One "flop" is one byte moved through memory (see cost.h); a 0-byte step
// costs nothing and must not enter the simulator at all.
void charge_copy(std::size_t bytes) {
  if (bytes > 0) smpi_execute_flops(static_cast<double>(bytes));
}

void charge_reduce(std::size_t bytes) {
  if (bytes > 0) smpi_execute_flops(1.5 * static_cast<double>(bytes));
}

}  // namespace shancoll
#endif
