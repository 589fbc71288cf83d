// Allgatherv and allgather: the general call (byte counts and displacements
// from the Python layer, which parses every buffer spec) and the builtin
// entries' plain calls (entry.h, fast_args.h), which take the common forms
// straight from the caller: about 2 us of Python argument handling less per
// call, on messages whose whole collective takes 1-4 us.
#include "shancoll/coll/allgatherv/allgatherv.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "common.h"
#include "entry.h"
#include "fast_args.h"
#include "options.h"
#include "shancoll/comm.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// A C-contiguous buffer of the general path (the Python layer has checked
// it already), or ArgumentError naming it.
void acquire_or_throw(View& v, py::handle obj, const char* name, int flags) {
  if (!v.acquire(obj, flags))
    throw ArgumentError(std::string(name) + ": not a C-contiguous" +
                        (flags & PyBUF_WRITABLE ? " writable" : "") + " buffer");
}

// Checks `args` (byte counts and displacements; send set, or null: in
// place) against the buffers and runs one allgatherv through the door;
// args.recv == nullptr leaves the result in the node segment, returned as a
// read-only memoryview.
py::object run_checked(const char* collective, MPI_Comm comm, AllgathervArgs& args,
                       std::int64_t recv_bytes, std::int64_t send_bytes,
                       const std::string& algorithm, const CallOptions* options) {
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
  const std::byte* result = nullptr;
  {
    py::gil_scoped_release release;
    result = allgatherv(call).data;
  }
  if (call.args.recv) return py::none();
  return py::memoryview::from_memory(const_cast<std::byte*>(result),
                                     static_cast<py::ssize_t>(call.args.extent()), true);
}

// The options the entries took: block_size (0: not given), transport
// ("" or "auto": not given), ranks_per_node (-1: not given), timeout (0: not given).
void set_options(PythonOptions& o, std::int64_t block_size, const std::string& transport,
                 int ranks_per_node, double timeout) {
  if (block_size) o.set("block_size", block_size);
  if (!transport.empty() && transport != "auto") o.set("transport", transport);
  if (ranks_per_node >= 0) o.set("ranks_per_node", std::int64_t{ranks_per_node});
  if (timeout) o.set("timeout", timeout);
}

// The general call: counts and displacements in bytes; send None: in place.
py::object run_general(const char* collective, py::handle comm_obj, py::object send,
                       std::byte* recv, std::int64_t recv_bytes, std::vector<std::int64_t> counts,
                       std::vector<std::int64_t> displs, const std::string& algorithm,
                       const CallOptions* options) {
  AllgathervArgs args;
  args.counts = std::move(counts);
  args.displs = std::move(displs);
  args.recv = recv;
  View s;
  if (!send.is_none()) {
    acquire_or_throw(s, send, "sendbuf", PyBUF_SIMPLE);
    args.send = static_cast<const std::byte*>(s.ptr());
  }
  return run_checked(collective, mpi_comm_of(comm_obj), args, recv_bytes, s.bytes(), algorithm,
                     options);
}

// The plain calls: allgatherv(comm, sendbuf, recvbuf, *, algorithm,
// block_size, transport, ranks_per_node, timeout, intra_algorithm), and
// allgather with the same parameters.
enum { kComm, kSend, kRecv, kAlgorithm, kBlockSize, kTransport, kRanksPerNode, kTimeout, kIntra };

// An intra-communicator (inter-communicators have their own algorithms).
bool plain_intracomm(py::handle h, MPI_Comm& out) {
  if (!plain_comm(h)) return false;
  out = *PyMPIComm_Get(h.ptr());
  int inter = 1, finalized = 1;
  MPI_Finalized(&finalized);
  return !finalized && out != MPI_COMM_NULL && MPI_Comm_test_inter(out, &inter) == MPI_SUCCESS &&
         !inter;
}

// block_size, transport, ranks_per_node and timeout (four handles in a row)
// as the Python layer would pass them on: ranks_per_node None or >= 0.
bool plain_options(const py::handle* o, PythonOptions& options) {
  std::string transport;
  int block_size = 0, rpn = -1;
  double timeout = 0;
  if (!plain_int(o[0], block_size, 0) || !plain_algorithm(o[1], transport) ||
      !plain_int(o[2], rpn, -1) || !plain_timeout(o[3], timeout) || (!o[2].is_none() && rpn < 0))
    return false;
  set_options(options, block_size, transport, rpn, timeout);
  return true;
}

// A non-negative exact int times `scale`, no overflow beyond `limit`.
bool plain_size(PyObject* item, std::int64_t scale, std::int64_t limit, std::int64_t& out) {
  if (!PyLong_CheckExact(item)) return false;
  const long long v = PyLong_AsLongLong(item);
  if (v < 0 || v > limit / scale) {
    PyErr_Clear();
    return false;
  }
  out = v * scale;
  return true;
}

constexpr std::int64_t kMaxBytes = std::numeric_limits<std::int64_t>::max();

// p sizes from an exact list, each times `scale`.
bool plain_sizes(py::handle list, int p, std::int64_t scale, std::vector<std::int64_t>& out) {
  if (!PyList_CheckExact(list.ptr()) || PyList_GET_SIZE(list.ptr()) != p) return false;
  out.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r)
    if (!plain_size(PyList_GET_ITEM(list.ptr(), r), scale, kMaxBytes, out[r])) return false;
  return true;
}

// A writable C-contiguous ndarray of a plain numeric dtype.
bool plain_recv(py::handle arr, View& v) {
  char kind = 0;
  return is_ndarray(arr) && v.acquire(arr, PyBUF_FORMAT | PyBUF_WRITABLE) &&
         numpy_kind(v.get().format, kind) && v.get().itemsize > 0;
}

// IN_PLACE (None included), or an ndarray of recv's dtype holding exactly
// `bytes`, as the Python layer requires.
bool plain_send(py::handle send, const View& recv, std::int64_t bytes, View& s) {
  if (is_in_place(send)) return true;
  return is_ndarray(send) && s.acquire(send, PyBUF_FORMAT) && s.bytes() == bytes &&
         s.get().itemsize == recv.get().itemsize &&
         std::strcmp(s.get().format, recv.get().format) == 0;
}

// One size for every rank (a count), or rank r's r times it (a stride), or
// a list as plain_sizes.
bool plain_sizes_or_int(py::handle h, int p, std::int64_t scale, bool stride,
                        std::vector<std::int64_t>& out) {
  std::int64_t one = 0;
  if (!PyLong_CheckExact(h.ptr())) return plain_sizes(h, p, scale, out);
  if (!plain_size(h.ptr(), scale, kMaxBytes / std::max(p, 1), one)) return false;
  out.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) out[static_cast<std::size_t>(r)] = one * (stride ? r : 1);
  return true;
}

// Exclusive prefix sum of args.counts.
void packed_displs(AllgathervArgs& args) {
  args.displs.resize(args.counts.size());
  std::int64_t at = 0;
  for (std::size_t r = 0; r < args.counts.size(); ++r) args.displs[r] = at, at += args.counts[r];
}

// P blocks of `block` bytes, rank r's at r * block.
void even_blocks(AllgathervArgs& args, int p, std::int64_t block) {
  args.counts.assign(static_cast<std::size_t>(p), block);
  args.displs.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) args.displs[static_cast<std::size_t>(r)] = r * block;
}

// allgather's recvbuf (and allgatherv's plain array): an ndarray of P equal
// blocks, rank r's at r * block; false when not plain (mpi4py's uneven
// split of allgatherv is the Python layer's).
bool block_layout(py::handle recv, int p, View& v, AllgathervArgs& args) {
  if (!plain_recv(recv, v)) return false;
  const std::int64_t esize = v.get().itemsize, elements = v.bytes() / esize;
  if (elements % p) return false;
  even_blocks(args, p, elements / p * esize);
  return true;
}

// allgatherv's recvbuf: an ndarray (split evenly over the ranks), [ndarray,
// counts] or [ndarray, counts, displs] with lists of ints (displs None:
// packed); false when not plain.
bool vector_layout(py::handle recv, int p, View& v, AllgathervArgs& args) {
  const bool spec = PyList_CheckExact(recv.ptr()) || PyTuple_CheckExact(recv.ptr());
  if (!spec) return block_layout(recv, p, v, args);
  const Py_ssize_t items = PySequence_Fast_GET_SIZE(recv.ptr());
  if (items < 2 || items > 3) return false;
  PyObject** item = PySequence_Fast_ITEMS(recv.ptr());
  if (!plain_recv(item[0], v)) return false;
  const std::int64_t esize = v.get().itemsize;
  if (!plain_sizes(item[1], p, esize, args.counts)) return false;
  if (items == 3 && item[2] != Py_None) {
    if (!plain_sizes(item[2], p, esize, args.displs)) return false;
  } else {
    packed_displs(args);
  }
  return args.extent() <= v.bytes();  // else the Python layer words it
}

// The plain call once `layout` has read recvbuf: comm and options checked,
// sendbuf checked against the layout, then the collective.
template <class Layout>
py::object run_plain(const char* collective, const py::handle* a, Layout&& layout) {
  MPI_Comm user = MPI_COMM_NULL;
  std::string algorithm, intra;
  PythonOptions options(std::string_view(collective) == "allgather" ? Collective::allgather
                                                                    : Collective::allgatherv);
  if (!plain_intracomm(a[kComm], user) || !plain_algorithm(a[kAlgorithm], algorithm) ||
      !plain_algorithm(a[kIntra], intra) || !intra.empty() ||
      !plain_options(a + kBlockSize, options))
    return py::object();
  View v, s;
  AllgathervArgs args;
  if (!layout(a[kRecv], size_of(user), v, args) ||
      !plain_send(a[kSend], v, args.counts[static_cast<std::size_t>(rank_of(user))], s))
    return py::object();
  args.send = static_cast<const std::byte*>(s.ptr());
  args.recv = static_cast<std::byte*>(v.ptr());
  return run_checked(collective, user, args, v.bytes(), s.bytes(), algorithm, options.get());
}

py::object allgatherv_plain(const py::handle* a) {
  return run_plain("allgatherv", a, vector_layout);
}
py::object allgather_plain(const py::handle* a) { return run_plain("allgather", a, block_layout); }

// The node-shared calls: allgatherv_shared(comm, sendbuf, counts, displs, *,
// dtype, block_size, transport, ranks_per_node, timeout) and
// allgather_shared(comm, sendbuf, *, dtype, ...), for a C-contiguous ndarray
// of a plain numeric dtype, dtype None, counts and displs as ints or lists of
// ints. The result as the Python layer builds it: numpy.frombuffer of the
// segment's read-only view with the send array's dtype.
enum { kSharedSend = 1, kSharedCounts = 2, kSharedDispls = 3 };

py::object shared_array(py::object view, py::handle send) {
  static const py::handle frombuffer =  // kept for the module's life
      py::object(py::module_::import("numpy").attr("frombuffer")).release();
  return frombuffer(view, send.attr("dtype"));
}

template <class Layout>
py::object run_shared(const char* collective, const py::handle* a, int dtype_index,
                      Layout&& layout) {
  MPI_Comm user = MPI_COMM_NULL;
  PythonOptions options(Collective::allgatherv);
  const py::handle send = a[kSharedSend];
  View s;
  char kind = 0;
  if (!plain_intracomm(a[kComm], user) || !a[dtype_index].is_none() ||
      !plain_options(a + dtype_index + 1, options) || !is_ndarray(send) ||
      !s.acquire(send, PyBUF_FORMAT) || !numpy_kind(s.get().format, kind))
    return py::object();
  AllgathervArgs args;
  if (!layout(a, size_of(user), s, args) ||
      args.counts[static_cast<std::size_t>(rank_of(user))] != s.bytes())
    return py::object();
  args.send = static_cast<const std::byte*>(s.ptr());
  return shared_array(run_checked(collective, user, args, 0, s.bytes(), "shan", options.get()),
                      send);
}

py::object allgatherv_shared_plain(const py::handle* a) {
  return run_shared("allgatherv_shared", a, 4,
                    [](const py::handle* h, int p, const View& s, AllgathervArgs& args) {
                      const std::int64_t esize = s.get().itemsize;
                      if (!plain_sizes_or_int(h[kSharedCounts], p, esize, false, args.counts))
                        return false;
                      if (h[kSharedDispls].is_none()) {
                        packed_displs(args);
                        return true;
                      }
                      return plain_sizes_or_int(h[kSharedDispls], p, esize, true, args.displs);
                    });
}

py::object allgather_shared_plain(const py::handle* a) {
  int p = 0;
  py::object flat =
      run_shared("allgather_shared", a, 2,
                 [&p](const py::handle*, int size, const View& s, AllgathervArgs& args) {
                   p = size;
                   even_blocks(args, p, s.bytes());
                   return true;
                 });
  if (!flat) return flat;
  const py::tuple send_shape = a[kSharedSend].attr("shape");
  py::tuple shape(send_shape.size() + 1);  // (P, *sendbuf.shape)
  shape[0] = p;
  for (std::size_t i = 0; i < send_shape.size(); ++i) shape[i + 1] = send_shape[i];
  return flat.attr("reshape")(shape);
}

EntrySpec allgather_spec(bool vector) {
  const py::object none = py::none(), automatic = py::str("auto");
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", py::object()},
           {"algorithm", automatic},
           {"block_size", py::int_(0)},
           {"transport", automatic},
           {"ranks_per_node", none},
           {"timeout", none},
           {"intra_algorithm", automatic}},
          3,
          vector ? allgatherv_plain : allgather_plain};
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
          vector ? allgatherv_shared_plain : allgather_shared_plain};
}

}  // namespace

void bind_allgatherv(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  init_fast_args();
  m.def(
      "allgatherv_entry",
      [](py::function impl) { return make_entry(std::move(impl), allgather_spec(true)); },
      "The builtin entry for shancoll.allgatherv with `impl` as its general path.");
  m.def(
      "allgather_entry",
      [](py::function impl) { return make_entry(std::move(impl), allgather_spec(false)); },
      "The builtin entry for shancoll.allgather with `impl` as its general path.");
  m.def(
      "allgatherv_shared_entry",
      [](py::function impl) { return make_entry(std::move(impl), shared_spec(true)); },
      "The builtin entry for shancoll.allgatherv_shared with `impl` as its general path.");
  m.def(
      "allgather_shared_entry",
      [](py::function impl) { return make_entry(std::move(impl), shared_spec(false)); },
      "The builtin entry for shancoll.allgather_shared with `impl` as its general path.");

  m.def(
      "allgatherv",
      [](py::handle comm, py::object send, py::object recv, std::vector<std::int64_t> counts,
         std::vector<std::int64_t> displs, const std::string& algorithm, std::int64_t block_size,
         const std::string& transport, int ranks_per_node, double timeout) {
        PythonOptions o(Collective::allgatherv);
        set_options(o, block_size, transport, ranks_per_node, timeout);
        View r;
        acquire_or_throw(r, recv, "recvbuf", PyBUF_WRITABLE);
        return run_general("allgatherv", comm, send, static_cast<std::byte*>(r.ptr()), r.bytes(),
                           std::move(counts), std::move(displs), algorithm, o.get());
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("counts"), py::arg("displs"),
      py::arg("algorithm") = "", py::arg("block_size") = 0, py::arg("transport") = "two_sided",
      py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0,
      "Allgatherv in bytes; send=None means in place. Statistics: last_stats(comm).");

  m.def(
      "allgatherv_shared",
      [](py::handle comm, py::object send, std::vector<std::int64_t> counts,
         std::vector<std::int64_t> displs, std::int64_t block_size, const std::string& transport,
         int ranks_per_node, double timeout) {
        PythonOptions o(Collective::allgatherv);
        set_options(o, block_size, transport, ranks_per_node, timeout);
        return run_general("allgatherv_shared", comm, send, nullptr, 0, std::move(counts),
                           std::move(displs), "shan", o.get());
      },
      py::arg("comm"), py::arg("send"), py::arg("counts"), py::arg("displs"),
      py::arg("block_size") = 0, py::arg("transport") = "two_sided", py::arg("ranks_per_node") = -1,
      py::arg("timeout") = 0.0,
      "Allgatherv (shan) leaving the result in the node segment: a read-only memoryview.");
}
