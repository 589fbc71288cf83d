// Bindings of the intergroup collectives (allgather and allgatherv on
// inter-communicators): kept apart from module.cc, which calls
// bind_intergroup(m). Counts and displacements are bytes of the REMOTE group.
#include "shancoll/coll/intergroup/intergroup.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "common.h"
#include "options.h"
#include "shancoll/intercomm.h"
#include "shancoll/progress.h"

namespace py = pybind11;
using namespace shancoll;
using bindings::mpi_comm_of;
using bindings::PythonOptions;
using bindings::stats_dict;

namespace {

// A C-contiguous buffer's bytes (the Python layer has checked the specs).
std::pair<std::byte*, std::int64_t> bytes_of(py::handle obj, const char* name, bool writable) {
  py::buffer_info info = py::reinterpret_borrow<py::buffer>(obj).request(writable);
  std::int64_t stride = info.itemsize;
  for (int i = static_cast<int>(info.ndim) - 1; i >= 0; --i) {
    if (info.shape[i] > 1 && info.strides[i] != stride) {
      throw ArgumentError(std::string(name) + ": buffer is not C-contiguous");
    }
    stride *= info.shape[i];
  }
  return {static_cast<std::byte*>(info.ptr), info.size * info.itemsize};
}

void inter_allgatherv(py::handle comm_obj, py::handle send, py::handle recv,
                      std::vector<std::int64_t> counts, std::vector<std::int64_t> displs,
                      bool regular, const std::string& algorithm,
                      const std::string& intra_algorithm, std::int64_t block_size,
                      const std::string& transport, int ranks_per_node, double timeout) {
  PythonOptions o(Collective::intergroup);
  if (!intra_algorithm.empty() && intra_algorithm != "auto")
    o.set("intra_algorithm", intra_algorithm);
  if (block_size) o.set("block_size", block_size);
  if (!transport.empty() && transport != "auto") o.set("transport", transport);
  if (ranks_per_node >= 0) o.set("ranks_per_node", std::int64_t{ranks_per_node});
  if (timeout) o.set("timeout", timeout);
  IntergroupCall call;
  call.comm = mpi_comm_of(comm_obj);
  std::tie(call.args.send, call.args.send_bytes) = bytes_of(send, "sendbuf", false);
  std::tie(call.args.recv, call.recv_bytes) = bytes_of(recv, "recvbuf", true);
  call.args.counts = std::move(counts);
  call.args.displs = std::move(displs);
  call.args.regular = regular;
  call.algorithm = algorithm;
  call.options = o.get();
  py::gil_scoped_release release;
  intergroup_allgatherv(call);
}

py::dict inter_stats(py::handle comm) {
  const InterComm* ic = InterComm::find(mpi_comm_of(comm));
  return ic ? stats_dict(ic->last_stats, ic->last_algorithm) : stats_dict(Stats{}, "");
}

}  // namespace

void bind_intergroup(py::module_& m) {
  // mpi4py's C API lives in static variables of each translation unit.
  if (import_mpi4py() < 0) throw py::error_already_set();
  m.def("inter_allgatherv", &inter_allgatherv, py::arg("comm"), py::arg("send"), py::arg("recv"),
        py::arg("counts"), py::arg("displs"), py::arg("regular") = false, py::arg("algorithm") = "",
        py::arg("intra_algorithm") = "", py::arg("block_size") = 0,
        py::arg("transport") = "two_sided", py::arg("ranks_per_node") = -1,
        py::arg("timeout") = 0.0,
        "Allgather(v) on an inter-communicator, in bytes; counts/displs of the remote group; "
        "regular: allgather. Statistics: inter_last_stats(comm).");
  m.def("inter_last_stats", &inter_stats, py::arg("comm"),
        "Statistics of the last intergroup collective this process ran on comm (local).");
}
