// Bindings of the intergroup collectives (allgather and allgatherv on
// inter-communicators; allgatherv.cc's entries come here): kept apart from
// module.cc, which calls bind_intergroup(m). Counts and displacements are
// bytes of the REMOTE group.
#include "shancoll/coll/intergroup/intergroup.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <string>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "intergroup.h"
#include "shancoll/intercomm.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

int remote_size_of(MPI_Comm comm) {
  int size = 0;
  check_mpi(MPI_Comm_remote_size(comm, &size), "MPI_Comm_remote_size");
  return size;
}

// The receive buffer and its layout over the remote group: allgather's
// equal blocks, or allgatherv's vector spec.
VectorMessage remote_receive(py::handle recv, int remote, bool regular) {
  if (!regular) return parse_vector(recv, "recvbuf", remote);
  Message m = parse_simple(recv, "recvbuf", Access::write, remote);
  VectorMessage v{std::move(m.view), m.element, {}};
  for (int r = 0; r < remote; ++r) {
    v.layout.counts.push_back(m.bytes());
    v.layout.displs.push_back(m.offset + r * m.bytes());
  }
  return v;
}

}  // namespace

void bindings::inter_allgatherv(MPI_Comm user, py::handle send, py::handle recv, bool regular,
                                const std::string& algorithm, const CallOptions* options) {
  if (is_in_place(send))
    throw ArgumentError("sendbuf: MPI.IN_PLACE is not allowed on an inter-communicator");
  VectorMessage r = remote_receive(recv, remote_size_of(user), regular);
  const Message s = parse_simple(send, "sendbuf", Access::read);
  check_send_element(s, r.element);
  IntergroupCall call;
  call.comm = user;
  call.args.send = s.data();
  call.args.send_bytes = s.bytes();
  call.args.recv = r.view.data();
  call.args.counts = std::move(r.layout.counts);
  call.args.displs = std::move(r.layout.displs);
  call.args.regular = regular;
  call.recv_bytes = r.view.bytes();
  call.algorithm = algorithm;
  call.options = options;
  py::gil_scoped_release release;
  intergroup_allgatherv(call);
}

namespace {

py::dict inter_stats(py::handle comm) {
  const InterComm* ic = InterComm::find(comm_of(comm));
  return ic ? stats_dict(ic->last_stats, ic->last_algorithm) : stats_dict(Stats{}, "");
}

}  // namespace

void bind_intergroup(py::module_& m) {
  // mpi4py's C API lives in static variables of each translation unit.
  if (import_mpi4py() < 0) throw py::error_already_set();
  m.def("inter_last_stats", &inter_stats, py::arg("comm"),
        "Statistics of the last intergroup collective this process ran on comm (local).");
}
