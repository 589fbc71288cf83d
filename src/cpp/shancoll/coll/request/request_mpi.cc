#include "shancoll/coll/request/request_mpi.h"

#include <limits>
#include <string>
#include <utility>

#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/coll/allreduce/allreduce.h"
#include "shancoll/coll/alltoallv/alltoallv.h"
#include "shancoll/coll/gather/gather.h"
#include "shancoll/coll/reduce_scatter/reduce_scatter.h"
#include "shancoll/coll/request/requests.h"
#include "shancoll/coll/rooted.h"
#include "shancoll/coll/scan/scan.h"
#include "shancoll/coll/scatter/scatter.h"
#include "shancoll/error.h"

namespace shancoll {

MpiEngine::MpiEngine(Post post, const char* what) : post_(std::move(post)), what_(what) {}

MpiEngine::~MpiEngine() {
  // A collective cannot be cancelled: an active request is freed and the
  // library completes it.
  if (request_ != MPI_REQUEST_NULL) MPI_Request_free(&request_);
}

void MpiEngine::start() {
  check_mpi(post_(&request_), what_);
  active_ = true;
}

bool MpiEngine::test() {
  if (!active_) return true;
  int flag = 0;
  check_mpi(MPI_Test(&request_, &flag, MPI_STATUS_IGNORE), "MPI_Test");
  active_ = flag == 0;
  return !active_;
}

// The MPI calls by the count type of the library: MPI-4's MPI_Count calls
// (_c), or under an MPI-3 library (Open MPI 5.0, SimGrid SMPI) the int-count
// ones, for counts that fit (a larger one is refused before any
// communication).
#if MPI_VERSION >= 4
using MpiCount = MPI_Count;
using MpiDispl = MPI_Aint;
#define SHANCOLL_NONBLOCKING(name) PMPI_I##name##_c
#else
using MpiCount = int;
using MpiDispl = int;
#define SHANCOLL_NONBLOCKING(name) PMPI_I##name
#endif

namespace {

// The nonblocking call, its request last.
template <class Nonblocking, class... Args>
int mpi_post(MPI_Request* request, Nonblocking nonblocking, Args... args) {
  return nonblocking(args..., request);
}

std::unique_ptr<Engine> engine(MpiEngine::Post post, const char* what) {
  return std::make_unique<MpiEngine>(std::move(post), what);
}

// A count or displacement as the library's calls take it; refused (before
// any communication) when it does not fit an MPI-3 library's int.
template <class T = MpiCount>
T count_of(std::int64_t n) {
  if (n > std::numeric_limits<T>::max())
    throw ArgumentError("count: " + std::to_string(n) +
                        " bytes or elements need an MPI-4 library (MPI_Count) for this request");
  return static_cast<T>(n);
}

// The caller's datatype (user ops), else the element type's.
MPI_Datatype datatype_of(MPI_Datatype given, DType type) {
  return given != MPI_DATATYPE_NULL ? given : dtype_mpi(type);
}

const void* or_in_place(const void* send) { return send ? send : MPI_IN_PLACE; }

// Counts and displacements in bytes, owned by the engine's post function.
struct Layout {
  std::vector<MpiCount> counts;
  std::vector<MpiDispl> displs;
  Layout() = default;
  Layout(const std::int64_t* c, const std::int64_t* d, std::size_t n) {
    if (!c) return;
    counts.reserve(n);
    for (std::size_t i = 0; i < n; ++i) counts.push_back(count_of(c[i]));
    if (!d) return;
    displs.reserve(n);
    for (std::size_t i = 0; i < n; ++i) displs.push_back(count_of<MpiDispl>(d[i]));
  }
  MpiCount* c() { return counts.empty() ? nullptr : counts.data(); }
  MpiDispl* d() { return displs.empty() ? nullptr : displs.data(); }
};

// The C API's own arguments (TypedRooted), to MPI as they are.
std::unique_ptr<Engine> typed_gather(MPI_Comm comm, const TypedRooted& t, int root, bool regular,
                                     int size) {
  const void* send = t.block;
  const MpiCount mine = count_of(t.block_count);
  const MPI_Datatype send_type = t.block_type, recv_type = t.layout_type;
  void* recv = t.layout_buf;
  if (regular) {
    return engine(
        [=, count = count_of(t.count)](MPI_Request* r) {
          return mpi_post(r, SHANCOLL_NONBLOCKING(gather), send, mine, send_type, recv, count,
                          recv_type, root, comm);
        },
        "MPI_Igather_c");
  }
  return engine(
      [=, layout = t.counts.empty() ? Layout() : Layout(t.counts.data(), t.displs.data(), size)](
          MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(gatherv), send, mine, send_type, recv, layout.c(),
                        layout.d(), recv_type, root, comm);
      },
      "MPI_Igatherv_c");
}

std::unique_ptr<Engine> typed_scatter(MPI_Comm comm, const TypedRooted& t, int root, bool regular,
                                      int size) {
  void* recv = const_cast<void*>(t.block);
  const MpiCount mine = count_of(t.block_count);
  const MPI_Datatype recv_type = t.block_type, send_type = t.layout_type;
  const void* send = t.layout_buf;
  if (regular) {
    return engine(
        [=, count = count_of(t.count)](MPI_Request* r) {
          return mpi_post(r, SHANCOLL_NONBLOCKING(scatter), send, count, send_type, recv, mine,
                          recv_type, root, comm);
        },
        "MPI_Iscatter_c");
  }
  return engine(
      [=, layout = t.counts.empty() ? Layout() : Layout(t.counts.data(), t.displs.data(), size)](
          MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(scatterv), send, layout.c(), layout.d(), send_type,
                        recv, mine, recv_type, root, comm);
      },
      "MPI_Iscatterv_c");
}

}  // namespace

std::unique_ptr<Engine> mpi_barrier(MPI_Comm comm) {
  return engine([comm](MPI_Request* r) { return mpi_post(r, PMPI_Ibarrier, comm); },
                "MPI_Ibarrier");
}

std::unique_ptr<Engine> mpi_bcast(MPI_Comm comm, const BcastCall& c) {
  return engine(
      [comm, buf = c.buf, bytes = count_of(c.bytes), root = c.root](MPI_Request* r) {
        return mpi_post(r, SHANCOLL_NONBLOCKING(bcast), buf, bytes, MPI_BYTE, root, comm);
      },
      "MPI_Ibcast_c");
}

std::unique_ptr<Engine> mpi_reduce(MPI_Comm comm, const ReduceCall& c) {
  return engine(
      [comm, send = or_in_place(c.send), recv = c.recv, count = count_of(c.count),
       type = datatype_of(c.datatype, c.type), op = c.op, root = c.root](MPI_Request* r) {
        return mpi_post(r, SHANCOLL_NONBLOCKING(reduce), send, recv, count, type, op, root, comm);
      },
      "MPI_Ireduce_c");
}

std::unique_ptr<Engine> mpi_allreduce(MPI_Comm comm, const AllreduceCall& c) {
  return engine(
      [comm, send = or_in_place(c.send), recv = c.recv, count = count_of(c.count),
       type = datatype_of(c.datatype, c.type), op = c.op](MPI_Request* r) {
        return mpi_post(r, SHANCOLL_NONBLOCKING(allreduce), send, recv, count, type, op, comm);
      },
      "MPI_Iallreduce_c");
}

std::unique_ptr<Engine> mpi_gatherv(MPI_Comm comm, const GathervCall& c, int rank, int size) {
  const GathervArgs& a = c.args;
  if (c.typed) return typed_gather(comm, *c.typed, a.root, a.regular, size);
  const bool root = rank == a.root;
  const void* send = or_in_place(a.send);
  void* recv = root ? a.recv : nullptr;
  if (a.regular) {
    return engine(
        [=, block = count_of(a.send_bytes), root_rank = a.root](MPI_Request* r) {
          return mpi_post(r, SHANCOLL_NONBLOCKING(gather), send, block, MPI_BYTE, recv, block,
                          MPI_BYTE, root_rank, comm);
        },
        "MPI_Igather_c");
  }
  return engine(
      [=, layout = root ? Layout(a.counts, a.displs, size) : Layout(),
       mine = count_of(a.send ? a.send_bytes : 0), root_rank = a.root](MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(gatherv), send, mine, MPI_BYTE, recv, layout.c(),
                        layout.d(), MPI_BYTE, root_rank, comm);
      },
      "MPI_Igatherv_c");
}

std::unique_ptr<Engine> mpi_scatterv(MPI_Comm comm, const ScattervCall& c, int rank, int size) {
  const ScattervArgs& a = c.args;
  if (c.typed) return typed_scatter(comm, *c.typed, a.root, a.regular, size);
  const bool root = rank == a.root;
  const void* send = root ? a.send : nullptr;
  void* recv = a.recv ? static_cast<void*>(a.recv) : MPI_IN_PLACE;
  if (a.regular) {
    return engine(
        [=, block = count_of(a.recv_bytes), root_rank = a.root](MPI_Request* r) {
          return mpi_post(r, SHANCOLL_NONBLOCKING(scatter), send, block, MPI_BYTE, recv, block,
                          MPI_BYTE, root_rank, comm);
        },
        "MPI_Iscatter_c");
  }
  return engine(
      [=, layout = root ? Layout(a.counts, a.displs, size) : Layout(),
       mine = count_of(a.recv ? a.recv_bytes : 0), root_rank = a.root](MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(scatterv), send, layout.c(), layout.d(), MPI_BYTE,
                        recv, mine, MPI_BYTE, root_rank, comm);
      },
      "MPI_Iscatterv_c");
}

std::unique_ptr<Engine> mpi_allgatherv(MPI_Comm comm, const AllgathervCall& c, int rank) {
  const AllgathervArgs& a = c.args;
  const void* send = or_in_place(a.send);
  const MpiCount mine = count_of(a.send ? a.counts[rank] : 0);
  return engine(
      [=, recv = a.recv,
       layout = Layout(a.counts.data(), a.displs.data(), a.counts.size())](MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(allgatherv), send, mine, MPI_BYTE, recv, layout.c(),
                        layout.d(), MPI_BYTE, comm);
      },
      "MPI_Iallgatherv_c");
}

std::unique_ptr<Engine> mpi_alltoallv(MPI_Comm comm, const AlltoallvCall& c) {
  const AlltoallvArgs& a = c.args;
  const void* send = or_in_place(a.send);
  const std::size_t n = a.recv_counts.size();
  return engine(
      [=, recv = a.recv, to = Layout(a.send_counts.data(), a.send_displs.data(), a.send ? n : 0),
       from = Layout(a.recv_counts.data(), a.recv_displs.data(), n)](MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(alltoallv), send, to.c(), to.d(), MPI_BYTE, recv,
                        from.c(), from.d(), MPI_BYTE, comm);
      },
      "MPI_Ialltoallv_c");
}

std::unique_ptr<Engine> mpi_reduce_scatter(MPI_Comm comm, const ReduceScatterCall& c, int size,
                                           bool block) {
  const void* send = or_in_place(c.send);
  const MPI_Datatype type = datatype_of(c.datatype, c.type);
  if (block) {
    return engine(
        [=, recv = c.recv, count = count_of(c.count), op = c.op](MPI_Request* r) {
          return mpi_post(r, SHANCOLL_NONBLOCKING(reduce_scatter_block), send, recv, count, type,
                          op, comm);
        },
        "MPI_Ireduce_scatter_block_c");
  }
  return engine(
      [=, recv = c.recv, op = c.op,
       layout = Layout(c.counts, nullptr, size)](MPI_Request* r) mutable {
        return mpi_post(r, SHANCOLL_NONBLOCKING(reduce_scatter), send, recv, layout.c(), type, op,
                        comm);
      },
      "MPI_Ireduce_scatter_c");
}

std::unique_ptr<Engine> mpi_scan(MPI_Comm comm, const ScanCall& c, bool exclusive) {
  const void* send = or_in_place(c.send);
  const MPI_Datatype type = datatype_of(c.datatype, c.type);
  const MpiCount count = count_of(c.count);
  void* recv = c.recv;
  const MPI_Op op = c.op;
  if (exclusive) {
    return engine(
        [=](MPI_Request* r) {
          return mpi_post(r, SHANCOLL_NONBLOCKING(exscan), send, recv, count, type, op, comm);
        },
        "MPI_Iexscan_c");
  }
  return engine(
      [=](MPI_Request* r) {
        return mpi_post(r, SHANCOLL_NONBLOCKING(scan), send, recv, count, type, op, comm);
      },
      "MPI_Iscan_c");
}

}  // namespace shancoll
