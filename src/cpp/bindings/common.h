// What the binding files share: MPI sizes and ranks, Stats -> the dict
// behind shancoll.last_stats(). Arguments: arguments.h; buffers: bufspec.h;
// options: options.h.
//
// mpi4py's C API lives in per-translation-unit pointers: every .cc that
// includes it must call import_mpi4py() once (in its bind_*()).
#pragma once

#include <mpi.h>
#include <mpi4py/mpi4py.h>
#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "shancoll/comm.h"
#include "shancoll/error.h"
#include "shancoll/ops.h"
#include "shancoll/options.h"
#include "shancoll/progress.h"

namespace shancoll::bindings {

// A communicator shancoll has set up knows its rank and size (Comm::find
// remembers the last one found): a loop of calls asks MPI nothing.
inline int size_of(MPI_Comm comm) {
  if (const Comm* known = Comm::find(comm)) return known->size();
  int size = 0;
  check_mpi(MPI_Comm_size(comm, &size), "MPI_Comm_size");
  return size;
}

inline int rank_of(MPI_Comm comm) {
  if (const Comm* known = Comm::find(comm)) return known->rank();
  int rank = 0;
  check_mpi(MPI_Comm_rank(comm, &rank), "MPI_Comm_rank");
  return rank;
}

inline pybind11::dict stats_dict(const Stats& s, const char* algorithm) {
  pybind11::dict d;
  d["algorithm"] = algorithm;
  s.visit([&d](const char* name, const auto& value) { d[name] = value; });
  return d;
}

}  // namespace shancoll::bindings
