// pybind11 bindings of allreduce and iallreduce (kept apart from module.cc).
//
// Two entries per collective, one core (`prepare`):
// - the fast entry (allreduce_fast, iallreduce_fast) takes the common call as
//   the user wrote it, (comm, ndarray, ndarray | IN_PLACE, MPI.Op, options),
//   straight from Python: the per-call cost of the Python argument layer
//   (about 1 us, more than a small MPI_Allreduce) would otherwise decide the
//   small-message race. It declines (returns False/None, having done nothing)
//   whenever the call is anything else, and the Python layer
//   (src/shancoll/_allreduce.py) then parses buffer specs and callables and
//   words the errors;
// - the general entry takes what that layer parsed.
#include "shancoll/coll/allreduce/allreduce.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "common.h"
#include "entry.h"
#include "fast_args.h"
#include "options.h"
#include "request.h"
#include "shancoll/coll/allreduce/allreduce_request.h"
#include "shancoll/comm.h"
#include "shancoll/pattern/nway_dissemination.h"
#include "shancoll/progress.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// The caller's choices as the entries parsed them ("" / -1 / 0: not given).
struct Knobs {
  std::string algorithm;  // "" = auto (the environment may override)
  int ports = 0;
  int ranks_per_node = -1;
  double timeout = 0;
  bool consistent = true;
};

// One call for the door, its options held alongside.
struct Call {
  AllreduceCall call;
  PythonOptions options;
  std::string algorithm;
  explicit Call(Collective c) : options(c) {}
  Call(const Call&) = delete;
};

void prepare(Call& c, MPI_Comm user, const std::byte* send, std::byte* recv, std::int64_t bytes,
             DType type, MPI_Op op, const Knobs& k) {
  if (k.ports) c.options.set("ports", std::int64_t{k.ports});
  if (k.ranks_per_node >= 0) c.options.set("ranks_per_node", std::int64_t{k.ranks_per_node});
  if (k.timeout) c.options.set("timeout", k.timeout);
  if (!k.consistent) c.options.set("consistent", false);
  c.algorithm = k.algorithm;
  c.call.comm = user;
  c.call.send = send;
  c.call.recv = recv;
  c.call.count = bytes / static_cast<std::int64_t>(dtype_size(type));
  c.call.type = type;
  c.call.op = op;
  c.call.algorithm = c.algorithm;
  c.call.options = c.options.get();
}

void run_blocking(Call& c) {
  py::gil_scoped_release release;  // user ops re-acquire it (mpi4py's "with gil")
  allreduce(c.call);
}

py::object start_request(Call& c, std::unique_ptr<PyRequest> r) {
  r->req = iallreduce(c.call);
  return request_object(std::move(r));
}

// ---------------------------------------------------------------------------
// The fast entry's checks: each returns false for "not the plain case".

bool plain_knobs(py::handle algorithm, py::handle ports, py::handle consistent,
                 py::handle ranks_per_node, py::handle timeout, Knobs& k) {
  if (consistent.ptr() != Py_True && consistent.ptr() != Py_False) return false;
  k.consistent = consistent.ptr() == Py_True;
  return plain_algorithm(algorithm, k.algorithm) && plain_int(ports, k.ports, 0) &&
         plain_int(ranks_per_node, k.ranks_per_node, -1) && plain_timeout(timeout, k.timeout);
}

// recv: a writable C-contiguous ndarray of an MPI-reducible dtype; send: an
// ndarray of the same format and size, or IN_PLACE (None included).
bool plain_arrays(py::handle send, py::handle recv, Buffers& bufs, DType& type) {
  if (!is_ndarray(recv) || !bufs.recv.acquire(recv, PyBUF_FORMAT | PyBUF_WRITABLE)) return false;
  const Py_buffer& r = bufs.recv.get();
  if (!plain_dtype(r, type)) return false;
  if (is_in_place(send)) return true;
  if (!is_ndarray(send) || !bufs.send.acquire(send, PyBUF_FORMAT)) return false;
  const Py_buffer& s = bufs.send.get();
  return s.len == r.len && s.itemsize == r.itemsize && std::strcmp(s.format, r.format) == 0;
}

// The general entry's buffers: flat, contiguous, already matched in type and
// length by the Python layer; checked again here to stay memory-safe.
void prepare_general(Call& c, py::handle comm, py::handle send, py::handle recv, Buffers& bufs,
                     const std::string& kind, int itemsize, py::handle op, const Knobs& k) {
  const DType type = dtype_of(kind, itemsize);
  const MPI_Op mpi_op = mpi_op_of(op);
  const MPI_Comm user = mpi_comm_of(comm);
  if (!bufs.recv.acquire(recv, PyBUF_WRITABLE))
    throw ArgumentError("recvbuf: not a writable contiguous buffer");
  const std::int64_t bytes = bufs.recv.bytes();
  if (bytes % itemsize)
    throw ArgumentError("recvbuf: " + std::to_string(bytes) + " bytes is not a whole number of " +
                        std::to_string(itemsize) + "-byte elements");
  if (!send.is_none()) {
    if (!bufs.send.acquire(send, PyBUF_SIMPLE))
      throw ArgumentError("sendbuf: not a contiguous buffer");
    if (bufs.send.bytes() != bytes)
      throw ArgumentError("sendbuf: " + std::to_string(bufs.send.bytes()) +
                          " bytes, but recvbuf has " + std::to_string(bytes));
  }
  prepare(c, user, static_cast<const std::byte*>(bufs.send.ptr()),
          static_cast<std::byte*>(bufs.recv.ptr()), bytes, type, mpi_op, k);
}

// The plain calls of the entries (entry.h): allreduce(comm, sendbuf, recvbuf,
// op, algorithm, *, ports, commute, consistent, ranks_per_node, timeout) for
// ndarrays and an MPI.Op; iallreduce likewise without timeout. `commute`
// only matters for callables, which take the general path.
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
  kTimeout
};

// The plain call checked and prepared, its buffers held in `bufs`; false
// when the call is not plain. iallreduce has no timeout parameter.
bool plain_call(Call& c, const py::handle* a, Buffers& bufs, bool split_phase) {
  DType type{};
  MPI_Op mpi_op = MPI_OP_NULL;
  Knobs k;
  const py::handle timeout = split_phase ? py::handle(Py_None) : a[kTimeout];
  if (!plain_comm(a[kComm]) || !plain_op(a[kOp], mpi_op) ||
      !plain_knobs(a[kAlgorithm], a[kPorts], a[kConsistent], a[kRanksPerNode], timeout, k) ||
      !plain_arrays(a[kSend], a[kRecv], bufs, type))
    return false;
  prepare(c, mpi_comm_of(a[kComm]), static_cast<const std::byte*>(bufs.send.ptr()),
          static_cast<std::byte*>(bufs.recv.ptr()), bufs.recv.bytes(), type, mpi_op, k);
  return true;
}

py::object allreduce_plain(const py::handle* a) {
  Buffers bufs;
  Call c(Collective::allreduce);
  if (!plain_call(c, a, bufs, false)) return py::object();
  run_blocking(c);
  return py::none();
}

py::object iallreduce_plain(const py::handle* a) {
  auto r = std::make_unique<PyRequest>();
  Call c(Collective::iallreduce);
  if (!plain_call(c, a, r->bufs, true)) return py::object();
  return start_request(c, std::move(r));
}

EntrySpec allreduce_spec(bool split_phase) {
  const py::object none = py::none();
  std::vector<EntryParam> params = {
      {"comm", py::object()},         {"sendbuf", py::object()},
      {"recvbuf", py::object()},      {"op", py::module_::import("mpi4py.MPI").attr("SUM")},
      {"algorithm", py::str("auto")}, {"ports", none},
      {"commute", py::bool_(false)},  {"consistent", py::bool_(true)},
      {"ranks_per_node", none},
  };
  if (!split_phase) params.push_back({"timeout", none});
  return {std::move(params), 5, split_phase ? iallreduce_plain : allreduce_plain};
}

}  // namespace

void bind_allreduce(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  init_fast_args();

  m.def(
      "allreduce",
      [](py::handle comm, py::handle send, py::handle recv, const std::string& kind, int itemsize,
         py::handle op, const std::string& algorithm, int ports, int ranks_per_node, double timeout,
         bool consistent) {
        Buffers bufs;
        Call c(Collective::allreduce);
        prepare_general(c, comm, send, recv, bufs, kind, itemsize, op,
                        {algorithm, ports, ranks_per_node, timeout, consistent});
        run_blocking(c);
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("kind"), py::arg("itemsize"),
      py::arg("op"), py::arg("algorithm") = "", py::arg("ports") = 0,
      py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0, py::arg("consistent") = true,
      "Allreduce of contiguous buffers of NumPy kind/itemsize; send=None means in place.");

  bind_request_type(m);

  m.def(
      "iallreduce",
      [](py::handle comm, py::handle send, py::handle recv, const std::string& kind, int itemsize,
         py::handle op, const std::string& algorithm, int ports, int ranks_per_node,
         bool consistent) {
        auto r = std::make_unique<PyRequest>();
        Call c(Collective::iallreduce);
        prepare_general(c, comm, send, recv, r->bufs, kind, itemsize, op,
                        {algorithm, ports, ranks_per_node, 0.0, consistent});
        return start_request(c, std::move(r));
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("kind"), py::arg("itemsize"),
      py::arg("op"), py::arg("algorithm") = "", py::arg("ports") = 0,
      py::arg("ranks_per_node") = -1, py::arg("consistent") = true,
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

  m.def(
      "allreduce_entry",
      [](py::function impl, bool split_phase) {
        return make_entry(std::move(impl), allreduce_spec(split_phase));
      },
      "The builtin entry for shancoll.allreduce (split_phase: iallreduce) with `impl` as "
      "its general path.");
}
