// pybind11 bindings of bcast, reduce and release_gather's options (kept apart
// from module.cc). The builtin entries (entry.h) take the call as the user
// wrote it: argument intake (buffers through bufspec.h, the rest through
// arguments.h; the options' names and types checked by the Python layer's
// _release_gather._options), then run_bcast() / run_reduce() resolve the
// algorithm and run. parse_options() turns the options into
// ReleaseGatherOptions.
#include "shancoll/coll/release_gather/release_gather.h"

#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>
#include <string>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "entry.h"
#include "release_gather.h"
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

Options call_options(const ReleaseGatherOptions& rg, int ranks_per_node, double timeout) {
  if (timeout < 0) throw ArgumentError("timeout: must be >= 0 seconds");
  Options o;
  o.ranks_per_node = ranks_per_node;
  o.timeout = timeout > 0 ? timeout : default_timeout();
  o.release_gather = &rg;
  return o;
}

// What a call without options runs with: the paper's choices.
const ReleaseGatherOptions kPaperDefaults{};

// Bcast of `bytes` at `buf`, from either entry.
void run_bcast(Comm& comm, std::byte* buf, std::int64_t bytes, int root,
               const std::string& algorithm, const Options& o) {
  BcastArgs args;
  args.root = root;
  args.buf = buf;
  args.bytes = bytes;
  const BcastAlgorithm& algo =
      find_bcast(algorithm, args.bytes, comm.size(), rule_nodes(comm, o.ranks_per_node));
  run_call(comm, "bcast", algo.name, [&](Stats& s) { algo.fn(comm, args, o, s); });
}

// Reduce of `count` elements, from either entry; `send` null: in place.
void run_reduce(Comm& comm, const std::byte* send, std::int64_t send_bytes, std::byte* recv,
                std::int64_t recv_bytes, std::int64_t count, const Reducer& reducer, int root,
                const std::string& algorithm, const Options& o) {
  ReduceArgs args;
  args.root = root;
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

// ---------------------------------------------------------------------------
// Argument intake

// Options belong to release_gather: the algorithm must be it (or auto).
void check_options_algorithm(const std::string& name, const py::dict& options) {
  if (options.empty() || name == "auto" || name == "release_gather") return;
  const py::object names = py::module_::import("builtins").attr("sorted")(options);
  throw ArgumentError("algorithm: options " + std::string(py::repr(names)) +
                      " belong to release_gather, not '" + name + "'");
}

// What bcast and reduce take alike: algorithm, ranks_per_node, timeout and
// **options, resolved into the core's Options (kPaperDefaults without options).
struct Common {
  std::optional<ReleaseGatherOptions> parsed;  // constructed only for options given
  std::string algorithm;
  Options o;

  Common(py::handle algorithm_arg, py::handle ranks_per_node, py::handle timeout,
         py::handle options)
      : algorithm(str_arg(algorithm_arg, "algorithm")) {
    const ReleaseGatherOptions& rg =
        PyDict_GET_SIZE(options.ptr()) == 0 ? kPaperDefaults : given(options);
    if (algorithm == "auto") algorithm.clear();  // the core's auto
    o = call_options(rg, ranks_per_node_arg(ranks_per_node), timeout_arg(timeout));
  }
  Common(const Common&) = delete;  // o points into parsed

  const ReleaseGatherOptions& given(py::handle options) {
    const py::dict checked = checked_options(options);
    check_options_algorithm(algorithm, checked);
    return parsed.emplace(parse_options(checked));
  }
};

// bcast(comm, buf, root, algorithm, *, ranks_per_node, timeout, **options)
py::object bcast_call(const py::handle* a) {
  enum { kComm, kBuf, kRoot, kAlgorithm, kRanksPerNode, kTimeout, kOptions };
  const MPI_Comm user = comm_of(a[kComm]);
  const Common c(a[kAlgorithm], a[kRanksPerNode], a[kTimeout], a[kOptions]);
  Comm& comm = Comm::of(user, c.o.timeout);
  const int root = root_arg(a[kRoot], comm.size());
  const Access access = comm.rank() == root ? Access::read : Access::write;
  const Message buf = parse_simple(a[kBuf], "buf", access);
  run_bcast(comm, buf.data(), buf.bytes(), root, c.algorithm, c.o);
  return py::none();
}

// reduce's buffers: the root's as allreduce's, elsewhere only sendbuf
// (recvbuf is ignored, as MPI does).
ReductionBuffers reduce_buffers(py::handle send, py::handle recv, bool at_root) {
  if (at_root) return parse_reduction(send, recv);
  if (is_in_place(send)) throw ArgumentError("sendbuf: MPI.IN_PLACE is only valid at the root");
  ReductionBuffers b{Message{}, parse_simple(send, "sendbuf", Access::read)};
  b.type = b.send.element.reduction_type("sendbuf");
  b.count = b.send.bytes() / b.send.element.scalar;
  return b;
}

// reduce(comm, sendbuf, recvbuf, op, root, algorithm, *, commute,
// ranks_per_node, timeout, **options)
py::object reduce_call(const py::handle* a) {
  enum { kComm, kSend, kRecv, kOp, kRoot, kAlgorithm, kCommute, kRanksPerNode, kTimeout, kOptions };
  const MPI_Comm user = comm_of(a[kComm]);
  const Common c(a[kAlgorithm], a[kRanksPerNode], a[kTimeout], a[kOptions]);
  Comm& comm = Comm::of(user, c.o.timeout);
  const int root = root_arg(a[kRoot], comm.size());
  const ReductionBuffers b = reduce_buffers(a[kSend], a[kRecv], comm.rank() == root);
  const OpArg op(a[kOp], a[kCommute]);
  const Reducer reducer(op.get(), b.type);
  run_reduce(comm, b.send.data(), b.send.bytes(), b.recv.data(), b.recv.bytes(), b.count, reducer,
             root, c.algorithm, c.o);
  return py::none();
}

}  // namespace

void bindings::allreduce_with_options(MPI_Comm user, const ReductionBuffers& b, MPI_Op op,
                                      const std::string& algorithm, const py::dict& options,
                                      int ranks_per_node, double timeout) {
  check_options_algorithm(algorithm, options);
  const ReleaseGatherOptions rg = parse_options(options);
  const Options o = call_options(rg, ranks_per_node, timeout);
  Comm& comm = Comm::of(user, o.timeout);
  const Reducer reducer(op, b.type);
  AllreduceArgs args;
  args.send = b.send.data();
  args.recv = b.recv.data();
  args.count = b.count;
  args.reducer = &reducer;
  const AllreduceAlgorithm& algo = find_allreduce("release_gather", args, comm.size());
  run_call(comm, "allreduce", algo.name, [&](Stats& st) { algo.fn(comm, args, o, st); });
}

namespace {

EntrySpec bcast_spec() {
  const py::object none = py::none();
  return {{{"comm", py::object()},
           {"buf", py::object()},
           {"root", py::int_(0)},
           {"algorithm", py::str("auto")},
           {"ranks_per_node", none},
           {"timeout", none}},
          4,
          bcast_call,
          true};
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
          reduce_call,
          true};
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
  m.def(
      "bcast_entry",
      [](py::function signature) { return make_entry(std::move(signature), bcast_spec()); },
      "The builtin function shancoll.bcast with the name and docstring of `signature`.");
  m.def(
      "reduce_entry",
      [](py::function signature) { return make_entry(std::move(signature), reduce_spec()); },
      "The builtin function shancoll.reduce with the name and docstring of `signature`.");
  m.def("bcast_algorithms", [] { return names_of(bcast_algorithms()); });
  m.def("reduce_algorithms", [] { return names_of(reduce_algorithms()); });
}
