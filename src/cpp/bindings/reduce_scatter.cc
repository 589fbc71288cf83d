// pybind11 bindings of reduce_scatter and reduce_scatter_block. The builtin
// entries (entry.h) take the call as the user wrote it: buffers through
// bufspec.h (MPI.IN_PLACE: the whole input in recvbuf, the result at its
// start), recvcounts as one count per rank, the op and the rest through
// arguments.h, the options through the core's option table (options.h),
// then the core's door (shancoll/coll/reduce_scatter/reduce_scatter.h)
// checks, selects and runs.
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"

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

enum { kComm, kSend, kRecv };

// An inter-communicator is refused before its group's size is taken for the
// number of blocks (a buffer error would come first, and mislead).
void check_intra(MPI_Comm comm) {
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter)
    throw ArgumentError("comm: an inter-communicator (reduce_scatter runs on intra-communicators)");
}

// Scalars of the reduction type in a message.
std::int64_t scalars(const Message& m) { return m.bytes() / m.element.scalar; }

// recvbuf, and sendbuf unless in place (then it holds no buffer).
struct Buffers {
  Message recv, send;
  DType type{};
  std::int64_t per_element = 1;  // scalars per element of recvbuf's datatype
};

Buffers parse_buffers(py::handle send, py::handle recv) {
  Buffers b{parse_simple(recv, "recvbuf", Access::write),
            is_in_place(send) ? Message{} : parse_simple(send, "sendbuf", Access::read)};
  b.type = b.recv.element.reduction_type("recvbuf");
  b.per_element = b.recv.element.size / b.recv.element.scalar;
  if (b.send.view.held()) check_send_element(b.send, b.recv.element);
  return b;
}

// The input holds `total` scalars: sendbuf, or in place recvbuf.
void check_input(const Buffers& b, std::int64_t total, std::int64_t mine) {
  if (!b.send.view.held()) {
    if (scalars(b.recv) < total)
      throw ArgumentError("recvbuf: in place it holds the whole input, " + std::to_string(total) +
                          " elements, but has " + std::to_string(scalars(b.recv)));
    return;
  }
  if (scalars(b.send) != total)
    throw ArgumentError("sendbuf: " + std::to_string(scalars(b.send)) +
                        " elements, but the blocks of all ranks make " + std::to_string(total));
  if (scalars(b.recv) < mine)
    throw ArgumentError("recvbuf: " + std::to_string(scalars(b.recv)) +
                        " elements, but this rank's block has " + std::to_string(mine));
}

struct Common {
  std::string algorithm;
  PythonOptions options;
  Common(Collective c, const py::handle* a, int first) : options(c) {
    algorithm = str_arg(a[first], "algorithm");  // then commute, ranks_per_node, timeout, options
    options.set("ranks_per_node", a[first + 2]);
    options.set("timeout", a[first + 3]);
    if (PyDict_GET_SIZE(a[first + 4].ptr()) != 0)
      options.set_all(py::reinterpret_borrow<py::dict>(a[first + 4]));
  }
};

py::object run(ReduceScatterCall& call, Buffers& b, OpArg& op, Common& c, bool block, Mode mode) {
  call.send = b.send.view.held() ? b.send.data() : nullptr;
  call.recv = b.recv.data();
  call.type = b.type;
  call.op = op.get();
  call.algorithm = c.algorithm;
  call.options = c.options.get();
  if (mode != Mode::blocking)
    return request_in_mode(
        mode, [&](bool persistent) { return request_of(call, block, persistent); },
        {&b.send.view, &b.recv.view}, op.take_created());
  py::gil_scoped_release release;  // user ops re-acquire it
  if (block)
    shancoll::reduce_scatter_block(call);
  else
    shancoll::reduce_scatter(call);
  return py::none();
}

// reduce_scatter_block(comm, sendbuf, recvbuf, op, algorithm, *, commute,
// ranks_per_node, timeout, **options)
py::object block_call(const py::handle* a, Mode mode) {
  enum { kOp = 3, kAlgorithm, kCommute };
  const MPI_Comm comm = comm_of(a[kComm]);
  check_intra(comm);
  Common c(Collective::reduce_scatter_block, a, kAlgorithm);
  Buffers b = parse_buffers(a[kSend], a[kRecv]);
  const int size = size_of(comm);
  std::int64_t count = scalars(b.recv);
  if (!b.send.view.held()) {
    if (count % size)
      throw ArgumentError("recvbuf: in place it holds the whole input, " + std::to_string(size) +
                          " equal blocks, but has " + std::to_string(count) + " elements");
    count /= size;
  }
  check_input(b, count * size, count);
  OpArg op(a[kOp], a[kCommute]);
  ReduceScatterCall call;
  call.comm = comm;
  call.count = count;
  return run(call, b, op, c, true, mode);
}

// reduce_scatter(comm, sendbuf, recvbuf, recvcounts, op, algorithm, *,
// commute, ranks_per_node, timeout, **options)
py::object vector_call(const py::handle* a, Mode mode) {
  enum { kCounts = 3, kOp, kAlgorithm, kCommute };
  const MPI_Comm comm = comm_of(a[kComm]);
  check_intra(comm);
  Common c(Collective::reduce_scatter, a, kAlgorithm);
  if (a[kCounts].is_none())
    throw ArgumentError(
        "recvcounts: required, one count per rank (mpi4py gathers them from the ranks' recvbufs; "
        "shancoll checks its arguments before any communication)");
  Buffers b = parse_buffers(a[kSend], a[kRecv]);
  const int size = size_of(comm);
  std::vector<std::int64_t> counts;
  try {
    counts = parse_layout(a[kCounts], py::none(), b.per_element, size).counts;
  } catch (const ArgumentError& e) {
    throw ArgumentError(std::string("recv") + e.what());  // "counts: ..." -> "recvcounts: ..."
  }
  std::int64_t total = 0;
  for (std::int64_t n : counts) total += n;
  check_input(b, total, counts[static_cast<std::size_t>(rank_of(comm))]);
  OpArg op(a[kOp], a[kCommute]);
  ReduceScatterCall call;
  call.comm = comm;
  call.counts = counts.data();
  return run(call, b, op, c, false, mode);
}

std::vector<EntryParam> tail_params() {
  const py::object none = py::none();
  return {{"op", py::module_::import("mpi4py.MPI").attr("SUM")},
          {"algorithm", py::str("auto")},
          {"commute", py::bool_(false)},
          {"ranks_per_node", none},
          {"timeout", none}};
}

EntrySpec block_spec(Mode mode) {
  std::vector<EntryParam> params = {
      {"comm", py::object()}, {"sendbuf", py::object()}, {"recvbuf", py::object()}};
  for (EntryParam& p : tail_params()) params.push_back(std::move(p));
  return {std::move(params), 5, runner<block_call>(mode), true};
}

EntrySpec vector_spec(Mode mode) {
  std::vector<EntryParam> params = {{"comm", py::object()},
                                    {"sendbuf", py::object()},
                                    {"recvbuf", py::object()},
                                    {"recvcounts", py::none()}};
  for (EntryParam& p : tail_params()) params.push_back(std::move(p));
  return {std::move(params), 6, runner<vector_call>(mode), true};
}

}  // namespace

void bind_reduce_scatter(py::module_& m) {
  m.def(
      "reduce_scatter_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), vector_spec(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.reduce_scatter (mode 1: ireduce_scatter, 2: "
      "reduce_scatter_init) with the name and docstring of `signature`.");
  m.def(
      "reduce_scatter_block_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), block_spec(static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.reduce_scatter_block (mode 1: ireduce_scatter_block, 2: "
      "reduce_scatter_block_init) with the name and docstring of `signature`.");
}
