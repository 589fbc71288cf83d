// The intergroup door (intergroup.h): the one path from every front end to
// the algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include "shancoll/coll/intergroup/intergroup.h"

#include <string>

#include "shancoll/coll/door.h"

namespace shancoll {
namespace {

void check_layout(const IntergroupCall& call, int remote_size) {
  const InterAllgathervArgs& args = call.args;
  if (static_cast<int>(args.counts.size()) != remote_size ||
      static_cast<int>(args.displs.size()) != remote_size)
    throw ArgumentError("counts: expected " + std::to_string(remote_size) +
                        " entries (one per process of the remote group), got " +
                        std::to_string(args.counts.size()));
  for (int r = 0; r < remote_size; ++r) {
    if (args.counts[r] < 0)
      throw ArgumentError("counts: negative count for remote rank " + std::to_string(r));
    if (args.displs[r] < 0)
      throw ArgumentError("displs: negative displacement for remote rank " + std::to_string(r));
    if (call.recv_bytes >= 0 && args.counts[r] > 0 &&
        args.displs[r] + args.counts[r] > call.recv_bytes)
      throw ArgumentError("recvbuf: too small for remote rank " + std::to_string(r));
  }
}

void check_intra_algorithm(const std::string& name) {
  if (name.empty() || allgatherv_registry().find(name)) return;
  std::string valid = "auto";
  for (const AlgorithmInfo& a : allgatherv_registry().listing()) valid += ", " + a.name;
  throw ArgumentError("intra_algorithm: unknown allgatherv algorithm '" + name +
                      "' (valid: " + valid + ")");
}

}  // namespace

InterComm& intergroup_allgatherv(const IntergroupCall& call) {
  const CallOptions& co = options_or_defaults(call.options, Collective::intergroup);
  check_intra_algorithm(co.intra_algorithm);
  const std::string_view name = requested(call.algorithm, environment().intergroup);
  const IntergroupAlgorithm& algo = intergroup_registry().at(name == "auto" ? "segmented" : name);
  int inter = 0, remote_size = 0;
  check_mpi(MPI_Comm_test_inter(call.comm, &inter), "MPI_Comm_test_inter");
  if (!inter) throw ArgumentError("comm: expected an inter-communicator");
  check_mpi(MPI_Comm_remote_size(call.comm, &remote_size), "MPI_Comm_remote_size");
  check_layout(call, remote_size);
  InterAllgathervArgs args = call.args;
  args.intra_algorithm = co.intra_algorithm;
  const Options o = co.resolved();
  InterComm& ic = InterComm::of(call.comm, o.timeout);  // collective on first use
  run_recorded(ic, args.regular ? "allgather" : "allgatherv", algo.name,
               [&](Stats& s) { algo.fn(ic, args, o, s); });
  return ic;
}

}  // namespace shancoll
