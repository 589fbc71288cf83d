// The gather(v) registry and the rule behind "auto".
#include "shancoll/coll/gather/gather.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<GathervAlgorithm>& gatherv_registry() {
  static const Registry<GathervAlgorithm> registry(
      "gatherv",
      {
          {"shan", gatherv_shan,
           "node aggregation: blocks through the node's shared segment (on the root's node "
           "read straight from their owners from 32 KiB), one message per node up a binomial "
           "tree of nodes"},
          {"binomial", gatherv_binomial,
           "point-to-point binomial tree of ranks, ceil(log2 P) rounds"},
          {"mpi", gatherv_mpi, "the MPI library's own MPI_Gatherv (MPI_Gather for gather)"},
      });
  return registry;
}

// "auto": the rule table's choice, else shan on one node of one host (its
// shared-memory path: blocks of 32 KiB and more in one copy, where the MPI
// libraries make two; not measured on an idle machine yet), else the MPI
// library's: across hosts and on virtual nodes shan's gain is unmeasured.
std::string choose_gatherv(bool regular, std::int64_t block_bytes, int ranks, int nodes,
                           int hosts) {
  const auto valid = [](const std::string& name) {
    return gatherv_registry().find(name) != nullptr;
  };
  const std::string name = rule_choice(regular ? "gather" : "gatherv", regular ? block_bytes : 0,
                                       ranks, nodes, hosts, valid);
  if (!name.empty()) return name;
  return hosts == 1 && nodes == 1 && ranks > 1 ? "shan" : "mpi";
}

}  // namespace shancoll
