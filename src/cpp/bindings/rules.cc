// Rule tables behind algorithm="auto" (shancoll/rules.h): which table is
// active, and the choice "auto" makes for a described call, without
// communication (so that tests need no ranks).
#include "shancoll/rules.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <limits>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/barrier/barrier.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/environment.h"
#include "shancoll/error.h"
#include "shancoll/shm/ring_stores.h"

namespace py = pybind11;
using namespace shancoll;

namespace {

std::string choose(const std::string& coll, std::int64_t bytes, int ranks, int nodes, bool inexact,
                   bool consistent, bool commutative, bool private_recv, std::int64_t itemsize,
                   int hosts) {
  if (ranks < 1) throw ArgumentError("ranks: must be >= 1, got " + std::to_string(ranks));
  if (coll == "allgatherv" || coll == "allgather")
    return choose_allgatherv(bytes * ranks, private_recv, ranks, nodes, hosts);
  if (coll == "allreduce")
    return choose_allreduce({bytes / itemsize, bytes, commutative, inexact, consistent}, ranks,
                            nodes, hosts);
  if (coll == "bcast") return choose_bcast(bytes, ranks, nodes, hosts);
  if (coll == "reduce") return choose_reduce(bytes, commutative, ranks, nodes, hosts);
  if (coll == "barrier") return choose_barrier(ranks, nodes, hosts);
  if (coll == "scan" || coll == "exscan")
    return choose_scan(bytes, coll == "exscan", ranks, nodes, hosts);
  if (coll == "reduce_scatter" || coll == "reduce_scatter_block")
    return choose_reduce_scatter(bytes, coll == "reduce_scatter_block", commutative, ranks, nodes,
                                 hosts);
  if (coll == "alltoall") return choose_alltoallv(bytes, ranks, nodes, hosts);
  if (coll == "alltoallv") return choose_alltoallv(-1, ranks, nodes, hosts);
  if (coll == "gather" || coll == "gatherv")
    return choose_gatherv(coll == "gather", bytes, ranks, nodes, hosts);
  if (coll == "scatter" || coll == "scatterv")
    return choose_scatterv(coll == "scatter", bytes, ranks, nodes, hosts);
  throw ArgumentError(
      "coll: unknown collective '" + coll +
      "' (allgatherv, allgather, allreduce, bcast, reduce, barrier, scan, exscan, reduce_scatter, "
      "reduce_scatter_block, alltoall, alltoallv, gather, gatherv, scatter, scatterv)");
}

}  // namespace

void bind_rules(py::module_& m) {
  m.def("set_rules", &set_rules, py::arg("path"));
  m.def("set_default_rules", &set_default_rules, py::arg("dirs"));
  m.def("rules_info", [] {
    const RulesInfo info = shancoll::rules_info();
    py::dict d;
    d["path"] = info.path;
    d["how"] = info.how;
    d["machine"] = info.machine;
    for (const auto& [key, value] : machine_fingerprint()) d[key.c_str()] = value;
    d["network"] = machine_network();
    const std::size_t stream = environment().stream_copy_from;
    d["stream_copy_from"] = stream == std::numeric_limits<std::size_t>::max()
                                ? py::none()
                                : py::object(py::int_(stream));
    d["ring_stores"] = ring_stores_name(ring_stores_way);
    return d;
  });
  m.def("rules_path", &active_rules_path);
  m.def("read_caches", &read_caches, py::arg("dir"),
        "cpu0's caches under a sysfs cache directory, as the fingerprint names them.");
  m.def(
      "table_for",
      [](const std::string& dirs, const py::dict& machine) {
        Match fingerprint;  // in the dict's order, as rules_info names them
        for (const auto& [key, value] : machine)
          fingerprint.emplace_back(py::str(key), py::str(value));
        std::string how;
        std::string path = table_for(dirs, fingerprint, &how);
        return py::make_tuple(path, how);
      },
      py::arg("dirs"), py::arg("machine"),
      "The default search's table (and why) on a machine of this fingerprint.");
  m.def("reload_environment", &reload_environment,
        "Reads the SHANCOLL_* environment variables again (they are read once, at first use).");
  m.def(
      "parse_rules",
      [](const std::string& text, const std::string& source) {
        py::list out;
        for (const Rule& r : parse_rules(text, source))
          out.append(py::make_tuple(r.coll, r.min_bytes, r.max_bytes, r.min_ranks, r.max_ranks,
                                    r.min_nodes, r.max_nodes, r.algorithm, r.options_text,
                                    r.min_hosts, r.max_hosts, r.network));
        return out;
      },
      py::arg("text"), py::arg("source") = "<string>");
  m.def(
      "network_of",
      [](const std::string& version, const std::string& netmod) {
        return network_of(version, netmod.c_str());
      },
      py::arg("version"), py::arg("netmod") = "",
      "The network module a rule's hosts field names (N@<network>) for an MPI library of "
      "this version text, with $MPIR_CVAR_CH4_NETMOD as `netmod`.");
  m.def("choose_auto", &choose, py::arg("coll"), py::arg("bytes"), py::arg("ranks"),
        py::arg("nodes") = 0, py::arg("inexact") = true, py::arg("consistent") = true,
        py::arg("commutative") = true, py::arg("private_recv") = true, py::arg("itemsize") = 8,
        py::arg("hosts") = 1,
        "The algorithm auto picks for such a call (bytes: per rank; nodes 0: unknown; hosts: "
        "physical nodes).");
  m.def(
      "persistent_choice",
      [](const std::string& coll, std::int64_t bytes, int ranks, int nodes, int hosts,
         const std::string& engine) {
        const PersistentChoice c =
            persistent_choice(coll, bytes, ranks, nodes, hosts, engine.c_str());
        return py::make_tuple(c.algorithm, c.single_copy);
      },
      py::arg("coll"), py::arg("bytes"), py::arg("ranks"), py::arg("nodes") = 1,
      py::arg("hosts") = 1, py::arg("engine") = "shan",
      "The active table's <coll>_init row for such a call: (engine, mpi or '' for no row, its "
      "single_copy or -1).");
}
