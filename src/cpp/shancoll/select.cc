#include "shancoll/select.h"

#include <algorithm>
#include <cstdlib>

#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/rules.h"

namespace shancoll {

const std::vector<AllgathervAlgorithm>& allgatherv_algorithms() {
  static const std::vector<AllgathervAlgorithm> table = {
      {"shan", allgatherv_shan,
       "shared notifications: node-local gather into a shared segment, pipelined ring of nodes"},
      {"ring", allgatherv_ring, "flat ring, P-1 rounds, bandwidth optimal"},
      {"bruck", allgatherv_bruck, "Bruck's concatenation, ceil(log2 P) rounds"},
      {"recursive_doubling", allgatherv_recursive_doubling,
       "recursive doubling, log2 P rounds (with folding when P is not a power of two)"},
      {"mpi", allgatherv_mpi, "the MPI library's own MPI_Allgatherv"},
  };
  return table;
}

// auto, fitted from `make bench` at 2 ranks (docs/performance.md):
// - one rank per node: shan has no shared memory to exploit and only adds its
//   READY handshake to point-to-point messages; ring was 1.2-2x faster.
// - one node, result up to 2 MiB: shan (one copy into the shared segment, one
//   out) beat every other algorithm (1.3-2x over MPI_Allgatherv).
// - one node, larger results: copies are memory-bound and shan's extra copy
//   shows; ring (one single-copy transfer per block) was fastest.
// - several nodes with several ranks each (the paper's setting, not
//   measurable on one machine): shan, whose inter-node messages grow with
//   nodes, not ranks.
constexpr std::int64_t kShanSingleNodeMaxBytes = 2 << 20;

const char* builtin_allgatherv(std::int64_t total, bool private_recv, int ranks, int nodes) {
  if (ranks == 1) return "shan";
  if (nodes == ranks) return "ring";
  if (nodes == 1 && private_recv && total > kShanSingleNodeMaxBytes) return "ring";
  return "shan";
}

std::string choose_allgatherv(std::int64_t total, bool private_recv, int ranks, int nodes) {
  const auto valid = [&](const std::string& name) {
    for (const auto& a : allgatherv_algorithms())
      if (name == a.name) return private_recv || name == "shan";
    return false;
  };
  std::string name = rule_choice("allgatherv", total / std::max(ranks, 1), ranks, nodes, valid);
  return name.empty() ? builtin_allgatherv(total, private_recv, ranks, nodes) : name;
}

int rule_nodes(Comm& comm, int ranks_per_node) {
  return comm.nodes(ranks_per_node).topo.node_count;  // cached per layout: a map lookup
}

const AllgathervAlgorithm& find_allgatherv(const std::string& requested, const AllgathervArgs& args,
                                           Comm& comm, int ranks_per_node) {
  std::string name = algorithm_name(requested, environment().allgatherv);
  if (name == "auto") {
    const Topology& topo = comm.nodes(ranks_per_node).topo;
    name = choose_allgatherv(args.total(), args.recv != nullptr, topo.size, topo.node_count);
  }
  for (const auto& a : allgatherv_algorithms()) {
    if (name == a.name) return a;
  }
  std::string valid = "auto";
  for (const auto& a : allgatherv_algorithms()) valid += std::string(", ") + a.name;
  throw ArgumentError("algorithm: unknown allgatherv algorithm '" + name + "' (valid: " + valid +
                      ")");
}

}  // namespace shancoll
