// pybind11 bindings of bcast, reduce and release_gather's options (kept apart
// from module.cc). Two entries each, as for allreduce: the fast one takes the
// plain call (ndarrays, an MPI.Op, no options; see fast_args.h) straight
// from Python and declines anything else; the general one takes what the
// Python layer (src/shancoll/_release_gather.py) parsed: buffer specs, ops
// and option types. Here we check what the core needs to stay memory-safe and
// turn the options into ReleaseGatherOptions.
#include "shancoll/coll/release_gather/release_gather.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "common.h"
#include "entry.h"
#include "fast_args.h"
#include "shancoll/allreduce_select.h"
#include "shancoll/comm.h"
#include "shancoll/progress.h"
#include "shancoll/rooted_select.h"
#include "shancoll/select.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

pattern::TreeKind parse_tree(const std::string& name, const std::string& key) {
  if (name == "flat") return pattern::TreeKind::flat;
  if (name == "kary") return pattern::TreeKind::kary;
  if (name == "knomial") return pattern::TreeKind::knomial;
  throw ArgumentError(key + ": unknown tree '" + name + "' (valid: auto, flat, kary, knomial)");
}

int parse_skew(const std::string& name, const std::string& key) {
  if (name == "auto") return -1;
  if (name == "left") return 0;
  if (name == "right") return 1;
  throw ArgumentError(key + ": unknown skew '" + name + "' (valid: auto, left, right)");
}

int parse_topology(const std::string& name, const std::string& key) {
  using pattern::TreeTopology;
  if (name == "auto") return -1;
  for (TreeTopology t :
       {TreeTopology::none, TreeTopology::socket_leader_first, TreeTopology::socket_leader_last})
    if (name == pattern::tree_topology_name(t)) return static_cast<int>(t);
  throw ArgumentError(key + ": unknown topology '" + name +
                      "' (valid: auto, none, socket_leader_first, socket_leader_last)");
}

// "auto", a socket count, or a socket per local rank (types checked in Python).
SocketSpec parse_sockets(py::handle v) {
  if (py::isinstance<py::str>(v)) return parse_socket_spec(py::cast<std::string>(v), "sockets");
  SocketSpec spec;
  if (py::isinstance<py::int_>(v)) {
    spec.groups = py::cast<int>(v);
    if (spec.groups < 1)
      throw ArgumentError("sockets: a socket count must be >= 1, got " +
                          std::to_string(spec.groups));
  } else {
    spec.map = py::cast<std::vector<int>>(v);
    if (spec.map.empty()) throw ArgumentError("sockets: an empty socket map");
  }
  return spec;
}

// A tree option for one phase: tree, k, skew or topology. Returns whether `axis` was one.
bool parse_tree_option(RgTreeOptions& t, const std::string& axis, const std::string& key,
                       py::handle v) {
  if (axis == "tree") {
    const std::string tree = py::cast<std::string>(v);
    t.tree_auto = tree == "auto";
    if (!t.tree_auto) t.shape.kind = parse_tree(tree, key);
  } else if (axis == "k") {
    t.shape.k = py::cast<int>(v);
    if (t.shape.k < 1)
      throw ArgumentError(key + ": must be >= 1, got " + std::to_string(t.shape.k));
  } else if (axis == "skew") {
    t.skew = parse_skew(py::cast<std::string>(v), key);
  } else if (axis == "topology") {
    t.topology = parse_topology(py::cast<std::string>(v), key);
  } else {
    return false;
  }
  return true;
}

// Options by name (types checked in Python); absent ones keep the paper's
// defaults. tree, k, skew and topology set both phases' trees; their
// bcast_ and reduce_ forms set one phase's and win over the plain ones.
ReleaseGatherOptions parse_options(const py::dict& d) {
  ReleaseGatherOptions o;
  for (auto item : d) {
    const std::string key = py::cast<std::string>(item.first);
    py::handle v = item.second;
    if (parse_tree_option(o.bcast_tree, key, key, v)) {
      parse_tree_option(o.reduce_tree, key, key, v);
    } else if (key == "sockets") {
      o.sockets = parse_sockets(v);
    } else if (key == "buffer_size") {
      o.buffer_size = py::cast<std::int64_t>(v);
    } else if (key == "buffers") {
      o.buffers = py::cast<int>(v);
    } else if (key == "inline") {
      o.inline_data = py::cast<bool>(v);
    } else if (key == "read_from_parent") {
      o.read_from_parent = py::cast<bool>(v);
    } else if (key == "data_copy") {
      o.data_copy = py::cast<bool>(v);
    } else if (key == "single_copy") {
      o.single_copy = py::cast<bool>(v) ? 1 : 0;
    } else if (key == "inter_algorithm") {
      o.inter_algorithm = py::cast<std::string>(v);
    } else if (key.rfind("bcast_", 0) != 0 && key.rfind("reduce_", 0) != 0) {
      throw ArgumentError("options: unknown release_gather option '" + key + "'");
    }
  }
  for (const char* phase : {"bcast", "reduce"}) {  // the per-phase forms, over the plain ones
    RgTreeOptions& t = phase[0] == 'b' ? o.bcast_tree : o.reduce_tree;
    const std::string prefix = std::string(phase) + "_";
    for (auto item : d) {
      const std::string key = py::cast<std::string>(item.first);
      if (key.rfind(prefix, 0) != 0) continue;
      if (!parse_tree_option(t, key.substr(prefix.size()), key, item.second))
        throw ArgumentError("options: unknown release_gather option '" + key + "'");
    }
    if (t.tree_auto && d.contains(prefix + "k"))
      throw ArgumentError(prefix + "k: needs " + prefix +
                          "tree='kary' or 'knomial' (auto picks K by size)");
  }
  if (o.bcast_tree.tree_auto && o.reduce_tree.tree_auto && d.contains("k"))
    throw ArgumentError("k: needs tree='kary' or 'knomial' (tree='auto' picks K by size)");
  o.validate();
  return o;
}

Options make_options(const ReleaseGatherOptions& rg, int ranks_per_node, double timeout) {
  if (timeout < 0) throw ArgumentError("timeout: must be >= 0 seconds");
  Options o;
  o.ranks_per_node = ranks_per_node;
  o.timeout = timeout > 0 ? timeout : default_timeout();
  o.release_gather = &rg;
  return o;
}

int check_root(const Comm& comm, int root) {
  if (root < 0 || root >= comm.size())
    throw ArgumentError("root: must be a rank of the communicator (0.." +
                        std::to_string(comm.size() - 1) + "), got " + std::to_string(root));
  return root;
}

std::optional<py::buffer_info> buffer_of(py::object obj, bool writable) {
  if (obj.is_none()) return std::nullopt;
  return py::reinterpret_borrow<py::buffer>(obj).request(writable);
}

std::byte* ptr(const std::optional<py::buffer_info>& b) {
  return b ? static_cast<std::byte*>(b->ptr) : nullptr;
}

// What a call without options runs with: the paper's choices.
const ReleaseGatherOptions kPaperDefaults{};

// Bcast of `bytes` at `buf`, from either entry.
void run_bcast(Comm& comm, std::byte* buf, std::int64_t bytes, int root,
               const std::string& algorithm, const Options& o) {
  BcastArgs args;
  args.root = check_root(comm, root);
  args.buf = buf;
  args.bytes = bytes;
  const BcastAlgorithm& algo =
      find_bcast(algorithm, args.bytes, comm.size(), rule_nodes(comm, o.ranks_per_node));
  run_call(comm, "bcast", algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
}

void bcast(py::handle comm_obj, py::object buf, int root, const std::string& algorithm,
           const py::dict& options, int ranks_per_node, double timeout) {
  const ReleaseGatherOptions rg = parse_options(options);
  const Options o = make_options(rg, ranks_per_node, timeout);
  Comm& comm = Comm::of(mpi_comm_of(comm_obj), o.timeout);
  const auto b = buffer_of(buf, comm.rank() != root);
  run_bcast(comm, ptr(b), b ? b->size * b->itemsize : 0, root, algorithm, o);
}

// The plain call of the bcast entry (entry.h, fast_args.h): an ndarray, no
// release_gather options; arguments in the order of the Python signature
// bcast(comm, buf, root, algorithm, *, ranks_per_node, timeout).
py::object bcast_plain(const py::handle* a) {
  enum { kComm, kBuf, kRoot, kAlgorithm, kRanksPerNode, kTimeout };
  std::string name;
  int r = 0, rpn = -1;
  double seconds = 0;
  if (!plain_comm(a[kComm]) || !is_ndarray(a[kBuf]) || !plain_int(a[kRoot], r, 0) ||
      !plain_algorithm(a[kAlgorithm], name) || !plain_int(a[kRanksPerNode], rpn, -1) ||
      !plain_timeout(a[kTimeout], seconds))
    return py::object();
  const Options o = make_options(kPaperDefaults, rpn, seconds);
  Comm& comm = Comm::of(mpi_comm_of(a[kComm]), o.timeout);
  View b;
  if (!b.acquire(a[kBuf], comm.rank() != r ? PyBUF_WRITABLE : PyBUF_SIMPLE)) return py::object();
  run_bcast(comm, static_cast<std::byte*>(b.ptr()), b.bytes(), r, name, o);
  return py::none();
}

// Reduce of `count` elements, from either entry; `send` null: in place.
void run_reduce(Comm& comm, const std::byte* send, std::int64_t send_bytes, std::byte* recv,
                std::int64_t recv_bytes, std::int64_t count, const Reducer& reducer, int root,
                const std::string& algorithm, const Options& o) {
  ReduceArgs args;
  args.root = check_root(comm, root);
  const std::int64_t bytes = count * static_cast<std::int64_t>(reducer.elem_size());
  if (send && send_bytes < bytes) throw ArgumentError("sendbuf: too small");
  if (comm.rank() == root && (!recv || recv_bytes < bytes))
    throw ArgumentError("recvbuf: the root needs a receive buffer of " + std::to_string(bytes) +
                        " bytes");
  if (!send && comm.rank() != root)
    throw ArgumentError("sendbuf: MPI.IN_PLACE is only valid at the root");
  args.send = send;
  args.recv = comm.rank() == root ? recv : nullptr;
  args.count = count;
  args.reducer = &reducer;
  const ReduceAlgorithm& algo =
      find_reduce(algorithm, args, comm.size(), rule_nodes(comm, o.ranks_per_node));
  run_call(comm, "reduce", algo.name, [&](Stats& st) { algo.fn(comm, args, o, st); });
}

// What the general reduce and allreduce entries share: the options parsed,
// the op on the element type, the communicator and the buffers (None: absent).
struct GeneralReduction {
  ReleaseGatherOptions rg;
  Options o;
  Reducer reducer;
  Comm& comm;
  std::optional<py::buffer_info> send, recv;

  GeneralReduction(py::handle comm_obj, py::object send_obj, py::object recv_obj,
                   const std::string& kind, int itemsize, py::handle op, const py::dict& options,
                   int ranks_per_node, double timeout)
      : rg(parse_options(options)),
        o(make_options(rg, ranks_per_node, timeout)),
        reducer(mpi_op_of(op), dtype_of(kind, itemsize)),
        comm(Comm::of(mpi_comm_of(comm_obj), o.timeout)),
        send(buffer_of(send_obj, false)),
        recv(buffer_of(recv_obj, true)) {}

  GeneralReduction(const GeneralReduction&) = delete;  // o points at rg

  static std::int64_t bytes(const std::optional<py::buffer_info>& b) {
    return b ? b->size * b->itemsize : 0;
  }
};

void reduce(py::handle comm_obj, py::object send, py::object recv, const std::string& kind,
            int itemsize, std::int64_t count, py::handle op, int root, const std::string& algorithm,
            const py::dict& options, int ranks_per_node, double timeout) {
  const GeneralReduction g(comm_obj, send, recv, kind, itemsize, op, options, ranks_per_node,
                           timeout);
  run_reduce(g.comm, ptr(g.send), g.bytes(g.send), ptr(g.recv), g.bytes(g.recv), count, g.reducer,
             root, algorithm, g.o);
}

// The plain call of the reduce entry (entry.h, fast_args.h): at the root two
// ndarrays of one dtype and size (or IN_PLACE and one), elsewhere the send
// ndarray (recvbuf ignored, as MPI does); an MPI.Op; no release_gather
// options. Arguments in the order of the Python signature reduce(comm,
// sendbuf, recvbuf, op, root, algorithm, *, commute, ranks_per_node,
// timeout); `commute` only matters for callables (the general path).
py::object reduce_plain(const py::handle* a) {
  enum { kComm, kSend, kRecv, kOp, kRoot, kAlgorithm, kCommute, kRanksPerNode, kTimeout };
  std::string name;
  int r = 0, rpn = -1;
  double seconds = 0;
  MPI_Op mpi_op = MPI_OP_NULL;
  if (!plain_comm(a[kComm]) || !plain_op(a[kOp], mpi_op) || !plain_int(a[kRoot], r, 0) ||
      !plain_algorithm(a[kAlgorithm], name) || !plain_int(a[kRanksPerNode], rpn, -1) ||
      !plain_timeout(a[kTimeout], seconds))
    return py::object();
  const Options o = make_options(kPaperDefaults, rpn, seconds);
  Comm& comm = Comm::of(mpi_comm_of(a[kComm]), o.timeout);
  const bool at_root = comm.rank() == r;
  const py::handle send = a[kSend], recv = a[kRecv];
  View s, v;
  if (!(at_root && is_in_place(send)) && (!is_ndarray(send) || !s.acquire(send, PyBUF_FORMAT)))
    return py::object();
  if (at_root && (!is_ndarray(recv) || !v.acquire(recv, PyBUF_FORMAT | PyBUF_WRITABLE)))
    return py::object();
  const Py_buffer& typed = at_root ? v.get() : s.get();
  DType type{};
  if (!plain_dtype(typed, type)) return py::object();
  if (at_root && s.held() &&
      (s.bytes() != v.bytes() || std::strcmp(s.get().format, v.get().format) != 0))
    return py::object();
  const Reducer reducer(mpi_op, type);
  const std::int64_t bytes = at_root ? v.bytes() : s.bytes();
  run_reduce(comm, static_cast<const std::byte*>(s.ptr()), s.bytes(),
             static_cast<std::byte*>(v.ptr()), v.bytes(),
             bytes / static_cast<std::int64_t>(typed.itemsize), reducer, r, name, o);
  return py::none();
}

void allreduce_with_options(py::handle comm_obj, py::object send, py::object recv,
                            const std::string& kind, int itemsize, py::handle op,
                            const py::dict& options, int ranks_per_node, double timeout) {
  const GeneralReduction g(comm_obj, send, recv, kind, itemsize, op, options, ranks_per_node,
                           timeout);
  AllreduceArgs args;
  args.send = ptr(g.send);
  args.recv = ptr(g.recv);
  args.count = g.bytes(g.recv) / itemsize;
  if (g.send && g.bytes(g.send) != args.count * itemsize)
    throw ArgumentError("sendbuf: its length differs from recvbuf's");
  args.reducer = &g.reducer;
  const AllreduceAlgorithm& algo = find_allreduce("release_gather", args, g.comm.size());
  run_call(g.comm, "allreduce", algo.name, [&](Stats& st) { algo.fn(g.comm, args, g.o, st); });
}

EntrySpec bcast_spec() {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"buf", py::object()},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          4,
          bcast_plain};
}

EntrySpec reduce_spec() {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"sendbuf", py::object()},
           {"recvbuf", py::object()},
           {"op", py::module_::import("mpi4py.MPI").attr("SUM")},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"commute", py::bool_(false)},
           {"ranks_per_node", none},
           {"timeout", none}},
          6,
          reduce_plain};
}

template <class Table>
std::vector<std::pair<std::string, std::string>> names_of(const Table& table) {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& a : table) out.emplace_back(a.name, a.summary);
  return out;
}

}  // namespace

void bind_release_gather(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit
  init_fast_args();
  m.def(
      "bcast_entry", [](py::function impl) { return make_entry(std::move(impl), bcast_spec()); },
      "The builtin entry for shancoll.bcast with `impl` as its general path.");
  m.def(
      "reduce_entry", [](py::function impl) { return make_entry(std::move(impl), reduce_spec()); },
      "The builtin entry for shancoll.reduce with `impl` as its general path.");
  m.def("bcast", &bcast, py::arg("comm"), py::arg("buf"), py::arg("root"),
        py::arg("algorithm") = "", py::arg("options") = py::dict(), py::arg("ranks_per_node") = -1,
        py::arg("timeout") = 0.0, "Bcast of a contiguous buffer's bytes from root.");
  m.def("reduce", &reduce, py::arg("comm"), py::arg("send"), py::arg("recv"), py::arg("kind"),
        py::arg("itemsize"), py::arg("count"), py::arg("op"), py::arg("root"),
        py::arg("algorithm") = "", py::arg("options") = py::dict(), py::arg("ranks_per_node") = -1,
        py::arg("timeout") = 0.0,
        "Reduce of count elements into root's recv; send=None: in place at the root.");
  m.def("allreduce_release_gather", &allreduce_with_options, py::arg("comm"), py::arg("send"),
        py::arg("recv"), py::arg("kind"), py::arg("itemsize"), py::arg("op"),
        py::arg("options") = py::dict(), py::arg("ranks_per_node") = -1, py::arg("timeout") = 0.0,
        "Allreduce with release_gather and the given options.");
  m.def("bcast_algorithms", [] { return names_of(bcast_algorithms()); });
  m.def("reduce_algorithms", [] { return names_of(reduce_algorithms()); });
}
