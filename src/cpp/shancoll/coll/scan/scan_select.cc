// The scan and exscan registries and the rule behind "auto".
#include "shancoll/coll/scan/scan.h"
#include "shancoll/rules.h"

namespace shancoll {
namespace {

std::vector<ScanAlgorithm> scan_table() {
  return {
      {"shan", scan_shan,
       "node prefix of each fraction in the node's shared segment, in local rank order; exscan "
       "of the node totals between nodes by recursive doubling; combined (contiguous nodes); "
       "on one node of two ranks release_gather's bcast (exscan) or reduce (scan, commutative "
       "ops)",
       scan_shan_express},
      {"recursive_doubling", scan_recursive_doubling,
       "point-to-point recursive doubling, ceil(log2 P) rounds, rank order kept"},
      {"mpi", scan_mpi, "the MPI library's own MPI_Scan / MPI_Exscan"},
  };
}

}  // namespace

const Registry<ScanAlgorithm>& scan_registry() {
  static const Registry<ScanAlgorithm> registry("scan", scan_table());
  return registry;
}

const Registry<ScanAlgorithm>& exscan_registry() {
  static const Registry<ScanAlgorithm> registry("exscan", scan_table());
  return registry;
}

// "auto": the rule table's choice, else the MPI library's own call: no
// shancoll algorithm has been measured against it on an idle machine, and
// none wins by construction (the MPI libraries' scans are recursive doubling
// over their shared-memory channels already).
std::string choose_scan(std::int64_t bytes, bool exclusive, int ranks, int nodes, int hosts,
                        bool contiguous) {
  const auto valid = [&](const std::string& name) {
    return scan_registry().find(name) != nullptr && (contiguous || name != "shan");
  };
  const std::string name =
      rule_choice(exclusive ? "exscan" : "scan", bytes, ranks, nodes, hosts, valid);
  return name.empty() ? "mpi" : name;
}

}  // namespace shancoll
