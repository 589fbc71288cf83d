#include "shancoll/topology.h"

#include <algorithm>
#include <cstdlib>
#include <vector>

#ifdef __linux__
#include <sched.h>
#include <unistd.h>
#endif

#include "shancoll/error.h"
#include "shancoll/pattern/socket_tree.h"

#ifdef SHANCOLL_HAVE_HWLOC
#include <hwloc.h>
#endif

namespace shancoll {
namespace {

#ifdef SHANCOLL_HAVE_HWLOC
// The package (socket) holding every CPU of `cpus`: its logical index; -1
// when `cpus` is empty or spans several packages (an unbound process).
int package_of(hwloc_topology_t topo, hwloc_const_cpuset_t cpus) {
  if (hwloc_bitmap_iszero(cpus)) return -1;
  const int packages = hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE);
  for (int i = 0; i < packages; ++i) {
    hwloc_obj_t p = hwloc_get_obj_by_type(topo, HWLOC_OBJ_PACKAGE, static_cast<unsigned>(i));
    if (hwloc_bitmap_isincluded(cpus, p->cpuset)) return static_cast<int>(p->logical_index);
  }
  return -1;
}
#endif

// The machine's package count and my binding's package (-1: unknown).
// Returns whether hwloc answered.
bool hwloc_sockets(int& packages, int& mine) {
  packages = 1;
  mine = -1;
#ifdef SHANCOLL_HAVE_HWLOC
  hwloc_topology_t topo;
  if (hwloc_topology_init(&topo) != 0) return false;
  bool ok = hwloc_topology_load(topo) == 0;
  if (ok) {
    packages = std::max(hwloc_get_nbobjs_by_type(topo, HWLOC_OBJ_PACKAGE), 1);
    if (packages == 1) {
      mine = 0;  // one package (or none reported): every rank is on it, bound or not
    } else if (hwloc_bitmap_t bound = hwloc_bitmap_alloc()) {
      if (hwloc_get_cpubind(topo, bound, HWLOC_CPUBIND_PROCESS) == 0)
        mine = package_of(topo, bound);
      hwloc_bitmap_free(bound);
    }
  }
  hwloc_topology_destroy(topo);
  return ok;
#else
  return false;
#endif
}

// The node's socket map: SHANCOLL_SOCKETS (`spec`), else every local rank's
// package (gathered over the node), else one socket. Collective over the node.
void find_sockets(Topology& t, const SocketSpec& spec) {
  int mine = -1;
  t.hwloc = hwloc_sockets(t.sockets, mine);
  std::vector<int> packages(static_cast<std::size_t>(t.local_size()));
  check_mpi(PMPI_Allgather(&mine, 1, MPI_INT, packages.data(), 1, MPI_INT, t.node_comm),
            "MPI_Allgather");
  if (!spec.automatic()) {
    t.socket_of =
        synthetic_socket_map(spec, t.local_size(), t.max_local_size(), "SHANCOLL_SOCKETS");
    t.socket_source = "SHANCOLL_SOCKETS";
  } else if (!t.hwloc) {
    t.socket_source = "one socket assumed: no hwloc";
  } else if (std::count(packages.begin(), packages.end(), -1) > 0) {
    t.socket_source = "one socket assumed: a rank is not bound within one socket";
  } else {
    t.socket_of = pattern::dense_socket_map(packages);
    t.socket_source = "hwloc";
  }
  t.socket_of.resize(packages.size(), 0);  // the fallbacks: all on socket 0
  t.socket_count = std::max(pattern::socket_count(t.socket_of), 1);
}

}  // namespace

SocketSpec parse_socket_spec(const std::string& text, const char* what) {
  SocketSpec spec;
  if (text.empty() || text == "auto") return spec;
  auto bad = [&] {
    return ArgumentError(std::string(what) +
                         ": expected auto, a socket count N >= 1 or a "
                         "comma-separated socket per local rank, got '" +
                         text + "'");
  };
  std::vector<int> values;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t end = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, end - at);
    if (item.empty() || item.size() > 6 ||
        item.find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    values.push_back(std::stoi(item));
    at = end + 1;
  }
  if (text.find(',') == std::string::npos) {
    if (values[0] < 1) throw bad();
    spec.groups = values[0];
  } else {
    spec.map = values;
  }
  return spec;
}

std::vector<int> synthetic_socket_map(const SocketSpec& spec, int local_size, int max_local_size,
                                      const char* what) {
  if (spec.groups > 0) return pattern::grouped_socket_map(local_size, spec.groups);
  if (static_cast<int>(spec.map.size()) != max_local_size)
    throw ArgumentError(std::string(what) + ": a socket map needs one entry per local rank (" +
                        std::to_string(max_local_size) + " on the largest node), got " +
                        std::to_string(spec.map.size()));
  for (int id : spec.map)
    if (id < 0) throw ArgumentError(std::string(what) + ": socket ids must be >= 0");
  return pattern::dense_socket_map(
      std::vector<int>(spec.map.begin(), spec.map.begin() + local_size));
}

int Topology::max_local_size() const {
  int m = 0;
  for (const auto& r : ranks) m = std::max(m, static_cast<int>(r.size()));
  return m;
}

namespace {

// Whether the ranks of a physical node outnumber the CPUs they may run on:
// the union of their affinity masks holds fewer CPUs than ranks (unbound
// ranks: every online CPU; ranks bound to one core: that core), or the
// launcher placed more of the job's ranks on this node than it has CPUs
// online (a communicator may hold only some of them). Collective over
// `physical`.
bool node_oversubscribed(MPI_Comm physical) {
#ifdef __linux__
  int local = 1;
  MPI_Comm_size(physical, &local);
  cpu_set_t mine;
  CPU_ZERO(&mine);
  if (sched_getaffinity(0, sizeof mine, &mine) != 0) CPU_ZERO(&mine);
  std::vector<cpu_set_t> all(static_cast<std::size_t>(local));
  check_mpi(
      PMPI_Allgather(&mine, sizeof mine, MPI_BYTE, all.data(), sizeof mine, MPI_BYTE, physical),
      "MPI_Allgather");
  cpu_set_t any;
  CPU_ZERO(&any);
  for (cpu_set_t& s : all) CPU_OR(&any, &any, &s);
  const int cpus = CPU_COUNT(&any);
  if (cpus > 0 && local > cpus) return true;
  const long online = sysconf(_SC_NPROCESSORS_ONLN);
  for (const char* name : {"MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE"}) {
    const char* value = std::getenv(name);  // MPICH's and Intel MPI's, Open MPI's
    if (value && online > 0 && std::atol(value) > online) return true;
  }
#else
  (void)physical;
#endif
  return false;
}

// The physical nodes of `comm`: the ranks whose rank 0 of `physical` is themselves.
int count_hosts(MPI_Comm comm, MPI_Comm physical) {
  int local = 0, hosts = 0;
  MPI_Comm_rank(physical, &local);
  int leader = local == 0 ? 1 : 0;
  check_mpi(PMPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, comm), "MPI_Allreduce");
  return hosts;
}

}  // namespace

Topology build_topology(MPI_Comm comm, int ranks_per_node) {
  const char* env = std::getenv("SHANCOLL_SOCKETS");  // malformed: refused before communicating
  const SocketSpec sockets = parse_socket_spec(env ? env : "", "SHANCOLL_SOCKETS");
  Topology t;
  MPI_Comm_rank(comm, &t.rank);
  MPI_Comm_size(comm, &t.size);
  MPI_Comm physical = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, t.rank, MPI_INFO_NULL, &physical),
            "MPI_Comm_split_type");
  t.oversubscribed = node_oversubscribed(physical);
  t.hosts = count_hosts(comm, physical);
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
  try {
    find_sockets(t, sockets);
  } catch (...) {
    free_topology(t);
    throw;
  }
  return t;
}

void free_topology(Topology& topo) {
  if (topo.node_comm != MPI_COMM_NULL) MPI_Comm_free(&topo.node_comm);
}

}  // namespace shancoll
