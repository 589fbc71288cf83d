// pybind11 bindings of scan and exscan. The builtin entries (entry.h) take
// the call as the user wrote it: buffers through bufspec.h (allreduce's
// rules: MPI.IN_PLACE, [buf, count, type]), the op and the rest through
// arguments.h, the options through the core's option table (options.h),
// then the core's door (shancoll/coll/scan/scan.h) checks, selects and runs.
#include "shancoll/coll/scan/scan.h"

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>

#include "arguments.h"
#include "bufspec.h"
#include "entry.h"
#include "options.h"
#include "request.h"
#include "shancoll/coll/request/requests.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// scan(comm, sendbuf, recvbuf, op, algorithm, *, commute, ranks_per_node,
// timeout, **options); exscan the same.
template <bool kExclusive>
py::object scan_call(const py::handle* a, Mode mode) {
  enum { kComm, kSend, kRecv, kOp, kAlgorithm, kCommute, kRanksPerNode, kTimeout, kOptions };
  const MPI_Comm comm = comm_of(a[kComm]);
  const std::string algorithm = str_arg(a[kAlgorithm], "algorithm");
  PythonOptions options(kExclusive ? Collective::exscan : Collective::scan);
  options.set("ranks_per_node", a[kRanksPerNode]);
  options.set("timeout", a[kTimeout]);
  if (PyDict_GET_SIZE(a[kOptions].ptr()) != 0)
    options.set_all(py::reinterpret_borrow<py::dict>(a[kOptions]));
  ReductionBuffers b = parse_reduction(a[kSend], a[kRecv]);
  OpArg op(a[kOp], a[kCommute]);
  ScanCall call;
  call.comm = comm;
  call.send = b.send.data();  // null: in place
  call.recv = b.recv.data();
  call.count = b.count;
  call.type = b.type;
  call.op = op.get();
  call.algorithm = algorithm;
  call.options = options.get();
  if (mode != Mode::blocking)
    return request_in_mode(
        mode, [&](bool persistent) { return request_of(call, kExclusive, persistent); },
        {&b.send.view, &b.recv.view}, op.take_created());
  py::gil_scoped_release release;  // user ops re-acquire it
  if (kExclusive)
    shancoll::exscan(call);
  else
    shancoll::scan(call);
  return py::none();
}

template <bool kExclusive>
EntrySpec scan_spec(Mode mode) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", py::object()},
           {"op", py::module_::import("mpi4py.MPI").attr("SUM")},
           {"algorithm", py::str("auto")},
           {"commute", py::bool_(false)},
           {"ranks_per_node", none},
           {"timeout", none}},
          5,
          runner<scan_call<kExclusive>>(mode),
          true};
}

}  // namespace

void bind_scan(py::module_& m) {
  m.def(
      "scan_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), scan_spec<false>(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.scan (mode 1: iscan, 2: scan_init) with the name and "
      "docstring of `signature`.");
  m.def(
      "exscan_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), scan_spec<true>(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.exscan (mode 1: iexscan, 2: exscan_init) with the name and "
      "docstring of `signature`.");
}
