// The allgatherv registry and the rule behind "auto".
#include <algorithm>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/rules.h"

namespace shancoll {

const Registry<AllgathervAlgorithm>& allgatherv_registry() {
  static const Registry<AllgathervAlgorithm> registry(
      "allgatherv",
      {
          {"shan", allgatherv_shan,
           "shared notifications: node-local gather into a shared segment, pipelined ring of "
           "nodes"},
          {"ring", allgatherv_ring, "flat ring, P-1 rounds, bandwidth optimal"},
          {"bruck", allgatherv_bruck, "Bruck's concatenation, ceil(log2 P) rounds"},
          {"recursive_doubling", allgatherv_recursive_doubling,
           "recursive doubling, log2 P rounds (with folding when P is not a power of two)"},
          {"mpi", allgatherv_mpi, "the MPI library's own MPI_Allgatherv"},
      });
  return registry;
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

const char* builtin_allgatherv(std::int64_t total, bool private_recv, int ranks, int nodes,
                               int hosts) {
  if (ranks == 1 || !private_recv) return "shan";
  if (hosts > 1) return "mpi";
  if (nodes == ranks) return "ring";
  if (nodes == 1 && private_recv && total > kShanSingleNodeMaxBytes) return "ring";
  return "shan";
}

std::string choose_allgatherv(std::int64_t total, bool private_recv, int ranks, int nodes,
                              int hosts) {
  const auto valid = [&](const std::string& name) {
    return allgatherv_registry().find(name) && (private_recv || name == "shan");
  };
  std::string name =
      rule_choice("allgatherv", total / std::max(ranks, 1), ranks, nodes, hosts, valid);
  return name.empty() ? builtin_allgatherv(total, private_recv, ranks, nodes, hosts) : name;
}

const AllgathervAlgorithm& select_allgatherv(std::string_view name, const AllgathervArgs& args,
                                             const Topology& topo) {
  if (name != "auto") return allgatherv_registry().at(name);
  return allgatherv_registry().at(choose_allgatherv(args.total(), args.recv != nullptr, topo.size,
                                                    topo.node_count, topo.hosts));
}

}  // namespace shancoll
