#include "shancoll/coll/request/request_mpi.h"

#include <climits>
#include <string>
#include <utility>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/error.h"

namespace shancoll {

MpiEngine::MpiEngine(Post post, bool persistent, const char* what)
    : post_(std::move(post)), persistent_(persistent), what_(what) {
  if (persistent_) check_mpi(post_(true, &request_), what_);  // made once, started each run
}

MpiEngine::~MpiEngine() {
  // A collective cannot be cancelled: an active request is freed and the
  // library completes it; an inactive persistent one is simply freed.
  if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
}

void MpiEngine::start() {
  if (persistent_)
    check_mpi(MPI_Start(&request_), "MPI_Start");
  else
    check_mpi(post_(false, &request_), what_);
  active_ = true;
}

bool MpiEngine::test() {
  if (!active_) return true;
  int flag = 0;
  check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  active_ = flag == 0;
  return !active_;
}

#if MPI_VERSION >= 4

namespace {

// The nonblocking call or, persistent, the _init call with no info: one
// argument list for both.
template <class Nonblocking, class Init, class... Args>
int mpi_post(bool persistent, MPI_Request* request, Nonblocking nonblocking, Init init,
             Args... args) {
  return persistent ? init(args..., MPI_INFO_NULL, request) : nonblocking(args..., request);
}

std::unique_ptr<Engine> engine(MpiEngine::Post post, bool persistent, const char* what) {
  return std::make_unique<MpiEngine>(std::move(post), persistent, what);
}

// The caller's datatype (user ops), else the element type's.
MPI_Datatype datatype_of(MPI_Datatype given, DType type) {
  return given != MPI_DATATYPE_NULL ? given : dtype_mpi(type);
}

const void* or_in_place(const void* send) { return send ? send : MPI_IN_PLACE; }

// Counts and displacements in bytes, owned by the engine's post function.
struct Layout {
  std::vector<MPI_Count> counts;
  std::vector<MPI_Aint> displs;
  Layout() = default;
  Layout(const std::int64_t* c, const std::int64_t* d, std::size_t n) {
    if (!c) return;
    counts.assign(c, c + n);
    if (d) displs.assign(d, d + n);
  }
  MPI_Count* c() { return counts.empty() ? nullptr : counts.data(); }
  MPI_Aint* d() { return displs.empty() ? nullptr : displs.data(); }
};

}  // namespace

std::unique_ptr<Engine> mpi_barrier(MPI_Comm comm, bool persistent) {
  return engine(
      [comm](bool p, MPI_Request* r) {
        return mpi_post(p, r, PMPI_Ibarrier, PMPI_Barrier_init, comm);
      },
      persistent, "MPI_Ibarrier");
}

std::unique_ptr<Engine> mpi_bcast(MPI_Comm comm, const BcastCall& c, bool persistent) {
  return engine(
      [comm, buf = c.buf, bytes = MPI_Count{c.bytes}, root = c.root](bool p, MPI_Request* r) {
        return mpi_post(p, r, PMPI_Ibcast_c, PMPI_Bcast_init_c, buf, bytes, MPI_BYTE, root, comm);
      },
      persistent, "MPI_Ibcast_c");
}

std::unique_ptr<Engine> mpi_reduce(MPI_Comm comm, const ReduceCall& c, bool persistent) {
  return engine(
      [comm, send = or_in_place(c.send), recv = c.recv, count = MPI_Count{c.count},
       type = datatype_of(c.datatype, c.type), op = c.op, root = c.root](bool p, MPI_Request* r) {
        return mpi_post(p, r, PMPI_Ireduce_c, PMPI_Reduce_init_c, send, recv, count, type, op, root,
                        comm);
      },
      persistent, "MPI_Ireduce_c");
}

std::unique_ptr<Engine> mpi_allreduce(MPI_Comm comm, const AllreduceCall& c, bool persistent) {
  return engine(
      [comm, send = or_in_place(c.send), recv = c.recv, count = MPI_Count{c.count},
       type = datatype_of(c.datatype, c.type), op = c.op](bool p, MPI_Request* r) {
        return mpi_post(p, r, PMPI_Iallreduce_c, PMPI_Allreduce_init_c, send, recv, count, type, op,
                        comm);
      },
      persistent, "MPI_Iallreduce_c");
}

std::unique_ptr<Engine> mpi_gatherv(MPI_Comm comm, const GathervCall& c, int rank, int size,
                                    bool persistent) {
  const GathervArgs& a = c.args;
  const bool root = rank == a.root;
  const void* send = or_in_place(a.send);
  void* recv = root ? a.recv : nullptr;
  if (a.regular) {
    return engine(
        [=, block = MPI_Count{a.send_bytes}, root_rank = a.root](bool p, MPI_Request* r) {
          return mpi_post(p, r, PMPI_Igather_c, PMPI_Gather_init_c, send, block, MPI_BYTE, recv,
                          block, MPI_BYTE, root_rank, comm);
        },
        persistent, "MPI_Igather_c");
  }
  return engine(
      [=, layout = root ? Layout(a.counts, a.displs, size) : Layout(),
       mine = MPI_Count{a.send ? a.send_bytes : 0},
       root_rank = a.root](bool p, MPI_Request* r) mutable {
        return mpi_post(p, r, PMPI_Igatherv_c, PMPI_Gatherv_init_c, send, mine, MPI_BYTE, recv,
                        layout.c(), layout.d(), MPI_BYTE, root_rank, comm);
      },
      persistent, "MPI_Igatherv_c");
}

std::unique_ptr<Engine> mpi_scatterv(MPI_Comm comm, const ScattervCall& c, int rank, int size,
                                     bool persistent) {
  const ScattervArgs& a = c.args;
  const bool root = rank == a.root;
  const void* send = root ? a.send : nullptr;
  void* recv = a.recv ? static_cast<void*>(a.recv) : MPI_IN_PLACE;
  if (a.regular) {
    return engine(
        [=, block = MPI_Count{a.recv_bytes}, root_rank = a.root](bool p, MPI_Request* r) {
          return mpi_post(p, r, PMPI_Iscatter_c, PMPI_Scatter_init_c, send, block, MPI_BYTE, recv,
                          block, MPI_BYTE, root_rank, comm);
        },
        persistent, "MPI_Iscatter_c");
  }
  return engine(
      [=, layout = root ? Layout(a.counts, a.displs, size) : Layout(),
       mine = MPI_Count{a.recv ? a.recv_bytes : 0},
       root_rank = a.root](bool p, MPI_Request* r) mutable {
        return mpi_post(p, r, PMPI_Iscatterv_c, PMPI_Scatterv_init_c, send, layout.c(), layout.d(),
                        MPI_BYTE, recv, mine, MPI_BYTE, root_rank, comm);
      },
      persistent, "MPI_Iscatterv_c");
}

std::unique_ptr<Engine> mpi_allgatherv(MPI_Comm comm, const AllgathervCall& c, int rank,
                                       bool persistent) {
  const AllgathervArgs& a = c.args;
  const void* send = or_in_place(a.send);
  const MPI_Count mine = a.send ? a.counts[rank] : 0;
  return engine(
      [=, recv = a.recv, layout = Layout(a.counts.data(), a.displs.data(), a.counts.size())](
          bool p, MPI_Request* r) mutable {
        return mpi_post(p, r, PMPI_Iallgatherv_c, PMPI_Allgatherv_init_c, send, mine, MPI_BYTE,
                        recv, layout.c(), layout.d(), MPI_BYTE, comm);
      },
      persistent, "MPI_Iallgatherv_c");
}

std::unique_ptr<Engine> mpi_alltoallv(MPI_Comm comm, const AlltoallvCall& c, bool persistent) {
  const AlltoallvArgs& a = c.args;
  const void* send = or_in_place(a.send);
  const std::size_t n = a.recv_counts.size();
  return engine(
      [=, recv = a.recv, to = Layout(a.send_counts.data(), a.send_displs.data(), a.send ? n : 0),
       from = Layout(a.recv_counts.data(), a.recv_displs.data(), n)](bool p,
                                                                     MPI_Request* r) mutable {
        return mpi_post(p, r, PMPI_Ialltoallv_c, PMPI_Alltoallv_init_c, send, to.c(), to.d(),
                        MPI_BYTE, recv, from.c(), from.d(), MPI_BYTE, comm);
      },
      persistent, "MPI_Ialltoallv_c");
}

std::unique_ptr<Engine> mpi_reduce_scatter(MPI_Comm comm, const ReduceScatterCall& c, int size,
                                           bool block, bool persistent) {
  const void* send = or_in_place(c.send);
  const MPI_Datatype type = datatype_of(c.datatype, c.type);
  if (block) {
    return engine(
        [=, recv = c.recv, count = MPI_Count{c.count}, op = c.op](bool p, MPI_Request* r) {
          return mpi_post(p, r, PMPI_Ireduce_scatter_block_c, PMPI_Reduce_scatter_block_init_c,
                          send, recv, count, type, op, comm);
        },
        persistent, "MPI_Ireduce_scatter_block_c");
  }
  return engine(
      [=, recv = c.recv, op = c.op, layout = Layout(c.counts, nullptr, size)](
          bool p, MPI_Request* r) mutable {
        return mpi_post(p, r, PMPI_Ireduce_scatter_c, PMPI_Reduce_scatter_init_c, send, recv,
                        layout.c(), type, op, comm);
      },
      persistent, "MPI_Ireduce_scatter_c");
}

std::unique_ptr<Engine> mpi_scan(MPI_Comm comm, const ScanCall& c, bool exclusive,
                                 bool persistent) {
  const void* send = or_in_place(c.send);
  const MPI_Datatype type = datatype_of(c.datatype, c.type);
  const MPI_Count count = c.count;
  void* recv = c.recv;
  const MPI_Op op = c.op;
  if (exclusive) {
    return engine(
        [=](bool p, MPI_Request* r) {
          return mpi_post(p, r, PMPI_Iexscan_c, PMPI_Exscan_init_c, send, recv, count, type, op,
                          comm);
        },
        persistent, "MPI_Iexscan_c");
  }
  return engine(
      [=](bool p, MPI_Request* r) {
        return mpi_post(p, r, PMPI_Iscan_c, PMPI_Scan_init_c, send, recv, count, type, op, comm);
      },
      persistent, "MPI_Iscan_c");
}

#else  // MPI-3 (SimGrid SMPI): the allreduce's int-count nonblocking call only

namespace {

// The persistent collectives and the _c calls are MPI-4's.
[[noreturn]] void needs_mpi4(const char* collective) {
  throw ArgumentError(std::string("algorithm: 'mpi' requests of ") + collective +
                      " need an MPI-4 library (MPI_<Coll>_init, MPI_Count counts)");
}

}  // namespace

std::unique_ptr<Engine> mpi_allreduce(MPI_Comm comm, const AllreduceCall& c, bool persistent) {
  if (persistent || c.count > INT_MAX) needs_mpi4("allreduce");
  const void* send = c.send ? c.send : MPI_IN_PLACE;
  const MPI_Datatype type = c.datatype != MPI_DATATYPE_NULL ? c.datatype : dtype_mpi(c.type);
  return std::make_unique<MpiEngine>(
      [=, recv = c.recv, count = static_cast<int>(c.count), op = c.op](bool, MPI_Request* r) {
        return PMPI_Iallreduce(send, recv, count, type, op, comm, r);
      },
      false, "MPI_Iallreduce");
}
std::unique_ptr<Engine> mpi_barrier(MPI_Comm, bool) { needs_mpi4("barrier"); }
std::unique_ptr<Engine> mpi_bcast(MPI_Comm, const BcastCall&, bool) { needs_mpi4("bcast"); }
std::unique_ptr<Engine> mpi_reduce(MPI_Comm, const ReduceCall&, bool) { needs_mpi4("reduce"); }
std::unique_ptr<Engine> mpi_gatherv(MPI_Comm, const GathervCall&, int, int, bool) {
  needs_mpi4("gather(v)");
}
std::unique_ptr<Engine> mpi_scatterv(MPI_Comm, const ScattervCall&, int, int, bool) {
  needs_mpi4("scatter(v)");
}
std::unique_ptr<Engine> mpi_allgatherv(MPI_Comm, const AllgathervCall&, int, bool) {
  needs_mpi4("allgather(v)");
}
std::unique_ptr<Engine> mpi_alltoallv(MPI_Comm, const AlltoallvCall&, bool) {
  needs_mpi4("alltoall(v)");
}
std::unique_ptr<Engine> mpi_reduce_scatter(MPI_Comm, const ReduceScatterCall&, int, bool, bool) {
  needs_mpi4("reduce_scatter(_block)");
}
std::unique_ptr<Engine> mpi_scan(MPI_Comm, const ScanCall&, bool, bool) {
  needs_mpi4("scan/exscan");
}

#endif  // MPI_VERSION >= 4

}  // namespace shancoll
