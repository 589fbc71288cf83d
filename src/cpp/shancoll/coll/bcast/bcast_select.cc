// The bcast registry and the rule behind "auto".
#include "shancoll/coll/rooted.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<BcastAlgorithm>& bcast_registry() {
  static const Registry<BcastAlgorithm> registry(
      "bcast",
      {
          {"release_gather", bcast_release_gather,
           "shared-memory release/gather steps on a tree of cache-line flags, chunked "
           "and pipelined (Jain et al.); binomial tree of nodes between nodes",
           bcast_release_gather_express},
          {"binomial", bcast_binomial, "point-to-point binomial tree, ceil(log2 P) rounds"},
          {"mpi", bcast_mpi, "the MPI library's own MPI_Bcast"},
      });
  return registry;
}

// "auto": the rule table's choice, else release_gather, the paper's
// algorithm, which composes over several nodes too.
std::string choose_bcast(std::int64_t bytes, int ranks, int nodes, int hosts) {
  const auto valid = [](const std::string& name) { return bcast_registry().find(name) != nullptr; };
  const std::string name = rule_choice("bcast", bytes, ranks, nodes, hosts, valid);
  if (!name.empty()) return name;
  return hosts > 1 ? "mpi" : "release_gather";
}

}  // namespace shancoll
