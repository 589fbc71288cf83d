// The only pybind11 code: mpi4py communicator -> MPI_Comm (through mpi4py's C
// API), Python buffers -> (pointer, bytes). Everything else is in the core.
// Argument checking that needs Python knowledge (buffer specs, dtypes) is done
// in src/shancoll; here we check what the core needs to stay memory-safe.
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "common.h"
#include "shancoll/coll/allgatherv/allgatherv.h"
#include "shancoll/comm.h"
#include "shancoll/kernels/kernels.h"
#include "shancoll/progress.h"
#include "shancoll/select.h"
#include "shancoll/shm/peer_memory.h"

namespace py = pybind11;
using namespace shancoll;
using bindings::make_options;
using bindings::mpi_comm_of;
using bindings::stats_dict;

void bind_allreduce(py::module_& m);       // bindings/allreduce.cc
void bind_intergroup(py::module_& m);      // bindings/intergroup.cc
void bind_release_gather(py::module_& m);  // bindings/release_gather.cc
void bind_rules(py::module_& m);           // bindings/rules.cc

namespace {

struct Buffer {
  py::buffer_info info;
  std::byte* ptr() const { return static_cast<std::byte*>(info.ptr); }
  std::int64_t bytes() const { return info.size * info.itemsize; }
};

Buffer contiguous(py::handle obj, const char* name, bool writable) {
  py::buffer buf = py::reinterpret_borrow<py::buffer>(obj);
  Buffer b{buf.request(writable)};
  // request() succeeds on strided views; the core needs C-contiguous bytes.
  std::int64_t stride = b.info.itemsize;
  for (int i = static_cast<int>(b.info.ndim) - 1; i >= 0; --i) {
    if (b.info.shape[i] > 1 && b.info.strides[i] != stride) {
      throw ArgumentError(std::string(name) + ": buffer is not C-contiguous");
    }
    stride *= b.info.shape[i];
  }
  return b;
}

// Runs one allgatherv; recv == nullptr leaves the result in the node segment.
py::object run_allgatherv(py::handle comm_obj, py::object send, std::byte* recv,
                          std::int64_t recv_bytes, std::vector<std::int64_t> counts,
                          std::vector<std::int64_t> displs, const std::string& algorithm,
                          const Options& options) {
  MPI_Comm user = mpi_comm_of(comm_obj);
  Comm& comm = Comm::of(user);
  const int p = comm.size();
  if (static_cast<int>(counts.size()) != p) {
    throw ArgumentError("counts: expected " + std::to_string(p) + " entries (one per rank), got " +
                        std::to_string(counts.size()));
  }
  if (static_cast<int>(displs.size()) != p) {
    throw ArgumentError("displs: expected " + std::to_string(p) + " entries, got " +
                        std::to_string(displs.size()));
  }
  AllgathervArgs args;
  args.counts = std::move(counts);
  args.displs = std::move(displs);
  for (int r = 0; r < p; ++r) {
    if (args.counts[r] < 0)
      throw ArgumentError("counts: negative count for rank " + std::to_string(r));
    if (args.displs[r] < 0)
      throw ArgumentError("displs: negative displacement for rank " + std::to_string(r));
  }
  if (recv && args.extent() > recv_bytes) {
    throw ArgumentError("recvbuf: too small: needs " + std::to_string(args.extent()) +
                        " bytes, has " + std::to_string(recv_bytes));
  }
  Buffer send_buf{};
  if (!send.is_none()) {
    send_buf = contiguous(send, "sendbuf", false);
    if (send_buf.bytes() < args.counts[comm.rank()]) {
      throw ArgumentError("sendbuf: has " + std::to_string(send_buf.bytes()) + " bytes, counts[" +
                          std::to_string(comm.rank()) + "] needs " +
                          std::to_string(args.counts[comm.rank()]));
    }
    args.send = send_buf.ptr();
  } else if (!recv) {
    throw ArgumentError("sendbuf: MPI.IN_PLACE needs a receive buffer");
  }
  args.recv = recv;
  const AllgathervAlgorithm& algo = find_allgatherv(algorithm, args, comm, options.ranks_per_node);
  if (!recv && std::string(algo.name) != "shan") {
    throw ArgumentError("algorithm: a node-shared result needs algorithm 'shan', not '" +
                        std::string(algo.name) + "'");
  }
  const std::byte* result = nullptr;
  bindings::run_call(comm, algo.name,
                     [&](Stats& stats) { result = algo.fn(comm, args, options, stats); });
  if (recv) return py::none();
  return py::memoryview::from_memory(const_cast<std::byte*>(result),
                                     static_cast<py::ssize_t>(args.extent()), true);
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "shancoll C++ core (internal; use the shancoll package)";
  if (import_mpi4py() < 0) throw py::error_already_set();  // once: it costs ~10 us
  py::register_exception<ArgumentError>(m, "ArgumentError", PyExc_ValueError);
  py::register_exception<TimeoutError>(m, "CollectiveTimeout", PyExc_TimeoutError);
  py::register_exception<MpiError>(m, "MPIError", PyExc_RuntimeError);
  bind_allreduce(m);
  bind_intergroup(m);
  bind_release_gather(m);
  bind_rules(m);

  m.def(
      "allgatherv",
      [](py::handle comm, py::object send, py::object recv, std::vector<std::int64_t> counts,
         std::vector<std::int64_t> displs, const std::string& algorithm, std::int64_t block_size,
         const std::string& transport, int ranks_per_node, double timeout) {
        Options o = make_options(block_size, transport, ranks_per_node, timeout);
        Buffer r = contiguous(recv, "recvbuf", true);
        return run_allgatherv(comm, send, r.ptr(), r.bytes(), std::move(counts), std::move(displs),
                              algorithm, o);
      },
      py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("counts"), py::arg("displs"),
      py::arg("algorithm") = "", py::arg("block_size") = 0, py::arg("transport") = "two_sided",
      py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0,
      "Allgatherv in bytes; send=None means in place. Statistics: last_stats(comm).");

  m.def(
      "allgatherv_shared",
      [](py::handle comm, py::object send, std::vector<std::int64_t> counts,
         std::vector<std::int64_t> displs, std::int64_t block_size, const std::string& transport,
         int ranks_per_node, double timeout) {
        Options o = make_options(block_size, transport, ranks_per_node, timeout);
        return run_allgatherv(comm, send, nullptr, 0, std::move(counts), std::move(displs), "shan",
                              o);
      },
      py::arg("comm"), py::arg("send"), py::arg("counts"), py::arg("displs"),
      py::arg("block_size") = 0, py::arg("transport") = "two_sided", py::arg("ranks_per_node") = -1,
      py::arg("timeout") = 0.0,
      "Allgatherv (shan) leaving the result in the node segment: a read-only memoryview.");

  m.def(
      "last_stats",
      [](py::handle comm) {
        // Not collective: a communicator shancoll has not used yet has no stats.
        const Comm* c = Comm::find(mpi_comm_of(comm));
        return c ? stats_dict(c->last_stats, c->last_algorithm) : stats_dict(Stats{}, "");
      },
      py::arg("comm"), "Statistics of the last collective this rank ran on comm.");

  m.def("algorithms", [](const std::string& collective) {
    if (collective != "allgatherv" && collective != "allgather") {
      throw ArgumentError("collective: unknown collective '" + collective + "'");
    }
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& a : allgatherv_algorithms()) out.emplace_back(a.name, a.summary);
    return out;
  });

  m.def(
      "topology",
      [](py::handle comm, int ranks_per_node) {
        NodeContext& ctx = Comm::of(mpi_comm_of(comm)).nodes(ranks_per_node);
        const Topology& t = ctx.topo;
        py::dict d;
        d["node"] = t.node;
        d["local_rank"] = t.local_rank;
        d["node_count"] = t.node_count;
        d["node_of"] = t.node_of;
        d["ranks"] = t.ranks;
        d["sockets"] = t.sockets;
        d["hwloc"] = t.hwloc;
        d["socket_of"] = t.socket_of;
        d["socket_count"] = t.socket_count;
        d["socket_source"] = t.socket_source;
        d["single_copy"] = ctx.peer_memory->available();
        d["oversubscribed"] = t.oversubscribed;
        return d;
      },
      py::arg("comm"), py::arg("ranks_per_node") = -1);

  m.def("reduction_kernels", [] {
    py::list runnable;
    for (KernelSet s : runnable_kernel_sets()) runnable.append(kernel_set_name(s));
    py::dict d;
    d["active"] = kernel_set_name(active_kernel_set());
    d["runnable"] = runnable;
    return d;
  });

  m.def(
      "set_pause",
      [](const std::string& name) {
        if (name == "default")
          set_pause_hook(default_pause);
        else if (name == "sleep")
          set_pause_hook(sleeping_pause);
        else
          throw ArgumentError("pause: unknown pause hook '" + name + "' (default, sleep)");
      },
      py::arg("name"));

#ifdef SHANCOLL_HAVE_HWLOC
  m.attr("has_hwloc") = true;
#else
  m.attr("has_hwloc") = false;
#endif
}
