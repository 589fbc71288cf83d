#include "shancoll/topology.h"

#include <algorithm>
#include <cstdlib>

#include "shancoll/error.h"

#ifdef SHANCOLL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace shancoll {
namespace {

int count_sockets(bool& found) {
#ifdef SHANCOLL_HAVE_HWLOC
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) == 0 && hwloc_topology_load(topo) == 0) {
    int n = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
    hwloc_topology_destroy(topo);
    found = true;
    return std::max(n, 1);
  }
#endif
  found = false;
  return 1;
}

}  // namespace

int Topology::max_local_size() const {
  int m = 0;
  for (const auto& r : ranks) m = std::max(m, static_cast<int>(r.size()));
  return m;
}

int env_ranks_per_node() {
  const char* text = std::getenv("SHANCOLL_RANKS_PER_NODE");
  return text ? std::atoi(text) : 0;
}

Topology build_topology(MPI_Comm comm, int ranks_per_node) {
  Topology t;
  MPI_Comm_rank(comm, &t.rank);
  MPI_Comm_size(comm, &t.size);
  MPI_Comm physical = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, t.rank, MPI_INFO_NULL, &physical),
            "MPI_Comm_split_type");
  if (ranks_per_node > 0) {
    check_mpi(MPI_Comm_split(physical, t.rank / ranks_per_node, t.rank, &t.node_comm),
              "MPI_Comm_split");
    MPI_Comm_free(&physical);
  } else {
    t.node_comm = physical;
  }
  MPI_Comm_rank(t.node_comm, &t.local_rank);

  // The node's leader (local rank 0) has the lowest rank of the node, so the
  // leader rank identifies the node; gather it from everybody.
  int leader = t.rank;
  PMPI_Bcast(&leader, 1, MPI_INT, 0, t.node_comm);
  std::vector<int> leader_of_rank(t.size);
  check_mpi(PMPI_Allgather(&leader, 1, MPI_INT, leader_of_rank.data(), 1, MPI_INT, comm),
            "MPI_Allgather");

  std::vector<int> leaders = leader_of_rank;
  std::sort(leaders.begin(), leaders.end());
  leaders.erase(std::unique(leaders.begin(), leaders.end()), leaders.end());
  t.node_count = static_cast<int>(leaders.size());
  t.ranks.assign(t.node_count, {});
  t.node_of.resize(t.size);
  t.local_rank_of.resize(t.size);
  for (int r = 0; r < t.size; ++r) {
    int n = static_cast<int>(std::lower_bound(leaders.begin(), leaders.end(), leader_of_rank[r]) -
                             leaders.begin());
    t.node_of[r] = n;
    t.local_rank_of[r] = static_cast<int>(t.ranks[n].size());
    t.ranks[n].push_back(r);
  }
  t.node = t.node_of[t.rank];
  for (const auto& node : t.ranks)
    t.node_order.insert(t.node_order.end(), node.begin(), node.end());
  t.sockets = count_sockets(t.hwloc);
  return t;
}

void free_topology(Topology& topo) {
  if (topo.node_comm != MPI_COMM_NULL) MPI_Comm_free(&topo.node_comm);
}

}  // namespace shancoll
