// The reduce registry and the rule behind "auto".
#include "shancoll/coll/rooted.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<ReduceAlgorithm>& reduce_registry() {
  static const Registry<ReduceAlgorithm> registry(
      "reduce",
      {
          {"release_gather", reduce_release_gather, false,
           "shared-memory release/gather steps up a tree of cache-line flags, chunked and "
           "pipelined, reducing into recvbuf (Jain et al.); binomial tree of nodes between nodes",
           reduce_release_gather_express},
          {"binomial", reduce_binomial, true,
           "point-to-point binomial tree, ceil(log2 P) rounds (rank order for non-commutative "
           "ops)"},
          {"mpi", reduce_mpi, true, "the MPI library's own MPI_Reduce"},
      });
  return registry;
}

// "auto": the rule table's choice, else release_gather, the paper's
// algorithm, whenever it can run; for non-commutative ops the MPI library's
// reduce, which keeps rank order with its best tree.
std::string choose_reduce(std::int64_t bytes, bool commutative, int ranks, int nodes, int hosts) {
  const auto valid = [&](const std::string& name) {
    const ReduceAlgorithm* a = reduce_registry().find(name);
    return a && (commutative || a->rank_order);
  };
  const std::string name = rule_choice("reduce", bytes, ranks, nodes, hosts, valid);
  if (!name.empty()) return name;
  return commutative && hosts == 1 ? "release_gather" : "mpi";
}

}  // namespace shancoll
