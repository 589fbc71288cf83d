// The scatter(v) registry and the rule behind "auto".
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<ScattervAlgorithm>& scatterv_registry() {
  static const Registry<ScattervAlgorithm> registry(
      "scatterv",
      {
          {"shan", scatterv_shan,
           "one message per node down a binomial tree of nodes, then local reads from the "
           "node's shared segment (on the root's node written straight into the receive "
           "buffers from 32 KiB)"},
          {"binomial", scatterv_binomial,
           "point-to-point binomial tree of ranks, ceil(log2 P) rounds"},
          {"mpi", scatterv_mpi, "the MPI library's own MPI_Scatterv (MPI_Scatter for scatter)"},
      });
  return registry;
}

// "auto": the rule table's choice, else shan on one node of one host (its
// shared-memory path, one copy per block from 32 KiB; not measured on an
// idle machine yet), else the MPI library's.
std::string choose_scatterv(bool regular, std::int64_t block_bytes, int ranks, int nodes,
                            int hosts) {
  const auto valid = [](const std::string& name) {
    return scatterv_registry().find(name) != nullptr;
  };
  const std::string name = rule_choice(regular ? "scatter" : "scatterv", regular ? block_bytes : 0,
                                       ranks, nodes, hosts, valid);
  if (!name.empty()) return name;
  return hosts == 1 && nodes == 1 && ranks > 1 ? "shan" : "mpi";
}

}  // namespace shancoll
