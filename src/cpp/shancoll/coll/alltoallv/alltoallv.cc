// The alltoall(v) door (alltoallv.h): the one path from every front end to
// the algorithms. Everything that can refuse the call is checked before the
// first communication, alike on every rank given the same arguments.
#include "shancoll/coll/alltoallv/alltoallv.h"

#include <algorithm>
#include <climits>
#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/cost.h"
#include "shancoll/error.h"
#include "shancoll/transport/p2p.h"

namespace shancoll {
namespace {

void check_side(const std::vector<std::int64_t>& counts, const std::vector<std::int64_t>& displs,
                std::size_t size, const char* counts_name, const char* displs_name) {
  if (counts.size() != size || displs.size() != size)
    throw ArgumentError(std::string(counts_name) + ": " + std::to_string(counts.size()) +
                        " counts and " + std::to_string(displs.size()) + " displacements for " +
                        std::to_string(size) + " ranks");
  for (std::size_t r = 0; r < size; ++r) {
    if (counts[r] < 0)
      throw ArgumentError(std::string(counts_name) + ": negative count for rank " +
                          std::to_string(r));
    if (displs[r] < 0)
      throw ArgumentError(std::string(displs_name) + ": negative displacement for rank " +
                          std::to_string(r));
  }
}

void check_layout(const Comm& comm, const AlltoallvArgs& a) {
  const auto size = static_cast<std::size_t>(comm.size());
  check_side(a.recv_counts, a.recv_displs, size, "recvcounts", "rdispls");
  if (!a.send) return;  // in place: the receive layout is the send layout
  check_side(a.send_counts, a.send_displs, size, "sendcounts", "sdispls");
  const auto me = static_cast<std::size_t>(comm.rank());
  if (a.send_counts[me] != a.recv_counts[me])
    throw ArgumentError("sendcounts: " + std::to_string(a.send_counts[me]) +
                        " bytes for this rank itself, but recvcounts[" + std::to_string(me) +
                        "] expects " + std::to_string(a.recv_counts[me]) + " bytes");
}

// Checked mode, alltoallv: the counts each rank sends are the counts its
// receivers expect (one alltoall of the counts, one allreduce of the first
// disagreement), so that every rank refuses alike.
void check_pairs(Comm& comm, const AlltoallvArgs& a, double timeout) {
  const int p = comm.size();
  const std::size_t n = static_cast<std::size_t>(p);
  // Mine, then what every rank sends me: the collective's memory.
  CollectiveBuffer<std::int64_t> counts(2 * n);
  const std::vector<std::int64_t>& mine = a.send ? a.send_counts : a.recv_counts;  // in place
  std::copy(mine.begin(), mine.end(), counts.data());
  std::int64_t* sent = counts.data() + n;
  MPI_Request req = MPI_REQUEST_NULL;
  check_mpi(PMPI_Ialltoall(counts.data(), 1, MPI_INT64_T, sent, 1, MPI_INT64_T, comm.mpi(), &req),
            "MPI_Ialltoall (checked mode)");
  counts.wait(req, "the other ranks' send counts (checked mode)", timeout);
  CollectiveBuffer<long long> first(1);  // receiver * P + sender of the first disagreement
  first[0] = LLONG_MAX;
  for (int i = 0; i < p && first[0] == LLONG_MAX; ++i)
    if (sent[i] != a.recv_counts[static_cast<std::size_t>(i)])
      first[0] = static_cast<long long>(comm.rank()) * p + i;
  check_mpi(
      PMPI_Iallreduce(MPI_IN_PLACE, first.data(), 1, MPI_LONG_LONG, MPI_MIN, comm.mpi(), &req),
      "MPI_Iallreduce (checked mode)");
  first.wait(req, "the other ranks' count checks (checked mode)", timeout);
  if (first[0] != LLONG_MAX)
    throw ArgumentError("check: rank " + std::to_string(first[0] % p) + " sends rank " +
                        std::to_string(first[0] / p) +
                        " a block of another size than that rank's recvcounts expect");
}

void verify(const AlltoallvCall& call, const CallOptions& co, Collective which,
            std::string_view name) {
  const AlltoallvArgs& a = call.args;
  CallShape shape;
  shape.collective = collective_name(which);
  shape.algorithm = name;
  if (a.regular && !a.recv_counts.empty()) shape.count = a.recv_counts[0];
  verify_agreement(call.comm, co, shape);
  if (!co.check || a.regular) return;
  const double timeout = co.resolved().timeout;
  Comm& comm = Comm::of(call.comm, timeout);
  if (a.recv_counts.size() != static_cast<std::size_t>(comm.size()) ||
      (a.send && a.send_counts.size() != a.recv_counts.size()))
    return;  // check_layout words it
  comm.run({shape.collective.data(), "check"}, [&] { check_pairs(comm, a, timeout); });
}

std::string_view requested_name(const AlltoallvCall& call) {
  const Environment& env = environment();
  const bool chosen = !call.algorithm.empty() && call.algorithm != "auto";
  if (call.alltoall && !chosen && !env.alltoall.empty()) return env.alltoall;
  return requested(call.algorithm, env.alltoallv);
}

// `auto`: its choice reads the block size of an alltoall (the same on every
// rank), never an alltoallv's counts (they differ from rank to rank).
const AlltoallvAlgorithm& auto_alltoallv(Comm& comm, const AlltoallvArgs& args, Options& o,
                                         const CallOptions* given) {
  const std::int64_t block = args.regular ? args.recv_counts[0] : -1;
  return auto_choice<AlltoallvAlgorithm>(
      comm, {"alltoallv", block, static_cast<std::uint64_t>(block + 1)}, o, given,
      [&](const Topology& t) {
        return &alltoallv_registry().at(choose_alltoallv(block, t.size, t.node_count, t.hosts));
      });
}

// In place, the blocks to send are in recv, which the call overwrites: the
// algorithms get a copy (kept per layout and grown, so a repeated call
// allocates nothing).
struct InPlaceCopy : LayoutState {
  std::vector<std::byte> data;
  AlltoallvArgs args;
};

const AlltoallvArgs& with_send(Comm& comm, const AlltoallvArgs& a, const Options& o) {
  if (a.send) return a;
  InPlaceCopy& c = comm.nodes(o.ranks_per_node).state<InPlaceCopy>();
  const std::int64_t extent = a.recv_extent();
  if (c.data.size() < static_cast<std::size_t>(extent)) c.data.resize(extent);
  local_copy(c.data.data(), a.recv, static_cast<std::size_t>(extent));
  c.args.send = c.data.data();
  c.args.recv = a.recv;
  c.args.send_counts.assign(a.recv_counts.begin(), a.recv_counts.end());
  c.args.send_displs.assign(a.recv_displs.begin(), a.recv_displs.end());
  c.args.recv_counts.assign(a.recv_counts.begin(), a.recv_counts.end());
  c.args.recv_displs.assign(a.recv_displs.begin(), a.recv_displs.end());
  c.args.regular = a.regular;
  return c.args;
}

// The layout of the alltoall plan's block (alltoall_repeat's arguments):
// made with the plan, its buffers set on every repeat.
struct AlltoallLayout : LayoutState {
  AlltoallvArgs args;
};

// After an alltoall (not alltoallv: its counts differ from rank to rank)
// that `auto` chose for: its plan.
void remember_alltoall(Comm& comm, const AlltoallvArgs& a, const AlltoallvAlgorithm& algo,
                       const Options& o) {
  if (a.recv_counts.empty()) return;
  AlltoallvArgs& layout = comm.state<AlltoallLayout>().args;
  layout.regular = true;
  for (auto* side : {&layout.send_counts, &layout.recv_counts})
    side->assign(a.recv_counts.begin(), a.recv_counts.end());
  for (auto* side : {&layout.send_displs, &layout.recv_displs})
    side->assign(a.recv_displs.begin(), a.recv_displs.end());
  comm.state<RepeatPlan<AlltoallvAlgorithm>>().remember({a.recv_counts[0]}, algo, o);
}

std::int64_t extent_of(const std::vector<std::int64_t>& counts,
                       const std::vector<std::int64_t>& displs) {
  std::int64_t e = 0;
  for (std::size_t r = 0; r < counts.size(); ++r)
    if (counts[r] > 0) e = std::max(e, displs[r] + counts[r]);
  return e;
}

}  // namespace

std::int64_t AlltoallvArgs::send_extent() const { return extent_of(send_counts, send_displs); }
std::int64_t AlltoallvArgs::recv_extent() const { return extent_of(recv_counts, recv_displs); }

void copy_self_block(const Comm& comm, const AlltoallvArgs& args, Stats& stats, bool stream) {
  const auto me = static_cast<std::size_t>(comm.rank());
  const std::int64_t bytes = args.recv_counts[me];
  if (bytes == 0) return;
  result_copy(args.recv + args.recv_displs[me], args.send + args.send_displs[me],
              static_cast<std::size_t>(bytes), stream);
  ++stats.intra_messages, stats.intra_bytes += bytes;
}

bool alltoall_repeat(Comm& comm, const AlltoallRepeat& call) {
  auto* plan = repeat_plan<AlltoallvAlgorithm>(comm, "", nullptr, {call.block});
  if (!plan) return false;
  AlltoallvArgs& args = comm.state<AlltoallLayout>().args;
  args.send = call.send;
  args.recv = call.recv;
  const AlltoallvAlgorithm& algo = *plan->algorithm;
  run_recorded(comm, "alltoall", algo.name, [&](Stats& s) {
    algo.fn(comm, with_send(comm, args, plan->options), plan->options, s);
  });
  return true;
}

Comm& alltoallv(const AlltoallvCall& call) {
  const Collective which = call.alltoall ? Collective::alltoall : Collective::alltoallv;
  const CallOptions& co = options_or_defaults(call.options, which);
  const std::string_view name = requested_name(call);
  // An unknown name is refused here, before Comm::of's set-up.
  const AlltoallvAlgorithm* named = name == "auto" ? nullptr : &alltoallv_registry().at(name);
  verify(call, co, which, name);
  Options o = co.resolved();
  Comm& comm = Comm::of(call.comm, o.timeout);
  check_layout(comm, call.args);
  const AlltoallvAlgorithm& algo =
      named ? *named : auto_alltoallv(comm, call.args, o, call.options);
  run_recorded(comm, collective_name(which), algo.name,
               [&](Stats& s) { algo.fn(comm, with_send(comm, call.args, o), o, s); });
  if (call.alltoall && plannable(call.algorithm, call.options) && !co.check)
    remember_alltoall(comm, call.args, algo, o);
  return comm;
}

}  // namespace shancoll
