#include <climits>
#include <cstdlib>
#include <cstring>
#include <string>

#include "shancoll/coll/intergroup/intergroup.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/progress.h"

namespace shancoll {
namespace {

constexpr int kIntergroupTag = 0x1a6;  // the InterComm's dup is private: the tag is ours alone

#if MPI_VERSION < 4
int small_count(std::int64_t bytes) {
  if (bytes > INT_MAX) {
    throw ArgumentError("recvbuf: messages over 2^31-1 bytes need an MPI-4 library");
  }
  return static_cast<int>(bytes);
}
#endif

bool is_packed(const InterAllgathervArgs& args, std::int64_t* base) {
  std::int64_t prefix = 0;
  bool first = true;
  for (std::size_t i = 0; i < args.counts.size(); ++i) {
    if (args.counts[i] > 0) {
      if (first) *base = args.displs[i] - prefix, first = false;
      if (args.displs[i] != *base + prefix) return false;
    }
    prefix += args.counts[i];
  }
  if (first) *base = 0;
  return *base >= 0;
}

}  // namespace

std::int64_t InterAllgathervArgs::remote_total() const {
  std::int64_t t = 0;
  for (std::int64_t c : counts) t += c;
  return t;
}

RemoteMessage::RemoteMessage(InterComm& ic, const InterAllgathervArgs& args) : args_(args) {
  std::int64_t base = 0;
  packed_ = is_packed(args, &base);
  data_ = packed_ ? args.recv + base : ic.scratch(static_cast<std::size_t>(args.remote_total()));
  // Never null, even for an empty result: the intragroup algorithms read a
  // null receive buffer as "leave the result in the node segment".
  if (!data_) data_ = ic.scratch(1);
}

void RemoteMessage::finish() const {
  if (packed_) return;
  std::int64_t index = 0;
  for (std::size_t i = 0; i < args_.counts.size(); ++i) {
    const auto n = static_cast<std::size_t>(args_.counts[i]);
    if (n) local_copy(args_.recv + args_.displs[i], data_ + index, n);
    index += args_.counts[i];
  }
}

Exchange::Exchange(InterComm& ic, const Options& options, Stats& stats)
    : ic_(ic), timeout_(options.wait_timeout()), stats_(stats) {}

void Exchange::send(const std::byte* data, std::int64_t bytes, int peer) {
  if (bytes == 0) return;
  MPI_Request req;
#if MPI_VERSION >= 4
  check_mpi(MPI_Isend_c(data, bytes, MPI_BYTE, peer, kIntergroupTag, ic_.mpi(), &req),
            "MPI_Isend_c");
#else
  check_mpi(MPI_Isend(data, small_count(bytes), MPI_BYTE, peer, kIntergroupTag, ic_.mpi(), &req),
            "MPI_Isend");
#endif
  sends_.push_back(req);
  ++stats_.remote_sent_messages, stats_.remote_sent_bytes += bytes;
}

void Exchange::recv(std::byte* data, std::int64_t bytes, int peer) {
  if (bytes == 0) return;
  MPI_Request req;
#if MPI_VERSION >= 4
  check_mpi(MPI_Irecv_c(data, bytes, MPI_BYTE, peer, kIntergroupTag, ic_.mpi(), &req),
            "MPI_Irecv_c");
#else
  check_mpi(MPI_Irecv(data, small_count(bytes), MPI_BYTE, peer, kIntergroupTag, ic_.mpi(), &req),
            "MPI_Irecv");
#endif
  wait_request(req, "a receive from the other group", timeout_);
  ++stats_.remote_recv_messages, stats_.remote_recv_bytes += bytes;
}

void Exchange::wait_sends() {
  for (MPI_Request& req : sends_) wait_request(req, "a send to the other group", timeout_);
  sends_.clear();
}

void intragroup_allgatherv(InterComm& ic, std::byte* buf, std::vector<std::int64_t> counts,
                           std::vector<std::int64_t> displs, const InterAllgathervArgs& args,
                           const Options& options, Stats& stats) {
  AllgathervArgs intra;
  intra.send = nullptr;  // in place: every process's piece is already at its displacement
  intra.recv = buf;
  intra.counts = std::move(counts);
  intra.displs = std::move(displs);
  Stats phase;
  allgatherv_within(ic.local(), intra, args.intra_algorithm, options, phase);
  // stats.rounds stays the exchange's: the intragroup rounds are the intra algorithm's.
  stats.inter_messages += phase.inter_messages, stats.inter_bytes += phase.inter_bytes;
  stats.intra_messages += phase.intra_messages, stats.intra_bytes += phase.intra_bytes;
  stats.forwarded += phase.forwarded;
  stats.node_count = phase.node_count;
  stats.block_count = phase.block_count;
}

}  // namespace shancoll
