// Alltoall and alltoallv: the builtin entries (entry.h) take the call as the
// user wrote it (buffers through bufspec.h as mpi4py's Comm.Alltoall(v):
// simple messages of P blocks, or [buf, counts, displs, datatype]; the
// options through the core's option table: options.h) and hand it to the
// core's door (shancoll/coll/alltoallv/alltoallv.h) without the GIL.
#include "shancoll/coll/alltoallv/alltoallv.h"

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>
#include <utility>

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

// alltoall(v)(comm, sendbuf, recvbuf, algorithm, *, ranks_per_node, timeout, **options)
enum { kComm, kSend, kRecv, kAlgorithm, kRanksPerNode, kTimeout, kOptions };

const CallOptions* options_of(PythonOptions& options, const py::handle* a) {
  options.set("ranks_per_node", a[kRanksPerNode]);
  options.set("timeout", a[kTimeout]);
  if (PyDict_GET_SIZE(a[kOptions].ptr()) != 0)
    options.set_all(py::reinterpret_borrow<py::dict>(a[kOptions]));
  return options.get();
}

// An inter-communicator is refused before the buffers are read (their blocks
// would be counted by the local group's size, and the error differ by group).
// A communicator shancoll has set up is an intra-communicator.
void refuse_inter(MPI_Comm comm) {
  if (Comm::find(comm)) return;
  int inter = 0;
  check_mpi(MPI_Comm_test_inter(comm, &inter), "MPI_Comm_test_inter");
  if (inter)
    throw ArgumentError(
        "comm: inter-communicators are supported by allgather and allgatherv "
        "only, not by this collective");
}

// A send buffer of no bytes may export no address; null would mean in place.
const std::byte* send_address(std::byte* data) {
  static const std::byte nothing{};
  return data ? data : &nothing;
}

// The call, or its request form holding the buffers.
py::object run(AlltoallvCall& call, const py::handle* a, Mode mode, BufferView& send,
               BufferView& recv) {
  const std::string algorithm = str_arg(a[kAlgorithm], "algorithm");
  call.algorithm = algorithm;
  if (mode != Mode::blocking)
    return request_in_mode(mode, [&](bool persistent) { return request_of(call, persistent); },
                           {&send, &recv});
  py::gil_scoped_release release;
  alltoallv(call);
  return py::none();
}

// P blocks of `block` bytes, rank r's at offset + r * block.
void even_blocks(int p, std::int64_t block, std::int64_t offset, std::vector<std::int64_t>& counts,
                 std::vector<std::int64_t>& displs) {
  counts.assign(static_cast<std::size_t>(p), block);
  displs.resize(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) displs[static_cast<std::size_t>(r)] = offset + r * block;
}

py::object alltoall_call(const py::handle* a, Mode mode) {
  AlltoallvCall call;
  call.comm = comm_of(a[kComm]);
  refuse_inter(call.comm);
  call.alltoall = true;
  const int p = size_of(call.comm);
  Message recv = parse_simple(a[kRecv], "recvbuf", Access::write, p);
  Message send;
  if (!is_in_place(a[kSend])) {
    send = parse_simple(a[kSend], "sendbuf", Access::read, p);
    check_send_element(send, recv.element);
    if (send.count != recv.count)
      throw ArgumentError("sendbuf: " + std::to_string(send.count) +
                          " elements per rank, but recvbuf receives " + std::to_string(recv.count) +
                          " per rank");
  }
  AlltoallvArgs& args = call.args;
  args.regular = true;
  args.recv = recv.data();
  even_blocks(p, recv.bytes(), 0, args.recv_counts, args.recv_displs);
  if (send.view.held()) {
    args.send = send_address(send.data());
    even_blocks(p, send.bytes(), 0, args.send_counts, args.send_displs);
  }
  PythonOptions options(Collective::alltoall);
  call.options = options_of(options, a);
  return run(call, a, mode, send.view, recv.view);
}

// A vector message whose errors all name it: there are two, and the
// layout's own errors ("counts: ...") would not say which.
VectorMessage vector_arg(py::handle spec, const char* name, int p, Access access) {
  try {
    return parse_vector(spec, name, p, access);
  } catch (const ArgumentError& e) {
    const std::string what = e.what();
    if (what.rfind(name, 0) == 0) throw;
    throw ArgumentError(std::string(name) + ": " + what);
  }
}

py::object alltoallv_call(const py::handle* a, Mode mode) {
  AlltoallvCall call;
  call.comm = comm_of(a[kComm]);
  refuse_inter(call.comm);
  const int p = size_of(call.comm);
  VectorMessage recv = vector_arg(a[kRecv], "recvbuf", p, Access::write);
  AlltoallvArgs& args = call.args;
  args.recv = recv.view.data();
  args.recv_counts = std::move(recv.layout.counts);
  args.recv_displs = std::move(recv.layout.displs);
  VectorMessage send;
  if (!is_in_place(a[kSend])) {
    send = vector_arg(a[kSend], "sendbuf", p, Access::read);
    if (!send.element.same_type(recv.element))
      throw ArgumentError("sendbuf: element type " + send.element.name() +
                          " does not match the receive buffer's " + recv.element.name());
    args.send = send_address(send.view.data());
    args.send_counts = std::move(send.layout.counts);
    args.send_displs = std::move(send.layout.displs);
  }
  PythonOptions options(Collective::alltoallv);
  call.options = options_of(options, a);
  return run(call, a, mode, send.view, recv.view);
}

EntrySpec alltoall_spec(bool vector, Mode mode) {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", py::object()},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          4,
          vector ? runner<alltoallv_call>(mode) : runner<alltoall_call>(mode),
          true};
}

}  // namespace

void bind_alltoallv(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  m.def(
      "alltoall_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), alltoall_spec(false, static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.alltoall (mode 1: ialltoall, 2: alltoall_init) with the name "
      "and docstring of `signature`.");
  m.def(
      "alltoallv_entry",
      [](py::function signature, int mode) {
        return make_entry(std::move(signature), alltoall_spec(true, static_cast<Mode>(mode)));
      },
      py::arg("signature"), py::arg("mode") = 0,
      "The builtin function shancoll.alltoallv (mode 1: ialltoallv, 2: alltoallv_init) with the "
      "name and docstring of `signature`.");
}
