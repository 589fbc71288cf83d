// Topology: which ranks of a communicator share a node.
//
// Nodes come from MPI_Comm_split_type(MPI_COMM_TYPE_SHARED). With virtual
// nodes (ranks_per_node > 0, or SHANCOLL_RANKS_PER_NODE) consecutive ranks are
// grouped into nodes of that size, the last one possibly smaller, intersected
// with the physical nodes; a 2-core machine can then run and test the
// multi-node algorithms: intra-node steps use real shared memory, inter-node
// steps use the transport exactly as between machines.
//
// Nodes are numbered by their lowest rank; local ranks follow rank order.
#pragma once

#include <mpi.h>

#include <vector>

namespace shancoll {

struct Topology {
  int rank = 0;
  int size = 1;
  int node = 0;        // my node
  int local_rank = 0;  // my rank within the node
  int node_count = 1;
  std::vector<int> node_of;             // node of every rank
  std::vector<int> local_rank_of;       // local rank of every rank
  std::vector<std::vector<int>> ranks;  // ranks of every node, in local order
  std::vector<int> node_order;          // all ranks, node by node (ranks concatenated)
  MPI_Comm node_comm = MPI_COMM_NULL;   // owned

  int local_size() const { return static_cast<int>(ranks[node].size()); }
  int local_size_of(int n) const { return static_cast<int>(ranks[n].size()); }
  int max_local_size() const;
  int leader_of(int n) const { return ranks[n][0]; }
  int next_node() const { return (node + 1) % node_count; }
  int prev_node() const { return (node + node_count - 1) % node_count; }
  int sockets = 1;  // sockets of this node (hwloc), 1 when unknown
  bool hwloc = false;
};

// Builds the topology of `comm` (collective). ranks_per_node <= 0 means the
// physical nodes.
Topology build_topology(MPI_Comm comm, int ranks_per_node);
void free_topology(Topology& topo);

// Virtual node size from SHANCOLL_RANKS_PER_NODE, 0 when unset.
int env_ranks_per_node();

}  // namespace shancoll
