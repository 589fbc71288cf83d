// Bindings of the intergroup collectives (allgather and allgatherv on
// inter-communicators): kept apart from module.cc, which calls
// bind_intergroup(m). Counts and displacements are bytes of the REMOTE group.
#include "shancoll/coll/intergroup/intergroup.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "common.h"
#include "shancoll/intercomm.h"
#include "shancoll/progress.h"
#include "shancoll/select.h"

namespace py = pybind11;
using namespace shancoll;
using bindings::make_options;
using bindings::mpi_comm_of;
using bindings::run_call;
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

void check_layout(const InterAllgathervArgs& args, int remote_size, std::int64_t recv_bytes) {
  if (static_cast<int>(args.counts.size()) != remote_size ||
      static_cast<int>(args.displs.size()) != remote_size) {
    throw ArgumentError("counts: expected " + std::to_string(remote_size) +
                        " entries (one per process of the remote group), got " +
                        std::to_string(args.counts.size()));
  }
  for (int r = 0; r < remote_size; ++r) {
    if (args.counts[r] < 0) {
      throw ArgumentError("counts: negative count for remote rank " + std::to_string(r));
    }
    if (args.displs[r] < 0) {
      throw ArgumentError("displs: negative displacement for remote rank " + std::to_string(r));
    }
    if (args.counts[r] > 0 && args.displs[r] + args.counts[r] > recv_bytes) {
      throw ArgumentError("recvbuf: too small for remote rank " + std::to_string(r));
    }
  }
}

void check_intra_algorithm(const std::string& name) {
  if (name.empty() || name == "auto") return;
  std::string valid = "auto";
  for (const auto& a : allgatherv_algorithms()) {
    if (name == a.name) return;
    valid += std::string(", ") + a.name;
  }
  throw ArgumentError("intra_algorithm: unknown allgatherv algorithm '" + name +
                      "' (valid: " + valid + ")");
}

void inter_allgatherv(py::handle comm_obj, py::handle send, py::handle recv,
                      std::vector<std::int64_t> counts, std::vector<std::int64_t> displs,
                      bool regular, const std::string& algorithm,
                      const std::string& intra_algorithm, std::int64_t block_size,
                      const std::string& transport, int ranks_per_node, double timeout) {
  const Options options = make_options(block_size, transport, ranks_per_node, timeout);
  check_intra_algorithm(intra_algorithm);
  const IntergroupAlgorithm& algo = find_intergroup(algorithm);
  InterAllgathervArgs args;
  std::tie(args.send, args.send_bytes) = bytes_of(send, "sendbuf", false);
  std::int64_t recv_bytes = 0;
  std::tie(args.recv, recv_bytes) = bytes_of(recv, "recvbuf", true);
  args.counts = std::move(counts);
  args.displs = std::move(displs);
  args.regular = regular;
  args.intra_algorithm = intra_algorithm;
  MPI_Comm user = mpi_comm_of(comm_obj);
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(user, &inter), "MPI_Comm_test_inter");
  if (!inter) throw ArgumentError("comm: expected an inter-communicator");
  int remote_size = 0;
  MPI_Comm_remote_size(user, &remote_size);
  check_layout(args, remote_size, recv_bytes);
  InterComm& ic = InterComm::of(user, options.timeout);  // collective on first use
  run_call(ic, regular ? "allgather" : "allgatherv", algo.name,
           [&](Stats& stats) { algo.fn(ic, args, options, stats); });
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
  m.def("inter_algorithms", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& a : intergroup_algorithms()) out.emplace_back(a.name, a.summary);
    return out;
  });
}
