#include "shancoll/select.h"

#include <cstdlib>

#include "shancoll/error.h"

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

// auto: shan whenever ranks share nodes (it moves each byte once between
// nodes and reads the node's data in place); the rule is refitted from
// benchmarks/results when sweeps say otherwise.
static const char* auto_allgatherv(const AllgathervArgs&, int) { return "shan"; }

const AllgathervAlgorithm& find_allgatherv(const std::string& requested,
                                           const AllgathervArgs& args, int comm_size) {
  static const std::string from_env = [] {  // read once: getenv is not free
    const char* env = std::getenv("SHANCOLL_ALLGATHERV_ALGORITHM");
    return std::string(env && *env ? env : "auto");
  }();
  std::string name = requested.empty() ? from_env : requested;
  if (name == "auto") name = auto_allgatherv(args, comm_size);
  for (const auto& a : allgatherv_algorithms()) {
    if (name == a.name) return a;
  }
  std::string valid = "auto";
  for (const auto& a : allgatherv_algorithms()) valid += std::string(", ") + a.name;
  throw ArgumentError("algorithm: unknown allgatherv algorithm '" + name + "' (valid: " + valid +
                      ")");
}

}  // namespace shancoll
