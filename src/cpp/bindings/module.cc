// The extension module shancoll._core: the module-wide functions (statistics,
// topology, algorithm listings, environment, kernels) and the bind_*() of the
// collectives' binding files. The bindings (src/cpp/bindings, the only
// pybind11 code) take the arguments as the user wrote them (buffer specs:
// bufspec.h, the rest: arguments.h, options: options.h); each collective then
// goes through its door (shancoll/coll/<coll>/<coll>.h, docs/design.md).
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "entry.h"
#include "options.h"
#include "shancoll/coll/registry.h"
#include "shancoll/comm.h"
#include "shancoll/kernels/kernels.h"
#include "shancoll/on_error.h"
#include "shancoll/progress.h"
#include "shancoll/shm/peer_memory.h"

namespace py = pybind11;
using namespace shancoll;
using bindings::comm_of;
using bindings::stats_dict;

void bind_allgatherv(py::module_& m);  // bindings/allgatherv.cc
void bind_allreduce(py::module_& m);   // bindings/allreduce.cc
void bind_alltoallv(py::module_& m);   // bindings/alltoallv.cc
void bind_barrier(py::module_& m);     // bindings/barrier.cc
void bind_gather(py::module_& m);      // bindings/gather.cc
void bind_scatter(py::module_& m);     // bindings/scatter.cc
void bind_intergroup(py::module_& m);  // bindings/intergroup.cc
void bind_rooted(py::module_& m);      // bindings/rooted.cc
void bind_rules(py::module_& m);       // bindings/rules.cc
void bind_scan(py::module_& m);        // bindings/scan.cc

void bind_reduce_scatter(py::module_& m);  // bindings/reduce_scatter.cc

namespace {
// Before SHANCOLL_ON_ERROR=abort ends the job: what the program printed is
// still in Python's own buffers (a pipe under mpiexec: block-buffered).
void flush_python_streams() {
  if (!Py_IsInitialized()) return;
  const PyGILState_STATE gil = PyGILState_Ensure();
  for (const char* name : {"stdout", "stderr"}) {
    PyObject* stream = PySys_GetObject(name);  // borrowed
    if (!stream || stream == Py_None) continue;
    PyObject* result = PyObject_CallMethod(stream, "flush", nullptr);
    if (result)
      Py_DECREF(result);
    else
      PyErr_Clear();
  }
  PyGILState_Release(gil);
}
}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "shancoll C++ core (internal; use the shancoll package)";
  if (import_mpi4py() < 0) throw py::error_already_set();  // once: it costs ~10 us
  py::register_exception<ArgumentError>(m, "ArgumentError", PyExc_ValueError);
  py::register_exception<TimeoutError>(m, "CollectiveTimeout", PyExc_TimeoutError);
  py::register_exception<MpiError>(m, "MPIError", PyExc_RuntimeError);
  bindings::init_arguments();
  bindings::bind_bufspec(m);
  bindings::bind_entries(m);
  bind_allgatherv(m);
  bind_allreduce(m);
  bind_alltoallv(m);
  bind_barrier(m);
  bind_gather(m);
  bind_scatter(m);
  bind_intergroup(m);
  bind_rooted(m);
  bind_rules(m);
  bind_scan(m);
  bind_reduce_scatter(m);
  set_abort_hook(flush_python_streams);

  m.def(
      "set_on_error", [](const std::string& mode) { set_on_error(mode); }, py::arg("mode"),
      "What a collective does when it fails during communication: 'raise' or 'abort' "
      "('': back to SHANCOLL_ON_ERROR).");
  m.def(
      "on_error",
      [] {
        check_on_error();
        return std::string(on_error_name(on_error()));
      },
      "The active on-error mode: 'raise' or 'abort'.");

  m.def(
      "last_stats",
      [](py::handle comm) {
        // Not collective: a communicator shancoll has not used yet has no stats.
        const Comm* c = Comm::find(comm_of(comm));
        return c ? stats_dict(c->last_stats, c->last_algorithm) : stats_dict(Stats{}, "");
      },
      py::arg("comm"), "Statistics of the last collective this rank ran on comm.");

  m.def("algorithms", [](const std::string& collective) {
    std::vector<std::pair<std::string, std::string>> out;
    for (const AlgorithmInfo& a : algorithm_listing(collective))
      out.emplace_back(a.name, a.summary);
    return out;
  });

  m.def(
      "topology",
      [](py::handle comm, py::handle ranks_per_node, py::handle timeout) {
        // ranks_per_node and timeout checked as every collective checks them
        // (the option table), without any collective's environment defaults
        CallOptions given;
        for (auto [key, value] :
             {std::pair{"ranks_per_node", ranks_per_node}, std::pair{"timeout", timeout}})
          if (!value.is_none())
            given.set(Collective::allgatherv, key, bindings::option_value(key, value));
        const Options o = given.resolved();
        NodeContext& ctx = Comm::of(comm_of(comm), o.timeout).nodes(o.ranks_per_node);
        const Topology& t = ctx.topo;
        py::dict d;
        d["node"] = t.node;
        d["local_rank"] = t.local_rank;
        d["node_count"] = t.node_count;
        d["hosts"] = t.hosts;
        d["node_of"] = t.node_of;
        d["ranks"] = t.ranks;
        d["sockets"] = t.sockets;
        d["hwloc"] = t.hwloc;
        d["socket_of"] = t.socket_of;
        d["socket_count"] = t.socket_count;
        d["socket_source"] = t.socket_source;
        d["single_copy"] = ctx.peer_memory->available();
        d["oversubscribed"] = t.oversubscribed;
        return d;
      },
      py::arg("comm"), py::arg("ranks_per_node") = py::none(), py::arg("timeout") = py::none(),
      "The node layout of comm (collective when it is built: waits at most timeout, None: the "
      "default, for every rank).");

  m.def("reduction_kernels", [] {
    py::list runnable;
    for (KernelSet s : runnable_kernel_sets()) runnable.append(kernel_set_name(s));
    py::dict d;
    d["active"] = kernel_set_name(active_kernel_set());
    d["runnable"] = runnable;
    return d;
  });

  m.def(
      "set_pause",
      [](const std::string& name) {
        if (name == "default")
          set_pause_hook(default_pause);
        else if (name == "sleep")
          set_pause_hook(sleeping_pause);
        else
          throw ArgumentError("pause: unknown pause hook '" + name + "' (default, sleep)");
      },
      py::arg("name"));

#ifdef SHANCOLL_HAVE_HWLOC
  m.attr("has_hwloc") = true;
#else
  m.attr("has_hwloc") = false;
#endif
}
