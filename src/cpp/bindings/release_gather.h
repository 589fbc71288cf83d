// What allreduce's entry (allreduce.cc) hands to release_gather.cc.
#pragma once

#include <mpi.h>
#include <pybind11/pybind11.h>

#include <string>

#include "bufspec.h"

namespace shancoll::bindings {

// Allreduce with release_gather's options (names and types checked; the
// algorithm "auto" or "release_gather").
void allreduce_with_options(MPI_Comm comm, const ReductionBuffers& buffers, MPI_Op op,
                            const std::string& algorithm, const pybind11::dict& options,
                            int ranks_per_node, double timeout);

}  // namespace shancoll::bindings
