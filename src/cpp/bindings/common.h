// What the binding files share: the public options -> Options, running a
// call, Stats -> the dict behind shancoll.last_stats().
//
// mpi4py's C API lives in per-translation-unit pointers: every .cc that
// includes it must call import_mpi4py() once (in its bind_*()).
#pragma once

#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "shancoll/error.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"
#include "shancoll/progress.h"

namespace shancoll::bindings {

// Options of the allgather(v) family, checked (ArgumentError naming the option).
inline Options make_options(std::int64_t block_size, const std::string& transport,
                            int ranks_per_node, double timeout) {
  if (block_size < 0) {
    throw ArgumentError("block_size: must be >= 0 (0 chooses), got " + std::to_string(block_size));
  }
  if (timeout < 0) throw ArgumentError("timeout: must be >= 0 seconds");
  Options o;
  o.block_size = block_size;
  o.transport = parse_transport(transport);
  o.ranks_per_node = ranks_per_node;
  o.timeout = timeout > 0 ? timeout : default_timeout();
  return o;
}

// Runs one collective (body(stats)) on a Comm or Intercomm without the GIL
// (user ops re-acquire it: mpi4py's "with gil") and records what ran for
// shancoll.last_stats(). `collective` and `algorithm` name the call if it
// fails under SHANCOLL_ON_ERROR=abort.
template <class C, class F>
void run_call(C& comm, const char* collective, const char* algorithm, F&& body) {
  Stats stats;
  {
    pybind11::gil_scoped_release release;
    comm.run({collective, algorithm}, [&] { body(stats); });
  }
  comm.last_stats = stats;
  comm.last_algorithm = algorithm;
}

inline pybind11::dict stats_dict(const Stats& s, const char* algorithm) {
  pybind11::dict d;
  d["algorithm"] = algorithm;
  d["rounds"] = s.rounds;
  d["inter_messages"] = s.inter_messages;
  d["inter_bytes"] = s.inter_bytes;
  d["intra_messages"] = s.intra_messages;
  d["intra_bytes"] = s.intra_bytes;
  d["forwarded"] = s.forwarded;
  d["node_count"] = s.node_count;
  d["block_count"] = s.block_count;
  d["remote_sent_messages"] = s.remote_sent_messages;
  d["remote_sent_bytes"] = s.remote_sent_bytes;
  d["remote_recv_messages"] = s.remote_recv_messages;
  d["remote_recv_bytes"] = s.remote_recv_bytes;
  d["bcast_tree"] = describe(s.bcast_tree);
  d["reduce_tree"] = describe(s.reduce_tree);
  return d;
}

}  // namespace shancoll::bindings
