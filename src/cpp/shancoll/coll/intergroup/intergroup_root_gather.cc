// root_gather: the baseline of MPICH, MVAPICH and Open MPI (Section 3.1 of
// Kang, Traeff et al.), implemented in shancoll for side-by-side runs.
//
// Each group gathers its full message at its root (local rank 0), the two
// roots exchange the full messages (full duplex), and each root broadcasts
// the other group's full message within its group. Gather and broadcast are
// the MPI library's nonblocking intra-communicator collectives, waited for
// through wait_until.
//
// Cost model (group A: p processes, K_A bytes; B: q, K_B; Eq. 1):
//   gather     max(log p t_s + (K_A - k_A) t_w, log q t_s + (K_B - k_B) t_w);
//   exchange   t_s + max(K_A, K_B) t_w, between the roots only;
//   broadcast  max(log p t_s + K_B t_w, log q t_s + K_A t_w) with an optimal
//              broadcast; about 3 M t_w in all (M = max(K_A, K_B)), the
//              production libraries' sequential versions M + 3 (K_A + K_B).
// Bytes across the groups: the roots send and receive a whole full message,
// every other process nothing.
//
// Preconditions: as for segmented; any counts (allgather: regular).
#include <algorithm>
#include <climits>
#include <numeric>

#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/error.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

constexpr int kGatherRoot = 0;

// The block sizes of the local group, at the root (allgather: all equal).
std::vector<std::int64_t> gather_counts(InterComm& ic, const InterAllgathervArgs& args,
                                        double timeout) {
  const int n = ic.size();
  if (args.regular)
    return std::vector<std::int64_t>(ic.rank() == kGatherRoot ? n : 0, args.send_bytes);
  CollectiveBuffer<std::int64_t> io(static_cast<std::size_t>(n) + 1);  // mine, then the root's
  io[0] = args.send_bytes;
  MPI_Request req;
  check_mpi(MPI_Igather(io.data(), 1, MPI_INT64_T, io.data() + 1, 1, MPI_INT64_T, kGatherRoot,
                        ic.local().mpi(), &req),
            "MPI_Igather");
  io.wait(req, "the gather of the group's block sizes", timeout);
  if (ic.rank() != kGatherRoot) return {};
  return std::vector<std::int64_t>(io.data() + 1, io.data() + 1 + n);
}

// The local full message, gathered at the root into `full` (packed).
void gather_blocks(InterComm& ic, const InterAllgathervArgs& args,
                   const std::vector<std::int64_t>& counts, std::byte* full, double timeout) {
  MPI_Request req;
  // The counts and displacements, read by MPI until the gather completes.
#if MPI_VERSION >= 4
  CollectiveBuffer<MPI_Count> c(counts.size());
  CollectiveBuffer<MPI_Aint> d(counts.size());
  std::copy(counts.begin(), counts.end(), c.data());
  if (!counts.empty()) std::exclusive_scan(counts.begin(), counts.end(), d.data(), MPI_Aint{0});
  check_mpi(MPI_Igatherv_c(args.send, args.send_bytes, MPI_BYTE, full, c.data(), d.data(), MPI_BYTE,
                           kGatherRoot, ic.local().mpi(), &req),
            "MPI_Igatherv_c");
#else
  CollectiveBuffer<int> c(counts.size()), d(counts.size());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < counts.size(); ++i) {
    if (counts[i] > INT_MAX || at > INT_MAX) {
      throw ArgumentError("sendbuf: root_gather over 2^31-1 bytes needs an MPI-4 library");
    }
    c[i] = static_cast<int>(counts[i]), d[i] = static_cast<int>(at), at += counts[i];
  }
  check_mpi(MPI_Igatherv(args.send, static_cast<int>(args.send_bytes), MPI_BYTE, full, c.data(),
                         d.data(), MPI_BYTE, kGatherRoot, ic.local().mpi(), &req),
            "MPI_Igatherv");
#endif
  // `full` is the call's receive buffer or the communicator's scratch, which
  // a failed call leaves to the collective (the communicator then refuses).
  try {
    c.wait(req, "the gather at the group's root", timeout);
  } catch (...) {
    d.abandon();
    throw;
  }
}

void broadcast(InterComm& ic, std::byte* data, std::int64_t bytes, double timeout) {
  if (bytes == 0) return;
  MPI_Request req;
#if MPI_VERSION >= 4
  check_mpi(MPI_Ibcast_c(data, bytes, MPI_BYTE, kGatherRoot, ic.local().mpi(), &req),
            "MPI_Ibcast_c");
#else
  if (bytes > INT_MAX) throw ArgumentError("recvbuf: over 2^31-1 bytes needs an MPI-4 library");
  check_mpi(
      MPI_Ibcast(data, static_cast<int>(bytes), MPI_BYTE, kGatherRoot, ic.local().mpi(), &req),
      "MPI_Ibcast");
#endif
  // Into the caller's buffer, as the MPI library's own collective would.
  wait_collective(req, "the broadcast from the group's root", timeout);
}

}  // namespace

void intergroup_root_gather(InterComm& ic, const InterAllgathervArgs& args, const Options& options,
                            Stats& stats) {
  const double timeout = options.wait_timeout();
  const bool root = ic.rank() == kGatherRoot;
  const std::vector<std::int64_t> counts = gather_counts(ic, args, timeout);
  const std::int64_t local_total = std::accumulate(counts.begin(), counts.end(), std::int64_t{0});
  const std::int64_t remote_total = args.remote_total();
  // The local full message (at the root) in the local Comm's scratch: free
  // here, since root_gather runs no shancoll intragroup algorithm; the
  // InterComm's scratch may hold the remote message (RemoteMessage).
  std::byte* full = ic.local().scratch(root ? static_cast<std::size_t>(local_total) : 0);
  gather_blocks(ic, args, counts, full, timeout);
  const RemoteMessage remote(ic, args);
  if (root) {
    Exchange x(ic, options, stats);
    x.send(full, local_total, kGatherRoot);
    x.recv(remote.at(0), remote_total, kGatherRoot);
    x.wait_sends();
    stats.rounds = 1;
  }
  broadcast(ic, remote.at(0), remote_total, timeout);
  remote.finish();
}

}  // namespace shancoll
