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
#include "shancoll/progress.h"
#include "shancoll/select.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

void check_layout(const InterAllgathervArgs& args, int remote_size, std::int64_t recv_bytes) {
  if (static_cast<int>(args.counts.size()) != remote_size ||
      static_cast<int>(args.displs.size()) != remote_size) {
    throw ArgumentError("counts: expected " + std::to_string(remote_size) +
                        " entries (one per process of the remote group), got " +
                        std::to_string(args.counts.size()));
  }
  for (int r = 0; r < remote_size; ++r) {
    if (args.counts[r] < 0) {
      throw ArgumentError("counts: negative count for remote rank " + std::to_string(r));
    }
    if (args.displs[r] < 0) {
      throw ArgumentError("displs: negative displacement for remote rank " + std::to_string(r));
    }
    if (args.counts[r] > 0 && args.displs[r] + args.counts[r] > recv_bytes) {
      throw ArgumentError("recvbuf: too small for remote rank " + std::to_string(r));
    }
  }
}

void check_intra_algorithm(const std::string& name) {
  if (name.empty() || name == "auto") return;
  std::string valid = "auto";
  for (const auto& a : allgatherv_algorithms()) {
    if (name == a.name) return;
    valid += std::string(", ") + a.name;
  }
  throw ArgumentError("intra_algorithm: unknown allgatherv algorithm '" + name +
                      "' (valid: " + valid + ")");
}

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
                                const std::string& algorithm, const std::string& intra_algorithm,
                                const Options& options) {
  check_intra_algorithm(intra_algorithm);
  const IntergroupAlgorithm& algo = find_intergroup(algorithm);
  if (is_in_place(send))
    throw ArgumentError("sendbuf: MPI.IN_PLACE is not allowed on an inter-communicator");
  const int remote = remote_size_of(user);
  VectorMessage r = remote_receive(recv, remote, regular);
  const Message s = parse_simple(send, "sendbuf", Access::read);
  check_send_element(s, r.element);
  InterAllgathervArgs args;
  args.send = s.data();
  args.send_bytes = s.bytes();
  args.recv = r.view.data();
  args.counts = std::move(r.layout.counts);
  args.displs = std::move(r.layout.displs);
  args.regular = regular;
  args.intra_algorithm = intra_algorithm;
  check_layout(args, remote, r.view.bytes());
  InterComm& ic = InterComm::of(user, options.timeout);  // collective on first use
  run_call(ic, regular ? "allgather" : "allgatherv", algo.name,
           [&](Stats& stats) { algo.fn(ic, args, options, stats); });
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
  m.def("inter_algorithms", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& a : intergroup_algorithms()) out.emplace_back(a.name, a.summary);
    return out;
  });
}
