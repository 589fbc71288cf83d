// pybind11 bindings of allreduce and iallreduce (kept apart from module.cc).
// The Python layer (src/shancoll/_allreduce.py) parses buffer specs and ops;
// here we check what the core needs to stay memory-safe.
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <optional>
#include <string>

#include "common.h"
#include "shancoll/allreduce_select.h"
#include "shancoll/coll/allreduce/allreduce_request.h"
#include "shancoll/comm.h"
#include "shancoll/pattern/nway_dissemination.h"
#include "shancoll/progress.h"
#include "shancoll/select.h"

namespace py = pybind11;
using namespace shancoll;
using bindings::mpi_comm_of;
using bindings::mpi_op_of;

namespace {

// The Python buffers, kept alive (and exported) as long as the call or request.
struct Buffers {
  std::optional<py::buffer_info> send;
  py::buffer_info recv;
};

// Checks the arguments and resolves the algorithm; no communication except
// the communicator's first use.
struct Call {
  Comm* comm;
  Reducer reducer;
  AllreduceArgs args;
  Options options;
  const AllreduceAlgorithm* algorithm;
};

Call prepare(py::handle comm_obj, py::object send, py::object recv, Buffers& bufs,
             const std::string& kind, int itemsize, py::handle op, const std::string& algorithm,
             int ports, int ranks_per_node, double timeout, bool consistent, bool split_phase) {
  if (kind.size() != 1) throw ArgumentError("recvbuf: bad dtype kind '" + kind + "'");
  if (ports < 0)
    throw ArgumentError("ports: must be >= 0 (0 chooses), got " + std::to_string(ports));
  if (timeout < 0) throw ArgumentError("timeout: must be >= 0 seconds");
  const DType type = dtype_from_numpy(kind[0], itemsize, "recvbuf");
  Reducer reducer(mpi_op_of(op), type);
  MPI_Comm user = mpi_comm_of(comm_obj);
  bufs.recv = py::reinterpret_borrow<py::buffer>(recv).request(true);
  const std::int64_t bytes = bufs.recv.size * bufs.recv.itemsize;
  if (bytes % itemsize)
    throw ArgumentError("recvbuf: " + std::to_string(bytes) + " bytes is not a whole number of " +
                        std::to_string(itemsize) + "-byte elements");
  if (!send.is_none()) {
    bufs.send = py::reinterpret_borrow<py::buffer>(send).request(false);
    if (bufs.send->size * bufs.send->itemsize != bytes)
      throw ArgumentError("sendbuf: " + std::to_string(bufs.send->size * bufs.send->itemsize) +
                          " bytes, but recvbuf has " + std::to_string(bytes));
  }
  Options o;
  o.ranks_per_node = ranks_per_node;
  o.timeout = timeout > 0 ? timeout : default_timeout();
  Call c{&Comm::of(user), reducer, {}, o, nullptr};
  c.args.send = bufs.send ? static_cast<const std::byte*>(bufs.send->ptr) : nullptr;
  c.args.recv = static_cast<std::byte*>(bufs.recv.ptr);
  c.args.count = bytes / itemsize;
  c.args.ports = ports;
  c.args.consistent = consistent;
  c.args.reducer = &c.reducer;
  std::string name = algorithm;
  if (split_phase && (name.empty() || name == "auto"))
    name = auto_split_phase(c.args, c.comm->size());
  const int nodes = split_phase ? 0 : rule_nodes(*c.comm, ranks_per_node);
  c.algorithm = &find_allreduce(name, c.args, c.comm->size(), nodes);
  return c;
}

// A split-phase request with the Python buffers it works on.
struct PyRequest {
  Buffers bufs;
  std::unique_ptr<AllreduceRequest> req;
};

}  // namespace

void bind_allreduce(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit

  m.def(
      "allreduce",
      [](py::handle comm, py::object send, py::object recv, const std::string& kind, int itemsize,
         py::handle op, const std::string& algorithm, int ports, int ranks_per_node, double timeout,
         bool consistent) {
        Buffers bufs;
        Call c = prepare(comm, send, recv, bufs, kind, itemsize, op, algorithm, ports,
                         ranks_per_node, timeout, consistent, false);
        c.args.reducer = &c.reducer;
        Stats stats;
        {
          py::gil_scoped_release release;  // user ops re-acquire it (mpi4py: "with gil")
          c.comm->run([&] { c.algorithm->fn(*c.comm, c.args, c.options, stats); });
        }
        c.comm->last_stats = stats;
        c.comm->last_algorithm = c.algorithm->name;
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("kind"), py::arg("itemsize"),
      py::arg("op"), py::arg("algorithm") = "", py::arg("ports") = 0,
      py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0, py::arg("consistent") = true,
      "Allreduce of contiguous buffers of NumPy kind/itemsize; send=None means in place.");

  py::class_<PyRequest>(m, "AllreduceRequest")
      .def("test", [](PyRequest& r) { return r.req->test(); })
      .def(
          "wait",
          [](PyRequest& r, double timeout) {
            py::gil_scoped_release release;
            r.req->wait(timeout > 0 ? timeout : default_timeout());
          },
          py::arg("timeout") = 0.0)
      .def_property_readonly("done", [](const PyRequest& r) { return r.req->done(); })
      .def_property_readonly("test_calls", [](const PyRequest& r) { return r.req->test_calls(); })
      .def_property_readonly("algorithm", [](const PyRequest& r) { return r.req->algorithm(); })
      .def_property_readonly("rounds", [](const PyRequest& r) { return r.req->stats().rounds; });

  m.def(
      "iallreduce",
      [](py::handle comm, py::object send, py::object recv, const std::string& kind, int itemsize,
         py::handle op, const std::string& algorithm, int ports, int ranks_per_node, double timeout,
         bool consistent) {
        auto r = std::make_unique<PyRequest>();
        Call c = prepare(comm, send, recv, r->bufs, kind, itemsize, op, algorithm, ports,
                         ranks_per_node, timeout, consistent, true);
        c.args.reducer = &c.reducer;
        r->req = c.comm->run([&] {
          return std::make_unique<AllreduceRequest>(*c.comm, c.args, *c.algorithm, c.options);
        });
        return r;
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("kind"), py::arg("itemsize"),
      py::arg("op"), py::arg("algorithm") = "", py::arg("ports") = 0,
      py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0, py::arg("consistent") = true,
      "Split-phase allreduce: returns a request (test(), wait(timeout)).");

  m.def(
      "nway_plan",
      [](int size, int ports) {
        if (size < 1 || ports < 0) throw ArgumentError("size >= 1 and ports >= 0 required");
        const int n = ports > 0 ? ports : pattern::nway_smallest_adaptable_n(size);
        const pattern::NwayPlan p = pattern::nway_plan(size, n);
        py::dict d;
        d["n"] = n;
        d["adaptable"] = p.adaptable;
        d["rounds"] =
            p.adaptable
                ? p.k
                : static_cast<int>(pattern::dissemination_schedule(size, 0, n).rounds.size());
        d["case"] = p.paper_case;
        d["text"] = pattern::nway_plan_text(p);
        return d;
      },
      py::arg("size"), py::arg("ports") = 0,
      "The nway_dissemination plan for P ranks: Theorem 1 case, or the fallback used.");

  m.def("allreduce_algorithms", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& a : allreduce_algorithms()) out.emplace_back(a.name, a.summary);
    return out;
  });
}
