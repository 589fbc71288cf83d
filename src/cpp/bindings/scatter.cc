// pybind11 bindings of scatter and scatterv: the builtin entries (entry.h)
// take the call as the user wrote it (buffers through bufspec.h: the root's
// send layout, every rank's receive buffer; options through the core's
// option table: options.h), then the core's door
// (shancoll/coll/scatter/scatter.h) checks, selects and runs. An
// inter-communicator goes to mpi4py's own Scatter(v), MPI's.
#include "shancoll/coll/scatter/scatter.h"

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>
#include <vector>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "entry.h"
#include "options.h"
#include "request.h"
#include "shancoll/coll/request/requests.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// scatter(v)(comm, sendbuf, recvbuf, root, algorithm, *, ranks_per_node,
// timeout, **options)
enum { kComm, kSend, kRecv, kRoot, kAlgorithm, kRanksPerNode, kTimeout, kOptions };

bool is_inter(MPI_Comm comm) {
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  return inter;
}

py::object inter_call(const py::handle* a, const char* method, const std::string& algorithm) {
  if (algorithm != "auto" && algorithm != "mpi")
    throw ArgumentError("algorithm: an inter-communicator's " + std::string(method) +
                        " is MPI's own (auto or mpi), not '" + algorithm + "'");
  return a[kComm].attr(method)(a[kSend], a[kRecv], a[kRoot]);
}

// A rank's receive buffer, or none (MPI.IN_PLACE, at the root only).
Message own_block(py::handle recv, bool root) {
  if (!is_in_place(recv)) return parse_simple(recv, "recvbuf", Access::write);
  if (!root) throw ArgumentError("recvbuf: MPI.IN_PLACE is only valid at the root");
  return {};
}

// The root's receive buffer against its send layout: same element type, as
// many elements as its own count.
void check_root_block(const Message& recv, const Element& send, std::int64_t count, int root) {
  if (!recv.view.held()) return;
  if (!recv.element.same_type(send))
    throw ArgumentError("recvbuf: element type " + recv.element.name() +
                        " does not match the send buffer's " + send.name());
  const std::int64_t want = count / send.size;
  if (recv.count != want)
    throw ArgumentError("recvbuf: holds " + std::to_string(recv.count) +
                        " elements but the send counts give the root " + std::to_string(want) +
                        " (counts[" + std::to_string(root) + "])");
}

py::object run(const py::handle* a, bool regular, Mode mode) {
  const MPI_Comm comm = comm_of(a[kComm]);
  const std::string algorithm = str_arg(a[kAlgorithm], "algorithm");
  if (is_inter(comm)) {
    refuse_inter_request(mode, regular ? "scatter" : "scatterv");
    return inter_call(a, regular ? "Scatter" : "Scatterv", algorithm);
  }
  PythonOptions options(regular ? Collective::scatter : Collective::scatterv);
  options.set("ranks_per_node", a[kRanksPerNode]);
  options.set("timeout", a[kTimeout]);
  if (PyDict_GET_SIZE(a[kOptions].ptr()) != 0)
    options.set_all(py::reinterpret_borrow<py::dict>(a[kOptions]));
  const int size = size_of(comm);
  const int root = root_arg(a[kRoot], size);
  const bool at_root = rank_of(comm) == root;
  Message recv = own_block(a[kRecv], at_root);
  ScattervCall call;
  VectorMessage send;  // the root's send buffer and layout
  if (at_root && regular) {
    Message whole = parse_simple(a[kSend], "sendbuf", Access::read, size);
    send.view = std::move(whole.view);
    send.element = whole.element;
    const std::int64_t block = whole.bytes();
    for (int r = 0; r < size; ++r) {
      send.layout.counts.push_back(block);
      send.layout.displs.push_back(whole.offset + r * block);
    }
  } else if (at_root) {
    send = parse_vector(a[kSend], "sendbuf", size, Access::read);
  }
  if (at_root) {
    check_root_block(recv, send.element, send.layout.counts[root], root);
    call.args.send = send.view.data();
    call.args.counts = send.layout.counts.data();
    call.args.displs = send.layout.displs.data();
  }
  call.comm = comm;
  call.args.recv = recv.view.held() ? recv.data() : nullptr;
  call.args.recv_bytes = recv.view.held() ? recv.bytes() : send.layout.counts[root];
  call.args.root = root;
  call.args.regular = regular;
  call.algorithm = algorithm;
  call.options = options.get();
  if (mode != Mode::blocking)
    return request_in_mode(mode, [&](bool persistent) { return request_of(call, persistent); },
                           {&send.view, &recv.view});
  py::gil_scoped_release release;
  shancoll::scatterv(call);
  return py::none();
}

py::object scatter_call(const py::handle* a, Mode mode) { return run(a, true, mode); }
py::object scatterv_call(const py::handle* a, Mode mode) { return run(a, false, mode); }

EntrySpec spec(Runner runner) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"sendbuf", none},
           {"recvbuf", py::object()},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          5,
          runner,
          true};
}

}  // namespace

void bind_scatter(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  m.def(
      "scatter_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature),
                          spec(runner<scatter_call>(static_cast<Mode>(mode))));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.scatter (mode 1: iscatter, 2: scatter_init) with the name and "
      "docstring of `signature`.");
  m.def(
      "scatterv_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature),
                          spec(runner<scatterv_call>(static_cast<Mode>(mode))));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.scatterv (mode 1: iscatterv, 2: scatterv_init) with the name "
      "and docstring of `signature`.");
}
