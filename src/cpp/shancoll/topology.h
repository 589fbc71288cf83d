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
//
// Sockets (for the topology-aware release_gather trees): the socket of every
// local rank, from hwloc and each rank's CPU binding (the package holding
// all the CPUs it is bound to). When hwloc is missing, or a rank's binding
// spans several packages (unbound), the node counts as one socket and
// socket_source says why. SHANCOLL_SOCKETS replaces the map with a
// synthetic one (see SocketSpec), to test those trees on a one-socket machine.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace shancoll {

// A synthetic socket map: `groups` > 0 splits each node's local ranks into
// that many consecutive groups of near-equal size; else `map` gives the
// socket of each local rank (as many entries as the largest node has ranks;
// smaller nodes use its first entries); neither: automatic (the topology's).
struct SocketSpec {
  int groups = 0;
  std::vector<int> map;
  bool automatic() const { return groups <= 0 && map.empty(); }
  bool operator==(const SocketSpec& o) const { return groups == o.groups && map == o.map; }
};

// "auto" or "" (automatic), "N" (N groups), "a,b,c,..." (a map); throws
// ArgumentError naming `what` (the option or the variable) when malformed.
SocketSpec parse_socket_spec(const std::string& text, const char* what);

struct Topology {
  int rank = 0;
  int size = 1;
  int node = 0;        // my node
  int local_rank = 0;  // my rank within the node
  int node_count = 1;
  // Physical nodes (MPI_COMM_TYPE_SHARED) the communicator spans: above 1,
  // some traffic crosses MPI's network module, whatever the virtual nodes.
  int hosts = 1;
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
  // Socket of every local rank of my node, dense ids 0..socket_count-1
  // numbered by lowest local rank; all 0 when unknown.
  std::vector<int> socket_of;
  int socket_count = 1;
  const char* socket_source = "";  // "hwloc", "SHANCOLL_SOCKETS", or the fallback's reason
  // More ranks on my physical node than CPUs they may run on (see topology.cc).
  bool oversubscribed = false;
};

// The dense socket map of `spec` for a node of `local_size` ranks, where the
// largest node has `max_local_size`; ArgumentError naming `what` when a map
// has the wrong length.
std::vector<int> synthetic_socket_map(const SocketSpec& spec, int local_size, int max_local_size,
                                      const char* what);

// Builds the topology of `comm` (collective). ranks_per_node <= 0 means the
// physical nodes.
Topology build_topology(MPI_Comm comm, int ranks_per_node);
void free_topology(Topology& topo);

}  // namespace shancoll
