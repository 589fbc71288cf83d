// pybind11 bindings of allreduce and iallreduce (kept apart from module.cc).
//
// The builtin entries (entry.h) take the call as the user wrote it: argument
// intake (buffers through bufspec.h, the rest through arguments.h), then
// prepare() resolves the options and the algorithm and run_blocking() or
// start_request() runs it. release_gather's **options go to
// release_gather.cc.
#include <mpi.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <memory>
#include <string>

#include "arguments.h"
#include "bufspec.h"
#include "common.h"
#include "entry.h"
#include "release_gather.h"
#include "request.h"
#include "shancoll/allreduce_select.h"
#include "shancoll/coll/allreduce/allreduce_request.h"
#include "shancoll/comm.h"
#include "shancoll/pattern/nway_dissemination.h"
#include "shancoll/progress.h"
#include "shancoll/select.h"

namespace py = pybind11;
using namespace shancoll;
using namespace shancoll::bindings;

namespace {

// The caller's choices, checked by prepare().
struct Knobs {
  std::string algorithm;  // "" = auto (the environment may override)
  int ports = 0;
  int ranks_per_node = -1;
  double timeout = 0;
  bool consistent = true;
};

// One call, checked, with its algorithm resolved; no communication except
// the communicator's first use.
struct Call {
  Comm* comm;
  Reducer reducer;
  AllreduceArgs args;
  Options options;
  const AllreduceAlgorithm* algorithm;
};

Call prepare(MPI_Comm user, const std::byte* send, std::byte* recv, std::int64_t bytes, DType type,
             MPI_Op op, const Knobs& k, bool split_phase) {
  if (k.ports < 0)
    throw ArgumentError("ports: must be >= 0 (0 chooses), got " + std::to_string(k.ports));
  if (k.timeout < 0) throw ArgumentError("timeout: must be >= 0 seconds");
  Options o;
  o.ranks_per_node = k.ranks_per_node;
  o.timeout = k.timeout > 0 ? k.timeout : default_timeout();
  Call c{&Comm::of(user, o.timeout), Reducer(op, type), {}, o, nullptr};
  c.args.send = send;
  c.args.recv = recv;
  c.args.count = bytes / static_cast<std::int64_t>(dtype_size(type));
  c.args.ports = k.ports;
  c.args.consistent = k.consistent;
  c.args.reducer = &c.reducer;
  std::string name = k.algorithm;
  if (split_phase && (name.empty() || name == "auto"))
    name = auto_split_phase(c.args, c.comm->size());
  const int nodes = c.comm->nodes(k.ranks_per_node).topo.node_count;
  c.algorithm = &find_allreduce(name, c.args, c.comm->size(), nodes);
  return c;
}

void run_blocking(Call& c) {
  c.args.reducer = &c.reducer;  // c was moved out of prepare()
  run_call(*c.comm, "allreduce", c.algorithm->name,
           [&](Stats& stats) { c.algorithm->fn(*c.comm, c.args, c.options, stats); });
}

py::object start_request(Call& c, std::unique_ptr<PyRequest> r) {
  c.args.reducer = &c.reducer;
  r->req = c.comm->run({"iallreduce", c.algorithm->name}, [&] {
    return std::make_unique<AllreduceRequest>(*c.comm, c.args, *c.algorithm, c.options);
  });
  return request_object(std::move(r));
}

// ---------------------------------------------------------------------------
// Argument intake: allreduce(comm, sendbuf, recvbuf, op, algorithm, *, ports,
// commute, consistent, ranks_per_node, timeout, **options); iallreduce the
// same without timeout and options.
enum {
  kComm,
  kSend,
  kRecv,
  kOp,
  kAlgorithm,
  kPorts,
  kCommute,
  kConsistent,
  kRanksPerNode,
  kTimeout,
  kOptions
};

Knobs knobs_of(const py::handle* a, bool split_phase) {
  Knobs k;
  k.algorithm = name_arg(a[kAlgorithm], "algorithm");
  k.ports = int_arg(a[kPorts], "ports", 0);
  k.consistent = bool_arg(a[kConsistent], "consistent");
  k.ranks_per_node = ranks_per_node_arg(a[kRanksPerNode]);
  k.timeout = split_phase ? 0 : timeout_arg(a[kTimeout]);
  return k;
}

Call prepare_call(MPI_Comm comm, const ReductionBuffers& b, const OpArg& op, const Knobs& k,
                  bool split_phase) {
  return prepare(comm, b.send.data(), b.recv.data(), b.recv.bytes(), b.type, op.get(), k,
                 split_phase);
}

py::object allreduce_call(const py::handle* a) {
  const MPI_Comm comm = comm_of(a[kComm]);
  const py::dict options = checked_options(a[kOptions]);
  const ReductionBuffers b = parse_reduction(a[kSend], a[kRecv]);
  const OpArg op(a[kOp], a[kCommute]);
  if (!options.empty()) {
    allreduce_with_options(comm, b, op.get(), str_arg(a[kAlgorithm], "algorithm"), options,
                           ranks_per_node_arg(a[kRanksPerNode]), timeout_arg(a[kTimeout]));
  } else {
    Call c = prepare_call(comm, b, op, knobs_of(a, false), false);
    run_blocking(c);
  }
  return py::none();
}

py::object iallreduce_call(const py::handle* a) {
  const MPI_Comm comm = comm_of(a[kComm]);
  const Knobs k = knobs_of(a, true);
  ReductionBuffers b = parse_reduction(a[kSend], a[kRecv]);
  OpArg op(a[kOp], a[kCommute]);
  Call c = prepare_call(comm, b, op, k, true);
  auto r = std::make_unique<PyRequest>();
  r->bufs.send = std::move(b.send.view);  // held as long as the request
  r->bufs.recv = std::move(b.recv.view);
  PyRequest& started = *r;
  py::object request = start_request(c, std::move(r));
  started.op_to_free = op.take_created();  // a callable's op: freed when the request is done
  if (started.req->done()) started.release_op();
  return request;
}

EntrySpec allreduce_spec(bool split_phase) {
  const py::object none = py::none();
  std::vector<EntryParam> params = {
      {"comm", py::object()},         {"sendbuf", py::object()},
      {"recvbuf", py::object()},      {"op", py::module_::import("mpi4py.MPI").attr("SUM")},
      {"algorithm", py::str("auto")}, {"ports", none},
      {"commute", py::bool_(false)},  {"consistent", py::bool_(true)},
      {"ranks_per_node", none},
  };
  if (split_phase) return {std::move(params), 5, iallreduce_call};
  params.push_back({"timeout", none});
  return {std::move(params), 5, allreduce_call, true};
}

}  // namespace

void bind_allreduce(py::module_& m) {
  if (import_mpi4py() < 0) throw py::error_already_set();  // per translation unit

  bind_request_type(m);

  m.def(
      "nway_plan",
      [](int size, int ports) {
        if (size < 1 || ports < 0) throw ArgumentError("size >= 1 and ports >= 0 required");
        const int n = ports > 0 ? ports : pattern::nway_smallest_adaptable_n(size);
        const pattern::NwayPlan p = pattern::nway_plan(size, n);
        py::dict d;
        d["n"] = n;
        d["adaptable"] = p.adaptable;
        d["rounds"] =
            p.adaptable
                ? p.k
                : static_cast<int>(pattern::dissemination_schedule(size, 0, n).rounds.size());
        d["case"] = p.paper_case;
        d["text"] = pattern::nway_plan_text(p);
        return d;
      },
      py::arg("size"), py::arg("ports") = 0,
      "The nway_dissemination plan for P ranks: Theorem 1 case, or the fallback used.");

  m.def(
      "allreduce_entry",
      [](py::function signature, bool split_phase) {
        return make_entry(std::move(signature), allreduce_spec(split_phase));
      },
      "The builtin function shancoll.allreduce (split_phase: iallreduce) with the name and "
      "docstring of `signature`.");

  m.def("allreduce_algorithms", [] {
    std::vector<std::pair<std::string, std::string>> out;
    for (const auto& a : allreduce_algorithms()) out.emplace_back(a.name, a.summary);
    return out;
  });
}
