// The barrier registry and the rule behind "auto".
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<BarrierAlgorithm>& barrier_registry() {
  static const Registry<BarrierAlgorithm> registry(
      "barrier", {
                     {"release_gather", barrier_release_gather,
                      "shared-memory gather then release steps on cache-line flags (Jain et al.); "
                      "dissemination between node leaders",
                      barrier_release_gather_express},
                     {"dissemination", barrier_dissemination,
                      "point-to-point dissemination barrier, ceil(log2 P) rounds"},
                     {"mpi", barrier_mpi, "the MPI library's own MPI_Barrier"},
                 });
  return registry;
}

// "auto": the rule table's choice, else release_gather on one host (its
// flags on one node, virtual nodes joined point to point), and across
// hosts the MPI library's, as the other collectives' built-in rules do.
std::string choose_barrier(int ranks, int nodes, int hosts) {
  const auto valid = [](const std::string& name) {
    return barrier_registry().find(name) != nullptr;
  };
  const std::string name = rule_choice("barrier", 0, ranks, nodes, hosts, valid);
  if (!name.empty()) return name;
  return hosts > 1 ? "mpi" : "release_gather";
}

}  // namespace shancoll
