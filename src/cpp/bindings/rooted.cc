// pybind11 bindings of bcast and reduce (kept apart from module.cc). The
// builtin entries (entry.h) take the call as the user wrote it: argument
// intake (buffers through bufspec.h, the rest through arguments.h, the
// options, release_gather's **options among them, through the core's option
// table: options.h), then the core's door (shancoll/coll/rooted.h) checks,
// selects and runs.
#include "rooted.h"

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
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/request/requests.h"
#include "shancoll/coll/rooted.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// What bcast and reduce take alike: algorithm, ranks_per_node, timeout and
// **options, as the collective's options (none made when none is given).
struct Common {
  std::string algorithm;
  PythonOptions options;

  Common(Collective c, py::handle algorithm_arg, py::handle ranks_per_node, py::handle timeout,
         py::handle extra)
      : algorithm(str_arg(algorithm_arg, "algorithm")), options(c) {
    options.set("ranks_per_node", ranks_per_node);
    options.set("timeout", timeout);
    if (PyDict_GET_SIZE(extra.ptr()) != 0) options.set_all(py::reinterpret_borrow<py::dict>(extra));
  }
};

// bcast(comm, buf, root, algorithm, *, ranks_per_node, timeout, **options)
// taken: the door's call, its buffer held in `buf`.
struct BcastIntake {
  enum { kComm, kBuf, kRoot, kAlgorithm, kRanksPerNode, kTimeout, kOptions };
  MPI_Comm comm;
  Common c;
  Message buf;
  BcastCall call;

  explicit BcastIntake(const py::handle* a)
      : comm(comm_of(a[kComm])),
        c(Collective::bcast, a[kAlgorithm], a[kRanksPerNode], a[kTimeout], a[kOptions]) {
    const int root = root_arg(a[kRoot], size_of(comm));
    buf = parse_simple(a[kBuf], "buf", rank_of(comm) == root ? Access::read : Access::write);
    call.comm = comm;
    call.buf = buf.data();
    call.bytes = buf.bytes();
    call.root = root;
    call.algorithm = c.algorithm;
    call.options = c.options.get();
  }
};

void run_blocking(const BcastCall& call) {
  py::gil_scoped_release release;
  shancoll::bcast(call);
}

py::object bcast_call(const py::handle* a, Mode mode) {
  BcastIntake in(a);
  if (mode != Mode::blocking)
    return request_in_mode(mode, [&](bool persistent) { return request_of(in.call, persistent); },
                           {&in.buf.view});
  run_blocking(in.call);
  return py::none();
}

// A call the entry keeps: run again on the array's current address.
struct PreparedBcast : PreparedCall {
  BcastIntake in;
  explicit PreparedBcast(const py::handle* a) : in(a) { in.buf.view.release(); }
  void run(MPI_Comm comm, std::byte* const* buffers) override {
    in.call.comm = comm;
    in.call.buf = buffers[0];
    run_blocking(in.call);
  }
};

std::unique_ptr<PreparedCall> prepare_bcast(const py::handle* a) {
  return std::make_unique<PreparedBcast>(a);
}

// reduce's buffers: the root's as allreduce's, elsewhere only sendbuf
// (recvbuf is ignored, as MPI does).
ReductionBuffers reduce_buffers(py::handle send, py::handle recv, bool at_root) {
  if (at_root) return parse_reduction(send, recv);
  if (is_in_place(send)) throw ArgumentError("sendbuf: MPI.IN_PLACE is only valid at the root");
  ReductionBuffers b{Message{}, parse_simple(send, "sendbuf", Access::read)};
  b.type = b.send.element.reduction_type("sendbuf");
  b.count = b.send.bytes() / b.send.element.scalar;
  return b;
}

// reduce(comm, sendbuf, recvbuf, op, root, algorithm, *, commute,
// ranks_per_node, timeout, **options) taken: the door's call, its buffers
// held in `b`.
struct ReduceIntake {
  enum { kComm, kSend, kRecv, kOp, kRoot, kAlgorithm, kCommute, kRanksPerNode, kTimeout, kOptions };
  MPI_Comm comm;
  Common c;
  int root;
  ReductionBuffers b;
  OpArg op;
  ReduceCall call;

  explicit ReduceIntake(const py::handle* a)
      : comm(comm_of(a[kComm])),
        c(Collective::reduce, a[kAlgorithm], a[kRanksPerNode], a[kTimeout], a[kOptions]),
        root(root_arg(a[kRoot], size_of(comm))),
        b(reduce_buffers(a[kSend], a[kRecv], rank_of(comm) == root)),
        op(a[kOp], a[kCommute]) {
    call.comm = comm;
    call.send = b.send.data();  // null: in place (no buffer held)
    call.recv = b.recv.data();
    call.count = b.count;
    call.type = b.type;
    call.op = op.get();
    call.root = root;
    call.algorithm = c.algorithm;
    call.options = c.options.get();
  }
};

void run_blocking(const ReduceCall& call) {
  py::gil_scoped_release release;  // user ops re-acquire it
  shancoll::reduce(call);
}

py::object reduce_call(const py::handle* a, Mode mode) {
  ReduceIntake in(a);
  if (mode != Mode::blocking)
    return request_in_mode(
        mode, [&](bool persistent) { return request_of(in.call, persistent); },
        {&in.b.send.view, &in.b.recv.view}, in.op.take_created());
  run_blocking(in.call);
  return py::none();
}

// A call with an MPI.Op the entry keeps: run again on the arrays' current
// addresses (recvbuf's at the root only: ignored elsewhere).
struct PreparedReduce : PreparedCall {
  ReduceIntake in;
  bool at_root;
  explicit PreparedReduce(const py::handle* a) : in(a), at_root(in.b.recv.view.held()) {
    in.b.send.view.release();
    in.b.recv.view.release();
  }
  void run(MPI_Comm comm, std::byte* const* buffers) override {
    in.call.comm = comm;
    in.call.send = buffers[0];  // null: None, in place
    in.call.recv = at_root ? buffers[1] : nullptr;
    run_blocking(in.call);
  }
};

std::unique_ptr<PreparedCall> prepare_reduce(const py::handle* a) {
  if (!PyObject_TypeCheck(a[ReduceIntake::kOp].ptr(), &PyMPIOp_Type)) return nullptr;
  return std::make_unique<PreparedReduce>(a);
}

}  // namespace

void bindings::allreduce_with_options(MPI_Comm comm, const ReductionBuffers& b, MPI_Op op,
                                      const std::string& algorithm, const py::dict& options,
                                      PythonOptions& call_options) {
  call_options.set_all(options);
  AllreduceCall call;
  call.comm = comm;
  call.send = b.send.data();  // null: in place
  call.recv = b.recv.data();
  call.count = b.count;
  call.type = b.type;
  call.op = op;
  call.options = call_options.get();
  // release_gather's own options imply it; others (check=True) leave auto auto.
  const bool implied = call.options && !call.options->release_gather_keys.empty();
  call.algorithm = algorithm == "auto" && implied ? "release_gather" : algorithm.c_str();
  py::gil_scoped_release release;
  shancoll::allreduce(call);
}

namespace {

EntrySpec bcast_spec(Mode mode) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"buf", py::object()},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          4,
          runner<bcast_call>(mode),
          true,
          mode == Mode::blocking ? prepare_bcast : nullptr,
          {BcastIntake::kBuf}};
}

EntrySpec reduce_spec(Mode mode) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", py::object()},
           {"op", py::module_::import("mpi4py.MPI").attr("SUM")},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"commute", py::bool_(false)},
           {"ranks_per_node", none},
           {"timeout", none}},
          6,
          runner<reduce_call>(mode),
          true,
          mode == Mode::blocking ? prepare_reduce : nullptr,
          {ReduceIntake::kSend, ReduceIntake::kRecv}};
}

}  // namespace

void bind_rooted(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  m.def(
      "bcast_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), bcast_spec(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.bcast (mode 1: ibcast, 2: bcast_init) with the name and "
      "docstring of `signature`.");
  m.def(
      "reduce_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), reduce_spec(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.reduce (mode 1: ireduce, 2: reduce_init) with the name and "
      "docstring of `signature`.");
}
