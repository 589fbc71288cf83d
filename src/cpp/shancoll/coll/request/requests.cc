#include "shancoll/coll/request/requests.h"

#include <cstring>
#include <string>

#include "shancoll/coll/door.h"
#include "shancoll/coll/request/request_mpi.h"
#include "shancoll/coll/request/request_schedule.h"
#include "shancoll/error.h"

namespace shancoll {
namespace {

// The collectives that have a shancoll schedule as a request, and its name.
struct ScheduleName {
  const char* collective;
  const char* algorithm;
};
constexpr ScheduleName kSchedules[] = {
    {"barrier", "dissemination"}, {"bcast", "binomial"},    {"allgather", "ring"},
    {"allgatherv", "ring"},       {"alltoall", "pairwise"}, {"alltoallv", "pairwise"},
};

const char* schedule_of(const char* collective) {
  for (const ScheduleName& s : kSchedules)
    if (std::strcmp(s.collective, collective) == 0) return s.algorithm;
  return nullptr;
}

// What a request door starts from: the options, the communicator, and the
// algorithm by name ("mpi" or the collective's schedule; "auto" is "mpi").
struct Setup {
  Options options;
  Comm& comm;
  const char* algorithm;  // a static name
  const char* collective;
  bool persistent;

  std::unique_ptr<Request> make(std::unique_ptr<Engine> engine) const {
    return std::make_unique<Request>(comm, collective, algorithm, std::move(engine),
                                     options.wait_timeout(), persistent);
  }
  bool scheduled() const { return std::strcmp(algorithm, "mpi") != 0; }
  const Topology& topo() const { return comm.nodes(options.ranks_per_node).topo; }
};

const char* resolve(std::string_view name, const char* collective) {
  if (name.empty() || name == "auto" || name == "mpi") return "mpi";
  const char* schedule = schedule_of(collective);
  if (schedule && name == schedule) return schedule;
  throw ArgumentError("algorithm: '" + std::string(name) + "' has no request form for " +
                      collective + " (valid: " + request_algorithms(collective) + ")");
}

Setup setup(MPI_Comm user, std::string_view algorithm, const CallOptions* given, Collective c,
            const char* collective, bool persistent) {
  const Options o = options_or_defaults(given, c).resolved();
  const char* name = resolve(algorithm, collective);
  return {o, Comm::of(user, o.timeout), name, collective, persistent};
}

// Runs make() as the request's collective (Comm::run: a failure breaks the
// communicator, SHANCOLL_ON_ERROR).
template <class Make>
std::unique_ptr<Request> made(const Setup& s, Make&& make) {
  return s.comm.run({s.collective, s.algorithm}, [&] { return make(); });
}

}  // namespace

std::string request_algorithms(const char* collective) {
  const char* schedule = schedule_of(collective);
  return schedule ? std::string("auto, ") + schedule + ", mpi" : std::string("auto, mpi");
}

std::unique_ptr<Request> request_of(const BarrierCall& call, bool persistent) {
  const Setup s =
      setup(call.comm, call.algorithm, call.options, Collective::barrier, "barrier", persistent);
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_barrier(s.comm.mpi()));
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(), pattern::dissemination_barrier_schedule(s.comm.size(), s.comm.rank()),
        nullptr, nullptr));
  });
}

std::unique_ptr<Request> request_of(const BcastCall& call, bool persistent) {
  const Setup s =
      setup(call.comm, call.algorithm, call.options, Collective::bcast, "bcast", persistent);
  check_root(s.comm, call.root);
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_bcast(s.comm.mpi(), call));
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::binomial_bcast_schedule(s.comm.size(), s.comm.rank(), call.root, call.bytes),
        nullptr, call.buf));
  });
}

std::unique_ptr<Request> request_of(const ReduceCall& call, bool persistent) {
  const Setup s =
      setup(call.comm, call.algorithm, call.options, Collective::reduce, "reduce", persistent);
  check_root(s.comm, call.root);
  return made(s, [&] { return s.make(mpi_reduce(s.comm.mpi(), call)); });
}

std::unique_ptr<Request> request_of(const GathervCall& call, bool persistent) {
  const bool regular = call.args.regular;
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        regular ? Collective::gather : Collective::gatherv,
                        regular ? "gather" : "gatherv", persistent);
  check_root(s.comm, call.args.root);
  return made(
      s, [&] { return s.make(mpi_gatherv(s.comm.mpi(), call, s.comm.rank(), s.comm.size())); });
}

std::unique_ptr<Request> request_of(const ScattervCall& call, bool persistent) {
  const bool regular = call.args.regular;
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        regular ? Collective::scatter : Collective::scatterv,
                        regular ? "scatter" : "scatterv", persistent);
  check_root(s.comm, call.args.root);
  return made(
      s, [&] { return s.make(mpi_scatterv(s.comm.mpi(), call, s.comm.rank(), s.comm.size())); });
}

std::unique_ptr<Request> request_of(const AllgathervCall& call, bool persistent) {
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        call.allgather ? Collective::allgather : Collective::allgatherv,
                        call.allgather ? "allgather" : "allgatherv", persistent);
  if (!call.args.recv) throw ArgumentError("recvbuf: a request needs a receive buffer");
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_allgatherv(s.comm.mpi(), call, s.comm.rank()));
    const AllgathervArgs& a = call.args;
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::ring_allgatherv_schedule(s.comm.size(), s.comm.rank(), a.counts.data(),
                                          a.displs.data(), a.send == nullptr),
        a.send, a.recv));
  });
}

std::unique_ptr<Request> request_of(const AlltoallvCall& call, bool persistent) {
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        call.alltoall ? Collective::alltoall : Collective::alltoallv,
                        call.alltoall ? "alltoall" : "alltoallv", persistent);
  return made(s, [&] {
    if (!s.scheduled()) return s.make(mpi_alltoallv(s.comm.mpi(), call));
    const AlltoallvArgs& a = call.args;
    const bool in_place = a.send == nullptr;
    return s.make(std::make_unique<ScheduleEngine>(
        s.comm, s.topo(),
        pattern::pairwise_alltoallv_schedule(s.comm.size(), s.comm.rank(),
                                             in_place ? nullptr : a.send_counts.data(),
                                             in_place ? nullptr : a.send_displs.data(),
                                             a.recv_counts.data(), a.recv_displs.data(), in_place),
        a.send, a.recv));
  });
}

std::unique_ptr<Request> request_of(const ReduceScatterCall& call, bool block, bool persistent) {
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        block ? Collective::reduce_scatter_block : Collective::reduce_scatter,
                        block ? "reduce_scatter_block" : "reduce_scatter", persistent);
  return made(s,
              [&] { return s.make(mpi_reduce_scatter(s.comm.mpi(), call, s.comm.size(), block)); });
}

std::unique_ptr<Request> request_of(const ScanCall& call, bool exclusive, bool persistent) {
  const Setup s = setup(call.comm, call.algorithm, call.options,
                        exclusive ? Collective::exscan : Collective::scan,
                        exclusive ? "exscan" : "scan", persistent);
  return made(s, [&] { return s.make(mpi_scan(s.comm.mpi(), call, exclusive)); });
}

}  // namespace shancoll
