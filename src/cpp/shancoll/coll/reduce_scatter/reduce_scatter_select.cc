// The reduce_scatter and reduce_scatter_block registries and the rule
// behind "auto".
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/rules.h"

namespace shancoll {
namespace {

std::vector<ReduceScatterAlgorithm> reduce_scatter_table() {
  return {
      {"shan", reduce_scatter_shan, true,
       "inputs in the node's shared segment, each fraction reduced on the node in rank order by "
       "one local rank, then reduce-scattered between nodes by pairwise (contiguous nodes)"},
      {"ring", reduce_scatter_ring, false,
       "ring of partial sums, P - 1 rounds of one block, bandwidth optimal (commutative ops)"},
      {"pairwise", reduce_scatter_pairwise, true,
       "pairwise exchange, P - 1 rounds of one block, folded in rank order"},
      {"mpi", reduce_scatter_mpi, true,
       "the MPI library's own MPI_Reduce_scatter / MPI_Reduce_scatter_block"},
  };
}

}  // namespace

const Registry<ReduceScatterAlgorithm>& reduce_scatter_registry() {
  static const Registry<ReduceScatterAlgorithm> registry("reduce_scatter", reduce_scatter_table());
  return registry;
}

const Registry<ReduceScatterAlgorithm>& reduce_scatter_block_registry() {
  static const Registry<ReduceScatterAlgorithm> registry("reduce_scatter_block",
                                                         reduce_scatter_table());
  return registry;
}

// "auto": the rule table's choice, else the MPI library's own call: no
// shancoll algorithm has been measured against it on an idle machine yet.
std::string choose_reduce_scatter(std::int64_t bytes, bool block, bool commutative, int ranks,
                                  int nodes, int hosts, bool contiguous) {
  const auto valid = [&](const std::string& name) {
    const ReduceScatterAlgorithm* a = reduce_scatter_registry().find(name);
    return a && (commutative || a->rank_order) && (contiguous || name != "shan");
  };
  const std::string name = rule_choice(block ? "reduce_scatter_block" : "reduce_scatter", bytes,
                                       ranks, nodes, hosts, valid);
  return name.empty() ? "mpi" : name;
}

}  // namespace shancoll
