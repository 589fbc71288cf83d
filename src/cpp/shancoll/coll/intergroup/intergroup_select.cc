// The intergroup registry.
#include "shancoll/coll/intergroup/intergroup.h"

namespace shancoll {

const Registry<IntergroupAlgorithm>& intergroup_registry() {
  static const Registry<IntergroupAlgorithm> registry(
      "intergroup",
      {
          {"segmented", intergroup_segmented,
           "full-duplex segmented exchange between the groups, then concurrent intragroup "
           "allgathers (Kang and Traeff: Algorithm 1 for allgather, 2 for allgatherv)"},
          {"root_gather", intergroup_root_gather,
           "gather at each group's root, exchange between the roots, broadcast (MPICH, Open "
           "MPI)"},
          {"mpi", intergroup_mpi,
           "the MPI library's own MPI_Allgather(v) on the inter-communicator"},
      });
  return registry;
}

}  // namespace shancoll
