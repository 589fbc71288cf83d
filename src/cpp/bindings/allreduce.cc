// pybind11 bindings of allreduce and iallreduce (kept apart from module.cc).
//
// The builtin entries (entry.h) take the call as the user wrote it: argument
// intake (buffers through bufspec.h, the options through the core's option
// table: options.h, the rest through arguments.h), then the core's door
// (shancoll/coll/allreduce/allreduce.h) checks, selects and runs it.
// release_gather's **options go to rooted.cc.
#include "shancoll/coll/allreduce/allreduce.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "entry.h"
#include "options.h"
#include "request.h"
#include "rooted.h"
#include "shancoll/coll/request/request.h"
#include "shancoll/pattern/nway_dissemination.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// One call for the door, its options held alongside (none made for a call
// that gives none).
struct Call {
  AllreduceCall call;
  PythonOptions options;
  std::string algorithm;
  explicit Call(Collective c) : options(c) {}
  Call(const Call&) = delete;
};

void run_blocking(Call& c) {
  py::gil_scoped_release release;  // user ops re-acquire it (mpi4py's "with gil")
  allreduce(c.call);
}

// ---------------------------------------------------------------------------
// Argument intake: allreduce(comm, sendbuf, recvbuf, op, algorithm, *, ports,
// commute, consistent, ranks_per_node, single_copy, timeout, **options);
// iallreduce and allreduce_init the same without options.
enum {
  kComm,
  kSend,
  kRecv,
  kOp,
  kAlgorithm,
  kPorts,
  kCommute,
  kConsistent,
  kRanksPerNode,
  kSingleCopy,
  kTimeout,
  kOptions
};

// algorithm and the options the signature names, through the option table
// (ports, consistent, ranks_per_node, timeout: a request's waits' default).
void take_options(Call& c, const py::handle* a) {
  c.algorithm = str_arg(a[kAlgorithm], "algorithm");
  c.options.set("ports", a[kPorts]);
  if (a[kConsistent].ptr() != Py_True) c.options.set("consistent", a[kConsistent]);
  c.options.set("ranks_per_node", a[kRanksPerNode]);
  c.options.set("timeout", a[kTimeout]);
}

void fill(Call& c, MPI_Comm comm, const ReductionBuffers& b, MPI_Op op) {
  c.call.comm = comm;
  c.call.send = b.send.data();  // null: in place
  c.call.recv = b.recv.data();
  c.call.count = b.count;
  c.call.type = b.type;
  c.call.op = op;
  c.call.algorithm = c.algorithm;
  c.call.options = c.options.get();
}

py::object allreduce_call(const py::handle* a) {
  const MPI_Comm comm = comm_of(a[kComm]);
  Call c(Collective::allreduce);
  take_options(c, a);
  // **options is read, never written: a call without any is handed the
  // entries' one shared empty dict (entry.cc, no_options).
  const auto options = py::reinterpret_borrow<py::dict>(a[kOptions]);
  const bool single_copy = !a[kSingleCopy].is_none();  // release_gather's, named
  const ReductionBuffers b = parse_reduction(a[kSend], a[kRecv]);
  const OpArg op(a[kOp], a[kCommute]);
  if (!options.empty() || single_copy) {
    c.options.set("single_copy", a[kSingleCopy]);
    allreduce_with_options(comm, b, op.get(), c.algorithm, options, c.options);
  } else {
    fill(c, comm, b, op.get());
    run_blocking(c);
  }
  return py::none();
}

// A plain call (no **options, an MPI.Op) kept by the entry: run again on
// the arrays' current addresses.
struct PreparedAllreduce : PreparedCall {
  Call c{Collective::allreduce};
  void run(MPI_Comm comm, std::byte* const* buffers) override {
    c.call.comm = comm;
    c.call.send = buffers[0];  // null: None, in place
    c.call.recv = buffers[1];
    run_blocking(c);
  }
};

// allreduce_call's intake, in its order (the same errors first).
std::unique_ptr<PreparedCall> prepare_allreduce(const py::handle* a) {
  if (PyDict_GET_SIZE(a[kOptions].ptr()) != 0 || !a[kSingleCopy].is_none() ||
      !PyObject_TypeCheck(a[kOp].ptr(), &PyMPIOp_Type))
    return nullptr;
  auto p = std::make_unique<PreparedAllreduce>();
  const MPI_Comm comm = comm_of(a[kComm]);
  take_options(p->c, a);
  const ReductionBuffers b = parse_reduction(a[kSend], a[kRecv]);
  fill(p->c, comm, b, OpArg(a[kOp], a[kCommute]).get());
  return p;
}

// iallreduce and allreduce_init: the timeout is the waits' default.
py::object request_call(const py::handle* a, Mode mode) {
  const MPI_Comm comm = comm_of(a[kComm]);
  Call c(Collective::iallreduce);
  take_options(c, a);
  c.options.set("single_copy", a[kSingleCopy]);  // None sets nothing
  ReductionBuffers b = parse_reduction(a[kSend], a[kRecv]);
  OpArg op(a[kOp], a[kCommute]);
  fill(c, comm, b, op.get());
  return request_in_mode(
      mode, [&](bool persistent) { return iallreduce(c.call, persistent); },
      {&b.send.view, &b.recv.view}, op.take_created());
}

EntrySpec allreduce_spec(Mode mode) {
  const py::object none = py::none();
  std::vector<EntryParam> params = {
      {"comm", py::object()},         {"sendbuf", py::object()},
      {"recvbuf", py::object()},      {"op", py::module_::import("mpi4py.MPI").attr("SUM")},
      {"algorithm", py::str("auto")}, {"ports", none},
      {"commute", py::bool_(false)},  {"consistent", py::bool_(true)},
      {"ranks_per_node", none},       {"single_copy", none},
  };
  params.push_back({"timeout", none});
  if (mode != Mode::blocking) return {std::move(params), 5, runner<request_call>(mode)};
  return {std::move(params), 5, allreduce_call, true, prepare_allreduce, {kSend, kRecv}};
}

}  // namespace

void bind_allreduce(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit

  bind_request_type(m);

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

  m.def(
      "allreduce_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), allreduce_spec(static_cast<Mode>(mode)));
      },
      "The builtin function shancoll.allreduce (mode 1: iallreduce, 2: allreduce_init) with the "
      "name and docstring of `signature`.");
}
