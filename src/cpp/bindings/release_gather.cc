// pybind11 bindings of bcast, reduce and release_gather's options (kept apart
// from module.cc). Two entries each, as for allreduce: the fast one takes the
// plain call (ndarrays, an MPI.Op, no options; see fast_args.h) straight
// from Python and declines anything else; the general one takes what the
// Python layer (src/shancoll/_release_gather.py) parsed: buffer specs, ops
// and option types. Here we check what the core needs to stay memory-safe and
// turn the options into ReleaseGatherOptions.
#include "shancoll/coll/release_gather/release_gather.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "common.h"
#include "entry.h"
#include "fast_args.h"
#include "options.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/comm.h"
#include "shancoll/progress.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// The common options of a bcast, reduce or release_gather allreduce as the
// entries took them: ranks_per_node (-1: not given) and timeout (0: not
// given). release_gather's **options go through PythonOptions::set_all.
void set_options(PythonOptions& o, int ranks_per_node, double timeout) {
  if (ranks_per_node >= 0) o.set("ranks_per_node", std::int64_t{ranks_per_node});
  if (timeout) o.set("timeout", timeout);
}

std::optional<py::buffer_info> buffer_of(py::object obj, bool writable) {
  if (obj.is_none()) return std::nullopt;
  return py::reinterpret_borrow<py::buffer>(obj).request(writable);
}

std::byte* ptr(const std::optional<py::buffer_info>& b) {
  return b ? static_cast<std::byte*>(b->ptr) : nullptr;
}

std::int64_t bytes_of(const std::optional<py::buffer_info>& b) {
  return b ? b->size * b->itemsize : 0;
}

void run_bcast(MPI_Comm comm, void* buf, std::int64_t bytes, int root, const std::string& algorithm,
               const CallOptions* options) {
  BcastCall call;
  call.comm = comm;
  call.buf = buf;
  call.bytes = bytes;
  call.root = root;
  call.algorithm = algorithm;
  call.options = options;
  py::gil_scoped_release release;
  shancoll::bcast(call);
}

void bcast_general(py::handle comm_obj, py::object buf, int root, const std::string& algorithm,
                   const py::dict& options, int ranks_per_node, double timeout) {
  PythonOptions o(Collective::bcast);
  o.set_all(options);
  set_options(o, ranks_per_node, timeout);
  const MPI_Comm comm = mpi_comm_of(comm_obj);
  const auto b = buffer_of(buf, rank_of(comm) != root);
  run_bcast(comm, ptr(b), bytes_of(b), root, algorithm, o.get());
}

// The plain call of the bcast entry (entry.h, fast_args.h): an ndarray, no
// release_gather options; arguments in the order of the Python signature
// bcast(comm, buf, root, algorithm, *, ranks_per_node, timeout).
py::object bcast_plain(const py::handle* a) {
  enum { kComm, kBuf, kRoot, kAlgorithm, kRanksPerNode, kTimeout };
  std::string name;
  int r = 0, rpn = -1;
  double seconds = 0;
  if (!plain_comm(a[kComm]) || !is_ndarray(a[kBuf]) || !plain_int(a[kRoot], r, 0) ||
      !plain_algorithm(a[kAlgorithm], name) || !plain_int(a[kRanksPerNode], rpn, -1) ||
      !plain_timeout(a[kTimeout], seconds))
    return py::object();
  PythonOptions o(Collective::bcast);
  set_options(o, rpn, seconds);
  const MPI_Comm comm = mpi_comm_of(a[kComm]);
  View b;
  if (!b.acquire(a[kBuf], rank_of(comm) != r ? PyBUF_WRITABLE : PyBUF_SIMPLE)) return py::object();
  run_bcast(comm, b.ptr(), b.bytes(), r, name, o.get());
  return py::none();
}

// Reduce of `count` elements, from either entry; `send` null: in place.
void run_reduce(MPI_Comm comm, const std::byte* send, std::int64_t send_bytes, std::byte* recv,
                std::int64_t recv_bytes, std::int64_t count, DType type, MPI_Op op, int root,
                const std::string& algorithm, const CallOptions* options) {
  const std::int64_t bytes = count * static_cast<std::int64_t>(dtype_size(type));
  const bool at_root = rank_of(comm) == root;
  if (send && send_bytes < bytes) throw ArgumentError("sendbuf: too small");
  if (at_root && (!recv || recv_bytes < bytes))
    throw ArgumentError("recvbuf: the root needs a receive buffer of " + std::to_string(bytes) +
                        " bytes");
  if (!send && !at_root) throw ArgumentError("sendbuf: MPI.IN_PLACE is only valid at the root");
  ReduceCall call;
  call.comm = comm;
  call.send = send;
  call.recv = recv;
  call.count = count;
  call.type = type;
  call.op = op;
  call.root = root;
  call.algorithm = algorithm;
  call.options = options;
  py::gil_scoped_release release;  // user ops re-acquire it
  shancoll::reduce(call);
}

void reduce_general(py::handle comm_obj, py::object send, py::object recv, const std::string& kind,
                    int itemsize, std::int64_t count, py::handle op, int root,
                    const std::string& algorithm, const py::dict& options, int ranks_per_node,
                    double timeout) {
  PythonOptions o(Collective::reduce);
  o.set_all(options);
  set_options(o, ranks_per_node, timeout);
  const auto s = buffer_of(send, false), v = buffer_of(recv, true);
  run_reduce(mpi_comm_of(comm_obj), ptr(s), bytes_of(s), ptr(v), bytes_of(v), count,
             dtype_of(kind, itemsize), mpi_op_of(op), root, algorithm, o.get());
}

// The plain call of the reduce entry (entry.h, fast_args.h): at the root two
// ndarrays of one dtype and size (or IN_PLACE and one), elsewhere the send
// ndarray (recvbuf ignored, as MPI does); an MPI.Op; no release_gather
// options. Arguments in the order of the Python signature reduce(comm,
// sendbuf, recvbuf, op, root, algorithm, *, commute, ranks_per_node,
// timeout); `commute` only matters for callables (the general path).
py::object reduce_plain(const py::handle* a) {
  enum { kComm, kSend, kRecv, kOp, kRoot, kAlgorithm, kCommute, kRanksPerNode, kTimeout };
  std::string name;
  int r = 0, rpn = -1;
  double seconds = 0;
  MPI_Op mpi_op = MPI_OP_NULL;
  if (!plain_comm(a[kComm]) || !plain_op(a[kOp], mpi_op) || !plain_int(a[kRoot], r, 0) ||
      !plain_algorithm(a[kAlgorithm], name) || !plain_int(a[kRanksPerNode], rpn, -1) ||
      !plain_timeout(a[kTimeout], seconds))
    return py::object();
  PythonOptions o(Collective::reduce);
  set_options(o, rpn, seconds);
  const MPI_Comm comm = mpi_comm_of(a[kComm]);
  const bool at_root = rank_of(comm) == r;
  const py::handle send = a[kSend], recv = a[kRecv];
  View s, v;
  if (!(at_root && is_in_place(send)) && (!is_ndarray(send) || !s.acquire(send, PyBUF_FORMAT)))
    return py::object();
  if (at_root && (!is_ndarray(recv) || !v.acquire(recv, PyBUF_FORMAT | PyBUF_WRITABLE)))
    return py::object();
  const Py_buffer& typed = at_root ? v.get() : s.get();
  DType type{};
  if (!plain_dtype(typed, type)) return py::object();
  if (at_root && s.held() &&
      (s.bytes() != v.bytes() || std::strcmp(s.get().format, v.get().format) != 0))
    return py::object();
  const std::int64_t bytes = at_root ? v.bytes() : s.bytes();
  run_reduce(comm, static_cast<const std::byte*>(s.ptr()), s.bytes(),
             static_cast<std::byte*>(v.ptr()), v.bytes(),
             bytes / static_cast<std::int64_t>(typed.itemsize), type, mpi_op, r, name, o.get());
  return py::none();
}

// Allreduce with release_gather's options, which imply release_gather
// ("auto"); another algorithm named with them is refused by the door.
void allreduce_with_options(py::handle comm_obj, py::object send, py::object recv,
                            const std::string& kind, int itemsize, py::handle op,
                            const std::string& algorithm, const py::dict& options,
                            int ranks_per_node, double timeout) {
  PythonOptions o(Collective::allreduce);
  o.set_all(options);
  set_options(o, ranks_per_node, timeout);
  const auto s = buffer_of(send, false), v = buffer_of(recv, true);
  AllreduceCall call;
  call.comm = mpi_comm_of(comm_obj);
  call.send = ptr(s);
  call.recv = ptr(v);
  call.count = bytes_of(v) / itemsize;
  if (s && bytes_of(s) != call.count * itemsize)
    throw ArgumentError("sendbuf: its length differs from recvbuf's");
  call.type = dtype_of(kind, itemsize);
  call.op = mpi_op_of(op);
  call.options = o.get();
  const bool implied = call.options && !call.options->release_gather_keys.empty();
  call.algorithm =
      (algorithm == "auto" || algorithm.empty()) && implied ? "release_gather" : algorithm.c_str();
  py::gil_scoped_release release;
  shancoll::allreduce(call);
}

EntrySpec bcast_spec() {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"buf", py::object()},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          4,
          bcast_plain};
}

EntrySpec reduce_spec() {
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
          reduce_plain};
}

}  // namespace

void bind_release_gather(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  init_fast_args();
  m.def(
      "bcast_entry", [](py::function impl) { return make_entry(std::move(impl), bcast_spec()); },
      "The builtin entry for shancoll.bcast with `impl` as its general path.");
  m.def(
      "reduce_entry", [](py::function impl) { return make_entry(std::move(impl), reduce_spec()); },
      "The builtin entry for shancoll.reduce with `impl` as its general path.");
  m.def("bcast", &bcast_general, py::arg("comm"), py::arg("buf"), py::arg("root"),
        py::arg("algorithm") = "", py::arg("options") = py::dict(), py::arg("ranks_per_node") = -1,
        py::arg("timeout") = 0.0, "Bcast of a contiguous buffer's bytes from root.");
  m.def("reduce", &reduce_general, py::arg("comm"), py::arg("send"), py::arg("recv"),
        py::arg("kind"), py::arg("itemsize"), py::arg("count"), py::arg("op"), py::arg("root"),
        py::arg("algorithm") = "", py::arg("options") = py::dict(), py::arg("ranks_per_node") = -1,
        py::arg("timeout") = 0.0,
        "Reduce of count elements into root's recv; send=None: in place at the root.");
  m.def("allreduce_release_gather", &allreduce_with_options, py::arg("comm"), py::arg("send"),
        py::arg("recv"), py::arg("kind"), py::arg("itemsize"), py::arg("op"),
        py::arg("algorithm") = "auto", py::arg("options") = py::dict(),
        py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0,
        "Allreduce with release_gather's options (they imply release_gather).");
}
