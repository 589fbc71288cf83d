// pybind11 binding of barrier: the builtin entry (entry.h) takes the call as
// the user wrote it (algorithm, ranks_per_node, timeout and **options through
// the core's option table: options.h), then the core's door
// (shancoll/coll/barrier/barrier.h) checks, selects and runs.
#include "shancoll/coll/barrier/barrier.h"

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <memory>
#include <string>

#include "arguments.h"
#include "entry.h"
#include "options.h"
#include "request.h"
#include "shancoll/coll/request/requests.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// barrier(comm, algorithm, *, ranks_per_node, timeout, **options) taken:
// the door's call.
struct BarrierIntake {
  enum { kComm, kAlgorithm, kRanksPerNode, kTimeout, kOptions };
  BarrierCall call;
  std::string algorithm;
  PythonOptions options{Collective::barrier};

  explicit BarrierIntake(const py::handle* a) {
    call.comm = comm_of(a[kComm]);
    algorithm = str_arg(a[kAlgorithm], "algorithm");
    options.set("ranks_per_node", a[kRanksPerNode]);
    options.set("timeout", a[kTimeout]);
    if (PyDict_GET_SIZE(a[kOptions].ptr()) != 0)
      options.set_all(py::reinterpret_borrow<py::dict>(a[kOptions]));
    call.algorithm = algorithm;
    call.options = options.get();
  }
};

void run_blocking(const BarrierCall& call) {
  py::gil_scoped_release release;
  shancoll::barrier(call);
}

py::object barrier_call(const py::handle* a, Mode mode) {
  BarrierIntake in(a);
  if (mode != Mode::blocking)
    return request_in_mode(mode, [&](bool persistent) { return request_of(in.call, persistent); },
                           {});
  run_blocking(in.call);
  return py::none();
}

// A call the entry keeps: run again as it is.
struct PreparedBarrier : PreparedCall {
  BarrierIntake in;
  explicit PreparedBarrier(const py::handle* a) : in(a) {}
  void run(MPI_Comm comm, std::byte* const*) override {
    in.call.comm = comm;
    run_blocking(in.call);
  }
};

std::unique_ptr<PreparedCall> prepare_barrier(const py::handle* a) {
  return std::make_unique<PreparedBarrier>(a);
}

EntrySpec barrier_spec(Mode mode) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          2,
          runner<barrier_call>(mode),
          true,
          mode == Mode::blocking ? prepare_barrier : nullptr,
          {}};
}

}  // namespace

void bind_barrier(py::module_& m) {
  m.def(
      "barrier_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), barrier_spec(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.barrier (mode 1: ibarrier, 2: barrier_init) with the name "
      "and docstring of `signature`.");
}
