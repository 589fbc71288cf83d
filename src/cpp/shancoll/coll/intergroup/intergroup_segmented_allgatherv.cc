// segmented, allgatherv: Algorithm 2 of Kang, Traeff et al.
//
// Block sizes differ per process: k_{A,i} in group A (p processes), k_{B,j}
// in group B (q processes); K_A, K_B the full messages. Every byte of a
// group's full message has a global index (rank order). The exchange cuts
// [0, K_A) into q balanced ranges s_{A,k} (sizes floor(K_A/q) or
// ceil(K_A/q)), s_{A,k} going to b_k, and [0, K_B) into p ranges s_{B,k}
// going to a_k (pattern/intergroup.h). A sender needs its own group's K and
// its prefix R: an intragroup allreduce and exscan (the remote group's counts
// are the receive counts, known). Senders send one piece per receiver, in the
// order of the receivers' ranks; a receiver takes its senders in the order of
// the proof of Theorem 3 (the multi-target sender of higher rank first, the
// one of lower rank last), so no sender idles behind a busy receiver. Then
// both groups run an allgatherv, concurrently and in place, with shancoll's
// own algorithm: the ranges are in rank order, no reordering.
//
// Cost model (Theorem 3): transfer
//   max(K_A + max_i k_{A,i}, K_B + max_j k_{B,j}) t_w + log(pq) t_w
//   <= M + max(k) t_w + log(pq) t_w,   M = max(K_A, K_B) t_w (lower bound);
// startup: allreduce and exscan (log), the exchange (messages per process
// about max(k)/(K/q) + 2), the intragroup allgatherv.
// Bytes across the groups: every byte once; b_k receives |s_{A,k}|, a_k
// receives |s_{B,k}|.
//
// Preconditions: counts and displs of the remote group, identical within a
// group and matching what the remote processes send; zero counts allowed.
#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/error.h"
#include "shancoll/pattern/intergroup.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

// Lines 1-2 of Algorithm 2 and the exscan of Section 4.1: this group's total
// and the global index of this process's first byte.
struct LocalLayout {
  std::int64_t total = 0;
  std::int64_t first = 0;
};

LocalLayout local_layout(InterComm& ic, std::int64_t mine, double timeout) {
  CollectiveBuffer<std::int64_t> io(3);  // mine, the total, the prefix
  io[0] = mine;
  MPI_Comm local = ic.local().mpi();
  MPI_Request reqs[2];
  check_mpi(PMPI_Iallreduce(io.data(), io.data() + 1, 1, MPI_INT64_T, MPI_SUM, local, &reqs[0]),
            "MPI_Iallreduce");
  check_mpi(MPI_Iexscan(io.data(), io.data() + 2, 1, MPI_INT64_T, MPI_SUM, local, &reqs[1]),
            "MPI_Iexscan");
  io.wait(reqs[0], "the allreduce of the group's total bytes", timeout);
  io.wait(reqs[1], "the exscan of the group's byte prefix", timeout);
  LocalLayout out;
  out.total = io[1];
  out.first = ic.rank() == 0 ? 0 : io[2];  // exscan leaves rank 0's result undefined
  return out;
}

}  // namespace

void segmented_allgatherv(InterComm& ic, const InterAllgathervArgs& args, const Options& options,
                          Stats& stats) {
  const LocalLayout mine = local_layout(ic, args.send_bytes, options.wait_timeout());
  const RemoteMessage remote(ic, args);
  const int n_local = ic.size();
  const int n_remote = ic.remote_size();
  Exchange x(ic, options, stats);
  // Lines 12-14 (23-24 in the other group): my block, cut at the remote ranges.
  const auto sends = pattern::sender_pieces(mine.total, n_remote, mine.first, args.send_bytes);
  for (const auto& piece : sends) {
    x.send(args.send + (piece.index - mine.first), piece.bytes, piece.peer);
  }
  // My range of the remote full message, sender by sender in Theorem 3's order.
  const auto recvs = pattern::receiver_pieces(args.counts, n_local, ic.rank());
  for (const auto& piece : recvs) x.recv(remote.at(piece.index), piece.bytes, piece.peer);
  x.wait_sends();
  stats.rounds = static_cast<std::int64_t>(std::max(sends.size(), recvs.size()));
  // Lines 25-26: the ranges of the remote full message, one per local process.
  const std::int64_t total = args.remote_total();
  std::vector<std::int64_t> counts(n_local), displs(n_local);
  for (int k = 0; k < n_local; ++k) {
    const pattern::Range r = pattern::balanced_part(total, n_local, k);
    counts[k] = r.size();
    displs[k] = r.begin;
  }
  intragroup_allgatherv(ic, remote.at(0), std::move(counts), std::move(displs), args, options,
                        stats);
  remote.finish();
}

}  // namespace shancoll
