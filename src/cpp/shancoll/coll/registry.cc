#include "shancoll/coll/registry.h"

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/request/requests.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/error.h"

namespace shancoll {

void unknown_algorithm(const char* collective, std::string_view name,
                       const std::vector<AlgorithmInfo>& valid) {
  std::string names = "auto";
  for (const AlgorithmInfo& a : valid) names += ", " + a.name;
  throw ArgumentError("algorithm: unknown " + std::string(collective) + " algorithm '" +
                      std::string(name) + "' (valid: " + names + ")");
}

std::vector<AlgorithmInfo> algorithm_listing(std::string_view collective) {
  if (collective == "allgather" || collective == "allgatherv")
    return allgatherv_registry().listing();
  if (collective == "allreduce") return allreduce_registry().listing();
  if (collective == "iallreduce") return iallreduce_registry().listing();
  if (collective == "bcast") return bcast_registry().listing();
  if (collective == "reduce") return reduce_registry().listing();
  if (collective == "intergroup") return intergroup_registry().listing();
  if (collective == "barrier") return barrier_registry().listing();
  if (collective == "scan") return scan_registry().listing();
  if (collective == "exscan") return exscan_registry().listing();
  if (collective == "reduce_scatter") return reduce_scatter_registry().listing();
  if (collective == "reduce_scatter_block") return reduce_scatter_block_registry().listing();
  if (collective == "alltoall" || collective == "alltoallv") return alltoallv_registry().listing();
  if (collective == "gather" || collective == "gatherv") return gatherv_registry().listing();
  if (collective == "scatter" || collective == "scatterv") return scatterv_registry().listing();
  if (collective.size() > 1 && collective[0] == 'i')  // a request form: ibcast, igatherv, ...
    if (auto listing = request_listing(collective.substr(1))) return *listing;
  throw ArgumentError("collective: unknown collective '" + std::string(collective) +
                      "' (valid: allgather, allgatherv, allreduce, iallreduce, bcast, reduce, "
                      "intergroup, barrier, scan, exscan, reduce_scatter, reduce_scatter_block, "
                      "alltoall, alltoallv, gather, gatherv, scatter, scatterv, and the request "
                      "forms i<coll> of all but intergroup)");
}

}  // namespace shancoll
