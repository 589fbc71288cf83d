// Allgatherv and allgather, and their node-shared forms: the builtin entries
// (entry.h) take the call as the user wrote it (buffers through bufspec.h,
// the options through the core's option table: options.h, the rest through
// arguments.h) and run_checked() hands it to the core's door
// (shancoll/coll/allgatherv/allgatherv.h). Inter-communicators go to
// intergroup.cc.
#include "shancoll/coll/allgatherv/allgatherv.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "entry.h"
#include "intergroup.h"
#include "options.h"
#include "request.h"
#include "shancoll/coll/request/requests.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// Checks `args` (byte counts and displacements; send set, or null: in
// place) against the buffers and runs one allgatherv through the door;
// args.recv == nullptr leaves the result in the node segment, returned as a
// read-only memoryview. A request form (mode) holds `views`, the buffers.
py::object run_checked(const char* collective, MPI_Comm comm, AllgathervArgs& args,
                       std::int64_t recv_bytes, std::int64_t send_bytes,
                       const std::string& algorithm, const CallOptions* options,
                       Mode mode = Mode::blocking, std::initializer_list<BufferView*> views = {}) {
  const auto p = static_cast<std::size_t>(size_of(comm));
  if (args.counts.size() == p && args.displs.size() == p) {  // else the door words it
    if (args.recv && args.extent() > recv_bytes)
      throw ArgumentError("recvbuf: too small: needs " + std::to_string(args.extent()) +
                          " bytes, has " + std::to_string(recv_bytes));
    const int rank = rank_of(comm);
    if (args.send && send_bytes < args.counts[rank])
      throw ArgumentError("sendbuf: has " + std::to_string(send_bytes) + " bytes, counts[" +
                          std::to_string(rank) + "] needs " + std::to_string(args.counts[rank]));
  }
  if (!args.send && !args.recv) throw ArgumentError("sendbuf: MPI.IN_PLACE needs a receive buffer");
  AllgathervCall call;
  call.comm = comm;
  call.args = std::move(args);
  call.send_bytes = call.args.send ? send_bytes : -1;
  call.allgather = std::string_view(collective).rfind("allgatherv", 0) != 0;
  call.algorithm = algorithm;
  call.options = options;
  if (mode != Mode::blocking)
    return request_in_mode(
        mode, [&](bool persistent) { return request_of(call, persistent); }, views);
  const std::byte* result = nullptr;
  {
    py::gil_scoped_release release;
    result = allgatherv(call).data;
  }
  if (call.args.recv) return py::none();
  return py::memoryview::from_memory(const_cast<std::byte*>(result),
                                     static_cast<py::ssize_t>(call.args.extent()), true);
}

// ---------------------------------------------------------------------------
// Argument intake: allgatherv(comm, sendbuf, recvbuf, *, algorithm,
// block_size, transport, ranks_per_node, timeout, intra_algorithm,
// single_copy, ring_window), and allgather with the same parameters.
enum {
  kComm,
  kSend,
  kRecv,
  kAlgorithm,
  kBlockSize,
  kTransport,
  kRanksPerNode,
  kTimeout,
  kIntra,
  kSingleCopy,
  kRingWindow
};

// block_size, transport, ranks_per_node and timeout (four handles in a row),
// through the option table; their defaults (0, "auto", None) set nothing.
void options_of(PythonOptions& options, const py::handle* o) {
  const bool zero = PyLong_CheckExact(o[0].ptr()) && PyLong_AsLongLong(o[0].ptr()) == 0;
  if (!zero) options.set("block_size", o[0]);
  if (!PyUnicode_Check(o[1].ptr()) || PyUnicode_CompareWithASCIIString(o[1].ptr(), "auto") != 0)
    options.set("transport", o[1]);
  options.set("ranks_per_node", o[2]);
  options.set("timeout", o[3]);
}

// single_copy and ring_window (one-node shan; None sets nothing). On an
// inter-communicator the option table refuses them, naming the key.
void mechanism_options_of(PythonOptions& options, const py::handle* a) {
  options.set("single_copy", a[kSingleCopy]);
  options.set("ring_window", a[kRingWindow]);
}

bool is_inter(MPI_Comm comm) {
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  return inter;
}

// This rank's contribution of `want` elements of the receive type; no
// buffer for IN_PLACE (None included).
Message contribution(py::handle send, const Element& recv, std::int64_t want, int rank) {
  if (is_in_place(send)) return {};
  Message m = parse_simple(send, "sendbuf", Access::read);
  check_send_element(m, recv);
  if (m.count != want) {
    const std::string r = std::to_string(rank), w = std::to_string(want);
    throw ArgumentError("sendbuf: sends " + std::to_string(m.count) +
                        " elements but the receive counts give rank " + r + " " + w + " (counts[" +
                        r + "] = " + w + ")");
  }
  return m;
}

// P blocks of `block` bytes, rank r's at offset + r * block.
Layout even_blocks(int p, std::int64_t block, std::int64_t offset) {
  Layout l;
  l.counts.assign(static_cast<std::size_t>(p), block);
  for (int r = 0; r < p; ++r) l.displs.push_back(offset + r * block);
  l.extent = offset + p * block;
  return l;
}

// The call on an inter-communicator (intergroup.cc).
py::object inter_call(MPI_Comm user, const py::handle* a, bool regular, Mode mode) {
  refuse_inter_request(mode, regular ? "allgather" : "allgatherv");
  PythonOptions options(Collective::intergroup);
  options_of(options, a + kBlockSize);
  mechanism_options_of(options, a);
  if (str_arg(a[kIntra], "intra_algorithm") != "auto") options.set("intra_algorithm", a[kIntra]);
  inter_allgatherv(user, a[kSend], a[kRecv], regular, str_arg(a[kAlgorithm], "algorithm"),
                   options.get());
  return py::none();
}

void refuse_intra_algorithm(py::handle intra_algorithm) {
  const std::string intra = str_arg(intra_algorithm, "intra_algorithm");
  if (intra != "auto")
    throw ArgumentError(
        "intra_algorithm: only for inter-communicators (the intragroup phase), "
        "got '" +
        intra + "' with an intra-communicator; use algorithm=");
}

// The receive layout and the contribution in hand: run on `comm`.
py::object run_intake(const char* collective, MPI_Comm comm, const std::string& algorithm,
                      const CallOptions* options, BufferView& recv, Layout& layout, Message& send,
                      Mode mode) {
  AllgathervArgs args;
  args.counts = std::move(layout.counts);
  args.displs = std::move(layout.displs);
  args.recv = recv.data();
  args.send = send.view.held() ? send.data() : nullptr;
  return run_checked(collective, comm, args, recv.bytes(), send.bytes(), algorithm, options, mode,
                     {&recv, &send.view});
}

py::object allgatherv_call(const py::handle* a, Mode mode) {
  const MPI_Comm user = comm_of(a[kComm]);
  if (is_inter(user)) return inter_call(user, a, false, mode);
  refuse_intra_algorithm(a[kIntra]);
  const std::string algorithm = str_arg(a[kAlgorithm], "algorithm");
  PythonOptions options(Collective::allgatherv);
  options_of(options, a + kBlockSize);
  mechanism_options_of(options, a);
  const int rank = rank_of(user);
  VectorMessage recv = parse_vector(a[kRecv], "recvbuf", size_of(user));
  const std::int64_t want = recv.layout.counts[static_cast<std::size_t>(rank)] / recv.element.size;
  Message send = contribution(a[kSend], recv.element, want, rank);
  return run_intake("allgatherv", user, algorithm, options.get(), recv.view, recv.layout, send,
                    mode);
}

py::object allgather_call(const py::handle* a, Mode mode) {
  const MPI_Comm user = comm_of(a[kComm]);
  if (is_inter(user)) return inter_call(user, a, true, mode);
  refuse_intra_algorithm(a[kIntra]);
  const std::string algorithm = str_arg(a[kAlgorithm], "algorithm");
  PythonOptions options(Collective::allgather);
  options_of(options, a + kBlockSize);
  mechanism_options_of(options, a);
  const int size = size_of(user);
  Message recv = parse_simple(a[kRecv], "recvbuf", Access::write, size);
  Layout layout = even_blocks(size, recv.bytes(), recv.offset);
  Message send = contribution(a[kSend], recv.element, recv.count, rank_of(user));
  return run_intake("allgather", user, algorithm, options.get(), recv.view, layout, send, mode);
}

// ---------------------------------------------------------------------------
// The node-shared calls: allgatherv_shared(comm, sendbuf, counts, displs, *,
// dtype, block_size, transport, ranks_per_node, timeout) and
// allgather_shared(comm, sendbuf, *, dtype, ...). The result: a read-only
// array over the node segment, of the send buffer's dtype.
enum { kSharedSend = 1, kSharedCounts = 2, kSharedDispls = 3 };

py::object numpy_dtype(const Element& e) {
  static const py::handle dtype = py::object(py::module_::import("numpy").attr("dtype")).release();
  if (e.byte) return dtype("u1");
  return dtype((e.kind == 'V' ? std::string("V") : std::string(1, e.kind)) +
               std::to_string(e.scalar));
}

// The `dtype` argument as an element: a NumPy dtype-like or an MPI datatype.
Element dtype_element(py::handle dtype) {
  if (PyObject_TypeCheck(dtype.ptr(), &PyMPIDatatype_Type)) return datatype_element(dtype, "dtype");
  py::object d;
  try {
    d = py::module_::import("numpy").attr("dtype")(dtype);
  } catch (py::error_already_set& e) {
    throw ArgumentError("dtype: not a dtype: " + std::string(py::repr(dtype)) + " (" +
                        std::string(py::str(e.value())) + ")");
  }
  Element el;
  el.kind = std::string(py::str(d.attr("kind")))[0];
  el.scalar = el.size = d.attr("itemsize").cast<std::int64_t>();
  if (!std::strchr("biufc", el.kind))
    el.kind = 'V', el.format = intern_format(py::str(d.attr("str")));
  return el;
}

// The contribution of a shared call, checked against `dtype` (None: any).
Message shared_send(py::handle send, py::handle dtype) {
  if (is_in_place(send))
    throw ArgumentError(
        "sendbuf: MPI.IN_PLACE is not possible with a shared result (there is no receive buffer "
        "to take the contribution from)");
  Message m = parse_simple(send, "sendbuf", Access::read);
  if (!dtype.is_none()) {
    const Element want = dtype_element(dtype);
    if (!want.same_type(m.element))
      throw ArgumentError("dtype: " + want.name() +
                          " does not match the send buffer's element type " + m.element.name());
  }
  return m;
}

// The node segment's result as an array of the send buffer's elements.
py::object shared_array(py::object view, py::handle send_obj, const Element& e) {
  static const py::handle frombuffer =
      py::object(py::module_::import("numpy").attr("frombuffer")).release();
  if (is_ndarray(send_obj)) return frombuffer(view, send_obj.attr("dtype"));
  py::object flat = frombuffer(view, numpy_dtype(e));
  if (e.size == e.scalar) return flat;
  return flat.attr("reshape")(py::make_tuple(-1, e.size / e.scalar));
}

// The node segment's view of a shared call's result.
py::object run_shared(const char* collective, MPI_Comm comm, const CallOptions* options,
                      Message& send, Layout& layout) {
  BufferView no_recv;  // no receive buffer: the result stays in the segment
  return run_intake(collective, comm, "shan", options, no_recv, layout, send, Mode::blocking);
}

// allgatherv_shared(comm, sendbuf, counts, displs, *, dtype, block_size, ...)
py::object allgatherv_shared_call(const py::handle* a) {
  enum { kDtype = 4 };
  const MPI_Comm user = comm_of(a[kComm]);
  PythonOptions options(Collective::allgatherv);
  options_of(options, a + kDtype + 1);
  Message send = shared_send(a[kSharedSend], a[kDtype]);
  const int rank = rank_of(user);
  Layout layout =
      parse_layout(a[kSharedCounts], a[kSharedDispls], send.element.size, size_of(user));
  const std::int64_t mine = layout.counts[static_cast<std::size_t>(rank)];
  if (send.bytes() != mine)
    throw ArgumentError("sendbuf: sends " + std::to_string(send.count) + " elements but counts[" +
                        std::to_string(rank) + "] is " + std::to_string(mine / send.element.size));
  py::object view = run_shared("allgatherv_shared", user, options.get(), send, layout);
  return shared_array(view, a[kSharedSend], send.element);
}

// allgather_shared(comm, sendbuf, *, dtype, block_size, ...): shape (P,
// *sendbuf.shape), or (P, count) for a spec.
py::object allgather_shared_call(const py::handle* a) {
  enum { kDtype = 2 };
  const MPI_Comm user = comm_of(a[kComm]);
  PythonOptions options(Collective::allgather);
  options_of(options, a + kDtype + 1);
  Message send = shared_send(a[kSharedSend], a[kDtype]);
  const int p = size_of(user);
  Layout layout = even_blocks(p, send.bytes(), 0);
  py::object flat = shared_array(run_shared("allgather_shared", user, options.get(), send, layout),
                                 a[kSharedSend], send.element);
  py::list shape;
  shape.append(p);
  if (is_ndarray(a[kSharedSend])) {
    for (py::handle n : py::tuple(a[kSharedSend].attr("shape"))) shape.append(n);
  } else {
    shape.append(send.count);
    if (send.element.size != send.element.scalar)
      shape.append(send.element.size / send.element.scalar);
  }
  return flat.attr("reshape")(py::tuple(shape));
}

EntrySpec allgather_spec(bool vector, Mode mode) {
  const py::object none = py::none(), automatic = py::str("auto");
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", py::object()},
           {"algorithm", automatic},
           {"block_size", py::int_(0)},
           {"transport", automatic},
           {"ranks_per_node", none},
           {"timeout", none},
           {"intra_algorithm", automatic},
           {"single_copy", none},
           {"ring_window", none}},
          3,
          vector ? runner<allgatherv_call>(mode) : runner<allgather_call>(mode)};
}

EntrySpec shared_spec(bool vector) {
  const py::object none = py::none();
  std::vector<EntryParam> params = {{"comm", py::object()}, {"sendbuf", py::object()}};
  if (vector) params.insert(params.end(), {{"counts", py::object()}, {"displs", none}});
  params.insert(params.end(), {{"dtype", none},
                               {"block_size", py::int_(0)},
                               {"transport", py::str("auto")},
                               {"ranks_per_node", none},
                               {"timeout", none}});
  return {std::move(params), vector ? 4 : 2,
          vector ? allgatherv_shared_call : allgather_shared_call};
}

}  // namespace

void bind_allgatherv(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  m.def(
      "allgatherv_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), allgather_spec(true, static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.allgatherv (mode 1: iallgatherv, 2: allgatherv_init) with "
      "the name and docstring of `signature`.");
  m.def(
      "allgather_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), allgather_spec(false, static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.allgather (mode 1: iallgather, 2: allgather_init) with the "
      "name and docstring of `signature`.");
  m.def(
      "allgatherv_shared_entry",
      [](py::function signature) { return make_entry(std::move(signature), shared_spec(true)); },
      "The builtin function shancoll.allgatherv_shared with the name and docstring of "
      "`signature`.");
  m.def(
      "allgather_shared_entry",
      [](py::function signature) { return make_entry(std::move(signature), shared_spec(false)); },
      "The builtin function shancoll.allgather_shared with the name and docstring of "
      "`signature`.");
}
