// pybind11 bindings of gather and gatherv: the builtin entries (entry.h)
// take the call as the user wrote it (buffers through bufspec.h: the root's
// receive layout, every rank's send buffer; options through the core's
// option table: options.h), then the core's door
// (shancoll/coll/gather/gather.h) checks, selects and runs. An
// inter-communicator goes to mpi4py's own Gather(v), MPI's.
#include "shancoll/coll/gather/gather.h"

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

// gather(v)(comm, sendbuf, recvbuf, root, algorithm, *, ranks_per_node,
// timeout, **options)
enum { kComm, kSend, kRecv, kRoot, kAlgorithm, kRanksPerNode, kTimeout, kOptions };

bool is_inter(MPI_Comm comm) {
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  return inter;
}

// An inter-communicator: MPI's own call through mpi4py (root MPI.ROOT /
// MPI.PROC_NULL in the first group), for `mpi` and `auto` alike.
py::object inter_call(const py::handle* a, const char* method, const std::string& algorithm) {
  if (algorithm != "auto" && algorithm != "mpi")
    throw ArgumentError("algorithm: an inter-communicator's " + std::string(method) +
                        " is MPI's own (auto or mpi), not '" + algorithm + "'");
  return a[kComm].attr(method)(a[kSend], a[kRecv], a[kRoot]);
}

// A rank's own block, or none (MPI.IN_PLACE, at the root only).
Message own_block(py::handle send, bool root) {
  if (!is_in_place(send)) return parse_simple(send, "sendbuf", Access::read);
  if (!root) throw ArgumentError("sendbuf: MPI.IN_PLACE is only valid at the root");
  return {};
}

// The root's block against its receive layout: same element type, as many
// elements as its own count.
void check_root_block(const Message& send, const Element& recv, std::int64_t count, int root) {
  if (!send.view.held()) return;
  check_send_element(send, recv);
  const std::int64_t want = count / recv.size;
  if (send.count != want)
    throw ArgumentError("sendbuf: sends " + std::to_string(send.count) +
                        " elements but the receive counts give the root " + std::to_string(want) +
                        " (counts[" + std::to_string(root) + "])");
}

py::object run(const py::handle* a, bool regular, Mode mode) {
  const MPI_Comm comm = comm_of(a[kComm]);
  const std::string algorithm = str_arg(a[kAlgorithm], "algorithm");
  if (is_inter(comm)) {
    refuse_inter_request(mode, regular ? "gather" : "gatherv");
    return inter_call(a, regular ? "Gather" : "Gatherv", algorithm);
  }
  PythonOptions options(regular ? Collective::gather : Collective::gatherv);
  options.set("ranks_per_node", a[kRanksPerNode]);
  options.set("timeout", a[kTimeout]);
  if (PyDict_GET_SIZE(a[kOptions].ptr()) != 0)
    options.set_all(py::reinterpret_borrow<py::dict>(a[kOptions]));
  const int size = size_of(comm);
  const int root = root_arg(a[kRoot], size);
  const bool at_root = rank_of(comm) == root;
  Message send = own_block(a[kSend], at_root);
  GathervCall call;
  VectorMessage recv;  // the root's receive buffer and layout
  if (at_root && regular) {
    Message whole = parse_simple(a[kRecv], "recvbuf", Access::write, size);
    recv.view = std::move(whole.view);
    recv.element = whole.element;
    const std::int64_t block = whole.bytes();
    for (int r = 0; r < size; ++r) {
      recv.layout.counts.push_back(block);
      recv.layout.displs.push_back(whole.offset + r * block);
    }
  } else if (at_root) {
    recv = parse_vector(a[kRecv], "recvbuf", size);
  }
  if (at_root) {
    check_root_block(send, recv.element, recv.layout.counts[root], root);
    call.args.recv = recv.view.data();
    call.args.counts = recv.layout.counts.data();
    call.args.displs = recv.layout.displs.data();
  }
  call.comm = comm;
  call.args.send = send.view.held() ? send.data() : nullptr;
  call.args.send_bytes = send.view.held() ? send.bytes() : recv.layout.counts[root];
  call.args.root = root;
  call.args.regular = regular;
  call.algorithm = algorithm;
  call.options = options.get();
  if (mode != Mode::blocking)
    return request_in_mode(mode, [&](bool persistent) { return request_of(call, persistent); },
                           {&send.view, &recv.view});
  py::gil_scoped_release release;
  shancoll::gatherv(call);
  return py::none();
}

py::object gather_call(const py::handle* a, Mode mode) { return run(a, true, mode); }
py::object gatherv_call(const py::handle* a, Mode mode) { return run(a, false, mode); }

EntrySpec spec(Runner runner) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", none},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          5,
          runner,
          true};
}

}  // namespace

void bind_gather(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  m.def(
      "gather_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), spec(runner<gather_call>(static_cast<Mode>(mode))));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.gather (mode 1: igather, 2: gather_init) with the name and "
      "docstring of `signature`.");
  m.def(
      "gatherv_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature),
                          spec(runner<gatherv_call>(static_cast<Mode>(mode))));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.gatherv (mode 1: igatherv, 2: gatherv_init) with the name "
      "and docstring of `signature`.");
}
