// The alltoall(v) registry and the rule behind "auto".
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<AlltoallvAlgorithm>& alltoallv_registry() {
  static const Registry<AlltoallvAlgorithm> registry(
      "alltoallv",
      {
          {"shan", alltoallv_shan,
           "node aggregation through the node segment: N-1 messages per node, each carrying "
           "every pair of two nodes; one node: one hop (segment or single copy)"},
          {"pairwise", alltoallv_pairwise, "pairwise exchange, P-1 rounds"},
          {"bruck", alltoallv_bruck, "Bruck's index algorithm, ceil(log2 P) rounds (small blocks)"},
          {"mpi", alltoallv_mpi, "the MPI library's own MPI_Alltoall / MPI_Alltoallv"},
      });
  return registry;
}

// The built-in rule, until measured on an idle machine: the MPI library's
// call, except an alltoall of small blocks on one host, where shan wins by
// construction: every block moves by one copy into the node segment and
// one out, behind two node barriers, where the library sends P - 1
// messages per rank through its shared-memory queues (two copies each, and
// a handshake per message). An alltoallv's sizes differ from rank to rank
// and no rank knows the others', so nothing about them can choose alike on
// every rank: the library's call.
constexpr std::int64_t kShanMaxBlock = 4096;

std::string choose_alltoallv(std::int64_t block, int ranks, int nodes, int hosts) {
  const auto valid = [](const std::string& name) {
    return alltoallv_registry().find(name) != nullptr;
  };
  if (block >= 0) {
    const std::string name = rule_choice("alltoallv", block, ranks, nodes, hosts, valid);
    if (!name.empty()) return name;
  }
  if (nodes == 1 && hosts == 1 && block >= 0 && block <= kShanMaxBlock) return "shan";
  return "mpi";
}

}  // namespace shancoll
